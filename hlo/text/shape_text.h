// Shapes in HLO text: `f32[2,3]{1,0}`, `f32[<=10]`, `bf16[8,128]{1,0:T(8,128)}`,
// `(f32[], s32[4]{0})`, `token[]`.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "hlo/shape.h"
#include "hlo/text/lexer.h"

namespace kiln::hlo_text {

// Parses a shape at the cursor (space before it is skipped). Arrays without a layout get
// the default row-major layout. Tuples nest at most kMaxNesting deep.
absl::Status ParseShapeAt(Cursor& c, Shape* out, int depth = 0);

// Where no literal or body can follow a shape (an instruction's result, before its opcode),
// XLA also reads a layout written after a space: `f32[3,4] {0,1} bitcast(p)`. Reads one if
// present.
absl::Status ParseLayoutAfterSpace(Cursor& c, Shape* shape);

// True if the cursor (after space) is at the start of a shape: `(` or an element type name
// directly followed by `[`.
bool AtShapeStart(const Cursor& c);

// The shape as the canonical text writes it (scalars without `{}`, layouts when `layout`).
void AppendShape(const Shape& s, bool layout, std::string* out);
std::string ShapeToText(const Shape& s, bool layout = true);

}  // namespace kiln::hlo_text
