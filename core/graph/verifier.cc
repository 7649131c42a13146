// Graph verification, topological order and shape inference.
#include "core/graph/verifier.h"

#include <algorithm>
#include <functional>

#include "fmt/format.h"

namespace kiln::graph {
namespace {

std::string Where(const Node& n) {
  std::string loc = n.loc.ToString();
  return fmt::format("{}node {} ({})", loc.empty() ? "" : loc + ": ", n.name, n.op);
}

absl::Status NodeError(const Node& n, const std::string& msg) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", Where(n), msg));
}

absl::Status CheckAttrs(const Node& n, const OpDef& def) {
  for (const auto& [name, value] : n.attrs) {
    if (name == "T") {
      if (value.kind() != AttrKind::kType) return NodeError(n, "attribute 'T' must be a type");
      continue;
    }
    const AttrSpec* spec = def.FindAttr(name);
    if (spec == nullptr) return NodeError(n, fmt::format("unknown attribute '{}'", name));
    bool ok = value.kind() == spec->kind;
    if (spec->numbers) {
      ok = value.kind() == AttrKind::kInt || value.kind() == AttrKind::kFloat ||
           value.kind() == AttrKind::kInts || value.kind() == AttrKind::kFloats;
    }
    if (!ok) {
      return NodeError(n, fmt::format("attribute '{}' must be {}, got {} {}", name,
                                      spec->numbers ? "a number or list of numbers"
                                                    : std::string(AttrKindName(spec->kind)),
                                      AttrKindName(value.kind()), value.ToString()));
    }
  }
  for (const AttrSpec& spec : def.attrs) {
    if (spec.required && n.FindAttr(spec.name) == nullptr) {
      return NodeError(
          n, fmt::format("missing attribute '{}' ({})", spec.name, AttrKindName(spec.kind)));
    }
  }
  return absl::OkStatus();
}

// Reference inputs (Assign's first, ...) must come straight from a variable (VariableV2).
absl::Status CheckReferenceInputs(const Graph& g, const Node& n) {
  const OpRegistry& reg = OpRegistry::Global();
  const int refs = reg.Find(n.op)->num_ref_inputs;
  for (int k = 0; k < refs && k < static_cast<int>(n.inputs.size()); ++k) {
    const Node* src = g.Find(n.inputs[k].node);
    if (!reg.Find(src->op)->is_variable) {
      return NodeError(n, fmt::format("input {} must be a reference to a variable (VariableV2), "
                                      "got {} ({})",
                                      k, n.inputs[k].ToString(), src->op));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyStructure(const Graph& g) {
  const OpRegistry& reg = OpRegistry::Global();
  std::map<std::string, const Node*> seen;
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (!seen.emplace(n.name, &n).second) return NodeError(n, "name defined twice");
    const OpDef* def = reg.Find(n.op);
    if (def == nullptr) return NodeError(n, fmt::format("unknown op '{}'", n.op));
    if (absl::Status s = CheckAttrs(n, *def); !s.ok()) return s;
    const int count = static_cast<int>(n.inputs.size());
    if (count < def->min_inputs || (def->max_inputs >= 0 && count > def->max_inputs)) {
      return NodeError(n, fmt::format("takes {} input{}, got {}",
                                      def->min_inputs == def->max_inputs
                                          ? fmt::format("{}", def->min_inputs)
                                          : fmt::format("{}..{}", def->min_inputs, def->max_inputs),
                                      def->max_inputs == 1 ? "" : "s", count));
    }
  }
  auto check_edge = [&](const Edge& e, const std::string& where) -> absl::Status {
    const Node* src = g.Find(e.node);
    if (src == nullptr)
      return absl::InvalidArgumentError(fmt::format("{}: unknown node '{}'", where, e.node));
    const OpDef* def = reg.Find(src->op);
    if (e.index < 0 || e.index >= def->num_outputs) {
      return absl::InvalidArgumentError(fmt::format("{}: {} has {} output{}, no output {}", where,
                                                    src->name, def->num_outputs,
                                                    def->num_outputs == 1 ? "" : "s", e.index));
    }
    return absl::OkStatus();
  };
  for (const auto& np : g.nodes()) {
    for (const Edge& e : np->inputs) {
      if (absl::Status s = check_edge(e, Where(*np) + ": input"); !s.ok()) return s;
    }
    for (const std::string& c : np->control_inputs) {
      if (g.Find(c) == nullptr) {
        return NodeError(*np, fmt::format("control input: unknown node '{}'", c));
      }
    }
    if (absl::Status s = CheckReferenceInputs(g, *np); !s.ok()) return s;
  }
  if (g.outputs().empty()) return absl::InvalidArgumentError("the graph has no outputs");
  std::string out_where = g.outputs_loc.ToString();
  for (const Edge& e : g.outputs()) {
    if (absl::Status s = check_edge(e, (out_where.empty() ? "" : out_where + ": ") + "outputs");
        !s.ok()) {
      return s;
    }
  }
  return TopologicalOrder(g).status();
}

absl::StatusOr<std::vector<const Node*>> TopologicalOrder(const Graph& g) {
  // Depth-first from each node in text order; a grey node met again closes a cycle.
  enum Mark { kWhite, kGrey, kBlack };
  std::map<std::string, Mark> mark;
  std::vector<const Node*> order, stack;
  std::function<absl::Status(const Node&)> visit = [&](const Node& n) -> absl::Status {
    Mark& m = mark[n.name];
    if (m == kBlack) return absl::OkStatus();
    if (m == kGrey) {
      auto it = std::find(stack.begin(), stack.end(), &n);
      std::string path;
      for (; it != stack.end(); ++it) path += (*it)->name + " -> ";
      return NodeError(n, fmt::format("cycle: {}{}", path, n.name));
    }
    m = kGrey;
    stack.push_back(&n);
    std::vector<std::string> preds;
    for (const Edge& e : n.inputs) preds.push_back(e.node);
    for (const std::string& c : n.control_inputs) preds.push_back(c);
    for (const std::string& p : preds) {
      if (const Node* pn = g.Find(p)) {
        if (absl::Status s = visit(*pn); !s.ok()) return s;
      }
    }
    stack.pop_back();
    mark[n.name] = kBlack;
    order.push_back(&n);
    return absl::OkStatus();
  };
  for (const auto& np : g.nodes()) {
    if (absl::Status s = visit(*np); !s.ok()) return s;
  }
  return order;
}

absl::StatusOr<ShapeMap> InferShapes(const Graph& g,
                                     const std::map<std::string, ValueInfo>& feeds) {
  absl::StatusOr<std::vector<const Node*>> order = TopologicalOrder(g);
  if (!order.ok()) return order.status();
  const OpRegistry& reg = OpRegistry::Global();
  ShapeMap shapes;
  for (const Node* n : *order) {
    const OpDef* def = reg.Find(n->op);
    if (def == nullptr) return NodeError(*n, fmt::format("unknown op '{}'", n->op));
    std::vector<ValueInfo> in;
    for (const Edge& e : n->inputs) in.push_back(shapes.at(e.node).at(e.index));
    absl::StatusOr<std::vector<ValueInfo>> out = def->shape_fn(*n, in);
    if (!out.ok()) return NodeError(*n, std::string(out.status().message()));
    if (auto it = feeds.find(n->name); it != feeds.end() && n->op == "Placeholder") {
      const ValueInfo& want = (*out)[0];
      const ValueInfo& got = it->second;
      bool ok = want.dtype == got.dtype && want.shape.rank() == got.shape.rank();
      for (int i = 0; ok && i < want.shape.rank(); ++i) {
        ok = want.shape.dims[i] < 0 || want.shape.dims[i] == got.shape.dims[i];
      }
      if (!ok) {
        return NodeError(*n, fmt::format("fed {}, declared {}", got.ToString(), want.ToString()));
      }
      (*out)[0] = got;
    }
    if (const AttrValue* t = n->FindAttr("T"); t != nullptr && !out->empty() &&
                                               t->kind() == AttrKind::kType &&
                                               t->type() != (*out)[0].dtype) {
      return NodeError(*n,
                       fmt::format("T={} but the result type is {}", PrimitiveTypeName(t->type()),
                                   PrimitiveTypeName((*out)[0].dtype)));
    }
    shapes[n->name] = std::move(*out);
  }
  return shapes;
}

absl::Status VerifyGraph(const Graph& g) {
  if (absl::Status s = VerifyStructure(g); !s.ok()) return s;
  return InferShapes(g).status();
}

}  // namespace kiln::graph
