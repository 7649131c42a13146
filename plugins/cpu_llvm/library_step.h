// One kLibrary step of a plan, run on literals: a GEMM or convolution (the planner's match), a
// sort by its generated comparator, or a LAPACK, FFT, top-k or scan routine. The general
// runner and the flat loop both run library steps through this. LLVM-free.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/jit.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::cpu {

// Computes `step`'s instruction from `operands` (its sources, in order) into `out` (its shape;
// a tuple's elements zeroed, an array possibly uninitialized). `kernels` holds the sort
// comparator; `pool` may be null.
absl::Status RunLibraryStep(const kernel_plan::Step& step, std::span<const Literal* const> operands,
                            Literal& out, std::span<const KernelFn> kernels, ThreadPool* pool);

}  // namespace kiln::cpu
