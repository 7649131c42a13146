// Capability-driven assignment, contraction (core/cluster_contraction) and cluster modules
// written as HLO text (instructions print exactly as in the source module; values from
// outside become parameters with the same names, so the instruction lines parse unchanged).
#include "core/hlo_partitioner.h"

#include <algorithm>

#include "core/cluster_contraction.h"
#include "fmt/format.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"

namespace kiln {
namespace {

// Constants other than the root are copied into each cluster that reads them.
bool IsFree(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kParameter ||
         (instr.opcode() == HloOpcode::kConstant && instr.parent()->root() != &instr);
}

// Parameter lines for an input value `name`: one parameter per array leaf, tuples rebuilt
// with `tuple` so the users' operand text still reads `%name`.
absl::Status AddInput(const std::string& name, const Shape& shape, int* next_param,
                      std::vector<std::string>* signature, std::string* body) {
  if (shape.IsArray()) {
    *body += fmt::format("  %{} = {} parameter({})\n", name, shape.ToString(), *next_param);
    signature->push_back(fmt::format("{}: {}", name, shape.ToString()));
    ++*next_param;
    return absl::OkStatus();
  }
  if (!shape.IsTuple()) {
    return absl::UnimplementedError(fmt::format(
        "value '{}' of shape {} cannot cross a partition boundary", name, shape.ToString(false)));
  }
  std::vector<std::string> elems;
  for (size_t i = 0; i < shape.tuple_shapes().size(); ++i) {
    std::string leaf = fmt::format("{}.kiln_leaf.{}", name, i);
    if (absl::Status s = AddInput(leaf, shape.tuple_shapes(i), next_param, signature, body);
        !s.ok()) {
      return s;
    }
    elems.push_back(fmt::format("{} %{}", shape.tuple_shapes(i).ToString(), leaf));
  }
  *body += fmt::format("  %{} = {} tuple({})\n", name, shape.ToString(), fmt::join(elems, ", "));
  return absl::OkStatus();
}

// Root operands for an output value: its array leaves, through get-tuple-element for tuples.
absl::Status AddOutput(const std::string& name, const Shape& shape, std::string* body,
                       std::vector<std::string>* root_operands, std::vector<Shape>* root_shapes) {
  if (shape.IsArray()) {
    root_operands->push_back(fmt::format("{} %{}", shape.ToString(), name));
    root_shapes->push_back(shape);
    return absl::OkStatus();
  }
  if (!shape.IsTuple()) {
    return absl::UnimplementedError(fmt::format(
        "value '{}' of shape {} cannot cross a partition boundary", name, shape.ToString(false)));
  }
  for (size_t i = 0; i < shape.tuple_shapes().size(); ++i) {
    std::string leaf = fmt::format("{}.kiln_out.{}", name, i);
    *body += fmt::format("  %{} = {} get-tuple-element({} %{}), index={}\n", leaf,
                         shape.tuple_shapes(i).ToString(), shape.ToString(), name, i);
    if (absl::Status s = AddOutput(leaf, shape.tuple_shapes(i), body, root_operands, root_shapes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// An instruction's text, without control predecessors that live in another cluster (the
// cluster order already runs those first).
std::string InstructionLine(const HloInstruction& instr,
                            const std::set<const HloInstruction*>& members) {
  std::string line = instr.ToString();
  for (const HloInstruction* p : instr.control_predecessors()) {
    if (members.count(p)) continue;
    size_t at = line.find(", control-predecessors={");
    if (at != std::string::npos) line.erase(at, line.find('}', at) + 1 - at);
    break;
  }
  return line;
}

// The callee computations (and stack frame tables) of `module`'s text: everything between
// the header line and the ENTRY computation.
std::string CalleesText(const std::string& text) {
  size_t start = text.find('\n');
  size_t entry = text.rfind("\nENTRY ");
  if (start == std::string::npos || entry == std::string::npos || entry < start) return "";
  return text.substr(start + 1, entry + 1 - (start + 1));
}

absl::StatusOr<std::string> ClusterModuleText(const HloCluster& c, const std::string& callees) {
  std::set<const HloInstruction*> members(c.instructions.begin(), c.instructions.end());
  std::string body;
  std::vector<std::string> signature;
  int next_param = 0;
  for (const HloInstruction* in : c.inputs) {
    if (absl::Status s = AddInput(in->name(), in->shape(), &next_param, &signature, &body);
        !s.ok()) {
      return s;
    }
  }
  std::set<const HloInstruction*> copied;
  for (const HloInstruction* i : c.instructions) {
    for (const HloInstruction* op : i->operands()) {
      if (IsFree(*op) && op->opcode() == HloOpcode::kConstant && copied.insert(op).second) {
        body += "  " + op->ToString() + "\n";
      }
    }
  }
  // One array output is the root itself (no tuple: plugins that run only arrays still can).
  const HloInstruction* direct_root =
      c.outputs.size() == 1 && c.outputs[0]->shape().IsArray() ? c.outputs[0] : nullptr;
  for (const HloInstruction* i : c.instructions) {
    body += (i == direct_root ? "  ROOT " : "  ") + InstructionLine(*i, members) + "\n";
  }
  std::string name = fmt::format("cluster_{}", c.id);
  if (direct_root != nullptr) {
    return fmt::format("HloModule {}\n{}\nENTRY %{} ({}) -> {} {{\n{}}}\n", name, callees, name,
                       fmt::join(signature, ", "), direct_root->shape().ToString(), body);
  }
  std::vector<std::string> root_operands;
  std::vector<Shape> root_shapes;
  for (const HloInstruction* out : c.outputs) {
    if (absl::Status s = AddOutput(out->name(), out->shape(), &body, &root_operands, &root_shapes);
        !s.ok()) {
      return s;
    }
  }
  Shape root = Shape::Tuple(root_shapes);
  return fmt::format(
      "HloModule {}\n{}\nENTRY %{} ({}) -> {} {{\n{}  ROOT %kiln_cluster_root = {} "
      "tuple({})\n}}\n",
      name, callees, name, fmt::join(signature, ", "), root.ToString(), body, root.ToString(),
      fmt::join(root_operands, ", "));
}

std::string NoPluginError(const HloInstruction& instr, const std::vector<PluginCapability>& caps) {
  std::string why;
  for (const PluginCapability& c : caps) {
    auto it = c.reasons.find(instr.name());
    why += fmt::format("; {}: {}", c.plugin,
                       it != c.reasons.end() ? "'" + instr.name() + "' " + it->second
                                             : std::string("not reported as supported"));
  }
  return fmt::format("no available plugin can run instruction '{}' ({}){}", instr.name(),
                     HloOpcodeString(instr.opcode()), why);
}

// One plugin's report as a capability row; false (with `skipped` noted) when the query failed.
bool ToCapability(const PluginEntry& e, const absl::StatusOr<CapabilityReport>& report,
                  PluginCapability* cap, std::vector<std::string>* skipped) {
  cap->plugin = e.name;
  cap->handle = e.plugin.get();
  if (!report.ok()) {
    if (report.status().code() != absl::StatusCode::kUnimplemented) {
      if (skipped)
        skipped->push_back(fmt::format("{}: {}", e.name, std::string(report.status().message())));
      return false;
    }
    cap->supports_all = true;  // no capability entry: the plugin claims everything
    return true;
  }
  cap->supported.insert(report->supported.begin(), report->supported.end());
  for (const auto& [instr, reason] : report->unsupported) cap->reasons[instr] = reason;
  return true;
}

}  // namespace

int LeafCount(const Shape& shape) {
  if (shape.IsArray()) return 1;
  int n = 0;
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) n += LeafCount(s);
  }
  return n;
}

std::vector<PluginCapability> QueryCapabilities(const PluginRegistry& registry,
                                                std::string_view hlo_text,
                                                std::vector<std::string>* skipped) {
  std::vector<PluginCapability> caps;
  for (const PluginEntry* e : registry.Candidates()) {
    PluginCapability cap;
    if (ToCapability(*e, e->plugin->Capability(hlo_text), &cap, skipped)) {
      caps.push_back(std::move(cap));
    }
  }
  return caps;
}

absl::StatusOr<std::vector<HloCluster>> PartitionModule(const HloModule& module,
                                                        const std::vector<PluginCapability>& caps,
                                                        const PartitionOptions& options) {
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("module has no entry computation");
  // Nodes: the live entry instructions (those the root needs; dead code is not run) other
  // than parameters and copied constants.
  std::set<const HloInstruction*> live;
  std::vector<const HloInstruction*> work = {entry->root()};
  while (!work.empty()) {
    const HloInstruction* i = work.back();
    work.pop_back();
    if (!live.insert(i).second) continue;
    for (const HloInstruction* op : i->operands()) work.push_back(op);
    for (const HloInstruction* p : i->control_predecessors()) work.push_back(p);
  }
  std::vector<const HloInstruction*> nodes;
  std::map<const HloInstruction*, int> index;
  for (const HloInstruction* i : entry->MakeInstructionPostOrder()) {
    if (IsFree(*i) || !live.count(i)) continue;
    index[i] = static_cast<int>(nodes.size());
    nodes.push_back(i);
  }
  const int n = static_cast<int>(nodes.size());
  std::vector<std::vector<int>> preds(n);
  for (int v = 0; v < n; ++v) {
    for (const HloInstruction* p : nodes[v]->operands()) {
      if (auto it = index.find(p); it != index.end()) preds[v].push_back(it->second);
    }
    for (const HloInstruction* p : nodes[v]->control_predecessors()) {
      if (auto it = index.find(p); it != index.end()) preds[v].push_back(it->second);
    }
  }
  // Each node starts on the highest-priority plugin that runs it.
  auto next_rank = [&](int v, int after) {
    for (int r = after + 1; r < static_cast<int>(caps.size()); ++r) {
      if (caps[r].Supports(nodes[v]->name())) return r;
    }
    return -1;
  };
  std::vector<int> rank(n);
  for (int v = 0; v < n; ++v) {
    rank[v] = next_rank(v, -1);
    if (rank[v] < 0) return absl::FailedPreconditionError(NoPluginError(*nodes[v], caps));
  }
  // Contract. A cluster below the minimum size joins a neighbouring cluster's lower-priority
  // plugin when that plugin runs all of it: one host round trip fewer. Ranks only go down,
  // so this ends.
  Contraction con;
  while (true) {
    con = ContractByLabel(preds, rank);
    std::vector<std::vector<int>> members(con.num_clusters);
    std::vector<std::set<int>> neighbour_ranks(con.num_clusters);
    for (int v = 0; v < n; ++v) {
      members[con.cluster_of[v]].push_back(v);
      for (int p : preds[v]) {
        int a = con.cluster_of[p], b = con.cluster_of[v];
        if (a == b) continue;
        neighbour_ranks[a].insert(rank[v]);
        neighbour_ranks[b].insert(rank[p]);
      }
    }
    bool moved = false;
    for (int c = 0; c < con.num_clusters; ++c) {
      const std::vector<int>& m = members[c];
      if (static_cast<int>(m.size()) >= options.min_cluster_size) continue;
      const int own = rank[m.front()];
      for (int r : neighbour_ranks[c]) {  // ascending: the highest-priority choice first
        if (r <= own) continue;
        bool all = true;
        for (int v : m) all = all && caps[r].Supports(nodes[v]->name());
        if (!all) continue;
        for (int v : m) rank[v] = r;
        moved = true;
        break;
      }
    }
    if (!moved) break;
  }
  std::vector<HloCluster> clusters(con.num_clusters);
  for (int c = 0; c < con.num_clusters; ++c) clusters[c].id = c;
  for (int v = 0; v < n; ++v) {
    HloCluster& c = clusters[con.cluster_of[v]];
    c.instructions.push_back(nodes[v]);
    c.plugin = caps[rank[v]].plugin;
    c.handle = caps[rank[v]].handle;
  }
  for (HloCluster& c : clusters) {
    const int own = rank[index.at(c.instructions.front())];
    for (int r = own + 1; r < static_cast<int>(caps.size()); ++r) {
      bool all = true;
      for (const HloInstruction* i : c.instructions) all = all && caps[r].Supports(i->name());
      if (all) c.fallbacks.push_back({caps[r].plugin, caps[r].handle});
    }
  }
  auto cluster_of = [&](const HloInstruction* i) {
    auto it = index.find(i);
    return it == index.end() ? -1 : con.cluster_of[it->second];
  };
  const std::string callees = CalleesText(module.ToString());
  for (HloCluster& c : clusters) {
    std::set<const HloInstruction*> in_seen, out_seen;
    for (const HloInstruction* i : c.instructions) {
      for (const HloInstruction* op : i->operands()) {
        bool outside =
            op->opcode() == HloOpcode::kParameter || (!IsFree(*op) && cluster_of(op) != c.id);
        if (outside && in_seen.insert(op).second) c.inputs.push_back(op);
      }
    }
    for (const HloInstruction* i : c.instructions) {
      bool used = i == entry->root();
      for (const HloInstruction* u : i->users()) {
        used = used || (live.count(u) && cluster_of(u) != c.id);
      }
      if (used && out_seen.insert(i).second) c.outputs.push_back(i);
    }
    absl::StatusOr<std::string> text = ClusterModuleText(c, callees);
    if (!text.ok()) return text.status();
    // The text must stand on its own: parse and verify it here, where a mistake is ours.
    absl::StatusOr<std::unique_ptr<HloModule>> parsed =
        ParseHloModule(*text, fmt::format("cluster_{}", c.id));
    absl::Status ok = parsed.ok() ? VerifyModule(**parsed) : parsed.status();
    if (!ok.ok()) {
      return absl::InternalError(fmt::format("cluster_{} of '{}' does not form a valid module: {}",
                                             c.id, module.name(), std::string(ok.message())));
    }
    c.module_text = std::move(*text);
  }
  return clusters;
}

absl::StatusOr<ModulePlacement> PlaceModule(const PluginRegistry& registry, const HloModule& module,
                                            const PartitionOptions& options,
                                            std::string_view module_text) {
  const std::string printed = module_text.empty() ? module.ToString() : std::string();
  const std::string_view text = module_text.empty() ? std::string_view(printed) : module_text;
  std::vector<const PluginEntry*> candidates = registry.Candidates();
  ModulePlacement placement;
  if (candidates.empty()) {
    absl::StatusOr<Plugin*> p = registry.Select("auto", text);  // says why there is none
    if (!p.ok()) return p.status();
    return absl::InternalError("no candidate plugin, yet auto selection succeeded");
  }
  // The common case costs one capability query, as `Select("auto")` always did.
  absl::StatusOr<CapabilityReport> top = candidates.front()->plugin->Capability(text);
  if ((top.ok() && top->unsupported.empty()) ||
      (!top.ok() && top.status().code() == absl::StatusCode::kUnimplemented)) {
    placement.whole = candidates.front()->plugin.get();
    return placement;
  }
  // Every other plugin is asked once; the top plugin's answer is reused.
  std::vector<std::string> skipped;
  std::vector<PluginCapability> caps;
  for (const PluginEntry* e : candidates) {
    PluginCapability cap;
    if (ToCapability(*e, e == candidates.front() ? top : e->plugin->Capability(text), &cap,
                     &skipped)) {
      caps.push_back(std::move(cap));
    }
  }
  absl::StatusOr<std::vector<HloCluster>> clusters = PartitionModule(module, caps, options);
  if (!clusters.ok()) {
    std::string extra =
        skipped.empty() ? ""
                        : fmt::format(" (capability query failed: {})", fmt::join(skipped, "; "));
    return absl::Status(clusters.status().code(), std::string(clusters.status().message()) + extra);
  }
  if (clusters->size() <= 1) {
    // One plugin runs it all after all: no partitioning overhead.
    Plugin* p = clusters->empty() ? caps.front().handle : clusters->front().handle;
    placement.whole = p;
    return placement;
  }
  placement.clusters = std::move(*clusters);
  return placement;
}

}  // namespace kiln
