// Sibling multi-output fusion: for every large value, merges pairs of its users that are
// fusions (kLoop/kInput) or lone reduces when they iterate over compatible spaces and
// merging creates no cycle; repeats until nothing merges.
#include "hlo/passes/multi_output_fusion.h"

#include <algorithm>

#include "hlo/passes/fusion_util.h"

namespace kiln {
namespace {

// The space a kernel iterates over: for reductions, the input dims and the reduced dims;
// for loops, the output dims. Siblings merge only when one loop nest serves both.
struct IterationSpace {
  bool valid = false;
  bool is_reduce = false;
  std::vector<int64_t> dims;
  std::vector<int64_t> reduced;
};

IterationSpace ReduceSpace(const HloInstruction& r) {
  IterationSpace s;
  s.valid = r.operand_count() == 2 && r.shape().IsArray();
  s.is_reduce = true;
  s.dims = r.operand(0)->shape().dimensions();
  s.reduced = r.dimensions();
  std::sort(s.reduced.begin(), s.reduced.end());
  return s;
}

IterationSpace SpaceOf(const HloInstruction& i) {
  if (i.opcode() == HloOpcode::kReduce) return ReduceSpace(i);
  IterationSpace s;
  if (i.opcode() != HloOpcode::kFusion) return s;
  FusionKind k = i.attrs().fusion_kind;
  if (k != FusionKind::kLoop && k != FusionKind::kInput) return s;
  bool first = true;
  for (const HloInstruction* x : i.fused_computation()->instructions()) {
    if (x->opcode() != HloOpcode::kReduce) continue;
    IterationSpace r = ReduceSpace(*x);
    if (!r.valid) return s;
    if (!first && (r.dims != s.dims || r.reduced != s.reduced)) return IterationSpace{};
    s = r;
    first = false;
  }
  if (!first) return s;
  const HloInstruction* root = i.fused_computation()->root();
  std::vector<const HloInstruction*> leaves;
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* l : root->operands()) leaves.push_back(l);
  } else {
    leaves.push_back(root);
  }
  s.valid = true;
  s.dims = leaves[0]->shape().dimensions();
  for (const HloInstruction* l : leaves)
    if (!l->shape().IsArray() || l->shape().dimensions() != s.dims) s.valid = false;
  return s;
}

bool Compatible(const IterationSpace& a, const IterationSpace& b) {
  if (!a.valid || !b.valid) return false;
  if (a.is_reduce && b.is_reduce) return a.dims == b.dims && a.reduced == b.reduced;
  return a.dims == b.dims;
}

// A loop fusion that computes each output element from its operands' elements alone (see
// MultiOutputFusionOptions::elementwise_loops_only).
bool IsElementwiseLoop(const HloInstruction& fusion, bool row_reduction_roots = false) {
  if (fusion.opcode() != HloOpcode::kFusion ||
      (fusion.attrs().fusion_kind != FusionKind::kLoop &&
       !(row_reduction_roots && fusion.attrs().fusion_kind == FusionKind::kInput)))
    return false;
  const HloInstruction* root = fusion.fused_computation()->root();
  for (const HloInstruction* x : fusion.fused_computation()->instructions()) {
    if (x == root && x->opcode() == HloOpcode::kTuple) continue;
    if (row_reduction_roots && x->opcode() == HloOpcode::kReduce) continue;  // checked below
    switch (x->opcode()) {
      case HloOpcode::kBroadcast:
      case HloOpcode::kIota:
      case HloOpcode::kConstant:
      case HloOpcode::kParameter:
        continue;
      default:
        break;
    }
    if (IsElementwiseOpcode(x->opcode())) continue;
    if (x->shape().IsArray() &&
        x->shape().num_elements() <= MultiOutputFusionOptions::kSmallElements)
      continue;
    return false;
  }
  return true;
}

