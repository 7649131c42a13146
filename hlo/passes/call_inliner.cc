// Cloning a callee into its caller: parameters map to the call's operands, the clone of the
// callee's root takes the call's place.
#include "hlo/passes/call_inliner.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/fusion_util.h"
#include "hlo/passes/pass_util.h"

namespace kiln {

namespace {

// Copies the callee into `caller` in place of `call`; appends the copies that are calls
// themselves to `calls`.
void Inline(HloComputation& caller, HloInstruction* call, NameUniquer& names,
            std::vector<HloInstruction*>& calls) {
  const HloComputation& callee = *call->to_apply();
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> copy;
  for (int i = 0; i < callee.num_parameters(); ++i) copy[callee.parameter(i)] = call->operand(i);
  for (HloInstruction* h : callee.MakeInstructionPostOrder()) {
    if (h->opcode() == HloOpcode::kParameter) continue;
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* o : h->operands()) operands.push_back(copy.at(o));
    copy[h] = AddWithFreshName(&caller, CloneWithOperands(*h, operands), names, h->name());
    if (h->opcode() == HloOpcode::kCall) calls.push_back(copy[h]);
  }
  HloInstruction* result = copy.at(callee.root());
  call->ReplaceAllUsesWith(result);
  if (caller.root() == call) caller.set_root(result);
  caller.RemoveInstruction(call);
}

bool IsCall(const HloInstruction* h) {
  return h->opcode() == HloOpcode::kCall && h->to_apply() != nullptr;
}

// The computations something other than a call runs: the entry, loop bodies and conditions,
// reducers, branches. Those reached only through calls are flattened into these, each path
// copied once, so nesting n deep costs n copies, not n^2.
std::vector<HloComputation*> NotOnlyCalled(const HloModule& module) {
  absl::flat_hash_set<const HloComputation*> other;
  if (module.entry() != nullptr) other.insert(module.entry());
  for (HloComputation* comp : NonFusionComputations(module))
    for (HloInstruction* h : comp->instructions())
      if (!IsCall(h))
        for (HloComputation* c : h->called_computations()) other.insert(c);
  std::vector<HloComputation*> out;
  for (HloComputation* comp : NonFusionComputations(module))
    if (other.contains(comp)) out.push_back(comp);
  return out;
}

}  // namespace

absl::StatusOr<bool> CallInliner::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NotOnlyCalled(module)) {
    std::vector<HloInstruction*> calls;
    for (HloInstruction* h : comp->instructions())
      if (IsCall(h)) calls.push_back(h);
    if (calls.empty()) continue;
    while (!calls.empty()) {
      HloInstruction* h = calls.back();
      calls.pop_back();
      if (h->to_apply()->num_parameters() != h->operand_count())
        return absl::InvalidArgumentError(
            "call " + h->name() + " passes " + std::to_string(h->operand_count()) +
            " operands to a computation of " + std::to_string(h->to_apply()->num_parameters()));
      Inline(*comp, h, names, calls);
    }
    comp->SortInstructionsInPostOrder();
    changed = true;
  }
  return changed;
}

}  // namespace kiln
