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

HloInstruction* AddGte(HloComputation* comp, FusionNameTable& names, HloInstruction* f,
                       int64_t index) {
  auto g = std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement,
                                            f->shape().tuple_shapes(static_cast<int>(index)),
                                            std::vector<HloInstruction*>{f});
  g->mutable_attrs().tuple_index = index;
  g->set_name(names.Get("get-tuple-element"));
  return comp->AddInstruction(std::move(g));
}

// Points the readers of `old` (an array, or a multi-output fusion read through its
// get-tuple-elements, which are removed) at the fusion f's outputs from `offset` on.
void Rewire(HloComputation* comp, FusionNameTable& names, HloInstruction* old, HloInstruction* f,
            int64_t offset) {
  if (!old->shape().IsTuple()) {
    old->ReplaceAllUsesWith(AddGte(comp, names, f, offset));
    return;
  }
  std::vector<HloInstruction*> users = old->users();
  for (HloInstruction* u : users) {
    u->ReplaceAllUsesWith(AddGte(comp, names, f, offset + u->tuple_index()));
    names.Release(u->name());
    comp->RemoveInstruction(u);
  }
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
    Rewire(comp_, names_, a, f, built.output_offsets[0]);
    Rewire(comp_, names_, b, f, built.output_offsets[1]);
    RemoveDeadMembers(comp_, spec.members);
  }

  HloComputation* comp_;
  const MultiOutputFusionOptions& options_;
  FusionNameTable& names_;
  absl::flat_hash_set<const HloInstruction*> control_;
  absl::flat_hash_map<const HloInstruction*, int64_t> pos_;
  absl::flat_hash_set<std::pair<HloInstruction*, HloInstruction*>> refused_;
};

// Producer-consumer merging (MultiOutputFusionOptions::producer_consumer). Groups are
// decided first, each consumer in order absorbing the groups of the elementwise loops it
// reads, then each group is built once as one fusion (growing it merge by merge rebuilt it
// each time: quadratic in a long chain). A group takes its consumer's place in the order, so
// an absorbed producer's other readers must all come after that consumer, which also rules
// out a cycle through them.
class ProducerConsumerMerger {
 public:
  ProducerConsumerMerger(HloComputation* comp, const MultiOutputFusionOptions& options,
                         FusionNameTable& names)
      : comp_(comp),
        options_(options),
        names_(names),
        control_(InstructionsWithControlEdges(*comp)) {}

  bool Run() {
    std::vector<HloInstruction*> order = comp_->MakeInstructionPostOrder();
    for (size_t i = 0; i < order.size(); ++i) pos_[order[i]] = static_cast<int64_t>(i);
    for (HloInstruction* f : order) {
      if (f->opcode() != HloOpcode::kFusion || !IsLoop(*f)) continue;
      group_of_[f] = static_cast<int64_t>(groups_.size());
      Group g;
      g.fusions = {f};
      g.size = Operations(*f);
      g.pos = pos_.at(f);
      g.dims = SpaceOf(*f).dims;
      for (HloInstruction* o : f->operands())
        if (std::find(g.reads.begin(), g.reads.end(), o) == g.reads.end()) g.reads.push_back(o);
      groups_.push_back(std::move(g));
      CostlyDepth(group_of_.at(f), -1, &depth_);
      AbsorbProducers(group_of_.at(f));
    }
    bool changed = false;
    for (Group& g : groups_)
      if (g.fusions.size() > 1) {
        Build(g);
        changed = true;
      }
    return changed;
  }

 private:
  struct Group {
    std::vector<HloInstruction*> fusions;  // the consumer that anchors it first
    int64_t size = 0;                      // operations of the fused bodies
    int64_t pos = 0;                       // the anchor's place in the order
    std::vector<int64_t> dims;
    std::vector<HloInstruction*> reads;  // values read from outside the group
  };

  // An elementwise loop fusion whose readers (get-tuple-elements, when it has several
  // outputs) can be rewired.
  bool IsLoop(const HloInstruction& f) const {
    if (control_.contains(&f) || !IsElementwiseLoop(f)) return false;
    if (!f.shape().IsTuple()) return true;
    if (comp_->root() == &f || f.fused_computation()->root()->opcode() != HloOpcode::kTuple)
      return false;
    for (const HloInstruction* u : f.users())
      if (u->opcode() != HloOpcode::kGetTupleElement || control_.contains(u)) return false;
    return true;
  }

  // What a fused body computes, its parameters and output tuple left out: the size of the
  // merged body (whose parameters the members share or no longer need).
  static int64_t Operations(const HloInstruction& f) {
    int64_t n = 0;
    for (const HloInstruction* x : f.fused_computation()->instructions())
      n += x->opcode() != HloOpcode::kParameter && x->opcode() != HloOpcode::kTuple;
    return n;
  }

