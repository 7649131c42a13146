#include "hlo/passes/producer_consumer_merge.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/passes/multi_output_util.h"

namespace kiln {
namespace {

using multi_output::IsElementwiseLoop;
using multi_output::OutputsRewirable;
using multi_output::Rewire;
using multi_output::SpaceOf;

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
    if (control_.contains(&f) || !IsElementwiseLoop(f) || !OutputsRewirable(f, *comp_))
      return false;
    if (f.shape().IsTuple())  // its get-tuple-elements are rewired too
      for (const HloInstruction* u : f.users())
        if (control_.contains(u)) return false;
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

  // Whether group gi can absorb group hi; if so, `depths` holds the costly depths of gi's
  // values with hi inside (hi's own do not change).
  bool CanAbsorb(int64_t gi, int64_t hi,
                 absl::flat_hash_map<const HloInstruction*, int64_t>* depths) const {
    const Group& g = groups_[gi];
    const Group& h = groups_[hi];
    if (h.dims != g.dims || g.size + h.size > options_.max_merged_operations) return false;
    int64_t elements = 1;
    for (int64_t d : g.dims) elements *= d;
    if (elements < options_.min_merged_elements) return false;
    if (CostlyDepth(gi, hi, depths) > options_.max_merged_costly_depth) return false;
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
        absl::flat_hash_map<const HloInstruction*, int64_t> depths;
        if (!CanAbsorb(gi, hi, &depths)) {
          refused.insert(hi);
          continue;
        }
        for (const auto& [v, d] : depths) depth_[v] = d;
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

bool MergeProducersIntoConsumers(HloComputation* comp, const MultiOutputFusionOptions& options,
                                 FusionNameTable& names) {
  return ProducerConsumerMerger(comp, options, names).Run();
}

}  // namespace kiln
