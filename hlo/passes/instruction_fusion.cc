// Producer-consumer fusion: walks each computation from its root towards its parameters and
// lets every consumer swallow the producers it can, as XLA's instruction fusion does.
//
// The rules, in words:
//  - Elementwise ops, broadcasts, reshapes, transposes, slices, iota, scalar constants ...
//    fuse into any fusible consumer (kLoop).
//  - A reduce swallows the producers of its input (kInput): reduce_sum(x + y*z) is one kernel.
//  - A reduce also fuses into an elementwise consumer that works on its input's iteration
//    space and reads the reduced value only through a broadcast back along the reduced
//    dimensions (a "row" epilogue, as in softmax: exp, sum, divide in one kernel). Never two
//    reductions in one fusion: that is multi-output fusion's business.
//  - A dot fuses into an elementwise consumer of exactly its shape (kOutput: dot + bias +
//    activation); producers of the dot's own operands stay outside.
//  - Expensive producers (exp, log, divide, dot, reduce, ...) are never duplicated into
//    several consumers, nor fused where the consumer would read each of their elements
//    several times (a broadcast after them): recomputation would cost more than the
//    memory traffic saved. Cheap ones (scalar constants, iota, broadcasts of scalars) are
//    copied freely; other cheap producers are copied when all their users can take them.
//  - A fusion never grows past the operand and instruction limits, and never creates a
//    cycle (a producer that reaches another operand of the consumer stays outside).
#include "hlo/passes/instruction_fusion.h"

#include <algorithm>

#include "hlo/passes/fusion_util.h"

namespace kiln {
namespace {

bool IsSmallConstant(const HloInstruction& i) {
  return i.opcode() == HloOpcode::kConstant && i.shape().IsArray() && i.shape().num_elements() <= 1;
}

// Producers fusible into any consumer (reduce and dot have rules of their own).
bool IsLoopFusible(const HloInstruction& i) {
  if (!i.shape().IsArray()) return false;
  HloOpcode op = i.opcode();
  if (IsElementwiseOpcode(op)) return true;
  switch (op) {
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
    case HloOpcode::kIota:
    case HloOpcode::kReverse:
    case HloOpcode::kPad:
    case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kGather:
      return true;
    case HloOpcode::kConstant:
      return IsSmallConstant(i);
    case HloOpcode::kFusion:
      return i.attrs().fusion_kind == FusionKind::kLoop;
    default:
      return false;
  }
}

bool IsDotLike(HloOpcode op) { return op == HloOpcode::kDot || op == HloOpcode::kConvolution; }

class ComputationFuser {
 public:
  ComputationFuser(HloComputation* comp, const InstructionFusionOptions& options,
                   FusionNameTable& names)
      : comp_(comp),
        options_(options),
        names_(names),
        control_(InstructionsWithControlEdges(*comp)) {}

  bool Run() {
    std::vector<HloInstruction*> order = comp_->MakeInstructionPostOrder();
    for (size_t i = 0; i < order.size(); ++i) pos_[order[i]] = static_cast<int64_t>(i);
    for (HloInstruction* x : order) live_.insert(x);
    bool changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (!live_.contains(*it)) continue;
      HloInstruction* consumer = *it;
      while (CanBeConsumer(*consumer)) {
        HloInstruction* producer = PickProducer(consumer);
        if (!producer) break;
        consumer = Fuse(producer, consumer);
        changed = true;
      }
    }
    return changed;
  }

 private:
  bool CanBeConsumer(const HloInstruction& c) const {
    if (control_.contains(&c) || !c.shape().IsArray() || c.operand_count() == 0) return false;
    switch (c.opcode()) {
      case HloOpcode::kFusion:
        return c.attrs().fusion_kind != FusionKind::kCustom;
      case HloOpcode::kReduce:
        return c.operand_count() == 2;
      case HloOpcode::kDynamicUpdateSlice:
        return true;
      default:
        return IsLoopFusible(c);
    }
  }

  // The operand of `consumer` to fuse next: the latest-defined one that passes the rules.
  HloInstruction* PickProducer(HloInstruction* consumer) {
    std::vector<HloInstruction*> cands;
    for (HloInstruction* o : consumer->operands())
      if (std::find(cands.begin(), cands.end(), o) == cands.end()) cands.push_back(o);
    std::stable_sort(cands.begin(), cands.end(),
                     [&](HloInstruction* a, HloInstruction* b) { return Pos(a) > Pos(b); });
    for (HloInstruction* p : cands)
      if (ShouldFuse(p, consumer)) return p;
    return nullptr;
  }

  int64_t Pos(HloInstruction* i) const {
    auto it = pos_.find(i);
    return it == pos_.end() ? -1 : it->second;
  }

  // The instructions of the consumer's body (itself when it is not a fusion), parameters
  // excluded.
  static std::vector<const HloInstruction*> Body(const HloInstruction& c) {
    std::vector<const HloInstruction*> out;
    if (c.opcode() != HloOpcode::kFusion) return {&c};
    for (const HloInstruction* i : c.fused_computation()->instructions())
      if (i->opcode() != HloOpcode::kParameter) out.push_back(i);
    return out;
  }