  // The group computing `value` (a loop fusion or one of its outputs), or -1.
  int64_t GroupOf(const HloInstruction* value) const {
    if (value->opcode() == HloOpcode::kGetTupleElement) value = value->operand(0);
    auto it = group_of_.find(value);
    return it == group_of_.end() ? -1 : it->second;
  }

  // The values a group's fusions compute: each array fusion, each output of a tuple one.
  static std::vector<HloInstruction*> Values(const Group& g) {
    std::vector<HloInstruction*> values;
    for (HloInstruction* f : g.fusions) {
      if (!f->shape().IsTuple()) {
        values.push_back(f);
        continue;
      }
      for (HloInstruction* u : f->users()) values.push_back(u);
    }
    return values;
  }

  // Whether the consumer's fused computation reads its operand `value` only at each
  // element's own index: every reader of the parameter is an elementwise operation.
  static bool ReadsElementwise(const HloInstruction& consumer, const HloInstruction* value) {
    const HloComputation* body = consumer.fused_computation();
    for (int j = 0; j < consumer.operand_count(); ++j) {
      if (consumer.operand(j) != value) continue;
      const HloInstruction* p = body->parameter(j);
      if (p == body->root()) return false;
      for (const HloInstruction* u : p->users())
        if (!IsElementwiseOpcode(u->opcode())) return false;
    }
    return true;
  }

  bool CanAbsorb(int64_t gi, int64_t hi) const {
    const Group& g = groups_[gi];
    const Group& h = groups_[hi];
    if (h.dims != g.dims || g.size + h.size > options_.max_merged_operations) return false;
    int64_t elements = 1;
    for (int64_t d : g.dims) elements *= d;
    if (elements < options_.min_merged_elements) return false;
    if (CostlyDepth(gi, hi, nullptr) > options_.max_merged_costly_depth) return false;
    for (const HloInstruction* v : Values(h)) {
      for (const HloInstruction* r : v->users()) {
        const int64_t ri = GroupOf(r);
        if (ri == hi) continue;
        if (ri == gi ? !ReadsElementwise(*r, v) : pos_.at(r) <= g.pos) return false;
      }
    }
    std::vector<const HloInstruction*> ops;
    for (const Group* x : {&g, &h})
      for (const HloInstruction* o : x->reads) {
        const int64_t oi = GroupOf(o);
        if (oi != gi && oi != hi && std::find(ops.begin(), ops.end(), o) == ops.end())
          ops.push_back(o);
      }
    return static_cast<int64_t>(ops.size()) <= options_.max_merged_operands;
  }

  // The most costly operations (IsCostlyElementwiseOpcode) one after the other on a path
  // through group gi's fusions, with group hi's values (if hi >= 0) read inside: their
  // depths are hi's own. Stores the depth of each of gi's values in `depths` when given.
  int64_t CostlyDepth(int64_t gi, int64_t hi,
                      absl::flat_hash_map<const HloInstruction*, int64_t>* depths) const {
    absl::flat_hash_map<const HloInstruction*, int64_t> local;
    auto depth_of = [&](const HloInstruction* v) -> int64_t {
      const int64_t vi = GroupOf(v);
      if (vi != gi && vi != hi) return 0;
      if (auto it = local.find(v); it != local.end()) return it->second;
      auto it = depth_.find(v);
      return it == depth_.end() ? 0 : it->second;
    };
    int64_t deepest = 0;
    if (hi >= 0)
      for (const HloInstruction* v : Values(groups_[hi])) deepest = std::max(deepest, depth_of(v));
    // Producers before consumers: the reverse of the order fusions joined the group.
    const std::vector<HloInstruction*>& fusions = groups_[gi].fusions;
    for (auto f = fusions.rbegin(); f != fusions.rend(); ++f) {
      const HloComputation* body = (*f)->fused_computation();
      absl::flat_hash_map<const HloInstruction*, int64_t> d;
      for (const HloInstruction* x : body->MakeInstructionPostOrder()) {
        int64_t v = 0;
        if (x->opcode() == HloOpcode::kParameter) {
          v = depth_of((*f)->operand(static_cast<int>(x->parameter_number())));
        } else {
          for (const HloInstruction* o : x->operands()) v = std::max(v, d.at(o));
          v += IsCostlyElementwiseOpcode(x->opcode()) ? 1 : 0;
        }
        d[x] = v;
        deepest = std::max(deepest, v);
      }
      const HloInstruction* root = body->root();
      if (!(*f)->shape().IsTuple()) {
        local[*f] = d.at(root);
      } else {
        for (const HloInstruction* g : (*f)->users())
          local[g] = d.at(root->operand(static_cast<int>(g->tuple_index())));
      }
    }
    if (depths != nullptr)
      for (const auto& [v, dv] : local) (*depths)[v] = dv;
    return deepest;
  }

