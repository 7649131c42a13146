// Shape inference: the result shape every opcode must have, given its operands' shapes and
// its attributes. The verifier checks parsed shapes against it; builders use it.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hlo/instruction.h"

namespace kiln {

// Infers the result shape of `instr` from its operands, attributes and called
// computations. Layouts are not inferred (the result has the default layout).
// Where the result is not a function of the operands (parameter, custom-call, the target
// type of convert, the dims of broadcast/reshape/iota, ...) the declared shape supplies what
// is missing and is checked for consistency with the operands.
// Errors are InvalidArgument, worded `%name: opcode: what is wrong`. For collectives and
// cross-host ops whose shape depends on things outside the module (replica counts, channels)
// it returns an Unimplemented status ("cannot infer ..."): callers then trust the declared
// shape.
//
// `rules` picks which HLO the rules describe:
// - kExecutable: what Kiln's devices run: one floating-point precision per operation, bitcasts
//   that keep the byte size, rng-bit-generator returning (state, values).
// - kXlaText: also what XLA's verifier accepts in layout-free HLO as XLA's tests write it (its
//   test base allows mixed precision): floating-point operands of different precision (the
//   result takes the higher one), bitcasts whose byte size only a layout could reconcile,
//   rng-bit-generator returning the values alone, and complex FFTs whose fft_length differs
//   from the operand's dimensions.
enum class ShapeRules { kExecutable, kXlaText };
absl::StatusOr<Shape> InferShape(const HloInstruction& instr,
                                 ShapeRules rules = ShapeRules::kExecutable);

// Checks the operand count of `instr` against its opcode: HloOpcodeArity for fixed-arity
// opcodes, the opcode's own rule for variadic ones (reduce 2N, scatter 2N+1, sort >= 1...).
absl::Status CheckOperandCount(const HloInstruction& instr);

}  // namespace kiln
