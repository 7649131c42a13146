// The placer's colocation rule: a node with reference inputs (Assign's variable,
// ApplyGradientDescent's var, ...) runs on the device of the variable it references.
// Variables live on the host, so their update ops run there as host kernels.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace kiln::graph {

inline constexpr const char* kVariableDevice = "host";

struct Colocation {
  const Node* node = nullptr;      // the node with a reference input
  const Node* variable = nullptr;  // the VariableV2 it is placed with
};

// Checks device requests against the rule and sets `assigned_device` of variables and the
// nodes colocated with them. A request for another device is a located error naming the
// variable, or with `soft_placement` a logged fallback. `log` (may be null) gets one line
// per colocated node (--log-device-placement).
absl::StatusOr<std::vector<Colocation>> ColocateWithReferences(Graph& g, bool soft_placement,
                                                               std::ostream* log);

}  // namespace kiln::graph
