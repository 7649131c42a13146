// Graph partitioning (auto-jit clusters), the compile cache and cluster-by-cluster execution.
#include "core/graph/executor.h"

#include <functional>
#include <iostream>
#include <set>

#include "core/cluster_contraction.h"
#include "core/graph/colocation.h"
#include "core/graph/graph_text.h"
#include "core/graph/lowering.h"
#include "core/graph/verifier.h"
#include "core/module_executable.h"
#include "fmt/format.h"

namespace kiln::graph {
namespace {

bool Compilable(const Node& n) {
  const OpDef* def = OpRegistry::Global().Find(n.op);
  return def != nullptr && def->compilable(n);
}

std::string EdgeKey(const Edge& e) { return e.node + ":" + std::to_string(e.index); }

ValueInfo InfoOf(const Literal& l) {
  return {l.shape().element_type(), TensorShape{l.shape().dimensions()}};
}

}  // namespace

absl::StatusOr<std::vector<Cluster>> PartitionGraph(const Graph& g, const Placement& placement) {
  absl::StatusOr<std::vector<const Node*>> order = TopologicalOrder(g);
  if (!order.ok()) return order.status();
  std::vector<const Node*> nodes;
  for (const Node* n : *order) {
    if (n->op != "Placeholder") nodes.push_back(n);
  }
  // Contraction (core/cluster_contraction.h): compilable nodes are labelled by device (the
  // placer's, else the requested one); host-kernel nodes stay alone.
  std::map<std::string, int> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]->name] = static_cast<int>(i);
  std::vector<std::vector<int>> preds(nodes.size());
  std::vector<int> label(nodes.size(), -1);
  std::vector<std::string> node_device(nodes.size());
  std::map<std::string, int> device_label;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    auto add_pred = [&](const std::string& p) {
      if (auto it = index.find(p); it != index.end()) preds[i].push_back(it->second);
    };
    for (const Edge& e : n.inputs) add_pred(e.node);
    for (const std::string& c : n.control_inputs) add_pred(c);
    auto assigned = placement.find(n.name);
    node_device[i] = assigned != placement.end() ? assigned->second : n.requested_device;
  }
  // Without a placement, a compilable node that requests no device joins its neighbours':
  // the first compilable predecessor's with one, else the first such successor's.
  std::vector<std::vector<int>> succs(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int p : preds[i]) succs[p].push_back(static_cast<int>(i));
  auto inherit = [&](size_t i, const std::vector<int>& from) {
    for (int j : from)
      if (node_device[i].empty() && Compilable(*nodes[j])) node_device[i] = node_device[j];
  };
  for (size_t i = 0; i < nodes.size(); ++i)
    if (Compilable(*nodes[i])) inherit(i, preds[i]);
  for (size_t i = nodes.size(); i-- > 0;)
    if (Compilable(*nodes[i])) inherit(i, succs[i]);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (Compilable(*nodes[i]))
      label[i] =
          device_label.emplace(node_device[i], static_cast<int>(device_label.size())).first->second;
  const Contraction contraction = ContractByLabel(preds, label);
  std::map<std::string, int> cid;  // node -> cluster id (executable order)
  std::map<int, std::string> device;
  for (size_t i = 0; i < nodes.size(); ++i) {
    cid[nodes[i]->name] = contraction.cluster_of[i];
    device[contraction.cluster_of[i]] = node_device[i];
  }
  std::vector<int> sorted(contraction.num_clusters);
  for (int c = 0; c < contraction.num_clusters; ++c) sorted[c] = c;
  std::set<std::string> graph_outputs;
  for (const Edge& e : g.outputs()) graph_outputs.insert(EdgeKey(e));
  std::vector<Cluster> out;
  for (int c : sorted) {
    Cluster cl;
    cl.id = static_cast<int>(out.size());
    for (const Node* n : nodes) {
      if (cid[n->name] == c) cl.nodes.push_back(n);
    }
    for (const Node* n : cl.nodes) {
      if (cl.requested_device.empty()) cl.requested_device = n->requested_device;
    }
    if (!placement.empty()) cl.device = device[c];
    cl.compiled = Compilable(*cl.nodes[0]);
    std::set<std::string> in_seen, out_seen;
    for (const Node* n : cl.nodes) {
      for (const Edge& e : n->inputs) {
        auto it = cid.find(e.node);
        if ((it == cid.end() || it->second != c) && in_seen.insert(EdgeKey(e)).second) {
          cl.inputs.push_back(e);
        }
      }
    }
    const OpRegistry& reg = OpRegistry::Global();
    for (const Node* n : cl.nodes) {
      for (int k = 0; k < reg.Find(n->op)->num_outputs; ++k) {
        Edge e{n->name, k};
        bool used = graph_outputs.count(EdgeKey(e)) > 0;
        for (const Node* m : nodes) {
          if (cid[m->name] == c) continue;
          for (const Edge& me : m->inputs) used |= me == e;
        }
        if (used && out_seen.insert(EdgeKey(e)).second) cl.outputs.push_back(e);
      }
    }
    for (const Node* n : cl.nodes) cl.fingerprint += PrintNode(*n) + "\n";
    for (const Edge& e : cl.inputs) cl.fingerprint += "in " + EdgeKey(e) + "\n";
    for (const Edge& e : cl.outputs) cl.fingerprint += "out " + EdgeKey(e) + "\n";
    out.push_back(std::move(cl));
  }
  return out;
}

