// Integer GEMMs (s32/u32 and s64/u64 dots, operands of the result's type), which no GEMM
// library computes with HLO's semantics: products and sums wrap modulo 2^32 or 2^64. Packed,
// register-tiled and vectorized for the CPU it runs on (AVX-512, AVX2 or SSE2, chosen at run
// time); the emitted loop it replaces sums one output element at a time, 8x behind XLA:CPU's
// Eigen contraction on a 256^3 s32 matmul. LLVM-free and library-free.
#pragma once

#include <cstdint>

#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu {

// out[rows r0..r1, cols c0..c1) of batch entry `i` of the dot `g` (g.type kI32 or kI64), all
// buffers dense row-major as GemmShape describes; overwrites that block of `out`.
void IntGemmBlock(const kernel_plan::GemmShape& g, const void* a, const void* b, void* out,
                  int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace kiln::cpu