  void AbsorbProducers(int64_t gi) {
    absl::flat_hash_set<int64_t> refused;  // a refusal stands: neither group changes again
    for (bool grew = true; grew;) {
      grew = false;
      for (const HloInstruction* o : groups_[gi].reads) {
        const int64_t hi = GroupOf(o);
        if (hi < 0 || hi == gi || refused.contains(hi)) continue;
        if (!CanAbsorb(gi, hi)) {
          refused.insert(hi);
          continue;
        }
        Group& g = groups_[gi];
        Group& h = groups_[hi];
        for (HloInstruction* f : h.fusions) group_of_[f] = gi;
        g.fusions.insert(g.fusions.end(), h.fusions.begin(), h.fusions.end());
        g.size += h.size;
        std::vector<HloInstruction*> reads;
        for (const std::vector<HloInstruction*>* list : {&g.reads, &h.reads})
          for (HloInstruction* r : *list)
            if (GroupOf(r) != gi && std::find(reads.begin(), reads.end(), r) == reads.end())
              reads.push_back(r);
        g.reads = std::move(reads);
        h = Group{};
        CostlyDepth(gi, -1, &depth_);
        grew = true;
        break;
      }
    }
  }

  // One fusion for the group: its values read outside it (or the computation's root) are
  // its outputs.
  void Build(Group& g) {
    const int64_t gi = group_of_.at(g.fusions.front());
    FusionSpec spec;
    std::vector<HloInstruction*> outputs;
    for (HloInstruction* f : g.fusions) {
      spec.members.push_back(f);
      if (f->shape().IsTuple())
        for (HloInstruction* u : f->users()) spec.members.push_back(u);
    }
    for (HloInstruction* v : Values(g)) {
      bool outside = comp_->root() == v;
      for (const HloInstruction* r : v->users()) outside = outside || GroupOf(r) != gi;
      if (outside) outputs.push_back(v);
    }
    spec.outputs = outputs;
    HloInstruction* anchor = g.fusions.front();
    spec.name = anchor->name();
    spec.computation_name = anchor->fused_computation()->name();
    anchor->fused_computation()->set_name(spec.computation_name + ".replaced");
    for (HloInstruction* f : g.fusions) {
      for (HloInstruction* param : f->fused_computation()->parameters())
        names_.Release(param->name());
      if (f != anchor) names_.Release(f->name());
    }
    BuiltFusion built = BuildFusion(comp_, spec, names_);
    HloInstruction* f = built.fusion;
    f->mutable_attrs().fusion_kind = KindForFusedComputation(*f->fused_computation());
    if (f->shape().IsTuple()) {
      for (size_t k = 0; k < outputs.size(); ++k)
        Rewire(comp_, names_, outputs[k], f, built.output_offsets[k]);
    } else {
      outputs[0]->ReplaceAllUsesWith(f);
    }
    // The members are removed: an instruction made later may reuse an address.
    for (HloInstruction* m : g.fusions) group_of_.erase(m);
    RemoveDeadMembers(comp_, spec.members);
  }

  HloComputation* comp_;
  const MultiOutputFusionOptions& options_;
  FusionNameTable& names_;
  absl::flat_hash_set<const HloInstruction*> control_;
  absl::flat_hash_map<const HloInstruction*, int64_t> pos_;
  absl::flat_hash_map<const HloInstruction*, int64_t> group_of_;
  std::vector<Group> groups_;
  // Of each value of a group: the costly operations on its longest path inside the group.
  absl::flat_hash_map<const HloInstruction*, int64_t> depth_;
};

}  // namespace

absl::StatusOr<bool> MultiOutputFusion::Run(HloModule& module) {
  FusionNameTable names(module);
  bool changed = false;
  for (HloComputation* comp : FusibleComputations(module)) {
    SiblingMerger merger(comp, options_, names);
    bool merged = merger.Run();
    if (options_.elementwise_loops_only && options_.producer_consumer) {
      if (merged) comp->SortInstructionsInPostOrder();
      merged = ProducerConsumerMerger(comp, options_, names).Run() || merged;
    }
    if (merged) {
      changed = true;
      comp->SortInstructionsInPostOrder();
    }
  }
  if (changed) module.RemoveUnusedComputations();
  return changed;
}

}  // namespace kiln
