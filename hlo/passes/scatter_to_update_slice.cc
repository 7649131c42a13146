// One-window scatters as dynamic-update-slices (see scatter_to_update_slice.h).
#include "hlo/passes/scatter_to_update_slice.h"

#include <algorithm>
#include <optional>

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// How the combiner (current, update) -> new treats its two scalars: the update alone, or
// one elementwise binary opcode over both (in either order: they commute or are written
// current-first).
std::optional<HloOpcode> CombinerOpcode(const HloComputation& c, bool* overwrite) {
  if (c.num_parameters() != 2 || c.root() == nullptr) return std::nullopt;
  const HloInstruction* r = c.root();
  if (r == c.parameter(1)) {
    *overwrite = true;
    return HloOpcode::kParameter;
  }
  *overwrite = false;
  if (r->operand_count() != 2 || r->operand(0) != c.parameter(0) || r->operand(1) != c.parameter(1))
    return std::nullopt;
  switch (r->opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kMultiply:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kSubtract:
      return r->opcode();
    default:
      return std::nullopt;
  }
}

class Rewriter {
 public:
  Rewriter(HloComputation* comp, NameUniquer& names) : comp_(comp), names_(names) {}

  // The replacement of `s`, or null when `s` scatters more than one window.
  HloInstruction* Rewrite(HloInstruction* s) {
    if (s->operand_count() != 3 || !s->shape().IsArray() || s->to_apply() == nullptr ||
        !s->attrs().scatter_dimension_numbers)
      return nullptr;
    const ScatterDimensionNumbers& dn = *s->attrs().scatter_dimension_numbers;
    if (!dn.input_batching_dims.empty() || !dn.scatter_indices_batching_dims.empty())
      return nullptr;
    HloInstruction *operand = s->operand(0), *indices = s->operand(1), *updates = s->operand(2);
    const Shape& os = operand->shape();
    const Shape& is = indices->shape();
    if (!os.IsArray() || !is.IsArray() || !updates->shape().IsArray()) return nullptr;
    bool overwrite = false;
    std::optional<HloOpcode> op = CombinerOpcode(*s->to_apply(), &overwrite);
    if (!op) return nullptr;
    // One index vector: every dimension of the indices but the index vector's is 1, and so
    // is every dimension of the updates outside the window.
    const int64_t ivd = dn.index_vector_dim;
    for (int64_t d = 0; d < is.rank(); ++d)
      if (d != ivd && is.dimensions(d) != 1) return nullptr;
    const int64_t index_count = ivd < is.rank() ? is.dimensions(ivd) : 1;
    if (index_count != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) return nullptr;
    const std::vector<int64_t>& ud = updates->shape().dimensions();
    for (int64_t d = 0; d < static_cast<int64_t>(ud.size()); ++d)
      if (std::find(dn.update_window_dims.begin(), dn.update_window_dims.end(), d) ==
              dn.update_window_dims.end() &&
          ud[d] != 1)
        return nullptr;
    // The window in the operand's dimensions: 1 where inserted, else the next window
    // dimension of the updates.
    std::vector<int64_t> window(os.rank());
    size_t next = 0;
    for (int64_t d = 0; d < os.rank(); ++d) {
      const bool inserted =
          std::find(dn.inserted_window_dims.begin(), dn.inserted_window_dims.end(), d) !=
          dn.inserted_window_dims.end();
      if (inserted) {
        window[d] = 1;
      } else {
        if (next >= dn.update_window_dims.size()) return nullptr;
        window[d] = ud[dn.update_window_dims[next++]];
      }
      if (window[d] < 1 || window[d] > os.dimensions(d)) return nullptr;
    }
    if (next != dn.update_window_dims.size()) return nullptr;
    std::vector<bool> indexed(os.rank(), false);
    for (int64_t d : dn.scatter_dims_to_operand_dims) {
      if (d < 0 || d >= os.rank() || indexed[d]) return nullptr;
      indexed[d] = true;
    }
    if (s->user_count() == 0 && comp_->root() != s) return nullptr;

    const PrimitiveType it = is.element_type();
    const PrimitiveType t = os.element_type();
    // Start of each operand dimension: an element of the index vector, or 0.
    std::vector<HloInstruction*> starts(os.rank(), nullptr);
    HloInstruction* index_vector = Add(HloOpcode::kReshape, it, {index_count}, {indices}, is);
    HloInstruction* fits = nullptr;
    for (int64_t k = 0; k < index_count; ++k) {
      const int64_t d = dn.scatter_dims_to_operand_dims[k];
      HloInstruction* e = Add(HloOpcode::kSlice, it, {1}, {index_vector}, is);
      e->mutable_attrs().slice_starts = {k};
      e->mutable_attrs().slice_limits = {k + 1};
      e->mutable_attrs().slice_strides = {1};
      starts[d] = Add(HloOpcode::kReshape, it, {}, {e}, is);
      // 0 <= start <= size - window, else scatter skips the window.
      HloInstruction* low =
          AddCompare(comp_, names_, starts[d], Constant(it, 0), ComparisonDirection::kGe, {}, is);
      HloInstruction* high =
          AddCompare(comp_, names_, starts[d], Constant(it, os.dimensions(d) - window[d]),
                     ComparisonDirection::kLe, {}, is);
      HloInstruction* both = Add(HloOpcode::kAnd, PrimitiveType::PRED, {}, {low, high}, is);
      fits =
          fits == nullptr ? both : Add(HloOpcode::kAnd, PrimitiveType::PRED, {}, {fits, both}, is);
    }
    for (HloInstruction*& st : starts)
      if (st == nullptr) st = Constant(it, 0);

    HloInstruction* update = Add(HloOpcode::kReshape, t, window, {updates}, os);
    std::vector<HloInstruction*> slice_operands = {operand};
    slice_operands.insert(slice_operands.end(), starts.begin(), starts.end());
    HloInstruction* current = Add(HloOpcode::kDynamicSlice, t, window, slice_operands, os);
    current->mutable_attrs().dynamic_slice_sizes = window;
    if (!overwrite) update = Add(*op, t, window, {current, update}, os);
    if (fits != nullptr) {
      HloInstruction* mask = Add(HloOpcode::kBroadcast, PrimitiveType::PRED, window, {fits}, os);
      mask->mutable_attrs().has_dimensions = true;
      update = Add(HloOpcode::kSelect, t, window, {mask, update, current}, os);
    }
    std::vector<HloInstruction*> dus_operands = {operand, update};
    dus_operands.insert(dus_operands.end(), starts.begin(), starts.end());
    auto dus = std::make_unique<HloInstruction>(HloOpcode::kDynamicUpdateSlice, s->shape(),
                                                std::move(dus_operands));
    return AddWithFreshName(comp_, std::move(dus), names_, s->name());
  }

 private:
  HloInstruction* Add(HloOpcode op, PrimitiveType t, std::vector<int64_t> dims,
                      std::vector<HloInstruction*> operands, const Shape& like) {
    return AddArrayInstruction(comp_, names_, op, t, std::move(dims), std::move(operands), like);
  }
  HloInstruction* Constant(PrimitiveType t, int64_t v) {
    return AddScalarConstant(comp_, names_, t, static_cast<double>(v));
  }

  HloComputation* comp_;
  NameUniquer& names_;
};

}  // namespace

absl::StatusOr<bool> ScatterToUpdateSlice::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* s : comp->MakeInstructionPostOrder()) {
      if (s->opcode() != HloOpcode::kScatter) continue;
      HloInstruction* repl = Rewriter(comp, names).Rewrite(s);
      if (repl == nullptr) continue;
      // Same shape and layout: the replacement always fits.
      s->ReplaceAllUsesWith(repl);
      if (comp->root() == s) comp->set_root(repl);
      dead.push_back(s);
      changed = true;
    }
    RemoveDeadFrom(comp, dead);
  }
  return changed;
}

}  // namespace kiln
