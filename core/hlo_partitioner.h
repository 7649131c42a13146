// HLO-level partitioning inside one module: which plugin runs each entry instruction (asked
// once per plugin through the capability query, highest priority first), acyclic clusters of
// same-plugin neighbours, and each cluster as its own HLO module whose parameters are the
// values it needs from outside.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/plugin_registry.h"
#include "hlo/module.h"

namespace kiln {

// One plugin's answer about one module.
struct PluginCapability {
  std::string plugin;
  Plugin* handle = nullptr;         // null in tests that only partition
  bool supports_all = false;        // the plugin has no capability entry: it claims everything
  std::set<std::string> supported;  // entry instruction names
  std::map<std::string, std::string> reasons;  // unsupported instruction -> why
  bool Supports(const std::string& instr) const { return supports_all || supported.count(instr); }
};

// Asks every available plugin in selection order (registry.Candidates()) about the module.
// A plugin whose query fails is left out (its error becomes part of a later "no plugin can
// run" message through `skipped`).
std::vector<PluginCapability> QueryCapabilities(const PluginRegistry& registry,
                                                std::string_view hlo_text,
                                                std::vector<std::string>* skipped = nullptr);

struct HloCluster {
  int id = 0;
  std::string plugin;
  Plugin* handle = nullptr;
  std::vector<const HloInstruction*> instructions;  // entry post order
  // Values from outside (entry parameters, other clusters' instructions), in first-use order;
  // each becomes one parameter per array leaf (tuples travel as their leaves).
  std::vector<const HloInstruction*> inputs;
  // Values used by later clusters or the entry root; the module's root is that value when it
  // is a single array, else a tuple of their array leaves in this order.
  std::vector<const HloInstruction*> outputs;
  std::string module_text;  // the cluster as a module (callees copied along, verified)
  // Lower-priority plugins that also run every instruction of the cluster, in order: tried
  // when `plugin` fails to compile the cluster module (e.g. it cannot return a tuple).
  std::vector<std::pair<std::string, Plugin*>> fallbacks;
  // Why the cluster left its first plugin, when it did (set by PartitionedExecutable).
  std::string fallback_note;
};

struct PartitionOptions {
  // A cluster with fewer instructions moves to the plugin of a neighbouring cluster with lower
  // priority when that plugin can run all of it (then they merge): below this size the host
  // round trip of its values costs more than the better plugin saves (the role of
  // TensorFlow's min cluster size). 1 disables the rule.
  int min_cluster_size = 4;
};

// Partitions `module`'s entry computation by `caps` (highest priority first). Entry
// parameters and constants (other than the root) belong to no cluster; constants are copied
// into every cluster that uses them. An instruction no plugin can run is an error naming it
// and each plugin's reason. Dead instructions (the root does not need them) are not run.
absl::StatusOr<std::vector<HloCluster>> PartitionModule(const HloModule& module,
                                                        const std::vector<PluginCapability>& caps,
                                                        const PartitionOptions& options = {});

// How `--device auto` runs a module: on one plugin (`whole`, when the highest-priority
// plugin runs every entry instruction, or the partition came out as one cluster), else as
// `clusters`.
struct ModulePlacement {
  Plugin* whole = nullptr;
  std::vector<HloCluster> clusters;
};
// `module_text`, when given, is `module.ToString()` (saves printing it again).
absl::StatusOr<ModulePlacement> PlaceModule(const PluginRegistry& registry, const HloModule& module,
                                            const PartitionOptions& options = {},
                                            std::string_view module_text = {});

// Number of array leaves of a shape (tuples flattened depth-first; a token has none).
int LeafCount(const Shape& shape);

}  // namespace kiln
