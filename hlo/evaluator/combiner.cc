// Recognition of simple reducer, update and comparator computations.
#include "hlo/evaluator/combiner.h"

namespace kiln::eval {
namespace {

// The parameter number of `instr` if it is a scalar parameter, else -1.
int64_t ScalarParam(const HloInstruction* instr) {
  if (instr == nullptr || instr->opcode() != HloOpcode::kParameter) return -1;
  if (!instr->shape().IsArray() || instr->shape().rank() != 0) return -1;
  return instr->parameter_number();
}

}  // namespace

CombinerKind ClassifyCombiner(const HloComputation& comp) {
  const HloInstruction* root = comp.root();
  if (root == nullptr || comp.num_parameters() != 2) return CombinerKind::kOther;
  if (root->opcode() == HloOpcode::kParameter)
    return ScalarParam(root) == 1 ? CombinerKind::kAssign : CombinerKind::kOther;
  if (root->operand_count() != 2) return CombinerKind::kOther;
  const int64_t a = ScalarParam(root->operand(0)), b = ScalarParam(root->operand(1));
  if (!((a == 0 && b == 1) || (a == 1 && b == 0))) return CombinerKind::kOther;
  // Every recognized op is commutative, so the operand order does not matter.
  switch (root->opcode()) {
    case HloOpcode::kAdd:
      return CombinerKind::kAdd;
    case HloOpcode::kMultiply:
      return CombinerKind::kMultiply;
    case HloOpcode::kMaximum:
      return CombinerKind::kMaximum;
    case HloOpcode::kMinimum:
      return CombinerKind::kMinimum;
    case HloOpcode::kAnd:
      return CombinerKind::kAnd;
    case HloOpcode::kOr:
      return CombinerKind::kOr;
    default:
      return CombinerKind::kOther;
  }
}

std::optional<SimpleCompare> ClassifyCompare(const HloComputation& comp) {
  const HloInstruction* root = comp.root();
  if (root == nullptr || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2 ||
      !root->attrs().comparison_direction)
    return std::nullopt;
  SimpleCompare sc;
  sc.lhs_param = ScalarParam(root->operand(0));
  sc.rhs_param = ScalarParam(root->operand(1));
  if (sc.lhs_param < 0 || sc.rhs_param < 0) return std::nullopt;
  sc.direction = *root->attrs().comparison_direction;
  sc.total_order = root->attrs().comparison_type == ComparisonType::kFloatTotalOrder;
  return sc;
}

}  // namespace kiln::eval
