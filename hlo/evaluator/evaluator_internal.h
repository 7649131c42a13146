// Per-family evaluation functions the evaluator dispatches to; one .cc file per family.
#pragma once

#include <functional>
#include <span>

#include "absl/status/statusor.h"
#include "hlo/computation.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"

namespace kiln::eval {

using Operands = std::span<const Literal* const>;
// Runs a called computation (reducer, comparator, loop body, ...) on argument literals.
using CallFn = std::function<absl::StatusOr<Literal>(const HloComputation&, Operands)>;

// elementwise.cc: unary/binary/compare/select/clamp/convert/bitcast-convert/
// reduce-precision/is-finite/... (every opcode for which IsElementwiseOpcode is true).
absl::StatusOr<Literal> EvalElementwise(const HloInstruction& instr, Operands ops);
// data_movement.cc: broadcast, reshape, bitcast, transpose, copy, slice, dynamic-slice,
// dynamic-update-slice, concatenate, pad, reverse, iota, get-dimension-size.
absl::StatusOr<Literal> EvalDataMovement(const HloInstruction& instr, Operands ops);
// linalg.cc: dot, convolution, cholesky, triangular-solve.
absl::StatusOr<Literal> EvalLinalg(const HloInstruction& instr, Operands ops);
// scan (scan.cc): the body once per position along the scan dimension.
absl::StatusOr<Literal> EvalScan(const HloInstruction& instr, Operands ops, const CallFn& call);
// ragged-dot (ragged_dot.cc).
absl::StatusOr<Literal> EvalRaggedDot(const HloInstruction& instr, Operands ops);
// reduction.cc: reduce, reduce-window, select-and-scatter, map, sort, top-k.
absl::StatusOr<Literal> EvalReduction(const HloInstruction& instr, Operands ops,
                                      const CallFn& call);
// indexing.cc: gather, scatter.
absl::StatusOr<Literal> EvalIndexing(const HloInstruction& instr, Operands ops, const CallFn& call);
// A one-operand scatter written into `operand` itself (HloEvaluator::ScatterInPlace).
absl::Status EvalScatterInto(const HloInstruction& instr, Literal& operand, const Literal& indices,
                             const Literal& updates, const CallFn& call);
// batch_norm.cc: batch-norm-training/inference/grad.
absl::StatusOr<Literal> EvalBatchNorm(const HloInstruction& instr, Operands ops);
// random.cc: rng-bit-generator (three-fry and philox as XLA defines them), rng.
absl::StatusOr<Literal> EvalRandom(const HloInstruction& instr, Operands ops);

// collectives.cc: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
// collective-broadcast, replica-id, partition-id and the start/done pairs XLA writes for some,
// over the run's Communicator (hlo/collectives/communicator.h).
bool IsEvaluatorCollective(HloOpcode op);
absl::StatusOr<Literal> EvalCollective(const HloInstruction& instr, Operands ops,
                                       const CallFn& call);

}  // namespace kiln::eval
