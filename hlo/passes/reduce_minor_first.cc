// Reduces over minor and outer dimensions as two reduces (see reduce_minor_first.h).
#include "hlo/passes/reduce_minor_first.h"

#include "absl/algorithm/container.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Whether the reducer is order-free with its identity as the initial value, and not a sum or
// product of 16- or 8-bit floats (whose intermediate would round).
bool OrderFreeWithIdentity(const HloInstruction& reduce) {
  const std::optional<HloOpcode> op = BinaryReducerWithIdentity(reduce);
  return op && !((*op == HloOpcode::kAdd || *op == HloOpcode::kMultiply) &&
                 IsNarrowFloat(reduce.shape().element_type()));
}

bool Rewrite(HloInstruction* reduce, int64_t min_run, NameUniquer& names) {
  if (reduce->operand_count() != 2 || !reduce->shape().IsArray() ||
      !reduce->operand(0)->shape().HasDefaultLayout() || !reduce->shape().HasDefaultLayout())
    return false;
  if (!OrderFreeWithIdentity(*reduce)) return false;
  const std::vector<int64_t>& in = reduce->operand(0)->shape().dimensions();
  const std::vector<int64_t>& reduced = reduce->dimensions();
  int64_t last_kept = -1;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (!absl::c_linear_search(reduced, d)) last_kept = d;
  std::vector<int64_t> minor, outer;
  int64_t run = 1;
  for (int64_t d : reduced) {
    if (d > last_kept) {
      minor.push_back(d);
      run *= in[d];
    } else {
      outer.push_back(d);
    }
  }
  if (last_kept < 0 || minor.empty() || outer.empty() || run < min_run) return false;
  absl::c_sort(minor);
  absl::c_sort(outer);
  HloComputation* comp = reduce->parent();
  const std::vector<int64_t> rows(in.begin(), in.begin() + last_kept + 1);
  HloInstruction* init = reduce->operand(1);
  HloInstruction* inner =
      AddArrayInstruction(comp, names, HloOpcode::kReduce, reduce->shape().element_type(), rows,
                          {reduce->operand(0), init}, reduce->shape());
  inner->mutable_attrs().dimensions = minor;
  inner->mutable_attrs().has_dimensions = true;
  inner->AppendCalledComputation(reduce->to_apply());
  HloInstruction* rest =
      AddArrayInstruction(comp, names, HloOpcode::kReduce, reduce->shape().element_type(),
                          reduce->shape().dimensions(), {inner, init}, reduce->shape());
  rest->mutable_attrs().dimensions = outer;
  rest->mutable_attrs().has_dimensions = true;
  rest->AppendCalledComputation(reduce->to_apply());
  if (ReplaceUsesIfCompatible(reduce, rest)) return true;
  RemoveDeadFrom(comp, {rest});
  return false;
}

}  // namespace

absl::StatusOr<bool> ReduceMinorFirst::Run(HloModule& module) {
  NameUniquer names(module);
  return RewriteEach(module, HloOpcode::kReduce, [&](HloInstruction* reduce) {
    return !(keep_whole_ && keep_whole_(*reduce)) && Rewrite(reduce, min_run_, names);
  });
}

}  // namespace kiln
