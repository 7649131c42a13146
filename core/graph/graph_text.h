// The graph text format, one node per line:
//   n3 = MatMul[T=f32, transpose_b=true, device="cpu-llvm"](x, w) @ n1
// attributes in [], data inputs in () (`node` or `node:k`), control inputs after `@`,
// `# comments`, and one `outputs: n5, n7:1` line. Attribute values: types (`f32`), ints,
// floats (with '.' or exponent), bools, "strings", lists `[1,2]`, shapes `(2,-1)`.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace kiln::graph {

// Syntax errors are InvalidArgument `file:line:col: message`. Semantics (known ops,
// attribute types, shapes, cycles) are the verifier's job.
absl::StatusOr<Graph> ParseGraph(std::string_view text, std::string_view file = "<graph>");
std::string PrintGraph(const Graph& g);
std::string PrintNode(const Node& n);

}  // namespace kiln::graph
