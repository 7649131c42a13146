// Dot merging (see dot_merger.h).
#include "hlo/passes/dot_merger.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/while_loop_invariant_code_motion.h"

namespace kiln {
namespace {

// Merges per Run, each followed by a fresh walk of the computation (a merge changes which
// dots depend on which): bounds the pass on a program of many mergeable groups.
constexpr int kMaxMergesPerComputation = 256;

// The one free dimension of operand `side` of `dot`, or -1 when it has none or several.
int64_t OnlyFreeDimension(const HloInstruction& dot, int side) {
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const auto& batch = side == 0 ? dn.lhs_batch_dimensions : dn.rhs_batch_dimensions;
  const auto& contracting =
      side == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
  int64_t free = -1;
  for (int64_t d = 0; d < dot.operand(side)->shape().rank(); ++d) {
    if (std::find(batch.begin(), batch.end(), d) != batch.end() ||
        std::find(contracting.begin(), contracting.end(), d) != contracting.end())
      continue;
    if (free >= 0) return -1;
    free = d;
  }
  return free;
}

// What dots must share to be merged over operand `side` (the one concatenated): the other
// operand itself (by its position in the post order, so that groups are visited in the same
// order on every run), the dimension numbers and types, and the concatenated operand's
// dimensions but the free one. A dot that cannot be merged this way has no key.
struct MergeKey {
  int64_t shared;
  std::vector<int64_t> batch_l, batch_r, contract_l, contract_r, dims;
  int64_t free;
  PrimitiveType operand_type, result_type;
  auto Tie() const {
    return std::tie(shared, batch_l, batch_r, contract_l, contract_r, dims, free, operand_type,
                    result_type);
  }
  bool operator<(const MergeKey& o) const { return Tie() < o.Tie(); }
};

std::optional<MergeKey> KeyOf(const HloInstruction& dot, int side,
                              const absl::flat_hash_map<const HloInstruction*, int64_t>& pos) {
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const int64_t free = OnlyFreeDimension(dot, side);
  if (free < 0) return std::nullopt;
  const Shape& s = dot.operand(side)->shape();
  MergeKey k{pos.at(dot.operand(1 - side)),
             dn.lhs_batch_dimensions,
             dn.rhs_batch_dimensions,
             dn.lhs_contracting_dimensions,
             dn.rhs_contracting_dimensions,
             s.dimensions(),
             free,
             s.element_type(),
             dot.shape().element_type()};
  k.dims[free] = 0;
  return k;
}

bool Mergeable(const HloInstruction& i, int64_t max_multiply_adds,
               const absl::flat_hash_set<const HloInstruction*>& control) {
  if (i.opcode() != HloOpcode::kDot || i.operand_count() != 2 || !i.shape().IsArray() ||
      !i.attrs().dot_dimension_numbers || !i.control_predecessors().empty() || control.contains(&i))
    return false;
  const DotDimensionNumbers& dn = *i.attrs().dot_dimension_numbers;
  if (!dn.lhs_ragged_dimensions.empty() || !dn.rhs_group_dimensions.empty() ||
      !i.operand(0)->shape().IsArray() || !i.operand(1)->shape().IsArray())
    return false;
  return DotMultiplyAdds(i) <= max_multiply_adds;
}

// Whether copying `dot`'s operand `side` into the concatenation costs little beside the dot:
// the operand does not change in the loop whose body this is (`invariant`: the copy is
// hoisted out, made once), it is small (its copy takes about what a GEMM call's set-up does),
// or the dot does many multiply-adds per byte copied (the shared operand's free size is
// large). Non-negative matrix factorization's v @ h.T and (w @ h) @ h.T, [512,256] x [256,16]
// each, merged copied 1 MB per step for GEMMs of 2 M multiply-adds: the concatenation took as
// long as the dot. A GRU's x @ w[:, :256] and x @ w[:, 256:] merge: w is the same every step.
bool CopyPaysOff(const HloInstruction& dot, int side,
                 const absl::flat_hash_set<const HloInstruction*>& invariant) {
  constexpr int64_t kSmallCopyBytes = 16 << 10;
  constexpr int64_t kMultiplyAddsPerCopiedByte = 16;
  const int64_t bytes = dot.operand(side)->shape().byte_size();
  return invariant.contains(dot.operand(side)) || bytes <= kSmallCopyBytes ||
         DotMultiplyAdds(dot) >= kMultiplyAddsPerCopiedByte * bytes;
}

// Whether any of `chosen` (all earlier than `dot` in the post order `pos`) is an ancestor of
// `dot`: the walk up from `dot` stops at instructions earlier than all of them.
bool ReachedFrom(const HloInstruction* dot,
                 const absl::flat_hash_set<const HloInstruction*>& chosen, int64_t earliest,
                 const absl::flat_hash_map<const HloInstruction*, int64_t>& pos) {
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack(dot->operands().begin(), dot->operands().end());
  for (const HloInstruction* p : dot->control_predecessors()) stack.push_back(p);
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    auto it = pos.find(x);
    if (it == pos.end() || it->second < earliest) continue;
    if (chosen.contains(x)) return true;
    for (const HloInstruction* o : x->operands()) stack.push_back(o);
    for (const HloInstruction* p : x->control_predecessors()) stack.push_back(p);
  }
  return false;
}

// Replaces `dots` (independent, one MergeKey over `side`) by one dot over their concatenated
// operands and a slice of it for each.
void Merge(HloComputation& comp, const std::vector<HloInstruction*>& dots, int side, int64_t free,
           NameUniquer& names) {
  const HloInstruction* first = dots.front();
  const DotDimensionNumbers& dn = *first->attrs().dot_dimension_numbers;
  // Where the concatenated dimension lands in the result: after the batch dimensions, and
  // for the rhs after the lhs's free dimensions as well.
  const int64_t batch = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  const int64_t lhs_free = first->operand(0)->shape().rank() - batch -
                           static_cast<int64_t>(dn.lhs_contracting_dimensions.size());
  const int64_t out_dim = side == 0 ? batch : batch + lhs_free;
  std::vector<HloInstruction*> parts;
  std::vector<int64_t> concat_dims = first->operand(side)->shape().dimensions();
  concat_dims[free] = 0;
  for (HloInstruction* d : dots) {
    parts.push_back(d->operand(side));
    concat_dims[free] += d->operand(side)->shape().dimensions(free);
  }
  const Shape& like = first->operand(side)->shape();
  HloInstruction* concat = AddArrayInstruction(&comp, names, HloOpcode::kConcatenate,
                                               like.element_type(), concat_dims, parts, like);
  concat->mutable_attrs().dimensions = {free};
  concat->mutable_attrs().has_dimensions = true;
  std::vector<int64_t> out_dims = first->shape().dimensions();
  out_dims[out_dim] = 0;
  for (HloInstruction* d : dots) out_dims[out_dim] += d->shape().dimensions(out_dim);
  std::vector<HloInstruction*> operands = {first->operand(0), first->operand(1)};
  operands[side] = concat;
  HloInstruction* merged =
      AddArrayInstruction(&comp, names, HloOpcode::kDot, first->shape().element_type(), out_dims,
                          operands, first->shape());
  merged->mutable_attrs() = first->attrs();
  int64_t offset = 0;
  for (HloInstruction* d : dots) {
    const int64_t rank = d->shape().rank();
    HloInstruction* slice =
        AddArrayInstruction(&comp, names, HloOpcode::kSlice, d->shape().element_type(),
                            d->shape().dimensions(), {merged}, d->shape());
    InstructionAttributes& a = slice->mutable_attrs();
    a.slice_starts.assign(rank, 0);
    a.slice_limits = d->shape().dimensions();
    a.slice_strides.assign(rank, 1);
    a.slice_starts[out_dim] = offset;
    offset += d->shape().dimensions(out_dim);
    a.slice_limits[out_dim] = offset;
    const bool was_root = comp.root() == d;
    d->ReplaceAllUsesWith(slice);
    if (was_root) comp.set_root(slice);
    comp.RemoveInstruction(d);
  }
}

// One merge in `comp`, if any group has two independent dots: true when it merged.
// `invariant`: comp's loop-invariant values when it is a while body.
bool MergeOnce(HloComputation& comp, int64_t max_multiply_adds,
               const absl::flat_hash_set<const HloInstruction*>& invariant, NameUniquer& names) {
  const absl::flat_hash_set<const HloInstruction*> control = ControlPredecessorsIn(comp);
  const std::vector<HloInstruction*> order = comp.MakeInstructionPostOrder();
  absl::flat_hash_map<const HloInstruction*, int64_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int64_t>(i);
  for (int side : {0, 1}) {
    std::map<MergeKey, std::vector<HloInstruction*>> groups;  // ordered: deterministic
    for (HloInstruction* i : order) {
      if (!Mergeable(*i, max_multiply_adds, control) || !CopyPaysOff(*i, side, invariant)) continue;
      if (std::optional<MergeKey> k = KeyOf(*i, side, pos)) groups[*k].push_back(i);
    }
    for (auto& [key, dots] : groups) {
      if (dots.size() < 2) continue;
      // Greedily in post order: a dot joins when none of those already chosen reaches it.
      std::vector<HloInstruction*> chosen;
      absl::flat_hash_set<const HloInstruction*> chosen_set;
      absl::flat_hash_set<const HloInstruction*> concatenated;
      for (HloInstruction* d : dots) {
        // The same operand twice is the same dot twice: CSE's to merge, not a concatenation.
        if (!concatenated.insert(d->operand(side)).second) continue;
        if (!chosen.empty() && ReachedFrom(d, chosen_set, pos[chosen.front()], pos)) continue;
        chosen.push_back(d);
        chosen_set.insert(d);
      }
      if (chosen.size() < 2) continue;
      Merge(comp, chosen, side, key.free, names);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<bool> DotMerger::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  absl::flat_hash_set<const HloComputation*> bodies;
  for (HloComputation* comp : NonFusionComputations(module))
    for (const HloInstruction* h : comp->instructions())
      if (h->opcode() == HloOpcode::kWhile) bodies.insert(h->while_body());
  for (HloComputation* comp : NonFusionComputations(module)) {
    for (int merges = 0; merges < kMaxMergesPerComputation; ++merges) {
      // Again after each merge: a merged dot's slices are new instructions.
      const absl::flat_hash_set<const HloInstruction*> invariant =
          bodies.contains(comp) ? LoopInvariants(*comp)
                                : absl::flat_hash_set<const HloInstruction*>();
      if (!MergeOnce(*comp, max_multiply_adds_, invariant, names)) break;
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln
