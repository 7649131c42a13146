// f32 convolutions through oneDNN's direct convolution primitive (its JIT kernels read the
// input where it lies: no im2col patch matrix, nine times the input for a 3x3 window). The
// primitive runs single-threaded on each of cpu-llvm's pool threads, over a slice of the
// batch (or of the output features when the batch is smaller than the pool). Taken where
// oneDNN has a native kernel for the layout; otherwise conv_library.cc's im2col + GEMM runs.
// LLVM-free.
#pragma once

#include <string>

#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu {

// Whether this build has oneDNN.
bool HaveOneDnn();

// Computes the convolution into `out` and returns true, or returns false (nothing written)
// when oneDNN is not built in or has no native kernel for it.
bool RunOneDnnConv(const kernel_plan::ConvGemm& c, const float* input, const float* kernel,
                   float* out, ThreadPool* pool);

// The oneDNN implementation RunOneDnnConv uses for `c` on a pool of `threads` (as oneDNN
// names it, e.g. "brg:avx512_core"), or "" when it would return false. For tests and logs.
std::string OneDnnConvImplementation(const kernel_plan::ConvGemm& c, int threads);

}  // namespace kiln::cpu
