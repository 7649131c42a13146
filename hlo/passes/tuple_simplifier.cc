// Tuple simplification (see tuple_simplifier.h).
#include "hlo/passes/tuple_simplifier.h"

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The tuple `t` rebuilds: x when t = tuple(gte(x,0), ..., gte(x,n-1)) and x has n elements.
HloInstruction* RebuiltTuple(const HloInstruction* t) {
  if (t->operand_count() == 0) return nullptr;
  HloInstruction* source = nullptr;
  for (int i = 0; i < t->operand_count(); ++i) {
    const HloInstruction* g = t->operand(i);
    if (g->opcode() != HloOpcode::kGetTupleElement || g->tuple_index() != i) return nullptr;
    if (source == nullptr) source = g->operand(0);
    if (g->operand(0) != source) return nullptr;
  }
  if (!source->shape().IsTuple() || source->shape().tuple_size() != t->operand_count())
    return nullptr;
  return source;
}

}  // namespace

absl::StatusOr<bool> TupleSimplifier::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> replaced;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      HloInstruction* repl = nullptr;
      if (instr->opcode() == HloOpcode::kGetTupleElement) {
        const HloInstruction* t = instr->operand(0);
        int64_t i = instr->tuple_index();
        if (t->opcode() == HloOpcode::kTuple && i >= 0 && i < t->operand_count())
          repl = t->operand(static_cast<int>(i));
      } else if (instr->opcode() == HloOpcode::kTuple) {
        repl = RebuiltTuple(instr);
      }
      if (repl && ReplaceUsesIfCompatible(instr, repl)) replaced.push_back(instr);
    }
    RemoveDeadFrom(comp, replaced);
    changed |= !replaced.empty();
  }
  return changed;
}

}  // namespace kiln
