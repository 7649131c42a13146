// Scatters that index trailing dimensions, run on operands that lead with them (see
// scatter_indexed_dimensions_first.h).
#include "hlo/passes/scatter_indexed_dimensions_first.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The transposed scatter's result transposed back, or null: not a one-operand scatter of
// row-major arrays whose indexed dimensions are all inserted (updated one element wide), whose
// other dimensions are updated whole, and whose indexed dimensions are not already the leading
// ones in index order.
HloInstruction* Rewrite(HloInstruction* s, NameUniquer& names) {
  if (s->operand_count() != 3 || !s->shape().IsArray() || !s->attrs().scatter_dimension_numbers ||
      s->to_apply() == nullptr)
    return nullptr;
  const ScatterDimensionNumbers& dn = *s->attrs().scatter_dimension_numbers;
  HloInstruction* table = s->operand(0);
  HloInstruction* updates = s->operand(2);
  const Shape& ts = table->shape();
  const Shape& us = updates->shape();
  if (!ts.HasDefaultLayout() || !us.HasDefaultLayout() || !s->shape().HasDefaultLayout() ||
      !dn.input_batching_dims.empty() || !dn.scatter_indices_batching_dims.empty())
    return nullptr;
  const int64_t rank = ts.rank();
  const int64_t k = static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size());
  std::vector<int64_t> indexed = dn.scatter_dims_to_operand_dims;
  std::sort(indexed.begin(), indexed.end());
  if (k == 0 || indexed != dn.inserted_window_dims ||
      std::adjacent_find(indexed.begin(), indexed.end()) != indexed.end())
    return nullptr;
  // Already leading, in index order: the row form.
  bool leading = true;
  for (int64_t i = 0; i < k; ++i) leading &= dn.scatter_dims_to_operand_dims[i] == i;
  if (leading) return nullptr;
  // The window: the operand's other dimensions, whole.
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < rank; ++d)
    if (!absl::c_linear_search(indexed, d)) rest.push_back(d);
  if (dn.update_window_dims.size() != rest.size()) return nullptr;
  for (size_t j = 0; j < rest.size(); ++j)
    if (us.dimensions(dn.update_window_dims[j]) != ts.dimensions(rest[j])) return nullptr;

  // The operand leads with the indexed dimensions in index order; the updates put their window
  // dimensions last, in order.
  std::vector<int64_t> table_perm = dn.scatter_dims_to_operand_dims;
  table_perm.insert(table_perm.end(), rest.begin(), rest.end());
  std::vector<int64_t> update_perm;
  for (int64_t d = 0; d < us.rank(); ++d)
    if (!absl::c_linear_search(dn.update_window_dims, d)) update_perm.push_back(d);
  const int64_t scatter_dims = static_cast<int64_t>(update_perm.size());
  update_perm.insert(update_perm.end(), dn.update_window_dims.begin(), dn.update_window_dims.end());

  HloComputation* comp = s->parent();
  HloInstruction* t_table = AddTranspose(comp, names, table, table_perm);
  HloInstruction* t_updates = AddTranspose(comp, names, updates, update_perm);
  ScatterDimensionNumbers rows = dn;
  rows.update_window_dims.clear();
  for (int64_t j = 0; j < static_cast<int64_t>(rest.size()); ++j)
    rows.update_window_dims.push_back(scatter_dims + j);
  rows.inserted_window_dims.clear();
  rows.scatter_dims_to_operand_dims.clear();
  for (int64_t i = 0; i < k; ++i) {
    rows.inserted_window_dims.push_back(i);
    rows.scatter_dims_to_operand_dims.push_back(i);
  }
  HloInstruction* scatter =
      AddArrayInstruction(comp, names, HloOpcode::kScatter, ts.element_type(),
                          t_table->shape().dimensions(), {t_table, s->operand(1), t_updates}, ts);
  scatter->mutable_attrs().scatter_dimension_numbers = rows;
  scatter->mutable_attrs().indices_are_sorted = s->attrs().indices_are_sorted;
  scatter->mutable_attrs().unique_indices = s->attrs().unique_indices;
  scatter->AppendCalledComputation(s->to_apply());
  std::vector<int64_t> back(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) back[table_perm[i]] = i;
  return AddTranspose(comp, names, scatter, back);
}

}  // namespace

absl::StatusOr<bool> ScatterIndexedDimensionsFirst::Run(HloModule& module) {
  NameUniquer names(module);
  return RewriteEach(module, HloOpcode::kScatter, [&](HloInstruction* s) {
    HloInstruction* r = Rewrite(s, names);
    if (r == nullptr) return false;
    if ((accepts_ && !accepts_(*r->operand(0))) || !ReplaceUsesIfCompatible(s, r)) {
      RemoveDeadFrom(s->parent(), {r});
      return false;
    }
    return true;
  });
}

}  // namespace kiln
