// Dead code elimination (see dce.h).
#include "hlo/passes/dce.h"

#include "hlo/passes/pass_util.h"

namespace kiln {

absl::StatusOr<bool> HloDCE::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.MakeComputationPostOrder()) {
    // Instructions without users seed the work list; RemoveDeadFrom follows the operands
    // they leave dead, so a whole dead chain goes in one call.
    std::vector<HloInstruction*> candidates;
    for (HloInstruction* i : comp->MakeInstructionPostOrder())
      if (i->user_count() == 0) candidates.push_back(i);
    if (RemoveDeadFrom(comp, std::move(candidates)) > 0) changed = true;
  }
  if (module.entry() == nullptr) return changed;  // nothing to measure "unused" against
  size_t before = module.computations().size();
  module.RemoveUnusedComputations();
  if (module.computations().size() != before) changed = true;
  return changed;
}

}  // namespace kiln
