// The HLO evaluator: computes a module on host literals, one instruction at a time.
// It is the reference semantics of Kiln: the interpreter plugin runs it and constant
// folding reuses it.
#pragma once

#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"

namespace kiln {

class HloEvaluator {
 public:
  // Runs the entry computation. `args` must match the entry parameters in count and shape.
  absl::StatusOr<Literal> Evaluate(const HloModule& module, std::span<const Literal> args);
  absl::StatusOr<Literal> EvaluateComputation(const HloComputation& computation,
                                              std::span<const Literal* const> args);
  // Evaluates one instruction given the values of its operands (constant folding).
  absl::StatusOr<Literal> EvaluateInstruction(const HloInstruction& instr,
                                              std::span<const Literal* const> operands);

  // A one-operand scatter written into `operand` itself, which the caller gives up as the
  // result's buffer, instead of into a copy (an embedding gradient's table is not copied).
  absl::Status ScatterInPlace(const HloInstruction& scatter, Literal& operand,
                              const Literal& indices, const Literal& updates);

  // Nested computations (call, while body, reducer, ...) deeper than this fail with an error
  // instead of overflowing the stack. Loops themselves have no iteration limit.
  static constexpr int kMaxCallDepth = 128;

 private:
  absl::StatusOr<Literal> EvaluateInstructionWidened(const HloInstruction& instr,
                                                     std::span<const Literal* const> operands);

  struct State;  // call depth and per-evaluation plan cache (evaluator.cc)
  std::shared_ptr<State> state_;
};

}  // namespace kiln
