// Literal values in HLO text (`constant(...)`): parsing for a known shape and exact printing.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "hlo/literal.h"
#include "hlo/text/lexer.h"

namespace kiln::hlo_text {

// Deepest tuple nesting accepted in shapes and literals (guards the parser's recursion).
inline constexpr int kMaxNesting = 64;

// Parses the value of a literal of `shape` at the cursor: a scalar (`1`, `-inf`, `true`,
// `(1, 2)` for complex), nested braces for arrays (`{ {1, 2}, {3, 4} }`), parentheses for
// tuples. `{...}` (a value elided by the dumper) leaves *out empty.
absl::Status ParseLiteral(Cursor& c, const Shape& shape, std::optional<Literal>* out,
                          int depth = 0);

// The literal in the form ParseLiteral reads: floats in the shortest form that reads back to
// the same bits, all elements printed.
std::string LiteralToText(const Literal& literal);

// Shortest text that reads back to the same float / double (`1`, `0.1`, `1e-05`, `-inf`,
// `nan`, `nan(0x1)` for NaNs with a non-default payload).
std::string FloatToText(float v);
std::string FloatToText(double v);

}  // namespace kiln::hlo_text
