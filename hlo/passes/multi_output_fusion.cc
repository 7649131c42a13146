// Sibling multi-output fusion: for every large value, merges pairs of its users that are
// fusions (kLoop/kInput) or lone reduces when they iterate over compatible spaces and
// merging creates no cycle; repeats until nothing merges. Then, optionally, producer-consumer
// merging (producer_consumer_merge.h).
#include "hlo/passes/multi_output_fusion.h"

#include <algorithm>

#include "hlo/passes/fusion_util.h"
#include "hlo/passes/multi_output_util.h"
#include "hlo/passes/producer_consumer_merge.h"

namespace kiln {
namespace {

using multi_output::BodySize;
using multi_output::Compatible;
using multi_output::IsElementwiseLoop;
using multi_output::IsRowReduction;
using multi_output::OutputsRewirable;
using multi_output::Rewire;
using multi_output::SpaceOf;

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
    return (i.shape().IsArray() || i.shape().IsTuple()) && OutputsRewirable(i, *comp_);
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

}  // namespace

absl::StatusOr<bool> MultiOutputFusion::Run(HloModule& module) {
  FusionNameTable names(module);
  bool changed = false;
  for (HloComputation* comp : FusibleComputations(module)) {
    SiblingMerger merger(comp, options_, names);
    bool merged = merger.Run();
    if (options_.elementwise_loops_only && options_.producer_consumer) {
      if (merged) comp->SortInstructionsInPostOrder();
      merged = MergeProducersIntoConsumers(comp, options_, names) || merged;
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
