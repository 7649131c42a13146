// bf16 GEMMs through oneDNN's matmul primitive, one block at a time on the calling thread
// (blas_dot.cc cuts a GEMM into blocks for cpu-llvm's pool). oneDNN's public GEMM functions
// take f32 and integers only; its matmul primitive takes bf16 operands with f32 sums into an
// f32 or bf16 result, on AMX tiles or AVX512-BF16 dot products where the CPU has them: 3.5x
// the f32 GEMM of upcast operands on one core of an AMX Xeon (512x1024x4096). LLVM-free.
#pragma once

#include <cstdint>

#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu {

// True when oneDNN computes bf16 matmuls natively on this CPU (its kernel for them is a bf16
// or AMX one, not a reference loop or an emulation), so the plan may keep bf16 dots as they
// are (PlanOptions::bf16_gemm). KILN_CPU_BF16_GEMM=0 turns it off.
bool HaveBf16Gemm();

// out[rows r0..r1, columns c0..c1) of batch entry i of `g` (a kBF16F32 or kBF16BF16 GEMM;
// buffers dense row-major as GemmShape says), with one single-threaded oneDNN call. False when
// HaveBf16Gemm() is false or oneDNN has no usable primitive for the block or fails: the caller
// computes it another way.
bool OneDnnBf16GemmBlock(const kernel_plan::GemmShape& g, const void* a, const void* b, void* out,
                         int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace kiln::cpu