  static bool BodyHas(const HloInstruction& c, bool (*pred)(HloOpcode)) {
    for (const HloInstruction* i : Body(c))
      if (pred(i->opcode())) return true;
    return false;
  }

  // Where `p`'s value is read inside the consumer: the users of the matching parameters of
  // a fusion, or the consumer itself.
  static std::vector<const HloInstruction*> InsideUsers(const HloInstruction& c,
                                                        const HloInstruction* p) {
    if (c.opcode() != HloOpcode::kFusion) return {&c};
    std::vector<const HloInstruction*> out;
    for (int i = 0; i < c.operand_count(); ++i) {
      if (c.operand(i) != p) continue;
      for (const HloInstruction* u : c.fused_computation()->parameter(i)->users()) out.push_back(u);
    }
    return out;
  }

  static bool IsOperandOf(const HloInstruction* user, int index, const HloInstruction& c,
                          const HloInstruction* p) {
    if (c.opcode() != HloOpcode::kFusion) return user->operand(index) == p;
    const HloInstruction* v = user->operand(index);
    return v->opcode() == HloOpcode::kParameter && c.operand(v->parameter_number()) == p;
  }

  // Whether the consumer reads elements of `p` more than once per element of its result
  // (a broadcast that expands, a dot, a window): recomputing an expensive `p` there would
  // multiply its cost. Reads that go through a reduce stop counting at the reduce: its
  // result is computed once per row.
  static bool ReusesElements(const HloInstruction& c, const HloInstruction* p) {
    std::vector<const HloInstruction*> stack = InsideUsers(c, p);
    absl::flat_hash_set<const HloInstruction*> seen(stack.begin(), stack.end());
    while (!stack.empty()) {
      const HloInstruction* x = stack.back();
      stack.pop_back();
      switch (x->opcode()) {
        case HloOpcode::kBroadcast:
          if (x->shape().num_elements() > x->operand(0)->shape().num_elements()) return true;
          break;
        case HloOpcode::kDot:
        case HloOpcode::kConvolution:
        case HloOpcode::kReduceWindow:
        case HloOpcode::kGather:
        case HloOpcode::kSelectAndScatter:
          return true;
        case HloOpcode::kReduce:
          continue;
        default:
          break;
      }
      if (c.opcode() != HloOpcode::kFusion) continue;
      for (const HloInstruction* u : x->users())
        if (seen.insert(u).second) stack.push_back(u);
    }
    return false;
  }

  // kOutput: the consumer is elementwise on exactly the dot's shape and reads the dot's
  // result element by element.
  static bool DotEpilogueOk(const HloInstruction& dot, const HloInstruction& c) {
    const auto& dims = dot.shape().dimensions();
    for (const HloInstruction* x : Body(c)) {
      if (IsSmallConstant(*x)) continue;
      HloOpcode op = x->opcode();
      if (!IsElementwiseOpcode(op) && op != HloOpcode::kBroadcast && op != HloOpcode::kIota)
        return false;
      if (x->shape().dimensions() != dims) return false;
    }
    for (const HloInstruction* u : InsideUsers(c, &dot))
      if (!IsElementwiseOpcode(u->opcode())) return false;
    return true;
  }

  // Row epilogue of a reduce: everything in the consumer lives on the reduce's input or
  // output iteration space, and the reduced value comes back to the input space only
  // through broadcasts along the kept dimensions.
  static bool ReduceEpilogueOk(const HloInstruction& reduce, const HloInstruction& c) {
    const auto& in = reduce.operand(0)->shape().dimensions();
    const auto& out = reduce.shape().dimensions();
    std::vector<int64_t> kept;
    for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
      if (std::find(reduce.dimensions().begin(), reduce.dimensions().end(), d) ==
          reduce.dimensions().end())
        kept.push_back(d);
    for (const HloInstruction* x : Body(c)) {
      if (IsSmallConstant(*x)) continue;
      HloOpcode op = x->opcode();
      if (!IsElementwiseOpcode(op) && op != HloOpcode::kBroadcast && op != HloOpcode::kIota)
        return false;
      const auto& d = x->shape().dimensions();
      if (d != in && d != out && !d.empty()) return false;
      if (op == HloOpcode::kBroadcast && x->operand(0)->shape().dimensions() == out && d == in &&
          x->dimensions() != kept)
        return false;
    }
    for (const HloInstruction* u : InsideUsers(c, &reduce)) {
      if (u->opcode() == HloOpcode::kBroadcast) continue;
      if (!IsElementwiseOpcode(u->opcode()) || u->shape().dimensions() != out) return false;
    }
    return true;
  }

