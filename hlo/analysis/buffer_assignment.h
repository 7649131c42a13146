// Buffer assignment for the entry computation under a sequential schedule: which memory
// allocation holds each value, reusing allocations whose values are all dead.
//
// Rules, in order, for each value as it is defined:
//  1. An output that the module's `input_output_alias` ties to a parameter goes into that
//     parameter's buffer when the parameter is no longer read afterwards (otherwise it gets
//     its own allocation and the report says a copy is needed).
//  2. In place: the result of an elementwise op (or of dynamic-update-slice, for its
//     operand 0, or of a loop fusion whose body is elementwise) takes the buffer of an
//     operand that dies at that op and has the same byte size. Parameters and constants
//     are never overwritten this way.
//  3. Best fit: the smallest allocation whose values are all dead before this step and that
//     is at least as large as the value.
//  4. Otherwise a new allocation.
// Parameters and constants live in allocations of their own that are not counted as
// allocated by the program (the caller owns parameters; constants are read-only data).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/analysis/liveness.h"
#include "hlo/module.h"

namespace kiln {

// One entry of `input_output_alias={ {0}: (1, {}, may-alias), ... }`.
struct InputOutputAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  bool must_alias = false;
};
// Parses the module attribute's verbatim value (the text after `input_output_alias=`).
absl::StatusOr<std::vector<InputOutputAlias>> ParseInputOutputAlias(std::string_view text);

struct Allocation {
  int64_t index = 0;
  int64_t size = 0;
  bool is_parameter = false;
  int64_t parameter_number = -1;
  bool is_constant = false;
  bool maybe_live_out = false;
  std::vector<int64_t> values;  // value ids, in order of definition
};

struct BufferStats {
  int64_t allocation_count = 0;
  // Bytes of all temp/output allocations (what the program allocates).
  int64_t total_allocation_bytes = 0;
  // Largest sum, over one step, of the sizes of live values in those allocations (values
  // sharing one allocation at one step, in place, count once).
  int64_t peak_live_bytes = 0;
  // Sum of the sizes of all values that are neither parameters nor constants: what an
  // allocator without any reuse would need.
  int64_t sum_intermediate_bytes = 0;
  int64_t parameter_bytes = 0;
  int64_t constant_bytes = 0;
  int64_t in_place_count = 0;
  int64_t aliased_outputs = 0;
  int64_t alias_copies_needed = 0;
};

class BufferAssignment {
 public:
  // Analyses the module's entry computation. Fails on a malformed input_output_alias.
  static absl::StatusOr<BufferAssignment> Run(const HloModule& module);
  // Analyses one computation as a program of its own (a while body, a branch: its
  // parameters are given, its root's values are its outputs), without aliases.
  static BufferAssignment RunOnComputation(const HloComputation& comp);

  const std::vector<Allocation>& allocations() const { return allocations_; }
  const Liveness& liveness() const { return liveness_; }
  const BufferStats& stats() const { return stats_; }
  // Allocation index of a value.
  int64_t AllocationOf(int64_t value) const { return allocation_of_[value]; }

  // A readable report: every allocation with its values and live ranges, then the totals.
  std::string ToString() const;

 private:
  BufferAssignment() = default;
  static BufferAssignment Analyse(const HloComputation& comp,
                                  const std::vector<InputOutputAlias>& aliases);
  void Assign(const std::vector<InputOutputAlias>& aliases);
  void ComputeStats();

  const HloComputation* comp_ = nullptr;
  std::unique_ptr<SequentialSchedule> schedule_;
  Liveness liveness_;
  std::vector<Allocation> allocations_;
  std::vector<int64_t> allocation_of_;
  std::map<int64_t, std::string> notes_;  // value id -> why it went where it went
  BufferStats stats_;
};

}  // namespace kiln
