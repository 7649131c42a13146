// Graph -> HLO lowering driver: parameters, per-node lowering in order, the root tuple.
#include "core/graph/lowering.h"

#include <set>

#include "core/graph/verifier.h"
#include "fmt/format.h"
#include "hlo/computation.h"

namespace kiln::graph {

absl::StatusOr<std::unique_ptr<HloModule>> LowerNodes(const Graph& g,
                                                      const std::vector<const Node*>& nodes,
                                                      const std::vector<Edge>& inputs,
                                                      const std::vector<ValueInfo>& input_infos,
                                                      const std::vector<Edge>& outputs,
                                                      const std::string& name) {
  const OpRegistry& reg = OpRegistry::Global();
  auto module = std::make_unique<HloModule>(name);
  auto entry = std::make_unique<HloComputation>("main");
  std::map<std::string, std::vector<HloInstruction*>> values;  // node -> HLO of its outputs
  std::map<std::string, std::vector<ValueInfo>> infos;
  auto lookup = [&](const Edge& e) -> HloInstruction* {
    auto it = values.find(e.node);
    return it == values.end() || e.index >= static_cast<int>(it->second.size())
               ? nullptr
               : it->second[e.index];
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = input_infos[i];
    if (!info.shape.IsFullyDefined()) {
      return absl::InvalidArgumentError(
          fmt::format("input {} has shape {} with unknown dimensions; feed a concrete shape",
                      inputs[i].ToString(), info.ToString()));
    }
    std::string pname =
        inputs[i].node + (inputs[i].index ? fmt::format("_{}", inputs[i].index) : "");
    HloInstruction* p = entry->AddInstruction(HloInstruction::CreateParameter(
        static_cast<int64_t>(i), LowerContext::HloShape(info.dtype, info.shape.dims), pname));
    std::vector<HloInstruction*>& slot = values[inputs[i].node];
    std::vector<ValueInfo>& islot = infos[inputs[i].node];
    if (static_cast<int>(slot.size()) <= inputs[i].index) {
      slot.resize(inputs[i].index + 1, nullptr);
      islot.resize(inputs[i].index + 1);
    }
    slot[inputs[i].index] = p;
    islot[inputs[i].index] = info;
  }
  for (const Node* n : nodes) {
    const OpDef* def = reg.Find(n->op);
    if (def == nullptr || !def->compilable(*n)) {
      return absl::InvalidArgumentError(fmt::format("node {} ({}): {}, cannot be compiled", n->name,
                                                    n->op,
                                                    def ? def->host_only_reason : "unknown op"));
    }
    std::vector<HloInstruction*> in;
    std::vector<ValueInfo> in_infos;
    for (const Edge& e : n->inputs) {
      HloInstruction* v = lookup(e);
      if (v == nullptr) {
        return absl::InternalError(
            fmt::format("node {}: input {} not lowered", n->name, e.ToString()));
      }
      in.push_back(v);
      in_infos.push_back(infos[e.node][e.index]);
    }
    absl::StatusOr<std::vector<ValueInfo>> out = def->shape_fn(*n, in_infos);
    if (!out.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("node {} ({}): {}", n->name, n->op, std::string(out.status().message())));
    }
    LowerContext ctx(module.get(), entry.get(), *n, in, *out);
    absl::StatusOr<std::vector<HloInstruction*>> lowered = def->lower(ctx);
    if (!lowered.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("node {} ({}): {}", n->name, n->op, std::string(lowered.status().message())));
    }
    values[n->name] = *lowered;
    infos[n->name] = *out;
  }
  std::vector<HloInstruction*> roots;
  for (const Edge& e : outputs) {
    HloInstruction* v = lookup(e);
    if (v == nullptr)
      return absl::InternalError(fmt::format("output {} not lowered", e.ToString()));
    roots.push_back(v);
  }
  HloInstruction* root = roots.empty() ? nullptr : roots[0];
  if (roots.size() != 1) {
    std::vector<Shape> shapes;
    for (HloInstruction* r : roots) shapes.push_back(r->shape());
    auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple(shapes), roots);
    t->set_name("outputs");
    root = entry->AddInstruction(std::move(t));
  }
  entry->set_root(root);
  module->AddComputation(std::move(entry), /*is_entry=*/true);
  return module;
}

absl::Status CheckAllCompilable(const Graph& g) {
  absl::StatusOr<std::vector<const Node*>> order = TopologicalOrder(g);
  if (!order.ok()) return order.status();
  for (const Node* n : *order) {
    const OpDef* def = OpRegistry::Global().Find(n->op);
    if (def == nullptr || !def->compilable(*n)) {
      return absl::InvalidArgumentError(fmt::format(
          "{}node {} ({}): {}, cannot be compiled", n->loc.line ? n->loc.ToString() + ": " : "",
          n->name, n->op, def ? def->host_only_reason : "unknown op"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HloModule>> LowerToHlo(
    const Graph& g, const std::map<std::string, ValueInfo>& feeds) {
  if (absl::Status s = VerifyStructure(g); !s.ok()) return s;
  absl::StatusOr<std::vector<const Node*>> order = TopologicalOrder(g);
  if (!order.ok()) return order.status();
  if (absl::Status s = CheckAllCompilable(g); !s.ok()) return s;
  absl::StatusOr<ShapeMap> shapes = InferShapes(g, feeds);
  if (!shapes.ok()) return shapes.status();
  std::vector<Edge> inputs;
  std::vector<ValueInfo> input_infos;
  std::vector<const Node*> body;
  for (const Node* p : g.Placeholders()) {
    inputs.push_back({p->name, 0});
    input_infos.push_back(shapes->at(p->name)[0]);
  }
  for (const Node* n : *order) {
    if (n->op != "Placeholder") body.push_back(n);
  }
  return LowerNodes(g, body, inputs, input_infos, g.outputs(), "graph");
}

}  // namespace kiln::graph
