// Large f32/f64 dots handed to a GEMM library (oneDNN dnnl_sgemm for f32 when built with it,
// else OpenBLAS cblas_sgemm; cblas_dgemm for f64): which dots
// qualify (row-major operands whose layout is a plain or transposed matrix per batch) and
// the call itself. Without OpenBLAS at build time no dot qualifies. LLVM-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hlo/instruction.h"

namespace kiln::cpu {

// One dot as `batch` independent GEMMs C[m,n] = op(A)[m,k] * op(B)[k,n], all dense row-major.
struct GemmShape {
  bool f64 = false;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false;  // A is stored k x m (the lhs contracts its first non-batch dim)
  bool trans_b = false;  // B is stored n x k (the rhs contracts its last dim)
};

// True when this build calls a BLAS library at all.
bool HaveBlas();

// The GEMM form of `dot` when a BLAS call can compute it: f32 or f64 throughout; batch
// dimensions leading and in order on both operands; one contracting dimension; each operand
// a matrix (or a vector) per batch; batch*m*n*k >= min_mnk. Otherwise nullopt, and `why`
// (optional) says why.
std::optional<GemmShape> MatchBlasDot(const HloInstruction& dot, int64_t min_mnk,
                                      std::string* why = nullptr);

// The same match without asking whether this build has a host BLAS (a device GEMM library,
// e.g. gpu-nvptx's cuBLAS, computes it instead).
std::optional<GemmShape> MatchGemmDot(const HloInstruction& dot, int64_t min_mnk,
                                      std::string* why = nullptr);

// Computes the dot into `out` (overwritten). `a`, `b`, `out` are the lhs, rhs and result
// buffers, dense row-major.
void RunBlasDot(const GemmShape& g, const void* a, const void* b, void* out);

// Sets the BLAS library's own thread count (a no-op without one).
void SetBlasThreads(int threads);

}  // namespace kiln::cpu
