// Row-major GEMM -> cuBLAS's column-major call. cuBLAS reads matrices column-major; a
// row-major [r, c] buffer read column-major is its transpose [c, r]. So the row-major
// C[m,n] = op(A)[m,k] * op(B)[k,n] is issued as the column-major C^T[n,m] =
// op(B)^T[n,k] * op(A)^T[k,m]: B goes first (with B's transpose flag), A second (with A's),
// m and n swap, and each leading dimension is the row length of the stored row-major
// matrix. Pure arithmetic, no CUDA: tested against a column-major reference GEMM. LLVM-free.
#pragma once

#include <cstdint>

#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::gpu {

// Arguments of one column-major (cuBLAS) strided-batched GEMM:
// C = op(first) * op(second), C is m x n with leading dimension ldc.
struct ColumnMajorGemm {
  bool first_is_b = true;  // the first operand is the row-major rhs B (always, see above)
  bool trans_first = false, trans_second = false;  // cuBLAS transa / transb
  int64_t m = 0, n = 0, k = 0;
  int64_t ld_first = 0, ld_second = 0, ldc = 0;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;  // elements between batches
  int64_t batch = 1;
};

ColumnMajorGemm MapRowMajorGemm(const kernel_plan::GemmShape& g);

}  // namespace kiln::gpu
