// Reduces over dimension 0 through a transpose that leads with a kept dimension (see
// reduce_kept_dimension_first.h).
#include "hlo/passes/reduce_kept_dimension_first.h"

#include "absl/algorithm/container.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The transposed reduce, or null: not a single-operand reduce over dimension 0 of a row-major
// array that keeps two dimensions or more.
HloInstruction* Rewrite(HloInstruction* reduce, NameUniquer& names) {
  if (reduce->operand_count() != 2 || !reduce->shape().IsArray() ||
      !reduce->operand(0)->shape().HasDefaultLayout() || !reduce->shape().HasDefaultLayout())
    return nullptr;
  const std::vector<int64_t>& reduced = reduce->dimensions();
  const Shape& in = reduce->operand(0)->shape();
  const int64_t rank = in.rank();
  if (!absl::c_linear_search(reduced, int64_t{0})) return nullptr;
  int64_t first_kept = -1;
  for (int64_t d = 0; d < rank && first_kept < 0; ++d)
    if (!absl::c_linear_search(reduced, d)) first_kept = d;
  // A kept dimension after the first: the new reduce still reduces one between kept ones.
  bool kept_after = false;
  for (int64_t d = first_kept + 1; d < rank; ++d) kept_after |= !absl::c_linear_search(reduced, d);
  if (first_kept < 0 || !kept_after) return nullptr;
  // The new order: the first kept dimension, then the others as they were.
  std::vector<int64_t> perm = {first_kept};
  for (int64_t d = 0; d < rank; ++d)
    if (d != first_kept) perm.push_back(d);
  std::vector<int64_t> new_reduced;
  for (int64_t i = 0; i < rank; ++i)
    if (absl::c_linear_search(reduced, perm[i])) new_reduced.push_back(i);
  HloComputation* comp = reduce->parent();
  HloInstruction* transpose = AddTranspose(comp, names, reduce->operand(0), perm);
  HloInstruction* r = AddArrayInstruction(
      comp, names, HloOpcode::kReduce, reduce->shape().element_type(), reduce->shape().dimensions(),
      {transpose, reduce->operand(1)}, reduce->shape());
  r->mutable_attrs().dimensions = new_reduced;
  r->mutable_attrs().has_dimensions = true;
  r->AppendCalledComputation(reduce->to_apply());
  return r;
}

}  // namespace

absl::StatusOr<bool> ReduceKeptDimensionFirst::Run(HloModule& module) {
  NameUniquer names(module);
  return RewriteEach(module, HloOpcode::kReduce, [&](HloInstruction* reduce) {
    if (keep_whole_ && keep_whole_(*reduce)) return false;
    HloInstruction* r = Rewrite(reduce, names);
    if (r == nullptr) return false;
    if ((accepts_ && !accepts_(*r)) || !ReplaceUsesIfCompatible(reduce, r)) {
      RemoveDeadFrom(reduce->parent(), {r});
      return false;
    }
    return true;
  });
}

}  // namespace kiln
