// A sequential schedule of one computation: the order its instructions run in, one at a
// time. Liveness and buffer assignment are computed against it.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hlo/computation.h"

namespace kiln {

class SequentialSchedule {
 public:
  // The post-order of the computation (operands before users, the root's cone first).
  static SequentialSchedule PostOrder(const HloComputation& comp);

  const std::vector<const HloInstruction*>& sequence() const { return sequence_; }
  int64_t size() const { return static_cast<int64_t>(sequence_.size()); }
  // Position of an instruction in the sequence; -1 when it is not in it.
  int64_t PositionOf(const HloInstruction* instr) const;

 private:
  std::vector<const HloInstruction*> sequence_;
  absl::flat_hash_map<const HloInstruction*, int64_t> position_;
};

}  // namespace kiln
