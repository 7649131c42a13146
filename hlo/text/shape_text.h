// Shapes in HLO text: `f32[2,3]{1,0}`, `f32[<=10]`, `bf16[8,128]{1,0:T(8,128)}`,
// `(f32[], s32[4]{0})`, `token[]`.
#pragma once

#include "absl/status/status.h"
#include "hlo/shape.h"
#include "hlo/text/lexer.h"

namespace kiln::hlo_text {

// Parses a shape at the cursor (space before it is skipped). Arrays without a layout get
// the default row-major layout. Tuples nest at most kMaxNesting deep.
absl::Status ParseShapeAt(Cursor& c, Shape* out, int depth = 0);

// True if the cursor (after space) is at the start of a shape: `(` or an element type name
// directly followed by `[`.
bool AtShapeStart(const Cursor& c);

}  // namespace kiln::hlo_text
