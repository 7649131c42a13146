// opt-barrier removal (see optimization_barrier_expander.h).
#include "hlo/passes/optimization_barrier_expander.h"

#include "hlo/passes/pass_util.h"

namespace kiln {

absl::StatusOr<bool> OptimizationBarrierExpander::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> removed;
    for (HloInstruction* barrier : comp->MakeInstructionPostOrder()) {
      if (barrier->opcode() != HloOpcode::kOptimizationBarrier) continue;
      HloInstruction* operand = barrier->operand(0);
      // An element read from a barrier over a tuple is the tuple's operand itself, so that
      // CSE sees the recomputed value's real operands.
      if (operand->opcode() == HloOpcode::kTuple) {
        for (HloInstruction* user : std::vector<HloInstruction*>(barrier->users())) {
          const int64_t i = user->tuple_index();
          if (user->opcode() == HloOpcode::kGetTupleElement && i >= 0 &&
              i < operand->operand_count() &&
              ReplaceUsesIfCompatible(user, operand->operand(static_cast<int>(i))))
            removed.push_back(user);
        }
      }
      if (barrier->user_count() == 0 && barrier != comp->root()) {
        removed.push_back(barrier);
      } else if (ReplaceUsesIfCompatible(barrier, operand)) {
        removed.push_back(barrier);
      }
    }
    RemoveDeadFrom(comp, removed);
    changed |= !removed.empty();
  }
  return changed;
}

}  // namespace kiln
