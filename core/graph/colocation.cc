// Colocation of nodes with the variables their reference inputs name.
#include "core/graph/colocation.h"

#include "core/graph/op_registry.h"
#include "fmt/format.h"

namespace kiln::graph {
namespace {

std::string Where(const Node& n) {
  std::string loc = n.loc.ToString();
  return fmt::format("{}node {} ({})", loc.empty() ? "" : loc + ": ", n.name, n.op);
}

// A request for a device other than where variables live: an error, or a logged fallback.
absl::Status CheckRequest(const Node& n, const std::string& why, bool soft, std::ostream* log) {
  if (n.requested_device.empty() || n.requested_device == kVariableDevice) return absl::OkStatus();
  const std::string msg =
      fmt::format("{}: requested device '{}', but {}", Where(n), n.requested_device, why);
  if (!soft) return absl::InvalidArgumentError(msg);
  if (log != nullptr)
    *log << fmt::format("kiln graph: soft placement: {}; using {}\n", msg, kVariableDevice);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Colocation>> ColocateWithReferences(Graph& g, bool soft_placement,
                                                               std::ostream* log) {
  const OpRegistry& reg = OpRegistry::Global();
  std::vector<Colocation> out;
  for (const auto& np : g.nodes()) {
    Node& n = *np;
    const OpDef* def = reg.Find(n.op);
    if (def == nullptr) continue;  // the verifier reports it
    if (def->is_variable) {
      absl::Status s = CheckRequest(n, fmt::format("variables live on {}", kVariableDevice),
                                    soft_placement, log);
      if (!s.ok()) return s;
      n.assigned_device = kVariableDevice;
    }
    for (int k = 0; k < def->num_ref_inputs && k < static_cast<int>(n.inputs.size()); ++k) {
      const Node* var = g.Find(n.inputs[k].node);
      if (var == nullptr) continue;
      absl::Status s = CheckRequest(
          n, fmt::format("it is colocated with its variable {} on {}", var->name, kVariableDevice),
          soft_placement, log);
      if (!s.ok()) return s;
      n.assigned_device = kVariableDevice;
      out.push_back({&n, var});
      if (log != nullptr) {
        *log << fmt::format("kiln graph: colocate node {} ({}) with variable {} on {}\n", n.name,
                            n.op, var->name, kVariableDevice);
      }
    }
  }
  return out;
}

}  // namespace kiln::graph
