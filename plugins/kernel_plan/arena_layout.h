// Where a plan's temporaries live: one arena per run, laid out at compile time from the
// buffer assignment of hlo/analysis (values whose live ranges do not overlap share an
// allocation; each allocation gets a fixed offset), so a run allocates nothing for them and
// the arena is reused across runs. The entry computation has the first region; each called
// computation (a while body, a branch) one of its own after it, reused by every iteration.
//
// A kernel or library result goes into the arena when the assignment's live range is the
// whole truth about it: it is not an output of its computation, and every user reads it as a
// step of its own (a kernel, a library call, the evaluator), so no other value refers to it
// after its last reader. Results read by tuples or control flow (a while loop may carry a
// buffer past the step that passed it in), and results the assignment put in place on an
// operand of the same kernel (other than an in-place dynamic-update-slice) get buffers of
// their own. A kernel with several outputs places each output that way on its own, its
// readers being the readers of the get-tuple-element that takes it out.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "hlo/module.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::kernel_plan {

struct ArenaLayout {
  int64_t size = 0;  // bytes; 0 when nothing goes into the arena
  // Byte offset (a multiple of 64) of each instruction (of any computation of the plan) whose
  // result lives in the arena.
  // An output of a multi-output kernel is listed under each get-tuple-element of it, so
  // that what reads it knows the buffer is the arena's.
  absl::flat_hash_map<const HloInstruction*, int64_t> offsets;
  // Of each output placed of a multi-output kernel: (kernel, output index) -> offset.
  absl::flat_hash_map<std::pair<const HloInstruction*, int64_t>, int64_t> element_offsets;
  int64_t allocations = 0;  // distinct allocations of the assignment the arena holds
  int64_t values = 0;       // results placed in it

  int64_t OffsetOf(const HloInstruction* h) const {
    auto it = offsets.find(h);
    return it == offsets.end() ? -1 : it->second;
  }
  int64_t ElementOffsetOf(const HloInstruction* h, int64_t index) const {
    auto it = element_offsets.find({h, index});
    return it == element_offsets.end() ? -1 : it->second;
  }
  // "arena: N bytes, A allocations for V results" (logs, dumps).
  std::string Summary() const;
};

// The layout for `plan`, whose entry computation must be `module`'s entry, and the
// computations it calls. An empty layout (everything in buffers of its own) when the entry's
// assignment fails, for instance on a malformed input_output_alias; a computation whose
// steps do not follow its schedule places nothing.
// With `report`: the layout, each result's offset, then the assignment's own report.
ArenaLayout LayOutArena(const HloModule& module, const Plan& plan, std::string* report = nullptr);

}  // namespace kiln::kernel_plan
