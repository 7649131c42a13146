// Large f32/f64 dots handed to a GEMM library (oneDNN dnnl_sgemm for f32 when built with it,
// else OpenBLAS cblas_sgemm; cblas_dgemm for f64; oneDNN's s8 GEMM for s8 x s8 -> s32; 32- and
// 64-bit integer dots to int_gemm.h's own GEMM; bf16 x bf16 to oneDNN's bf16 matmul): the
// call itself (which dots qualify:
// gemm_match.h). LLVM-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hlo/instruction.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu {

// The plan, its steps and the GEMM shapes: the kernel_plan library cpu-llvm shares with
// gpu-nvptx.
using namespace ::kiln::kernel_plan;

// Computes the dot into `out` (overwritten). `a`, `b`, `out` are the lhs, rhs and result
// buffers, dense row-major. A large dot is split across `pool` (null: the calling thread);
// the library itself runs single-threaded.
void RunBlasDot(const GemmShape& g, const void* a, const void* b, void* out,
                ThreadPool* pool = nullptr);

// True when this build and CPU compute s8 x s8 -> s32 GEMMs exactly in a library (oneDNN on a
// CPU with VNNI), so the plan may route such dots to RunBlasDot. KILN_CPU_S8_GEMM=0 turns it
// off.
bool HaveS8Gemm();

// Turns the BLAS library's own threads off (a no-op without one): cpu-llvm's pool is the
// only one.
void UseSingleThreadedBlas();

}  // namespace kiln::cpu
