// Running reductions (jnp.cumsum, cumprod, cummax, cummin: a reduce-window spanning one whole
// dimension) on cpu-llvm's threads, one pass over the data: the log-step form
// (reduce-window-scan) reads and writes the whole array log2(n) times (a cumsum of 2^20
// floats 12.8 ms against XLA:CPU's 5.0). Rows along the scanned dimension run sequentially,
// rows after rows spread over the pool; a long scan that is one or a few rows is cut into
// chunks: the chunks' totals first, then each chunk scanned from the total before it, so
// floating-point sums are added in another order than one after another (as XLA's do for
// long scans). Add, multiply, maximum and minimum (NaN propagating) of f32, f64, s32 and
// s64 with their identity as the initial value. LLVM-free.
#pragma once

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// True when RunScan computes `h`.
bool IsScanLibraryCall(const HloInstruction& h);

// Computes `h` (a running reduction IsScanLibraryCall accepts) of `in` into `out`. `pool`
// may be null.
void RunScan(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool);

}  // namespace kiln::cpu
