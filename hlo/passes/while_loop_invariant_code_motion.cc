// Hoisting loop-invariant work out of while bodies (see while_loop_invariant_code_motion.h).
#include "hlo/passes/while_loop_invariant_code_motion.h"

#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/fusion_util.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Ops worth nothing by themselves: they move or replicate data a kernel reads anyway.
bool OnlyMovesData(HloOpcode op) {
  switch (op) {
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kIota:
    case HloOpcode::kConstant:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCopy:
      return true;
    default:
      return false;
  }
}

bool MayHoist(const HloInstruction& h) {
  if (HasSideEffect(h)) return false;
  // A custom call without effects is a computation like any other (JAX's LAPACK calls: the LU
  // of a matrix the loop does not change, inverse iteration's); of a tuple result the loop
  // carries the elements it reads.
  if (h.opcode() == HloOpcode::kCustomCall) {
    if (h.shape().IsArray()) return true;
    if (!h.shape().IsTuple()) return false;
    for (const Shape& e : h.shape().tuple_shapes())
      if (!e.IsArray()) return false;
    return true;
  }
  if (!h.shape().IsArray()) return false;
  switch (h.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
    case HloOpcode::kRng:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kRngGetAndUpdateState:
      return false;
    default:
      return !IsCollectiveOpcode(h.opcode());
  }
}

// Computations called by more than one instruction of the module.
absl::flat_hash_set<const HloComputation*> SharedComputations(const HloModule& module) {
  absl::flat_hash_map<const HloComputation*, int> calls;
  for (const HloComputation* comp : module.computations())
    for (const HloInstruction* h : comp->instructions())
      for (const HloComputation* c : h->called_computations()) ++calls[c];
  absl::flat_hash_set<const HloComputation*> shared;
  for (const auto& [c, n] : calls)
    if (n > 1) shared.insert(c);
  return shared;
}

// Adds get-tuple-element(tuple), index=i, of shape `s` (the element's, layout included).
HloInstruction* AddElement(HloComputation* comp, NameUniquer& names, HloInstruction* tuple,
                           int64_t i, const Shape& s) {
  HloInstruction* g = AddArrayInstruction(comp, names, HloOpcode::kGetTupleElement,
                                          s.element_type(), s.dimensions(), {tuple}, s);
  *g->mutable_shape() = s;
  g->mutable_attrs().tuple_index = i;
  return g;
}