// A fusion whose roots are all reduces of the trailing dimensions (at least one kept) of an
// elementwise cone (see MultiOutputFusionOptions::row_reductions).
bool IsRowReduction(const HloInstruction& fusion) {
  if (!IsElementwiseLoop(fusion, /*row_reduction_roots=*/true)) return false;
  const HloInstruction* root = fusion.fused_computation()->root();
  std::vector<const HloInstruction*> roots;
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* l : root->operands()) roots.push_back(l);
  } else {
    roots.push_back(root);
  }
  for (const HloInstruction* r : roots) {
    if (r->opcode() != HloOpcode::kReduce || r->operand_count() != 2 || !r->shape().IsArray() ||
        r->user_count() != (root == r ? 0 : 1))
      return false;
    std::vector<int64_t> reduced = r->dimensions();
    std::sort(reduced.begin(), reduced.end());
    const int64_t rank = r->operand(0)->shape().rank();
    const int64_t kept = rank - static_cast<int64_t>(reduced.size());
    if (reduced.empty() || kept < 1) return false;
    for (size_t d = 0; d < reduced.size(); ++d)
      if (reduced[d] != kept + static_cast<int64_t>(d)) return false;
  }
  // No reduce other than the roots.
  int64_t reduces = 0;
  for (const HloInstruction* x : fusion.fused_computation()->instructions())
    reduces += x->opcode() == HloOpcode::kReduce;
  return reduces == static_cast<int64_t>(roots.size());
}

int64_t BodySize(const HloInstruction& i) {
  if (i.opcode() != HloOpcode::kFusion) return 1;
  return i.fused_computation()->instruction_count();
}

class SiblingMerger {
 public:
  SiblingMerger(HloComputation* comp, const MultiOutputFusionOptions& options,
                FusionNameTable& names)
      : comp_(comp),
        options_(options),
        names_(names),
        control_(InstructionsWithControlEdges(*comp)) {}

  bool Run() {
    bool changed = false;
    while (MergeOnce()) changed = true;
    return changed;
  }

 private:
  bool IsCandidate(const HloInstruction& i) const {
    if (control_.contains(&i)) return false;
    if (options_.elementwise_loops_only && !IsElementwiseLoop(i) &&
        !(options_.row_reductions && IsRowReduction(i)))
      return false;
    if (i.opcode() == HloOpcode::kReduce) return i.operand_count() == 2 && i.shape().IsArray();
    if (i.opcode() != HloOpcode::kFusion) return false;
    FusionKind k = i.attrs().fusion_kind;
    if (k != FusionKind::kLoop && k != FusionKind::kInput) return false;
    if (i.shape().IsTuple()) {
      // A multi-output fusion is read through get-tuple-element only (then it can be
      // re-indexed); anything else would need the whole tuple rebuilt.
      if (comp_->root() == &i) return false;
      for (const HloInstruction* u : i.users())
        if (u->opcode() != HloOpcode::kGetTupleElement) return false;
      if (i.fused_computation()->root()->opcode() != HloOpcode::kTuple) return false;
    }
    return i.shape().IsArray() || i.shape().IsTuple();
  }

  // Whether `to` is reachable from `from` through users. The post-order is topological,
  // so the search never needs to visit anything placed after `to`.
  bool ReachesInOrder(const HloInstruction* from, const HloInstruction* to) const {
    const int64_t limit = pos_.at(to);
    if (pos_.at(from) >= limit) return false;
    absl::flat_hash_set<const HloInstruction*> seen;
    std::vector<const HloInstruction*> stack{from};
    while (!stack.empty()) {
      const HloInstruction* x = stack.back();
      stack.pop_back();
      for (const HloInstruction* u : x->users()) {
        if (u == to) return true;
        auto it = pos_.find(u);
        if (it != pos_.end() && it->second < limit && seen.insert(u).second) stack.push_back(u);
      }
    }
    return false;
  }

  bool CanMerge(HloInstruction* a, HloInstruction* b) const {
    if (!Compatible(SpaceOf(*a), SpaceOf(*b))) return false;
    // Row reductions only with each other (an elementwise loop over the rows' elements has
    // the reduces' iteration space too, but not one kernel strategy with them).
    if (options_.elementwise_loops_only && options_.row_reductions &&
        IsRowReduction(*a) != IsRowReduction(*b))
      return false;
    if (ReachesInOrder(a, b) || ReachesInOrder(b, a)) return false;
    std::vector<const HloInstruction*> ops;
    for (const HloInstruction* x : {a, b})
      for (const HloInstruction* o : x->operands())
        if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    if (static_cast<int64_t>(ops.size()) > options_.max_operands) return false;
    return BodySize(*a) + BodySize(*b) <= options_.max_instructions;
  }

