// The instructions cpu-llvm computes by library routines of its own rather than by generated
// kernels or the evaluator, beside GEMMs and convolutions (which the planner matches
// itself): LAPACK's factorizations and triangular solves (lapack_library.h), FFTs
// (fft_library.h), top-k (top_k_library.h) and running reductions (scan_library.h). The planner
// takes IsLibraryCall as PlanOptions::library_call; the runner calls RunLibraryCall for those
// kLibrary steps. A new routine is one more case in each.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::cpu {

bool IsLibraryCall(const HloInstruction& h);

// PlanOptions::library_call_args: a LAPACK call's routine and flags (lapack_library.h), read
// once; null for the others, which read what they need from the instruction.
std::shared_ptr<const kernel_plan::LibraryCallArgs> LibraryCallArgsOf(const HloInstruction& h);

// Computes `h` from `operands` into `out` (h's shape; a tuple's elements zeroed, an array
// possibly uninitialized). `args`: LibraryCallArgsOf(h) as planned, or null (then read
// again). `pool` may be null.
absl::Status RunLibraryCall(const HloInstruction& h, const kernel_plan::LibraryCallArgs* args,
                            std::span<const Literal* const> operands, Literal& out,
                            ThreadPool* pool);

}  // namespace kiln::cpu
