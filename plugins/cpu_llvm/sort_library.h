// HLO's sort on cpu-llvm's threads, ordering by the comparator's generated entry point
// (llvm_emit::KernelSpec::sort) instead of the evaluator's interpreted comparator. Stable
// (a stable sort is a valid answer for is_stable=false too). LLVM-free.
#pragma once

#include <span>

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/jit.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// Sorts `operands` (sort's operands, one shape) along sort's dimension into `out` (sort's
// shape: an array, or a tuple of one array per operand; every element written), comparing
// with `less`. Rows run in parallel on `pool` (may be null); a single long row is sorted in
// parts on the pool and merged.
void RunSort(const HloInstruction& sort, KernelFn less, std::span<const Literal* const> operands,
             Literal& out, ThreadPool* pool);

// Whether RunSort orders `sort` by a key computed once per element instead of calling the
// comparator: one LT or GT compare of operand 0's elements, integers as themselves, floats
// TOTALORDER after JAX's NaN and -0 canonicalization.
bool SortsByKeys(const HloInstruction& sort);

}  // namespace kiln::cpu
