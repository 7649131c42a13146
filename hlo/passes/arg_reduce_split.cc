// Arg-max / arg-min reduces as two plain reduces (see arg_reduce_split.h).
#include "hlo/passes/arg_reduce_split.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

enum class ArgKind { kMax, kMin };

// Whether `reducer` ((a, i, b, j) -> (value, index)) computes the arg-max (or arg-min) rule:
// the larger (smaller) value, NaN winning; the index going with it, the smaller index when
// the values tie (two NaNs tie too). Probed on every pair of a few telling values.
bool ComputesRule(const HloComputation& reducer, PrimitiveType vt, PrimitiveType it, ArgKind kind) {
  const bool floating = IsFloating(vt);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {-2, -1, 0, 1, 3};
  if (floating) values.insert(values.end(), {-inf, inf, 0.5, nan});
  HloEvaluator evaluator;
  for (double a : values)
    for (double b : values)
      for (auto [i, j] : {std::pair<double, double>{1, 4}, {4, 1}, {2, 2}}) {
        const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
        if (a_nan && b_nan && i > j) continue;  // which NaN is kept is not the rule's business
        Literal la = Literal::FromDoubles(Shape(vt, {}), {a});
        Literal lb = Literal::FromDoubles(Shape(vt, {}), {b});
        Literal li = Literal::FromDoubles(Shape(it, {}), {i});
        Literal lj = Literal::FromDoubles(Shape(it, {}), {j});
        const Literal* args[] = {&la, &li, &lb, &lj};
        absl::StatusOr<Literal> r = evaluator.EvaluateComputation(reducer, args);
        if (!r.ok() || !r->IsTuple() || r->elements().size() != 2) return false;
        // Values as the type holds them (0.5 in an integer type is 0).
        const double va = la.GetAsDouble(0), vb = lb.GetAsDouble(0);
        bool a_wins;
        if (a_nan || b_nan) {
          a_wins = a_nan;
        } else if (va == vb) {
          a_wins = i <= j;
        } else {
          a_wins = kind == ArgKind::kMax ? va > vb : va < vb;
        }
        const double want_v = a_wins ? va : vb, want_i = a_wins ? i : j;
        const double got_v = r->elements()[0].GetAsDouble(0);
        const double got_i = r->elements()[1].GetAsDouble(0);
        if (got_i != want_i) return false;
        if (std::isnan(want_v) ? !std::isnan(got_v) : got_v != want_v) return false;
      }
  return true;
}

class Splitter {
 public:
  Splitter(HloModule& module, HloComputation* comp, NameUniquer& names)
      : module_(module), comp_(comp), names_(names) {}

