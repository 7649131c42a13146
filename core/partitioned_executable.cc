// Cluster-by-cluster execution of a partitioned module; values live as their array leaves.
#include "core/partitioned_executable.h"

#include <algorithm>
#include <map>

#include "fmt/format.h"

namespace kiln {
namespace {

// A value's array leaves, tuples flattened depth-first.
void Flatten(Literal value, std::vector<Literal>* out) {
  if (!value.IsTuple()) {
    out->push_back(std::move(value));
    return;
  }
  for (Literal& e : std::move(value).DecomposeTuple()) Flatten(std::move(e), out);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PartitionedExecutable>> PartitionedExecutable::Compile(
    const HloModule& module, std::vector<HloCluster> clusters, const CompileOptions& options) {
  std::unique_ptr<PartitionedExecutable> exe(
      new PartitionedExecutable(module, std::move(clusters)));
  for (HloCluster& c : exe->clusters_) {
    if (c.handle == nullptr)
      return absl::InternalError(fmt::format("cluster_{} has no plugin", c.id));
    absl::StatusOr<std::unique_ptr<Executable>> e = c.handle->CompileText(c.module_text, options);
    // A plugin can claim every instruction yet refuse the cluster module as a whole (a tuple
    // root, say): the next plugin that runs all of it takes over.
    const absl::Status first = e.status();
    for (const auto& [name, handle] : c.fallbacks) {
      if (e.ok()) break;
      e = handle->CompileText(c.module_text, options);
      if (e.ok()) {
        c.fallback_note = fmt::format("{} failed to compile it ({}); using {}", c.plugin,
                                      std::string(first.message()), name);
        c.plugin = name;
        c.handle = handle;
      }
    }
    if (!e.ok()) {
      return absl::Status(first.code(), fmt::format("cluster_{} on {}: {}", c.id, c.plugin,
                                                    std::string(first.message())));
    }
    exe->executables_.push_back(std::move(*e));
  }
  return exe;
}

absl::StatusOr<std::vector<Literal>> PartitionedExecutable::Execute(
    std::span<const Literal> args) const {
  const HloComputation& entry = *module_.entry();
  if (static_cast<int>(args.size()) != entry.num_parameters()) {
    return absl::InvalidArgumentError(fmt::format(
        "the entry computation takes {} parameters, got {}", entry.num_parameters(), args.size()));
  }
  // Which cluster reads each value last, so its leaves can be freed after it.
  std::map<const HloInstruction*, size_t> last_reader;
  for (size_t k = 0; k < clusters_.size(); ++k) {
    for (const HloInstruction* in : clusters_[k].inputs) last_reader[in] = k;
  }
  std::map<const HloInstruction*, std::vector<Literal>> values;
  for (int i = 0; i < entry.num_parameters(); ++i) Flatten(args[i], &values[entry.parameter(i)]);
  for (size_t k = 0; k < clusters_.size(); ++k) {
    const HloCluster& c = clusters_[k];
    std::vector<Literal> cluster_args;
    for (const HloInstruction* in : c.inputs) {
      auto it = values.find(in);
      if (it == values.end()) {
        return absl::InternalError(
            fmt::format("cluster_{}: value '{}' not computed", c.id, in->name()));
      }
      for (const Literal& l : it->second) cluster_args.push_back(l);
    }
    absl::StatusOr<std::vector<Literal>> leaves = executables_[k]->Execute(cluster_args);
    if (!leaves.ok()) {
      return absl::Status(leaves.status().code(),
                          fmt::format("cluster_{} on {}: {}", c.id, c.plugin,
                                      std::string(leaves.status().message())));
    }
    size_t at = 0;
    for (const HloInstruction* out : c.outputs) {
      std::vector<Literal>& dst = values[out];
      for (int j = 0; j < LeafCount(out->shape()); ++j) {
        if (at >= leaves->size()) {
          return absl::InternalError(
              fmt::format("cluster_{} returned {} values, too few", c.id, leaves->size()));
        }
        dst.push_back(std::move((*leaves)[at++]));
      }
    }
    for (const HloInstruction* in : c.inputs) {
      if (last_reader[in] == k && in != entry.root()) values.erase(in);
    }
  }
  auto root = values.find(entry.root());
  if (root == values.end()) return absl::InternalError("the entry root was not computed");
  return std::move(root->second);
}

std::string PartitionDeviceNames(const std::vector<HloCluster>& clusters) {
  std::vector<std::string> names;
  for (const HloCluster& c : clusters) {
    if (std::find(names.begin(), names.end(), c.plugin) == names.end()) names.push_back(c.plugin);
  }
  return fmt::format("{}", fmt::join(names, "+"));
}

std::string DescribePartition(const std::vector<HloCluster>& clusters, std::string_view prefix) {
  std::string s;
  for (const HloCluster& c : clusters) {
    s += fmt::format("{}cluster {}: {} ({} instruction{}, {} input{}, {} output{})\n", prefix, c.id,
                     c.plugin, c.instructions.size(), c.instructions.size() == 1 ? "" : "s",
                     c.inputs.size(), c.inputs.size() == 1 ? "" : "s", c.outputs.size(),
                     c.outputs.size() == 1 ? "" : "s");
    if (!c.fallback_note.empty())
      s += fmt::format("{}  cluster {}: {}\n", prefix, c.id, c.fallback_note);
  }
  return s;
}

}  // namespace kiln
