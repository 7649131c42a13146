// Vector-matrix dots as column reductions (see vector_matrix_dot_to_reduce.h).
#include "hlo/passes/vector_matrix_dot_to_reduce.h"

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

bool Rewrite(HloInstruction* dot, int64_t max_multiply_adds, NameUniquer& names) {
  const DotDimensionNumbers* dn =
      dot->attrs().dot_dimension_numbers ? &*dot->attrs().dot_dimension_numbers : nullptr;
  if (dn == nullptr || dot->operand_count() != 2 || !dn->lhs_batch_dimensions.empty() ||
      !dn->rhs_batch_dimensions.empty() || dn->lhs_contracting_dimensions.size() != 1 ||
      dn->rhs_contracting_dimensions.size() != 1 || !dn->lhs_ragged_dimensions.empty())
    return false;
  const PrimitiveType type = dot->shape().element_type();
  if (type != PrimitiveType::F32 && type != PrimitiveType::F64) return false;
  // Which operand is the vector and which the matrix, contracting its dimension 0.
  int vector = -1;
  for (int i : {0, 1}) {
    const int other = 1 - i;
    const int64_t other_contracted =
        other == 0 ? dn->lhs_contracting_dimensions[0] : dn->rhs_contracting_dimensions[0];
    if (dot->operand(i)->shape().rank() == 1 && dot->operand(other)->shape().rank() == 2 &&
        other_contracted == 0)
      vector = i;
  }
  if (vector < 0) return false;
  HloInstruction* v = dot->operand(vector);
  HloInstruction* x = dot->operand(1 - vector);
  if (v->shape().element_type() != type || x->shape().element_type() != type ||
      !x->shape().HasDefaultLayout() || !dot->shape().HasDefaultLayout())
    return false;
  if (DotMultiplyAdds(*dot) >= max_multiply_adds) return false;
  HloComputation* comp = dot->parent();
  const std::vector<int64_t>& kn = x->shape().dimensions();
  HloInstruction* spread =
      AddArrayInstruction(comp, names, HloOpcode::kBroadcast, type, kn, {v}, x->shape());
  spread->mutable_attrs().dimensions = {0};
  spread->mutable_attrs().has_dimensions = true;
  HloInstruction* products =
      AddArrayInstruction(comp, names, HloOpcode::kMultiply, type, kn, {spread, x}, x->shape());
  HloInstruction* zero = AddScalarConstant(comp, names, type, 0);
  HloInstruction* sum = AddArrayInstruction(comp, names, HloOpcode::kReduce, type, {kn[1]},
                                            {products, zero}, dot->shape());
  sum->mutable_attrs().dimensions = {0};
  sum->mutable_attrs().has_dimensions = true;
  sum->AppendCalledComputation(BinaryComputation(*comp->parent(), HloOpcode::kAdd, type));
  if (ReplaceUsesIfCompatible(dot, sum)) return true;
  RemoveDeadFrom(comp, {sum});
  return false;
}

}  // namespace

absl::StatusOr<bool> VectorMatrixDotToReduce::Run(HloModule& module) {
  NameUniquer names(module);
  return RewriteEach(module, HloOpcode::kDot,
                     [&](HloInstruction* dot) { return Rewrite(dot, max_multiply_adds_, names); });
}

}  // namespace kiln