  bool ShouldFuse(HloInstruction* p, HloInstruction* c) {
    if (control_.contains(p) || p->parent() != comp_) return false;
    const bool is_reduce = p->opcode() == HloOpcode::kReduce;
    const bool is_dot = p->opcode() == HloOpcode::kDot;
    if (is_reduce) {
      if (p->operand_count() != 2 || !p->shape().IsArray()) return false;
    } else if (!is_dot && !IsLoopFusible(*p)) {
      return false;
    }
    // Operand 0 of dynamic-update-slice is updated in place: it must stay a buffer.
    for (const HloInstruction* u : InsideUsers(*c, p))
      if (u->opcode() == HloOpcode::kDynamicUpdateSlice && IsOperandOf(u, 0, *c, p)) return false;
    const bool c_has_dot = BodyHas(*c, IsDotLike);
    const bool c_has_reduce = BodyHas(*c, [](HloOpcode op) { return op == HloOpcode::kReduce; });
    if (c_has_dot) {
      // Producers of the dot's operands stay outside (the dot reads them many times).
      for (const HloInstruction* u : InsideUsers(*c, p))
        if (IsDotLike(u->opcode())) return false;
    }
    if (is_dot || is_reduce) {
      if (c_has_dot || c_has_reduce) return false;
      if (is_dot && !DotEpilogueOk(*p, *c)) return false;
      if (is_reduce && !ReduceEpilogueOk(*p, *c)) return false;
    }
    // Duplication: which producers may stay outside as well as be copied in.
    bool only_user_is_c = std::all_of(p->users().begin(), p->users().end(),
                                      [&](const HloInstruction* u) { return u == c; });
    if (!only_user_is_c) {
      if (IsExpensive(*p) || p->opcode() == HloOpcode::kFusion) return false;
      if (!IsCheapToDuplicate(*p)) {
        if (!options_.duplicate_cheap_elementwise) return false;
        for (const HloInstruction* u : p->users())
          if (!CanBeConsumer(*u)) return false;
      }
    }
    if (IsExpensive(*p) && !is_reduce && ReusesElements(*c, p)) return false;
    // No cycle check is needed: a producer that moves in has no users but the consumer, so
    // every path from it runs through the consumer; one that is copied in stays outside
    // and the fusion only reads the producer's own operands, which come before it.
    // Size limits.
    std::vector<const HloInstruction*> ops;
    for (const HloInstruction* o : c->operands())
      if (o != p && std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    for (const HloInstruction* o : p->operands())
      if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    if (static_cast<int64_t>(ops.size()) > options_.max_operands &&
        static_cast<int64_t>(ops.size()) > c->operand_count())
      return false;
    int64_t count = static_cast<int64_t>(Body(*c).size() + Body(*p).size());
    if (count > options_.max_instructions) return false;
    return true;
  }

  HloInstruction* Fuse(HloInstruction* p, HloInstruction* c) {
    FusionSpec spec;
    spec.members = {p, c};
    spec.outputs = {c};
    for (const HloInstruction* u : p->users())
      if (u != c) spec.survivors.insert(p);
    if (p->opcode() == HloOpcode::kFusion) {
      // Inlined and gone: its names are free again.
      names_.Release(p->name());
      for (HloInstruction* param : p->fused_computation()->parameters())
        names_.Release(param->name());
    }
    if (c->opcode() == HloOpcode::kFusion) {
      // The rebuilt fusion keeps the consumer's names.
      spec.name = c->name();
      spec.computation_name = c->fused_computation()->name();
      c->fused_computation()->set_name(c->fused_computation()->name() + ".replaced");
      for (HloInstruction* param : c->fused_computation()->parameters())
        names_.Release(param->name());
    } else {
      spec.name = names_.Get("fusion");
      spec.computation_name = names_.Get("fused_computation");
    }
    BuiltFusion built = BuildFusion(comp_, spec, names_);
    HloInstruction* f = built.fusion;
    f->mutable_attrs().fusion_kind = KindForFusedComputation(*f->fused_computation());
    c->ReplaceAllUsesWith(f);
    absl::flat_hash_set<const HloInstruction*> removed;
    RemoveDeadMembers(comp_, spec.members, &removed);
    for (const HloInstruction* r : removed) live_.erase(const_cast<HloInstruction*>(r));
    live_.insert(f);
    pos_[f] = Pos(c);
    return f;
  }

  HloComputation* comp_;
  const InstructionFusionOptions& options_;
  FusionNameTable& names_;
  absl::flat_hash_set<const HloInstruction*> control_;
  absl::flat_hash_map<HloInstruction*, int64_t> pos_;
  absl::flat_hash_set<HloInstruction*> live_;
};

}  // namespace

absl::StatusOr<bool> InstructionFusion::Run(HloModule& module) {
  FusionNameTable names(module);
  bool changed = false;
  for (HloComputation* comp : FusibleComputations(module)) {
    ComputationFuser fuser(comp, options_, names);
    if (fuser.Run()) {
      changed = true;
      comp->SortInstructionsInPostOrder();
    }
  }
  if (changed) module.RemoveUnusedComputations();
  return changed;
}

}  // namespace kiln
