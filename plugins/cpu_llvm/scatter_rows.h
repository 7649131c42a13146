// The scatter JAX emits for an embedding gradient, segment_sum/max, x.at[ids].add(rows)
// (or .set/.max/.min/.mul) and x.at[i, j].add(v): whole rows of the table, one row number
// (or index vector) per update, a recognized combiner. cpu-llvm runs it natively on its thread pool
// instead of on the evaluator: each worker owns a band of table rows and applies, in update order,
// the updates that land in its band, so duplicate row numbers need no atomics and every row sees
// its updates in the order a serial scatter applies them (the same bits on any thread count).
#pragma once

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// Whether RunRowScatter computes `h`: a scatter of one operand whose update windows are whole
// rows (inserted_window_dims = scatter_dims_to_operand_dims = {0, .., k-1}, the trailing
// update dimensions the operand's other dimensions in full), one integer index of k
// components per update (a row number, or x.at[i, j] addressing the first k dimensions: the
// table is then one of prod(d0..dk-1) rows), no batching dimensions, and a combiner the
// evaluator recognizes (add, multiply, max, min, and, or, or `ROOT = parameter(1)`) on the
// element type.
bool IsRowScatter(const HloInstruction& h);

// Applies the updates to `table` (h's operand, whose buffer the caller gives up) in place.
// An index outside the table (in any component) skips its update, as XLA's scatter does. `pool` may
// be null.
void RunRowScatter(const HloInstruction& h, Literal& table, const Literal& indices,
                   const Literal& updates, ThreadPool* pool);

}  // namespace kiln::cpu
