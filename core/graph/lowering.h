// Lowering graph nodes to HLO: a whole graph (must-compile) or one cluster of it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "hlo/module.h"

namespace kiln::graph {

// Lowers `nodes` (in topological order, no Placeholders) into one module named `name`.
// Values from outside the set are entry parameters (`inputs`, with their concrete types and
// shapes); the root is `outputs` (a tuple when there are several). Shapes are re-inferred
// from the parameters, so one cluster lowers for any input shapes its ops accept.
absl::StatusOr<std::unique_ptr<HloModule>> LowerNodes(const Graph& g,
                                                      const std::vector<const Node*>& nodes,
                                                      const std::vector<Edge>& inputs,
                                                      const std::vector<ValueInfo>& input_infos,
                                                      const std::vector<Edge>& outputs,
                                                      const std::string& name);

// Must-compile check: every node has a lowering, else InvalidArgument naming the first that
// does not, `file:line:col: node n7 (Unique): data-dependent output shape, cannot be compiled`.
absl::Status CheckAllCompilable(const Graph& g);

// Must-compile lowering of the whole graph: Placeholders become parameters in their text
// order (shapes from `feeds` where given, else declared and then fully known). A host-only
// node is an InvalidArgument error: "node n7 (Unique): data-dependent output shape, cannot
// be compiled".
absl::StatusOr<std::unique_ptr<HloModule>> LowerToHlo(
    const Graph& g, const std::map<std::string, ValueInfo>& feeds = {});

}  // namespace kiln::graph
