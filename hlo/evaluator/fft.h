// The fft opcode's evaluation (kept out of evaluator_internal.h, which other helpers share).
#pragma once

#include "absl/status/statusor.h"
#include "hlo/evaluator/evaluator_internal.h"

namespace kiln::eval {

// fft: FFT/IFFT (complex -> complex), RFFT (real -> complex, last dim n/2+1), IRFFT
// (complex -> real) over the trailing len(fft_length) dimensions; inverses scale by 1/N.
absl::StatusOr<Literal> EvalFft(const HloInstruction& instr, Operands ops);

}  // namespace kiln::eval
