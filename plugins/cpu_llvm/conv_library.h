// Large f32 convolutions computed as one GEMM (im2col): the input windows are gathered into a
// [batch*output positions, kernel positions*input features] patch matrix, the kernel into a
// [kernel positions*input features, output features] matrix, and the GEMM library
// (blas_dot.h: oneDNN or OpenBLAS) multiplies them; the product is written back in the
// output's dimension order. Any dimension numbers, strides, padding, lhs/rhs dilation and
// window reversal; feature_group_count and batch_group_count must be 1. LLVM-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hlo/instruction.h"

namespace kiln::cpu {

struct ConvGemm {
  std::vector<int64_t> in_dims, kernel_dims, out_dims;
  ConvolutionDimensionNumbers dnums;
  Window window;
  int64_t rows = 0;  // batch * output positions
  int64_t depth = 0;  // kernel positions * input features (the GEMM's k)
  int64_t out_features = 0;
};

// The GEMM form of `conv` when the library path applies and rows*depth*out_features >=
// min_work; otherwise nullopt and `why` (optional) says why.
std::optional<ConvGemm> MatchLibraryConv(const HloInstruction& conv, int64_t min_work,
                                         std::string* why = nullptr);

// Computes the convolution into `out` (overwritten); all buffers dense row-major f32.
void RunLibraryConv(const ConvGemm& c, const float* input, const float* kernel, float* out);

}  // namespace kiln::cpu
