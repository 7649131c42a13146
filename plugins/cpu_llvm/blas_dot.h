// Large f32/f64 dots handed to a GEMM library (oneDNN dnnl_sgemm for f32 when built with it,
// else OpenBLAS cblas_sgemm; cblas_dgemm for f64): the call itself (which dots qualify:
// gemm_match.h). LLVM-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hlo/instruction.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu {

// The plan, its steps and the GEMM shapes: the kernel_plan library cpu-llvm shares with
// gpu-nvptx.
using namespace ::kiln::kernel_plan;

// Computes the dot into `out` (overwritten). `a`, `b`, `out` are the lhs, rhs and result
// buffers, dense row-major.
void RunBlasDot(const GemmShape& g, const void* a, const void* b, void* out);

// Sets the BLAS library's own thread count (a no-op without one).
void SetBlasThreads(int threads);

}  // namespace kiln::cpu
