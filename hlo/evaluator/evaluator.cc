// Evaluator driver (stub: to be written): walks computations, dispatches per family.
#include "hlo/evaluator/evaluator.h"

#include "absl/status/status.h"
#include "hlo/evaluator/evaluator_internal.h"

namespace kiln {

absl::StatusOr<Literal> HloEvaluator::Evaluate(const HloModule& module, std::span<const Literal> args) {
  return absl::UnimplementedError("evaluator not written yet");
}
absl::StatusOr<Literal> HloEvaluator::EvaluateComputation(const HloComputation& computation,
                                                          std::span<const Literal* const> args) {
  return absl::UnimplementedError("evaluator not written yet");
}
absl::StatusOr<Literal> HloEvaluator::EvaluateInstruction(const HloInstruction& instr,
                                                          std::span<const Literal* const> operands) {
  return absl::UnimplementedError("evaluator not written yet");
}

}  // namespace kiln
