// Values and their live ranges in one computation under a sequential schedule.
//
// A value is one array leaf an instruction defines, or the table of pointers of a tuple it
// defines (8 bytes per element, as a runtime would store it). Instructions that only
// rearrange pointers define nothing new: get-tuple-element and bitcast alias (part of)
// their operand, and a tuple holds its operands' values below a fresh table. Everything
// else (including while, call, conditional: they are black boxes here) defines a fresh
// value per leaf of its result.
//
// A value is live from the step that defines it to the last step that reads it; values of
// the root are live to the end (step == schedule size). Fusion bodies, loop bodies and
// reducers are not analysed: what lives inside a fusion never touches memory, which is the
// point of fusing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hlo/analysis/schedule.h"

namespace kiln {

struct BufferValue {
  int64_t id = 0;
  const HloInstruction* defining = nullptr;
  std::vector<int64_t> index;  // shape index inside the defining instruction's result
  int64_t size = 0;            // bytes
  bool is_tuple_table = false;
  bool is_parameter = false;
  bool is_constant = false;
  bool is_output = false;             // reachable from the root
  std::vector<int64_t> output_index;  // where in the root's result (when is_output)
  int64_t def_time = 0;
  int64_t last_use = 0;          // == def_time when nothing reads it
  std::string ToString() const;  // `name{0,1}`
};

// The values an instruction's result is made of, as a tree mirroring its shape: a leaf
// value for an array, a table value and children for a tuple.
struct ValueTree {
  int64_t value = -1;
  std::vector<ValueTree> children;
  void Flatten(std::vector<int64_t>* out) const;
};

class Liveness {
 public:
  static Liveness Compute(const HloComputation& comp, const SequentialSchedule& schedule);

  const std::vector<BufferValue>& values() const { return values_; }
  const BufferValue& value(int64_t id) const { return values_[id]; }
  const ValueTree& TreeOf(const HloInstruction* instr) const { return trees_.at(instr); }
  const SequentialSchedule& schedule() const { return *schedule_; }
  // True when value `v` is live at step t.
  bool LiveAt(int64_t v, int64_t t) const {
    return values_[v].def_time <= t && t <= values_[v].last_use;
  }

 private:
  const SequentialSchedule* schedule_ = nullptr;
  std::vector<BufferValue> values_;
  absl::flat_hash_map<const HloInstruction*, ValueTree> trees_;
};

}  // namespace kiln
