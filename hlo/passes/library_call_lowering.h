// Library call lowering: the custom-calls XLA's GPU compiler writes for cuBLAS and cuDNN
// (`__cublas$gemm`; `__cudnn$convForward`, `convBiasActivationForward`, `convBackwardInput`,
// `convBackwardFilter`) become the HLO they stand for (a dot or a convolution, scaled, with
// the bias, side input and activation cuDNN fuses; the backward ones as the convolutions that
// compute the gradients), so a module dumped after XLA's GPU optimizations runs on every
// device. Their meaning is in the instruction: the dot dimensions and scales in
// backend_config's JSON, the (forward) convolution's window and dim_labels as attributes; the
// cuDNN calls return a (result, u8[] scratch) tuple, whose scratch becomes zeros.
//
// A call this pass does not understand (a GEMM epilogue, a complex alpha, an activation
// other than none, sigmoid, relu, relu6 and tanh, a grouped or lhs-dilated backward
// convolution) is left as it is, and devices refuse it naming its target, as before.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class LibraryCallLowering : public HloPass {
 public:
  std::string_view name() const override { return "library-call-lowering"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
