// Shared machinery of the fusion passes: cost classes, names, reachability, fusion building.
#include "hlo/passes/fusion_util.h"

#include <functional>

#include "absl/strings/str_cat.h"

namespace kiln {

FusionNameTable::FusionNameTable(const HloModule& module) {
  for (HloComputation* c : module.computations()) {
    used_.insert(c->name());
    for (HloInstruction* i : c->instructions()) used_.insert(i->name());
  }
}

std::string FusionNameTable::Get(std::string_view base) {
  std::string b(base);
  if (used_.insert(b).second) return b;
  int64_t& n = next_[b];
  while (true) {
    std::string cand = absl::StrCat(b, ".", ++n);
    if (used_.insert(cand).second) return cand;
  }
}

bool IsExpensive(const HloInstruction& instr) {
  if (IsCostlyElementwiseOpcode(instr.opcode())) return true;
  switch (instr.opcode()) {
    case HloOpcode::kDot:
    case HloOpcode::kConvolution:
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow:
    case HloOpcode::kSort:
    case HloOpcode::kFft:
    case HloOpcode::kTriangularSolve:
    case HloOpcode::kCholesky:
    case HloOpcode::kCustomCall:
    case HloOpcode::kWhile:
    case HloOpcode::kCall:
    case HloOpcode::kConditional:
    case HloOpcode::kMap:
    case HloOpcode::kScatter:
    case HloOpcode::kSelectAndScatter:
    case HloOpcode::kBatchNormTraining:
    case HloOpcode::kBatchNormInference:
    case HloOpcode::kBatchNormGrad:
    case HloOpcode::kRng:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kTopK:
      return true;
    case HloOpcode::kFusion:
      for (HloInstruction* i : instr.fused_computation()->instructions())
        if (IsExpensive(*i)) return true;
      return false;
    default:
      return false;
  }
}

bool IsCheapToDuplicate(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kConstant:
      return instr.shape().IsArray() && instr.shape().num_elements() <= 1;
    case HloOpcode::kIota:
      return true;
    case HloOpcode::kBroadcast: {
      const HloInstruction* op = instr.operand(0);
      return op->shape().IsArray() &&
             (op->shape().num_elements() <= 1 || op->opcode() == HloOpcode::kConstant);
    }
    default:
      return false;
  }
}

FusionKind KindForFusedComputation(const HloComputation& fused) {
  bool has_reduce = false;
  for (HloInstruction* i : fused.instructions()) {
    if (i->opcode() == HloOpcode::kDot || i->opcode() == HloOpcode::kConvolution)
      return FusionKind::kOutput;
    if (i->opcode() == HloOpcode::kReduce) has_reduce = true;
  }
  return has_reduce ? FusionKind::kInput : FusionKind::kLoop;
}

bool Reaches(const HloInstruction* from, const HloInstruction* to) {
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack{from};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    for (const HloInstruction* u : x->users()) {
      if (u == to) return true;
      if (seen.insert(u).second) stack.push_back(u);
    }
  }
  return false;
}

std::unique_ptr<HloInstruction> CloneWithOperands(const HloInstruction& src,
                                                  const std::vector<HloInstruction*>& operands) {
  auto c = std::make_unique<HloInstruction>(src.opcode(), src.shape(), operands);
  c->mutable_attrs() = src.attrs();
  for (HloComputation* called : src.called_computations()) c->AppendCalledComputation(called);
  c->set_name(src.name());
  return c;
}

namespace {

// Members in an order where operands come before users.
std::vector<HloInstruction*> TopoOrder(const std::vector<HloInstruction*>& members,
                                       const absl::flat_hash_set<HloInstruction*>& set) {
  std::vector<HloInstruction*> order;
  absl::flat_hash_set<HloInstruction*> seen;
  std::function<void(HloInstruction*)> visit = [&](HloInstruction* m) {
    if (!seen.insert(m).second) return;
    for (HloInstruction* o : m->operands())
      if (set.contains(o)) visit(o);
    order.push_back(m);
  };
  for (HloInstruction* m : members) visit(m);
  return order;
}

}  // namespace