std::string ClustersToDot(const Graph& g, const std::vector<Cluster>& clusters) {
  std::string s = "digraph graph_clusters {\n  node [shape=box, fontname=monospace];\n";
  for (const Node* p : g.Placeholders()) {
    s += fmt::format("  \"{}\" [label=\"{}\\nPlaceholder\", shape=ellipse];\n", p->name, p->name);
  }
  for (const Cluster& c : clusters) {
    s += fmt::format("  subgraph cluster_{} {{\n    label=\"{}\"; style={};\n", c.id,
                     c.compiled
                         ? fmt::format("cluster_{}{}", c.id,
                                       !c.device.empty()            ? " on " + c.device
                                       : c.requested_device.empty() ? ""
                                                                    : " @" + c.requested_device)
                         : "host",
                     c.compiled ? "rounded" : "dashed");
    for (const Node* n : c.nodes) {
      s += fmt::format("    \"{}\" [label=\"{}\\n{}\"];\n", n->name, n->name, n->op);
    }
    s += "  }\n";
  }
  for (const auto& n : g.nodes()) {
    for (const Edge& e : n->inputs) {
      s += fmt::format("  \"{}\" -> \"{}\"{};\n", e.node, n->name,
                       e.index ? fmt::format(" [label=\"{}\"]", e.index) : "");
    }
    for (const std::string& c : n->control_inputs) {
      s += fmt::format("  \"{}\" -> \"{}\" [style=dashed];\n", c, n->name);
    }
  }
  return s + "}\n";
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(Graph& graph,
                                                                     const PluginRegistry& registry,
                                                                     ExecutorOptions options) {
  if (absl::Status s = VerifyGraph(graph); !s.ok()) return s;
  std::unique_ptr<GraphExecutor> ex(new GraphExecutor(graph, registry, std::move(options)));
  // Placement: nodes with reference inputs go where their variables live.
  if (absl::Status s = ColocateWithReferences(graph, ex->options_.soft_placement,
                                              ex->options_.log_placement ? &ex->log() : nullptr)
                           .status();
      !s.ok()) {
    return s;
  }
  if (ex->options_.must_compile) {
    // One cluster holding every non-Placeholder node: any host-only node is an error.
    if (absl::Status s = CheckAllCompilable(graph); !s.ok()) return s;
    absl::StatusOr<std::vector<const Node*>> order = TopologicalOrder(graph);
    if (!order.ok()) return order.status();
    Cluster c;
    for (const Node* n : *order) {
      if (n->op != "Placeholder") c.nodes.push_back(n);
    }
    for (const Node* p : graph.Placeholders()) c.inputs.push_back({p->name, 0});
    c.outputs = graph.outputs();
    for (const Node* n : c.nodes) c.fingerprint += PrintNode(*n) + "\n";
    for (const Node* n : c.nodes) {
      if (c.requested_device.empty()) c.requested_device = n->requested_device;
    }
    c.fingerprint += "whole graph\n";
    ex->clusters_.push_back(std::move(c));
  } else {
    Placer placer(registry, {ex->options_.device, ex->options_.soft_placement, ex->options_.log});
    absl::StatusOr<Placement> placement = placer.Place(graph);
    if (!placement.ok()) return placement.status();
    for (const auto& [name, device] : *placement) graph.FindMutable(name)->assigned_device = device;
    absl::StatusOr<std::vector<Cluster>> parts = PartitionGraph(graph, *placement);
    if (!parts.ok()) return parts.status();
    ex->clusters_ = std::move(*parts);
  }
  return ex;
}

std::ostream& GraphExecutor::log() const { return options_.log ? *options_.log : std::cerr; }

absl::StatusOr<const GraphExecutor::Compiled*> GraphExecutor::GetOrCompile(
    const Cluster& c, const std::vector<ValueInfo>& in) {
  std::string device = !c.device.empty()            ? c.device
                       : c.requested_device.empty() ? options_.device
                                                    : c.requested_device;
  if (c.device.empty() && device != options_.device && options_.soft_placement &&
      device != "auto" && !registry_.Get(device).ok()) {
    log() << fmt::format("kiln graph: soft placement: cluster_{} requested '{}' ({}); using {}\n",
                         c.id, device, std::string(registry_.Get(device).status().message()),
                         options_.device);
    device = options_.device;
  }
  std::string key = c.fingerprint + "device " + device + "\n";
  for (const ValueInfo& v : in) key += v.ToString() + ";";
  if (auto it = cache_.find(key); it != cache_.end()) return &it->second;
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      LowerNodes(graph_, c.nodes, c.inputs, in, c.outputs, fmt::format("cluster_{}", c.id));
  if (!module.ok()) return module.status();
  const std::string text = (*module)->ToString();
  absl::StatusOr<Plugin*> plugin = registry_.Select(device, text);
  if (!plugin.ok()) return plugin.status();
  // The one way to compile a module (core passes, then the plugin), on the plugin chosen.
  ModuleCompileOptions compile;
  compile.device = (*plugin)->name();
  compile.core_passes.enabled = options_.core_passes;
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe =
      ModuleExecutable::Compile(registry_, **module, compile);
  if (!exe.ok()) {
    return absl::InvalidArgumentError(fmt::format("cluster_{} on {}: {}", c.id, (*plugin)->name(),
                                                  std::string(exe.status().message())));
  }
  ++compile_count_;
  if (options_.log_compiles) {
    std::vector<std::string> shapes;
    for (const ValueInfo& v : in) shapes.push_back(v.ToString());
    log() << fmt::format("kiln graph: compile #{}: cluster_{} ({} node{}) inputs [{}] on {}\n",
                         compile_count_, c.id, c.nodes.size(), c.nodes.size() == 1 ? "" : "s",
                         fmt::join(shapes, ", "), (*plugin)->name());
  }
  Compiled& slot = cache_[key];
  slot.exe = std::move(*exe);
  return &slot;
}

absl::StatusOr<std::vector<Literal>> GraphExecutor::Run(const std::vector<Literal>& inputs) {
  std::vector<const Node*> placeholders = graph_.Placeholders();
  if (inputs.size() != placeholders.size()) {
    return absl::InvalidArgumentError(
        fmt::format("the graph takes {} input{}, got {}", placeholders.size(),
                    placeholders.size() == 1 ? "" : "s", inputs.size()));
  }
  variables_.Discard();                   // updates staged by an earlier run that failed
  std::map<std::string, Literal> values;  // EdgeKey -> value
  std::map<std::string, ValueInfo> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    feeds[placeholders[i]->name] = InfoOf(inputs[i]);
    values[EdgeKey({placeholders[i]->name, 0})] = inputs[i];
  }
  // Checks the fed types and shapes against the Placeholders (and everything downstream
  // that does not depend on a host op's data-dependent shape).
  if (absl::StatusOr<ShapeMap> s = InferShapes(graph_, feeds); !s.ok()) return s.status();
  for (const Cluster& c : clusters_) {
    std::vector<Literal> args;
    std::vector<ValueInfo> in;
    for (const Edge& e : c.inputs) {
      auto it = values.find(EdgeKey(e));
      if (it == values.end()) return absl::InternalError("value " + e.ToString() + " not computed");
      args.push_back(it->second);
      in.push_back(InfoOf(it->second));
    }
    std::vector<Literal> results;
    std::string where;
    if (!c.compiled) {
      const Node& n = *c.nodes[0];
      const OpDef& def = *OpRegistry::Global().Find(n.op);
      absl::StatusOr<std::vector<Literal>> r =
          def.stateful_kernel ? def.stateful_kernel(n, args, variables_) : def.host_kernel(n, args);
      if (!r.ok()) {
        return absl::InvalidArgumentError(fmt::format("node {} ({}) on host: {}", n.name, n.op,
                                                      std::string(r.status().message())));
      }
      for (const Edge& e : c.outputs) values[EdgeKey(e)] = (*r)[e.index];
      where = "host";
    } else {
      absl::StatusOr<const Compiled*> compiled = GetOrCompile(c, in);
      if (!compiled.ok()) return compiled.status();
      absl::StatusOr<std::vector<Literal>> r = (*compiled)->exe->Execute(args);
      if (!r.ok()) return r.status();
      if (r->size() != c.outputs.size()) {
        return absl::InternalError(fmt::format("cluster_{} returned {} values, expected {}", c.id,
                                               r->size(), c.outputs.size()));
      }
      for (size_t k = 0; k < c.outputs.size(); ++k)
        values[EdgeKey(c.outputs[k])] = std::move((*r)[k]);
      where = (*compiled)->exe->device_names();
    }
    for (const Node* n : c.nodes) graph_.FindMutable(n->name)->assigned_device = where;
    if (options_.log_placement && !placement_logged_) {
      for (const Node* n : c.nodes) {
        log() << fmt::format("kiln graph: node {} ({}) -> {} [{}]\n", n->name, n->op, where,
                             c.compiled ? fmt::format("cluster_{}", c.id) : "host kernel");
      }
    }
  }
  placement_logged_ = true;
  variables_.Commit();
  std::vector<Literal> out;
  for (const Edge& e : graph_.outputs()) out.push_back(values.at(EdgeKey(e)));
  return out;
}

}  // namespace kiln::graph
