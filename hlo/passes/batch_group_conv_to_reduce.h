// A depthwise convolution's filter gradient, as JAX's autodiff writes it (a convolution with
// batch_group_count equal to the input's batch size and to its output features: each output
// feature correlates one input batch slice with one kernel output feature over the input
// features and a window as large as the image), becomes one multiply and reduce per output
// position: the window-sized slice of the padded input times the kernel, summed over all but
// the feature dimension. Generated code for the convolution itself sums each output element
// in a scalar loop with window bounds checks (b8 56x56x64, 3x3: 83 ms); the reduces are
// vectorized column reductions.
// Only floating-point convolutions (f32, f64) without feature groups, base dilation or
// negative padding, with at most kMaxPositions output positions.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

class BatchGroupConvToReduce : public HloPass {
 public:
  static constexpr int64_t kMaxPositions = 64;
  std::string_view name() const override { return "batch-group-convolution-to-reduce"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