bool Hoist(HloInstruction* loop, NameUniquer& names) {
  HloComputation* body = loop->while_body();
  HloComputation* cond = loop->while_condition();
  HloComputation* parent = loop->parent();
  if (cond->num_parameters() != 1 || loop->operand_count() != 1) return false;
  // Empty too when the body is not one tuple parameter to a tuple root (LoopInvariants).
  const absl::flat_hash_set<const HloInstruction*> invariant = LoopInvariants(*body);
  if (invariant.empty()) return false;
  HloInstruction* param = body->parameter(0);
  HloInstruction* root = body->root();
  const int n = param->shape().tuple_size();
  std::vector<HloInstruction*> order = body->MakeInstructionPostOrder();
  // What to carry: invariant values some non-invariant instruction reads, where a value that
  // only moves data hands the choice down to its operands.
  auto read_by_loop = [&](const HloInstruction* h) {
    for (const HloInstruction* u : h->users())
      if (!invariant.contains(u)) return true;
    return false;
  };
  std::vector<HloInstruction*> carried;
  absl::flat_hash_set<const HloInstruction*> chosen;
  std::vector<HloInstruction*> pending;
  for (HloInstruction* h : order)
    if (invariant.contains(h) && read_by_loop(h)) pending.push_back(h);
  while (!pending.empty()) {
    HloInstruction* h = pending.back();
    pending.pop_back();
    if (h->opcode() == HloOpcode::kConstant || h->opcode() == HloOpcode::kIota ||
        (h->opcode() == HloOpcode::kGetTupleElement && h->operand(0) == param))
      continue;  // a source
    // An element of a hoisted tuple (a custom call's) is carried itself; the tuple cannot be.
    if (h->opcode() == HloOpcode::kGetTupleElement) {
      if (chosen.insert(h).second) carried.push_back(h);
      continue;
    }
    if (!h->shape().IsArray()) return false;
    if (OnlyMovesData(h->opcode())) {
      for (HloInstruction* o : h->operands())
        if (o->opcode() != HloOpcode::kConstant) pending.push_back(o);
      continue;
    }
    if (chosen.insert(h).second) carried.push_back(h);
  }
  if (carried.empty()) return false;

  // Before the loop: each carried value's invariant cone, from the loop's initial state.
  HloInstruction* init = loop->operand(0);
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> outside;
  auto element = [&](int64_t i) -> HloInstruction* {
    if (init->opcode() == HloOpcode::kTuple) return init->operand(static_cast<int>(i));
    return AddElement(parent, names, init, i, init->shape().tuple_shapes(static_cast<int>(i)));
  };
  std::function<HloInstruction*(const HloInstruction*)> clone =
      [&](const HloInstruction* h) -> HloInstruction* {
    auto it = outside.find(h);
    if (it != outside.end()) return it->second;
    HloInstruction* c;
    if (h->opcode() == HloOpcode::kGetTupleElement && h->operand(0) == param) {
      c = element(h->tuple_index());
    } else {
      std::vector<HloInstruction*> operands;
      for (const HloInstruction* o : h->operands()) operands.push_back(clone(o));
      c = AddWithFreshName(parent, CloneWithOperands(*h, operands), names, h->name());
    }
    outside[h] = c;
    return c;
  };
  std::vector<HloInstruction*> state;
  for (int i = 0; i < n; ++i) state.push_back(element(i));
  std::vector<Shape> shapes = param->shape().tuple_shapes();
  for (HloInstruction* h : carried) {
    state.push_back(clone(h));
    shapes.push_back(h->shape());
  }
  const Shape tuple_shape = Shape::Tuple(shapes);
  auto new_init = std::make_unique<HloInstruction>(HloOpcode::kTuple, tuple_shape, state);
  HloInstruction* new_state = AddWithFreshName(parent, std::move(new_init), names, "tuple");

  // In the body: the carried values read from the state, and passed through.
  *param->mutable_shape() = tuple_shape;
  *cond->parameter(0)->mutable_shape() = tuple_shape;
  for (size_t j = 0; j < carried.size(); ++j) {
    HloInstruction* h = carried[j];
    HloInstruction* g = AddElement(body, names, param, n + static_cast<int64_t>(j), h->shape());
    h->ReplaceAllUsesWith(g);
    root->AppendOperand(g);
  }
  *root->mutable_shape() = tuple_shape;
  RemoveDeadFrom(body, carried);

  // The loop's own value gains the elements: its old users read the first n.
  std::vector<HloInstruction*> users = loop->users();
  const bool was_root = parent->root() == loop;
  const Shape old_shape = loop->shape();
  loop->ReplaceOperandWith(0, new_state);
  *loop->mutable_shape() = tuple_shape;
  bool needs_tuple = was_root;
  for (const HloInstruction* u : users) needs_tuple |= u->opcode() != HloOpcode::kGetTupleElement;
  if (needs_tuple) {
    std::vector<HloInstruction*> parts;
    for (int i = 0; i < n; ++i)
      parts.push_back(AddElement(parent, names, loop, i, old_shape.tuple_shapes(i)));
    HloInstruction* old_value = AddWithFreshName(
        parent, std::make_unique<HloInstruction>(HloOpcode::kTuple, old_shape, parts), names,
        "tuple");
    for (HloInstruction* u : users) {
      if (u->opcode() == HloOpcode::kGetTupleElement) continue;
      for (int k = 0; k < u->operand_count(); ++k)
        if (u->operand(k) == loop) u->ReplaceOperandWith(k, old_value);
    }
    if (was_root) parent->set_root(old_value);
  }
  if (init->opcode() == HloOpcode::kTuple) RemoveDeadFrom(parent, {init});
  return true;
}

}  // namespace

absl::flat_hash_set<const HloInstruction*> LoopInvariants(const HloComputation& body) {
  absl::flat_hash_set<const HloInstruction*> invariant;
  const HloInstruction* param = body.num_parameters() == 1 ? body.parameter(0) : nullptr;
  const HloInstruction* root = body.root();
  if (param == nullptr || !param->shape().IsTuple() || root == nullptr ||
      root->opcode() != HloOpcode::kTuple || root->operand_count() != param->shape().tuple_size())
    return invariant;
  // Invariant sources: the state elements the body passes through, read from its parameter.
  for (const HloInstruction* u : param->users()) {
    if (u->opcode() != HloOpcode::kGetTupleElement) continue;
    const int64_t i = u->tuple_index();
    const HloInstruction* out = root->operand(static_cast<int>(i));
    if (out->opcode() == HloOpcode::kGetTupleElement && out->operand(0) == param &&
        out->tuple_index() == i)
      invariant.insert(u);
  }
  if (invariant.empty()) return invariant;
  for (const HloInstruction* h : body.MakeInstructionPostOrder()) {
    if (invariant.contains(h) || h == root) continue;
    // Constants and iotas (an identity matrix's) are invariant sources, never carried.
    if (h->opcode() == HloOpcode::kConstant || h->opcode() == HloOpcode::kIota) {
      invariant.insert(h);
      continue;
    }
    if (!MayHoist(*h) || !h->control_predecessors().empty() || h->operand_count() == 0) continue;
    bool all = true;
    for (const HloInstruction* o : h->operands()) all = all && invariant.contains(o);
    if (all) invariant.insert(h);
  }
  return invariant;
}

absl::StatusOr<bool> WhileLoopInvariantCodeMotion::Run(HloModule& module) {
  NameUniquer names(module);
  const absl::flat_hash_set<const HloComputation*> shared = SharedComputations(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    for (HloInstruction* h : comp->MakeInstructionPostOrder()) {
      if (h->opcode() != HloOpcode::kWhile || h->called_computations().size() != 2 ||
          shared.contains(h->while_body()) || shared.contains(h->while_condition()))
        continue;
      changed |= Hoist(h, names);
    }
  }
  return changed;
}

}  // namespace kiln
