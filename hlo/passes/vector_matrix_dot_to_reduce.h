// A vector times a matrix that contracts the matrix's leading dimension, v[k] . x[k,n] ->
// [n] (either operand order), with fewer than `max_multiply_adds` multiply-adds (the dots a
// backend emits rather than calling its GEMM library), becomes reduce(v broadcast along x's
// columns * x, dimensions={0}, add): a column reduction, which walks x row by row, the n
// results accumulating side by side. Emitted as a dot, each result walks a column of x (a
// stride of n elements) and regenerates every element of v: a minibatch SVM's gradient
// v[64] . x[64,128] took 16 us a step where XLA:CPU's whole step takes 3.6. Float types only
// (the same sum in the same order: rows 0 to k-1), result and operands of one type.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

class VectorMatrixDotToReduce : public HloPass {
 public:
  // The default is cpu-llvm's smallest GEMM library call (PlanOptions::blas_min_mnk).
  explicit VectorMatrixDotToReduce(int64_t max_multiply_adds = int64_t{1} << 14)
      : max_multiply_adds_(max_multiply_adds) {}
  std::string_view name() const override { return "vector-matrix-dot-to-reduce"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t max_multiply_adds_;
};

}  // namespace kiln
