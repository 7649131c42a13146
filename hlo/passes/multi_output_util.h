// What the two mergers of multi-output fusion (siblings, producer-consumer) share: the space
// a kernel iterates over, which fusions are plain elementwise loops, and rewiring readers to
// a merged fusion's outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/module.h"
#include "hlo/passes/fusion_util.h"

namespace kiln::multi_output {

// The space a kernel iterates over: for reductions, the input dims and the reduced dims;
// for loops, the output dims. Siblings merge only when one loop nest serves both.
struct IterationSpace {
  bool valid = false;
  bool is_reduce = false;
  std::vector<int64_t> dims;
  std::vector<int64_t> reduced;
};

IterationSpace SpaceOf(const HloInstruction& i);
bool Compatible(const IterationSpace& a, const IterationSpace& b);

// A loop fusion that computes each output element from its operands' elements alone (see
// MultiOutputFusionOptions::elementwise_loops_only); with row_reduction_roots, its reduces
// are let through (IsRowReduction checks them).
bool IsElementwiseLoop(const HloInstruction& fusion, bool row_reduction_roots = false);

// A fusion whose roots are all reduces of the trailing dimensions (at least one kept) of an
// elementwise cone (see MultiOutputFusionOptions::row_reductions).
bool IsRowReduction(const HloInstruction& fusion);

// A multi-output fusion of `comp` read through get-tuple-element only, with a tuple root in
// its body: its outputs can be re-indexed (anything else would need the whole tuple
// rebuilt). True for any array-shaped instruction.
bool OutputsRewirable(const HloInstruction& f, const HloComputation& comp);

// Instructions of a fusion's body (1 for anything else).
int64_t BodySize(const HloInstruction& i);

// Points the readers of `old` (an array, or a multi-output fusion read through its
// get-tuple-elements, which are removed) at the fusion f's outputs from `offset` on.
void Rewire(HloComputation* comp, FusionNameTable& names, HloInstruction* old, HloInstruction* f,
            int64_t offset);

}  // namespace kiln::multi_output
