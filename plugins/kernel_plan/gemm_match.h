// Which dots and convolutions a GEMM library can compute, as what GEMM: row-major operands
// whose layout is a plain or transposed matrix per batch (dots), or an im2col patch matrix
// times the kernel (convolutions). Shared by cpu-llvm (host BLAS calls: its blas_dot.h and
// conv_library.h) and gpu-nvptx (cuBLAS); no library is linked for this. LLVM-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hlo/instruction.h"

namespace kiln::kernel_plan {

// The element types of a GEMM: f32 or f64 throughout, s8 operands into an s32 result, 32-bit
// or 64-bit integers throughout (signed or unsigned: wrapping sums of products have the same
// bits either way), or bf16 operands into an f32 or bf16 result (f32 sums, one rounding).
enum class GemmType { kF32, kF64, kS8S32, kI32, kI64, kBF16F32, kBF16BF16 };

// Which integer GEMMs the caller computes besides f32 and f64 ones.
struct GemmTypes {
  bool s8 = false;       // s8 x s8 -> s32 (a library's int8 GEMM)
  bool integer = false;  // s32/u32 and s64/u64 throughout (cpu-llvm's own integer GEMM)
  bool bf16 = false;     // bf16 x bf16 -> f32 or bf16 (a library's bf16 GEMM)
};

// One dot as `batch` independent GEMMs C[m,n] = op(A)[m,k] * op(B)[k,n], all dense row-major.
struct GemmShape {
  GemmType type = GemmType::kF32;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false;  // A is stored k x m (the lhs contracts its first non-batch dim)
  bool trans_b = false;  // B is stored n x k (the rhs contracts its last dim)
};

// True when this build calls a BLAS library at all.
bool HaveBlas();

// A dot contracting at most this many elements is a few multiply-adds per output element,
// as memory-bound as a GEMM but fused with what produces and reads it: not a GEMM (a 2x2
// complex gate on a 2^20 state vector was 4 GEMMs of [2^19, 2] x [2, 2] between 8 kernels).
inline constexpr int64_t kMaxEmittedContraction = 4;

// The GEMM form of `dot` when a BLAS call can compute it: f32 or f64 throughout; batch
// dimensions leading and in order on both operands; contracting dimensions adjacent, in the
// order listed, and first or last among each operand's non-batch dimensions, so that they
// flatten into the depth and the free dimensions into the matrix's rows or columns
// (x[b,s,d] @ w[d,e] is one [b*s, d] x [d, e] GEMM, as JAX writes a dense layer; its weight
// gradient, x and g[b,s,e] contracted over {b,s}, one [b*s, d]^T x [b*s, e]);
// batch*m*n*k >= min_mnk. With `types.s8`, also s8 x s8 -> s32 dots (a quantized layer) whose
// depth cannot overflow s32 (k * 128 * 128 <= 2^31 - 1), so a library that accumulates in s32
// computes HLO's wrapping result exactly; with `types.integer`, dots of 32-bit or 64-bit
// integers throughout; with `types.bf16`, bf16 x bf16 -> f32 or bf16 dots. Otherwise nullopt,
// and `why` (optional) says why.
std::optional<GemmShape> MatchBlasDot(const HloInstruction& dot, int64_t min_mnk, GemmTypes types,
                                      std::string* why = nullptr);

// The same match without asking whether this build has a host BLAS (a device GEMM library,
// e.g. gpu-nvptx's cuBLAS, computes it instead).
std::optional<GemmShape> MatchGemmDot(const HloInstruction& dot, int64_t min_mnk, GemmTypes types,
                                      std::string* why = nullptr);

struct ConvGemm {
  PrimitiveType type = PrimitiveType::F32;  // F32 or F64, all three arrays
  std::vector<int64_t> in_dims, kernel_dims, out_dims;
  ConvolutionDimensionNumbers dnums;
  Window window;
  int64_t rows = 0;          // batch * output positions
  int64_t depth = 0;         // kernel positions * input features of a group (the GEMM's k)
  int64_t out_features = 0;  // all groups'
  int64_t groups = 1;        // feature_group_count: one GEMM per group
};

// The GEMM form of `conv` when the library path applies and rows*depth*out_features >=
// min_work; otherwise nullopt and `why` (optional) says why.
std::optional<ConvGemm> MatchLibraryConv(const HloInstruction& conv, int64_t min_work,
                                         std::string* why = nullptr);

}  // namespace kiln::kernel_plan
