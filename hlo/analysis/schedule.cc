// Sequential schedules.
#include "hlo/analysis/schedule.h"

namespace kiln {

SequentialSchedule SequentialSchedule::PostOrder(const HloComputation& comp) {
  SequentialSchedule s;
  for (const HloInstruction* i : comp.MakeInstructionPostOrder()) {
    s.position_[i] = static_cast<int64_t>(s.sequence_.size());
    s.sequence_.push_back(i);
  }
  return s;
}

int64_t SequentialSchedule::PositionOf(const HloInstruction* instr) const {
  auto it = position_.find(instr);
  return it == position_.end() ? -1 : it->second;
}

}  // namespace kiln
