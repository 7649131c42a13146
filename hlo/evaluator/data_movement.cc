// Evaluation of one family of opcodes (stub: to be written).
#include "absl/status/status.h"
#include "hlo/evaluator/evaluator_internal.h"

namespace kiln::eval {

absl::StatusOr<Literal> EvalDataMovement(const HloInstruction& instr, Operands ops) {
  return absl::UnimplementedError("evaluator: '" + std::string(HloOpcodeString(instr.opcode())) + "' not implemented yet");
}

}  // namespace kiln::eval
