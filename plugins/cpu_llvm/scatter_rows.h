// The scatter JAX emits for an embedding gradient, segment_sum/max and x.at[ids].add(rows)
// (or .set/.max/.min/.mul): whole rows of the table, one row number per update, a recognized
// combiner. cpu-llvm runs it natively on its thread pool instead of on the evaluator: each
// worker owns a band of table rows and applies, in update order, the updates that land in
// its band, so duplicate row numbers need no atomics and every row sees its updates in the
// order a serial scatter applies them (the same bits on any thread count).
#pragma once

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// Whether RunRowScatter computes `h`: a scatter of one operand whose update windows are whole
// rows (inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, the trailing update
// dimensions the operand's other dimensions in full), one integer row number per update, no
// batching dimensions, and a combiner the evaluator recognizes (add, multiply, max, min, and,
// or, or `ROOT = parameter(1)`) on the element type.
bool IsRowScatter(const HloInstruction& h);

// Applies the updates to `table` (h's operand, whose buffer the caller gives up) in place.
// A row number outside the table skips its update, as XLA's scatter does. `pool` may be null.
void RunRowScatter(const HloInstruction& h, Literal& table, const Literal& indices,
                   const Literal& updates, ThreadPool* pool);

}  // namespace kiln::cpu
