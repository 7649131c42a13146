// Rewrites a convolution as one matrix multiplication over a patch matrix (im2col) made of
// ordinary HLO: the input is transposed to [batch, spatial..., features], padded (window
// padding and lhs dilation), one strided slice per kernel tap (rhs dilation) is taken and
// the slices are concatenated along the features into [batch, output positions..., taps *
// features], reshaped to a matrix; the kernel (reversed where the window says so) becomes a
// [taps * features, output features] matrix; a dot multiplies them and the product is
// reshaped and transposed to the output's dimension order. A backend with a fast GEMM (cuBLAS)
// then runs the convolution as a generated patch kernel plus one library call.
// Only convolutions without feature or batch groups, of floating-point type (or, with
// `integer`, integer operands of one type no wider than the integer result: s8 x s8 -> s32,
// whose dot a host's integer GEMM takes), whose patch matrix has at most `max_patch_bytes`,
// and with at least `min_work` multiply-adds.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

class ConvolutionToGemm : public HloPass {
 public:
  explicit ConvolutionToGemm(int64_t min_work = 0, int64_t max_patch_bytes = int64_t{1} << 30,
                             bool integer = false)
      : min_work_(min_work), max_patch_bytes_(max_patch_bytes), integer_(integer) {}
  std::string_view name() const override { return "conv-to-gemm"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_work_;
  int64_t max_patch_bytes_;
  bool integer_;
};

}  // namespace kiln