BuiltFusion BuildFusion(HloComputation* comp, const FusionSpec& spec, FusionNameTable& names) {
  absl::flat_hash_set<HloInstruction*> member_set(spec.members.begin(), spec.members.end());
  std::vector<HloInstruction*> order = TopoOrder(spec.members, member_set);

  auto fc = std::make_unique<HloComputation>(spec.computation_name);
  fc->set_is_fusion_computation(true);
  std::vector<HloInstruction*> fusion_operands;
  absl::flat_hash_map<HloInstruction*, HloInstruction*> param_of, value_of;
  absl::flat_hash_set<std::string> fc_names;  // of the instructions cloned into fc

  auto value = [&](HloInstruction* o) -> HloInstruction* {
    if (member_set.contains(o)) return value_of.at(o);
    if (auto it = param_of.find(o); it != param_of.end()) return it->second;
    int64_t n = static_cast<int64_t>(fusion_operands.size());
    HloInstruction* p = fc->AddInstruction(
        HloInstruction::CreateParameter(n, o->shape(), names.Get(absl::StrCat("param_", n))));
    fusion_operands.push_back(o);
    param_of[o] = p;
    return p;
  };

  for (HloInstruction* m : order) {
    if (m->opcode() == HloOpcode::kFusion) {
      // Inline the member's body; its parameters become the values of its operands.
      HloComputation* body = m->fused_computation();
      absl::flat_hash_map<const HloInstruction*, HloInstruction*> map;
      for (int j = 0; j < m->operand_count(); ++j) map[body->parameter(j)] = value(m->operand(j));
      for (HloInstruction* x : body->MakeInstructionPostOrder()) {
        if (x->opcode() == HloOpcode::kParameter) continue;
        std::vector<HloInstruction*> ops;
        for (HloInstruction* o : x->operands()) ops.push_back(map.at(o));
        auto clone = CloneWithOperands(*x, ops);
        // Fused bodies may reuse each other's names (param_0.1 and add in each of XLA's).
        if (spec.survivors.contains(m) || !fc_names.insert(x->name()).second)
          clone->set_name(names.Get(x->name()));
        map[x] = fc->AddInstruction(std::move(clone));
      }
      value_of[m] = map.at(body->root());
      continue;
    }
    if (m->opcode() == HloOpcode::kGetTupleElement && member_set.contains(m->operand(0)) &&
        value_of.at(m->operand(0))->opcode() == HloOpcode::kTuple) {
      // An output of an inlined multi-output member: the value itself.
      value_of[m] = value_of.at(m->operand(0))->operand(m->tuple_index());
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (HloInstruction* o : m->operands()) ops.push_back(value(o));
    auto clone = CloneWithOperands(*m, ops);
    if (spec.survivors.contains(m) || !fc_names.insert(m->name()).second)
      clone->set_name(names.Get(m->name()));
    value_of[m] = fc->AddInstruction(std::move(clone));
  }

  BuiltFusion built;
  std::vector<HloInstruction*> leaves;
  for (HloInstruction* out : spec.outputs) {
    built.output_offsets.push_back(static_cast<int64_t>(leaves.size()));
    HloInstruction* v = value_of.at(out);
    if (out->shape().IsTuple() && v->opcode() == HloOpcode::kTuple) {
      for (HloInstruction* leaf : v->operands()) leaves.push_back(leaf);
    } else {
      leaves.push_back(v);
    }
  }
  HloInstruction* root;
  if (spec.outputs.size() == 1 && !spec.outputs[0]->shape().IsTuple()) {
    root = leaves[0];
  } else {
    std::vector<Shape> shapes;
    for (HloInstruction* l : leaves) shapes.push_back(l->shape());
    auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple(shapes), leaves);
    t->set_name(names.Get("tuple"));
    root = fc->AddInstruction(std::move(t));
  }
  fc->set_root(root);
  // Inlined multi-output roots are now unused tuples: drop them.
  for (bool again = true; again;) {
    again = false;
    for (HloInstruction* x : fc->instructions()) {
      if (x != root && x->user_count() == 0 && x->opcode() != HloOpcode::kParameter) {
        names.Release(x->name());
        fc->RemoveInstruction(x);
        again = true;
        break;
      }
    }
  }

  HloComputation* body = comp->parent()->AddComputation(std::move(fc));
  auto f = std::make_unique<HloInstruction>(HloOpcode::kFusion, root->shape(), fusion_operands);
  f->mutable_attrs().fusion_kind = spec.kind;
  f->AppendCalledComputation(body);
  f->set_name(spec.name);
  built.fusion = comp->AddInstruction(std::move(f));
  return built;
}

void RemoveDeadMembers(HloComputation* comp, const std::vector<HloInstruction*>& members,
                       absl::flat_hash_set<const HloInstruction*>* removed) {
  absl::flat_hash_set<HloInstruction*> set(members.begin(), members.end());
  std::vector<HloInstruction*> order = TopoOrder(members, set);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* m = *it;
    if (m->user_count() == 0 && comp->root() != m) {
      if (removed) removed->insert(m);
      comp->RemoveInstruction(m);
    }
  }
}

std::vector<HloComputation*> FusibleComputations(const HloModule& module) {
  absl::flat_hash_set<const HloComputation*> embedded;
  for (HloComputation* c : module.computations()) {
    for (HloInstruction* i : c->instructions()) {
      switch (i->opcode()) {
        case HloOpcode::kWhile:
        case HloOpcode::kConditional:
        case HloOpcode::kCall:
          break;
        default:
          for (HloComputation* callee : i->called_computations()) embedded.insert(callee);
      }
    }
  }
  std::vector<HloComputation*> out;
  for (HloComputation* c : module.MakeComputationPostOrder())
    if (!c->is_fusion_computation() && !embedded.contains(c)) out.push_back(c);
  return out;
}

absl::flat_hash_set<const HloInstruction*> InstructionsWithControlEdges(
    const HloComputation& comp) {
  absl::flat_hash_set<const HloInstruction*> out;
  for (HloInstruction* i : comp.instructions()) {
    if (!i->control_predecessors().empty()) {
      out.insert(i);
      for (HloInstruction* p : i->control_predecessors()) out.insert(p);
    }
  }
  return out;
}

}  // namespace kiln
