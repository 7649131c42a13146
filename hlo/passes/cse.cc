// Common subexpression elimination (see cse.h).
#include "hlo/passes/cse.h"

#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "hlo/passes/instruction_equality.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

bool MayMerge(const HloInstruction& instr) {
  HloOpcode op = instr.opcode();
  if (op == HloOpcode::kParameter || IsRandomOpcode(op) || IsCollectiveOpcode(op)) return false;
  // Barriers and tokens exist to order things; merging them would change that order.
  if (op == HloOpcode::kOptimizationBarrier || op == HloOpcode::kAfterAll ||
      op == HloOpcode::kAddDependency || op == HloOpcode::kDomain)
    return false;
  if (!instr.control_predecessors().empty()) return false;
  return !HasSideEffect(instr);
}

// A cheap hash over what IdenticalIgnoringOperands compares plus the operand identities;
// equality is decided by the full comparison.
size_t HashInstruction(const HloInstruction& instr) {
  size_t h =
      absl::HashOf(static_cast<int>(instr.opcode()), static_cast<int>(instr.shape().element_type()),
                   instr.shape().dimensions());
  for (const HloInstruction* o : instr.operands()) h = absl::HashOf(h, o);
  if (instr.opcode() == HloOpcode::kConstant && instr.attrs().literal) {
    const Literal& lit = instr.literal();
    size_t n = static_cast<size_t>(std::min<int64_t>(lit.size_bytes(), 256));
    h = absl::HashOf(h, absl::string_view(reinterpret_cast<const char*>(lit.untyped_data()), n));
  }
  h = absl::HashOf(h, instr.dimensions(), instr.tuple_index());
  return h;
}

bool CseComputation(HloComputation* comp) {
  absl::flat_hash_map<size_t, std::vector<HloInstruction*>> seen;
  std::vector<HloInstruction*> merged;
  // Post order: operands are canonical before their users are hashed.
  for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
    if (!MayMerge(*instr)) continue;
    std::vector<HloInstruction*>& bucket = seen[HashInstruction(*instr)];
    HloInstruction* match = nullptr;
    for (HloInstruction* c : bucket) {
      if (c->operands() == instr->operands() && IdenticalIgnoringOperands(*c, *instr)) {
        match = c;
        break;
      }
    }
    if (match && ReplaceUsesIfCompatible(instr, match)) {
      merged.push_back(instr);
    } else {
      bucket.push_back(instr);
    }
  }
  RemoveDeadFrom(comp, merged);
  return !merged.empty();
}

}  // namespace

absl::StatusOr<bool> HloCSE::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.MakeComputationPostOrder()) changed |= CseComputation(comp);
  return changed;
}

}  // namespace kiln
