// Large f32 and f64 convolutions computed as one GEMM (im2col): the input windows are gathered
// into a [batch*output positions, kernel positions*input features] patch matrix, the kernel
// into a [kernel positions*input features, output features] matrix, and the GEMM library
// (blas_dot.h: oneDNN or OpenBLAS; f64 OpenBLAS's dgemm) multiplies them; the product is written
// back in the output's dimension order; where oneDNN has a native kernel for the convolution it
// runs that instead (onednn_conv.h). Any dimension numbers, strides, padding, lhs/rhs dilation and
// window reversal; feature groups (one GEMM per group, im2col only); batch_group_count must
// be 1. LLVM-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hlo/instruction.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu {

// The plan, its steps and the GEMM shapes: the kernel_plan library cpu-llvm shares with
// gpu-nvptx.
using namespace ::kiln::kernel_plan;

// Computes the convolution into `out` (overwritten); all buffers dense row-major, of c.type
// (f64 through dgemm; oneDNN's kernels are f32 only). The patch gathering and the GEMM are
// split across `pool` (null: the calling thread).
void RunLibraryConv(const ConvGemm& c, const void* input, const void* kernel, void* out,
                    ThreadPool* pool = nullptr);

}  // namespace kiln::cpu
