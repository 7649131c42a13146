// Cloning a callee into its caller: parameters map to the call's operands, the clone of the
// callee's root takes the call's place.
#include "hlo/passes/call_inliner.h"

#include "absl/container/flat_hash_map.h"
#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/fusion_util.h"
#include "hlo/passes/pass_util.h"

namespace kiln {

namespace {

void Inline(HloComputation& caller, HloInstruction* call, NameUniquer& names) {
  const HloComputation& callee = *call->to_apply();
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> copy;
  for (int i = 0; i < callee.num_parameters(); ++i) copy[callee.parameter(i)] = call->operand(i);
  for (HloInstruction* h : callee.MakeInstructionPostOrder()) {
    if (h->opcode() == HloOpcode::kParameter) continue;
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* o : h->operands()) operands.push_back(copy.at(o));
    copy[h] = AddWithFreshName(&caller, CloneWithOperands(*h, operands), names, h->name());
  }
  HloInstruction* result = copy.at(callee.root());
  call->ReplaceAllUsesWith(result);
  if (caller.root() == call) caller.set_root(result);
  caller.RemoveInstruction(call);
}

}  // namespace

absl::StatusOr<bool> CallInliner::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  // Callees first: a callee's own calls are inlined before it is copied.
  for (HloComputation* comp : NonFusionComputations(module)) {
    bool here = false;
    for (HloInstruction* h : comp->MakeInstructionPostOrder()) {
      if (h->opcode() != HloOpcode::kCall || h->to_apply() == nullptr) continue;
      if (h->to_apply()->num_parameters() != h->operand_count())
        return absl::InvalidArgumentError(
            "call " + h->name() + " passes " + std::to_string(h->operand_count()) +
            " operands to a computation of " + std::to_string(h->to_apply()->num_parameters()));
      Inline(*comp, h, names);
      here = true;
    }
    if (here) comp->SortInstructionsInPostOrder();
    changed |= here;
  }
  return changed;
}

}  // namespace kiln
