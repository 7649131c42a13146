// HLO's topk on cpu-llvm's threads, where the evaluator ran one row after another through
// double keys: the k largest (or smallest) elements of each row of the last dimension, in
// order, and their indices; ties keep the lower index first, floats order by the total order
// (NaN above +inf), as the evaluator's reference (hlo/evaluator/reduction.cc) does. f32, bf16,
// f16, f64 and s8/u8/s16/u16/s32/u32/s64 values with s32 indices. Rows are spread over the pool;
// within a row, blocks of elements none of which beats the k-th best so far are skipped after one
// vector compare. LLVM-free.
#pragma once

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// True when RunTopK computes `h` (a topk of a supported type and shape).
bool IsTopKLibraryCall(const HloInstruction& h);

// Computes `h` on `in` into `out` (h's tuple shape; every element written). `pool` may be
// null.
void RunTopK(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool);

}  // namespace kiln::cpu
