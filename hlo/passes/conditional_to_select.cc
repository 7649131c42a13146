// Conditionals of cheap branches as selects (see conditional_to_select.h).
#include "hlo/passes/conditional_to_select.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/fusion_util.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

bool SmallArrays(const Shape& s) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes())
      if (!e.IsArray() || e.num_elements() > ConditionalToSelect::kMaxElements) return false;
    return true;
  }
  return s.IsArray() && s.num_elements() <= ConditionalToSelect::kMaxElements;
}

// Whether computing `branch` unconditionally is cheap and has no effect but its value.
bool CheapBranch(const HloComputation& branch) {
  if (branch.num_parameters() != 1 ||
      branch.instruction_count() > ConditionalToSelect::kMaxInstructions)
    return false;
  for (const HloInstruction* h : branch.instructions()) {
    if (!h->called_computations().empty() || !SmallArrays(h->shape())) return false;
    switch (h->opcode()) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kTuple:
      case HloOpcode::kBroadcast:
      case HloOpcode::kReshape:
        continue;
      default:
        if (!IsElementwiseOpcode(h->opcode())) return false;
    }
  }
  return true;
}

bool Convertible(const HloInstruction& c) {
  if (c.opcode() != HloOpcode::kConditional || c.operand_count() < 2 ||
      !c.control_predecessors().empty() || !SmallArrays(c.shape()))
    return false;
  const Shape& sel = c.operand(0)->shape();
  const size_t branches = c.called_computations().size();
  if (!sel.IsArray() || sel.rank() != 0 || c.operand_count() != static_cast<int64_t>(branches) + 1)
    return false;
  if (!(sel.element_type() == PrimitiveType::PRED && branches == 2) &&
      sel.element_type() != PrimitiveType::S32)
    return false;
  for (const HloComputation* b : c.called_computations())
    if (!CheapBranch(*b)) return false;
  return true;
}

// Copies `branch` into `comp` with its parameter bound to `arg`; a get-tuple-element of a
// tuple takes the tuple's operand directly. Returns the copy of its root.
HloInstruction* InlineBranch(HloComputation* comp, const HloComputation& branch,
                             HloInstruction* arg, NameUniquer& names) {
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> copy;
  copy[branch.parameter(0)] = arg;
  for (HloInstruction* h : branch.MakeInstructionPostOrder()) {
    if (h->opcode() == HloOpcode::kParameter) continue;
    HloInstruction* from = h->operand_count() > 0 ? copy.at(h->operand(0)) : nullptr;
    if (h->opcode() == HloOpcode::kGetTupleElement && from->opcode() == HloOpcode::kTuple) {
      copy[h] = from->operand(static_cast<int>(h->tuple_index()));
      continue;
    }
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* o : h->operands()) operands.push_back(copy.at(o));
    copy[h] = AddWithFreshName(comp, CloneWithOperands(*h, operands), names, h->name());
  }
  return copy.at(branch.root());
}

HloInstruction* Add(HloComputation* comp, NameUniquer& names, HloOpcode op, const Shape& shape,
                    std::vector<HloInstruction*> operands) {
  return AddWithFreshName(comp, std::make_unique<HloInstruction>(op, shape, std::move(operands)),
                          names);
}

// select(pick, a, b) of arrays of one shape (`pick` a pred scalar, broadcast when needed).
HloInstruction* Select(HloComputation* comp, NameUniquer& names, HloInstruction* pick,
                       HloInstruction* a, HloInstruction* b) {
  const Shape& s = a->shape();
  if (s.rank() > 0)
    pick = AddArrayInstruction(comp, names, HloOpcode::kBroadcast, PrimitiveType::PRED,
                               s.dimensions(), {pick}, s);
  return Add(comp, names, HloOpcode::kSelect, s, {pick, a, b});
}

HloInstruction* Element(HloComputation* comp, NameUniquer& names, HloInstruction* t, int64_t i) {
  if (t->opcode() == HloOpcode::kTuple) return t->operand(static_cast<int>(i));
  HloInstruction* g = Add(comp, names, HloOpcode::kGetTupleElement,
                          t->shape().tuple_shapes(static_cast<int>(i)), {t});
  g->mutable_attrs().tuple_index = i;
  return g;
}

void Convert(HloComputation* comp, HloInstruction* c, NameUniquer& names) {
  std::vector<HloInstruction*> results;
  for (size_t b = 0; b < c->called_computations().size(); ++b)
    results.push_back(InlineBranch(comp, *c->called_computations()[b],
                                   c->operand(static_cast<int>(b) + 1), names));
  HloInstruction* sel = c->operand(0);
  // Which branch runs: pred true -> 0; index b -> b, any other -> the last.
  std::vector<HloInstruction*> picks;  // picks[b]: branch b runs, b < last
  if (sel->shape().element_type() == PrimitiveType::PRED) {
    picks.push_back(sel);
  } else {
    for (size_t b = 0; b + 1 < results.size(); ++b)
      picks.push_back(
          AddCompare(comp, names, sel,
                     AddScalarConstant(comp, names, PrimitiveType::S32, static_cast<double>(b)),
                     ComparisonDirection::kEq, {}, sel->shape()));
  }
  auto choose = [&](const std::vector<HloInstruction*>& values) {
    HloInstruction* out = values.back();
    for (size_t b = values.size() - 1; b-- > 0;)
      out = Select(comp, names, picks[b], values[b], out);
    return out;
  };
  HloInstruction* out;
  if (c->shape().IsTuple()) {
    std::vector<HloInstruction*> elements;
    for (int64_t i = 0; i < static_cast<int64_t>(c->shape().tuple_shapes().size()); ++i) {
      std::vector<HloInstruction*> values;
      for (HloInstruction* r : results) values.push_back(Element(comp, names, r, i));
      elements.push_back(choose(values));
    }
    out = Add(comp, names, HloOpcode::kTuple, c->shape(), elements);
  } else {
    out = choose(results);
  }
  c->ReplaceAllUsesWith(out);
  if (comp->root() == c) comp->set_root(out);
  std::vector<HloInstruction*> operands(c->operands().begin(), c->operands().end());
  comp->RemoveInstruction(c);
  RemoveDeadFrom(comp, operands);  // the branch operands' tuples, read by nothing now
}

}  // namespace

absl::StatusOr<bool> ConditionalToSelect::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> found;
    for (HloInstruction* h : comp->instructions())
      if (Convertible(*h)) found.push_back(h);
    for (HloInstruction* c : found) Convert(comp, c, names);
    if (!found.empty()) {
      comp->SortInstructionsInPostOrder();
      changed = true;
    }
  }
  if (changed) module.RemoveUnusedComputations();
  return changed;
}

}  // namespace kiln