  bool MergeOnce() {
    std::vector<HloInstruction*> order = comp_->MakeInstructionPostOrder();
    pos_.clear();
    for (size_t i = 0; i < order.size(); ++i) pos_[order[i]] = static_cast<int64_t>(i);
    for (HloInstruction* x : order) {
      if (!x->shape().IsArray() || x->shape().num_elements() < options_.min_shared_elements)
        continue;
      std::vector<HloInstruction*> sibs;
      for (HloInstruction* u : x->users())
        if (IsCandidate(*u)) sibs.push_back(u);
      for (size_t i = 0; i < sibs.size(); ++i) {
        for (size_t j = i + 1; j < sibs.size(); ++j) {
          // A pair that cannot merge now never will: merging others only adds paths
          // (cycles) and leaves iteration spaces alone. (A freed address reused by a new
          // fusion may inherit a refusal: that only loses a merge, it cannot break one.)
          auto key = std::make_pair(sibs[i], sibs[j]);
          if (refused_.contains(key)) continue;
          if (CanMerge(sibs[i], sibs[j])) {
            Merge(sibs[i], sibs[j]);
            return true;
          }
          refused_.insert(key);
        }
      }
    }
    return false;
  }

  void ReleaseFusionNames(HloInstruction* f) {
    if (f->opcode() != HloOpcode::kFusion) return;
    for (HloInstruction* p : f->fused_computation()->parameters()) names_.Release(p->name());
  }

  void Merge(HloInstruction* a, HloInstruction* b) {
    FusionSpec spec;
    spec.members = {a, b};
    spec.outputs = {a, b};
    ReleaseFusionNames(a);
    ReleaseFusionNames(b);
    if (a->opcode() == HloOpcode::kFusion) {
      spec.name = a->name();
      spec.computation_name = a->fused_computation()->name();
      a->fused_computation()->set_name(spec.computation_name + ".replaced");
    } else {
      spec.name = names_.Get("fusion");
      spec.computation_name = names_.Get("fused_computation");
    }
    if (b->opcode() == HloOpcode::kFusion) names_.Release(b->name());
    BuiltFusion built = BuildFusion(comp_, spec, names_);
    HloInstruction* f = built.fusion;
    f->mutable_attrs().fusion_kind = KindForFusedComputation(*f->fused_computation());
    Rewire(a, f, built.output_offsets[0]);
    Rewire(b, f, built.output_offsets[1]);
    RemoveDeadMembers(comp_, spec.members);
  }

  HloInstruction* AddGte(HloInstruction* f, int64_t index) {
    auto g = std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement,
                                              f->shape().tuple_shapes(static_cast<int>(index)),
                                              std::vector<HloInstruction*>{f});
    g->mutable_attrs().tuple_index = index;
    g->set_name(names_.Get("get-tuple-element"));
    return comp_->AddInstruction(std::move(g));
  }

  void Rewire(HloInstruction* old, HloInstruction* f, int64_t offset) {
    if (!old->shape().IsTuple()) {
      old->ReplaceAllUsesWith(AddGte(f, offset));
      return;
    }
    std::vector<HloInstruction*> users = old->users();
    for (HloInstruction* u : users) {
      u->ReplaceAllUsesWith(AddGte(f, offset + u->tuple_index()));
      names_.Release(u->name());
      comp_->RemoveInstruction(u);
    }
  }

  HloComputation* comp_;
  const MultiOutputFusionOptions& options_;
  FusionNameTable& names_;
  absl::flat_hash_set<const HloInstruction*> control_;
  absl::flat_hash_map<const HloInstruction*, int64_t> pos_;
  absl::flat_hash_set<std::pair<HloInstruction*, HloInstruction*>> refused_;
};

}  // namespace

absl::StatusOr<bool> MultiOutputFusion::Run(HloModule& module) {
  FusionNameTable names(module);
  bool changed = false;
  for (HloComputation* comp : FusibleComputations(module)) {
    SiblingMerger merger(comp, options_, names);
    if (merger.Run()) {
      changed = true;
      comp->SortInstructionsInPostOrder();
    }
  }
  if (changed) module.RemoveUnusedComputations();
  return changed;
}

}  // namespace kiln