  // Replaces `r`'s uses by (extreme value, its smallest index), adding `r` and the
  // get-tuple-elements it leaves unused to `dead`; false when `r` is no arg-max or arg-min
  // reduce.
  bool Split(HloInstruction* r, std::vector<HloInstruction*>& dead) {
    if (r->operand_count() != 4 || !r->shape().IsTuple() || r->to_apply() == nullptr) return false;
    HloInstruction *x = r->operand(0), *idx = r->operand(1);
    HloInstruction *init_v = r->operand(2), *init_i = r->operand(3);
    const PrimitiveType vt = x->shape().element_type(), it = idx->shape().element_type();
    if (!x->shape().IsArray() || !idx->shape().IsArray() ||
        x->shape().dimensions() != idx->shape().dimensions())
      return false;
    if (!(IsFloating(vt) || IsInteger(vt) || vt == PrimitiveType::PRED)) return false;
    if (it != PrimitiveType::S32 && it != PrimitiveType::S64 && it != PrimitiveType::U32 &&
        it != PrimitiveType::U64)
      return false;
    std::optional<ArgKind> kind;
    for (ArgKind k : {ArgKind::kMax, ArgKind::kMin})
      if (ComputesRule(*r->to_apply(), vt, it, k)) kind = k;
    if (!kind) return false;

    // Kept dimensions, in order: the result's dimensions.
    std::vector<int64_t> kept, kept_dims;
    std::vector<bool> reduced(x->shape().rank(), false);
    for (int64_t d : r->dimensions()) reduced[d] = true;
    for (int64_t d = 0; d < x->shape().rank(); ++d)
      if (!reduced[d]) {
        kept.push_back(d);
        kept_dims.push_back(x->shape().dimensions(d));
      }
    const Shape& like = x->shape();
    const std::vector<int64_t>& full = x->shape().dimensions();
    // Of booleans (jnp.argmax of a mask: the first true), the extreme is an or (an and).
    const bool boolean = vt == PrimitiveType::PRED;
    const HloOpcode extreme = *kind == ArgKind::kMax
                                  ? (boolean ? HloOpcode::kOr : HloOpcode::kMaximum)
                                  : (boolean ? HloOpcode::kAnd : HloOpcode::kMinimum);
    HloInstruction* m = Reduce(x, init_v, extreme, kept_dims, r->dimensions());
    HloInstruction* mb = Broadcast(m, full, kept);
    // Where the value is the extreme (or is NaN when the extreme is).
    HloInstruction* match = Matches(x, mb, full, like);
    const double big = it == PrimitiveType::S32 || it == PrimitiveType::U32
                           ? 2147483647.0
                           : 4611686018427387904.0;  // 2^62: beyond any index
    HloInstruction* big_s = AddScalarConstant(comp_, names_, it, big);
    HloInstruction* cand =
        Add(HloOpcode::kSelect, it, full, {match, idx, Broadcast(big_s, full, {})}, like);
    HloInstruction* first = Reduce(cand, big_s, HloOpcode::kMinimum, kept_dims, r->dimensions());
    // The init pair takes part too: its index where its value is the extreme.
    HloInstruction* init_match = Matches(Broadcast(init_v, kept_dims, {}), m, kept_dims, like);
    HloInstruction* init_cand =
        Add(HloOpcode::kSelect, it, kept_dims,
            {init_match, Broadcast(init_i, kept_dims, {}), Broadcast(big_s, kept_dims, {})}, like);
    HloInstruction* index = Add(HloOpcode::kMinimum, it, kept_dims, {first, init_cand}, like);
    // Users read the pair through get-tuple-element: give them the parts directly, and
    // build the tuple only for other users (or the root).
    for (HloInstruction* u : std::vector<HloInstruction*>(r->users()))
      if (u->opcode() == HloOpcode::kGetTupleElement && u->tuple_index() >= 0 &&
          u->tuple_index() < 2) {
        u->ReplaceAllUsesWith(u->tuple_index() == 0 ? m : index);
        dead.push_back(u);
      }
    bool other_users = comp_->root() == r;
    for (const HloInstruction* u : r->users())
      other_users |= std::find(dead.begin(), dead.end(), u) == dead.end();
    if (other_users) {
      auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, r->shape(),
                                                std::vector<HloInstruction*>{m, index});
      r->ReplaceAllUsesWith(AddWithFreshName(comp_, std::move(t), names_));
    }
    dead.push_back(r);
    return true;
  }

 private:
  HloInstruction* Add(HloOpcode op, PrimitiveType t, std::vector<int64_t> dims,
                      std::vector<HloInstruction*> operands, const Shape& like) {
    return AddArrayInstruction(comp_, names_, op, t, std::move(dims), std::move(operands), like);
  }
  HloInstruction* Broadcast(HloInstruction* x, const std::vector<int64_t>& dims,
                            std::vector<int64_t> mapped) {
    if (x->shape().dimensions() == dims) return x;
    HloInstruction* b =
        Add(HloOpcode::kBroadcast, x->shape().element_type(), dims, {x}, x->shape());
    b->mutable_attrs().dimensions = std::move(mapped);
    b->mutable_attrs().has_dimensions = true;
    return b;
  }
  HloInstruction* Compare(HloInstruction* a, HloInstruction* b, ComparisonDirection dir,
                          const std::vector<int64_t>& dims, const Shape& like) {
    return AddCompare(comp_, names_, a, b, dir, dims, like);
  }
  HloInstruction* Matches(HloInstruction* v, HloInstruction* extreme,
                          const std::vector<int64_t>& dims, const Shape& like) {
    HloInstruction* eq = Compare(v, extreme, ComparisonDirection::kEq, dims, like);
    if (!IsFloating(v->shape().element_type())) return eq;
    HloInstruction* both_nan = Add(HloOpcode::kAnd, PrimitiveType::PRED, dims,
                                   {Compare(extreme, extreme, ComparisonDirection::kNe, dims, like),
                                    Compare(v, v, ComparisonDirection::kNe, dims, like)},
                                   like);
    return Add(HloOpcode::kOr, PrimitiveType::PRED, dims, {eq, both_nan}, like);
  }
  HloInstruction* Reduce(HloInstruction* x, HloInstruction* init, HloOpcode op,
                         const std::vector<int64_t>& kept_dims,
                         const std::vector<int64_t>& reduced) {
    const PrimitiveType t = x->shape().element_type();
    HloInstruction* r = Add(HloOpcode::kReduce, t, kept_dims, {x, init}, x->shape());
    r->mutable_attrs().dimensions = reduced;
    r->mutable_attrs().has_dimensions = true;
    r->AppendCalledComputation(BinaryComputation(module_, op, t));
    return r;
  }

  HloModule& module_;
  HloComputation* comp_;
  NameUniquer& names_;
};

}  // namespace

absl::StatusOr<bool> ArgReduceSplit::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kReduce) continue;
      Splitter(module, comp, names).Split(instr, dead);
    }
    RemoveDeadFrom(comp, dead);
    changed |= !dead.empty();
  }
  return changed;
}

}  // namespace kiln
