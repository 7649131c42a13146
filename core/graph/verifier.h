// The graph verifier: known ops, attribute schemas, input counts and edges, cycles, and
// shapes via each op's shape function. Errors name the node and its `file:line:col`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"

namespace kiln::graph {

using ShapeMap = std::map<std::string, std::vector<ValueInfo>>;  // node -> its outputs

// Structure only (ops, attributes, edges, outputs, cycles).
absl::Status VerifyStructure(const Graph& g);
// Data and control predecessors before successors (text order among independent nodes);
// a cycle is an error listing its nodes, `a -> b -> a`.
absl::StatusOr<std::vector<const Node*>> TopologicalOrder(const Graph& g);
// Output types/shapes of every node. `feeds` (by Placeholder name) override the declared
// shapes, which must be compatible (-1 matches any size).
absl::StatusOr<ShapeMap> InferShapes(const Graph& g,
                                     const std::map<std::string, ValueInfo>& feeds = {});
// VerifyStructure + InferShapes with the declared Placeholder shapes.
absl::Status VerifyGraph(const Graph& g);

}  // namespace kiln::graph
