// Sorts sliced to their first k elements as topk (see sort_to_top_k.h).
#include "hlo/passes/sort_to_top_k.h"

#include <optional>

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Whether the comparator puts the largest first (GT), the smallest (LT), or neither.
std::optional<bool> Largest(const HloComputation& cmp) {
  const HloInstruction* root = cmp.root();
  if (root->opcode() != HloOpcode::kCompare || !root->attrs().comparison_direction) return {};
  const HloInstruction *a = root->operand(0), *b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) return {};
  const int64_t pa = a->parameter_number(), pb = b->parameter_number();
  const bool forward = pa == 0 && pb == 1, backward = pa == 1 && pb == 0;
  if (!forward && !backward) return {};
  const ComparisonDirection d = *root->attrs().comparison_direction;
  if (d != ComparisonDirection::kGt && d != ComparisonDirection::kLt) return {};
  return (d == ComparisonDirection::kGt) == forward;
}

// Whether `h` is an s32 iota (or a broadcast of a rank-1 one) counting along `dim`.
bool IsIotaAlong(const HloInstruction* h, int64_t dim) {
  if (h->shape().element_type() != PrimitiveType::S32) return {};
  if (h->opcode() == HloOpcode::kIota) return h->attrs().iota_dimension == dim;
  return h->opcode() == HloOpcode::kBroadcast && h->dimensions().size() == 1 &&
         h->dimensions()[0] == dim && h->operand(0)->opcode() == HloOpcode::kIota;
}

// The k of a slice of the first k elements along the last dimension, whole along the others;
// nullopt for any other user.
std::optional<int64_t> LeadingSlice(const HloInstruction* s) {
  if (s->opcode() != HloOpcode::kSlice) return {};
  const std::vector<int64_t>& dims = s->operand(0)->shape().dimensions();
  const InstructionAttributes& a = s->attrs();
  const size_t last = dims.size() - 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (a.slice_starts[d] != 0 || a.slice_strides[d] != 1) return {};
    if (d != last && a.slice_limits[d] != dims[d]) return {};
  }
  return a.slice_limits[last];
}

// Replaces the sort's slices by topk's results; returns the slices (now dead), or nothing.
std::vector<HloInstruction*> Rewrite(HloInstruction* sort, NameUniquer& names,
                                     bool (*take)(const HloInstruction&)) {
  const int n_ops = sort->operand_count();
  if (n_ops < 1 || n_ops > 2 || sort->to_apply() == nullptr) return {};
  const Shape& keys_shape = sort->operand(0)->shape();
  if (!keys_shape.IsArray() || keys_shape.rank() < 1 || sort->dimensions().size() != 1) return {};
  const int64_t last = keys_shape.rank() - 1, n = keys_shape.dimensions(last);
  if (sort->dimensions()[0] != last) return {};
  if (n_ops == 2 && !IsIotaAlong(sort->operand(1), last)) return {};
  const std::optional<bool> largest = Largest(*sort->to_apply());
  if (!largest) return {};
  const PrimitiveType t = keys_shape.element_type();
  if (sort->attrs().is_stable && !IsInteger(t)) return {};
  // The results' slices: result i's users, each a leading slice.
  std::vector<std::vector<HloInstruction*>> slices(n_ops);
  int64_t k = 0;
  auto collect = [&](HloInstruction* result, int i) {
    for (HloInstruction* u : result->users()) {
      const std::optional<int64_t> ki = LeadingSlice(u);
      if (!ki) return false;
      k = std::max(k, *ki);
      slices[i].push_back(u);
    }
    return true;
  };
  if (!sort->shape().IsTuple()) {
    if (!collect(sort, 0)) return {};
  } else {
    for (HloInstruction* g : sort->users())
      if (g->opcode() != HloOpcode::kGetTupleElement || !collect(g, g->attrs().tuple_index))
        return {};
  }
  if (k == 0 || 2 * k > n || sort->parent()->root() == sort) return {};
  for (HloInstruction* g : sort->users())
    if (g->parent()->root() == g) return {};
  HloComputation* comp = sort->parent();
  std::vector<int64_t> dims = keys_shape.dimensions();
  dims.back() = k;
  const Shape values = ShapeLike(t, dims, keys_shape);
  const Shape indices = ShapeLike(PrimitiveType::S32, dims, keys_shape);
  HloInstruction* topk = AddWithFreshName(
      comp,
      std::make_unique<HloInstruction>(HloOpcode::kTopK, Shape::Tuple({values, indices}),
                                       std::vector<HloInstruction*>{sort->operand(0)}),
      names);
  topk->mutable_attrs().k = k;
  topk->mutable_attrs().largest = *largest;
  if (take != nullptr && !take(*topk)) {
    RemoveDeadFrom(comp, {topk});
    return {};
  }
  std::vector<HloInstruction*> dead;
  for (int i = 0; i < n_ops; ++i) {
    HloInstruction* part = AddWithFreshName(
        comp,
        std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement, i == 0 ? values : indices,
                                         std::vector<HloInstruction*>{topk}),
        names);
    part->mutable_attrs().tuple_index = i;
    for (HloInstruction* s : slices[i]) {
      HloInstruction* repl = part;
      if (s->shape().dimensions(last) != k) {
        repl = AddArrayInstruction(comp, names, HloOpcode::kSlice, s->shape().element_type(),
                                   s->shape().dimensions(), {part}, s->shape());
        repl->mutable_attrs().slice_starts = s->attrs().slice_starts;
        repl->mutable_attrs().slice_limits = s->attrs().slice_limits;
        repl->mutable_attrs().slice_strides = s->attrs().slice_strides;
      }
      ReplaceUsesIfCompatible(s, repl);
      dead.push_back(s);
    }
  }
  return dead;
}

}  // namespace

absl::StatusOr<bool> SortToTopK::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* h : comp->MakeInstructionPostOrder())
      if (h->opcode() == HloOpcode::kSort)
        for (HloInstruction* s : Rewrite(h, names, take_)) dead.push_back(s);
    if (dead.empty()) continue;
    RemoveDeadFrom(comp, dead);  // the slices, then the sort and its iota
    comp->SortInstructionsInPostOrder();
    changed = true;
  }
  return changed;
}

}  // namespace kiln
