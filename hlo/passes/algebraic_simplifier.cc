// Algebraic simplification (see algebraic_simplifier.h): one handler per opcode family.
#include "hlo/passes/algebraic_simplifier.h"

#include <algorithm>
#include <numeric>

#include "hlo/checked_math.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

std::vector<int64_t> Iota(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

bool IsIdentityPermutation(const std::vector<int64_t>& perm) { return perm == Iota(perm.size()); }

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Rewrites one computation; the pass repeats it until nothing changes.
class Simplifier {
 public:
  Simplifier(HloComputation* comp, NameUniquer& names) : comp_(comp), names_(names) {}

  bool Run() {
    for (HloInstruction* instr : comp_->MakeInstructionPostOrder()) {
      if (!instr->control_predecessors().empty()) continue;
      if (instr->user_count() == 0 && comp_->root() != instr) continue;  // DCE's business
      Visit(instr);
    }
    RemoveDeadFrom(comp_, replaced_);
    return changed_;
  }

 private:
  // --- building blocks --------------------------------------------------------------------
  bool Replace(HloInstruction* old, HloInstruction* repl) {
    if (!ReplaceUsesIfCompatible(old, repl)) {
      // A freshly built replacement nobody took: drop it again.
      if (repl->user_count() == 0 && comp_->root() != repl) replaced_.push_back(repl);
      return false;
    }
    replaced_.push_back(old);
    changed_ = true;
    return true;
  }

  HloInstruction* Add(std::unique_ptr<HloInstruction> instr) {
    return AddWithFreshName(comp_, std::move(instr), names_);
  }

  HloInstruction* MakeReshape(HloInstruction* operand, const std::vector<int64_t>& dims,
                              const Shape& like) {
    if (operand->shape().dimensions() == dims) return operand;
    return Add(HloInstruction::CreateUnary(
        HloOpcode::kReshape, ShapeLike(operand->shape().element_type(), dims, like), operand));
  }

  HloInstruction* MakeBroadcast(HloInstruction* operand, const Shape& shape,
                                std::vector<int64_t> dims) {
    auto b = HloInstruction::CreateUnary(HloOpcode::kBroadcast, shape, operand);
    b->mutable_attrs().dimensions = std::move(dims);
    b->mutable_attrs().has_dimensions = true;
    return Add(std::move(b));
  }

  HloInstruction* MakeConvert(HloInstruction* operand, PrimitiveType to, const Shape& like) {
    if (operand->shape().element_type() == to) return operand;
    return Add(HloInstruction::CreateUnary(
        HloOpcode::kConvert, ShapeLike(to, operand->shape().dimensions(), like), operand));
  }

  // --- dispatch ----------------------------------------------------------------------------
  void Visit(HloInstruction* instr) {
    switch (instr->opcode()) {
      case HloOpcode::kAdd:
        return HandleAdd(instr);
      case HloOpcode::kSubtract:
        return HandleSubtract(instr);
      case HloOpcode::kMultiply:
        return HandleMultiply(instr);
      case HloOpcode::kDivide:
        return HandleDivide(instr);
      case HloOpcode::kNegate:
        return HandleNegate(instr);
      case HloOpcode::kTranspose:
        return HandleTranspose(instr);
      case HloOpcode::kReshape:
        return HandleReshape(instr);
      case HloOpcode::kBroadcast:
        return HandleBroadcast(instr);
      case HloOpcode::kSlice:
        return HandleSlice(instr);
      case HloOpcode::kConcatenate:
        return HandleConcatenate(instr);
      case HloOpcode::kPad:
        return HandlePad(instr);
      case HloOpcode::kReduce:
        return HandleReduce(instr);
      case HloOpcode::kDot:
        return HandleDot(instr);
      case HloOpcode::kSelect:
        return HandleSelect(instr);
      case HloOpcode::kCompare:
        return HandleCompare(instr);
      case HloOpcode::kConvert:
        return HandleConvert(instr);
      case HloOpcode::kCopy:
        return HandleCopy(instr);
      default:
        return;
    }
  }

  // --- elementwise arithmetic ----------------------------------------------------------------
  void HandleAdd(HloInstruction* instr) {
    HloInstruction* lhs = instr->operand(0);
    HloInstruction* rhs = instr->operand(1);
    if (IsAllValue(rhs, 0) && Replace(instr, lhs)) return;
    if (IsAllValue(lhs, 0)) Replace(instr, rhs);
  }

  void HandleSubtract(HloInstruction* instr) {
    if (IsAllValue(instr->operand(1), 0)) Replace(instr, instr->operand(0));
  }

  void HandleMultiply(HloInstruction* instr) {
    HloInstruction* lhs = instr->operand(0);
    HloInstruction* rhs = instr->operand(1);
    if (IsAllValue(rhs, 1) && Replace(instr, lhs)) return;
    if (IsAllValue(lhs, 1) && Replace(instr, rhs)) return;
    // x*0 = 0 holds for integers only: for floats NaN*0 and inf*0 are NaN, and -x*0 is -0.
    PrimitiveType t = instr->shape().element_type();
    if (!IsInteger(t) && t != PrimitiveType::PRED) return;
    if (IsAllValue(rhs, 0) && Replace(instr, rhs)) return;
    if (IsAllValue(lhs, 0)) Replace(instr, lhs);
  }

  void HandleDivide(HloInstruction* instr) {
    if (IsAllValue(instr->operand(1), 1)) Replace(instr, instr->operand(0));
  }

  void HandleNegate(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    if (op->opcode() == HloOpcode::kNegate) Replace(instr, op->operand(0));
  }

  // --- data movement -------------------------------------------------------------------------
  void HandleTranspose(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    const std::vector<int64_t>& perm = instr->dimensions();
    if (IsIdentityPermutation(perm) && Replace(instr, op)) return;
    if (op->opcode() == HloOpcode::kTranspose) {
      // t2[j] = t1[perm2[j]] = x[perm1[perm2[j]]].
      const std::vector<int64_t>& inner = op->dimensions();
      if (inner.size() != perm.size()) return;
      std::vector<int64_t> combined(perm.size());
      for (size_t j = 0; j < perm.size(); ++j) combined[j] = inner[perm[j]];
      HloInstruction* x = op->operand(0);
      if (IsIdentityPermutation(combined)) {
        Replace(instr, x);
        return;
      }
      auto t = HloInstruction::CreateUnary(HloOpcode::kTranspose, instr->shape(), x);
      t->mutable_attrs().dimensions = combined;
      t->mutable_attrs().has_dimensions = true;
      Replace(instr, Add(std::move(t)));
      return;
    }
    if (IsBroadcastOfScalar(op)) Replace(instr, MakeBroadcast(op->operand(0), instr->shape(), {}));
    if (op->opcode() == HloOpcode::kDot && op->user_count() == 1) SwapDotOperands(instr, op);
  }

  // transpose(dot(a, b)) that puts b's free dimensions before a's (batch dimensions staying
  // first) is dot(b, a): the product written in the transposed order, with no pass over it
  // afterwards (a weight gradient JAX asks for in the other layout).
  void SwapDotOperands(HloInstruction* transpose, HloInstruction* dot) {
    if (dot->operand_count() != 2 || !dot->attrs().dot_dimension_numbers) return;
    const DotDimensionNumbers& dn = *dot->attrs().dot_dimension_numbers;
    if (!dn.lhs_ragged_dimensions.empty() || !dn.rhs_group_dimensions.empty()) return;
    const int64_t b = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
    const int64_t nl = dot->operand(0)->shape().rank() - b -
                       static_cast<int64_t>(dn.lhs_contracting_dimensions.size());
    const int64_t nr = dot->operand(1)->shape().rank() - b -
                       static_cast<int64_t>(dn.rhs_contracting_dimensions.size());
    if (nl < 1 || nr < 1 || b + nl + nr != dot->shape().rank()) return;
    std::vector<int64_t> swapped = Iota(b);
    for (int64_t i = 0; i < nr; ++i) swapped.push_back(b + nl + i);
    for (int64_t i = 0; i < nl; ++i) swapped.push_back(b + i);
    if (transpose->dimensions() != swapped) return;
    auto d = std::make_unique<HloInstruction>(
        HloOpcode::kDot, transpose->shape(),
        std::vector<HloInstruction*>{dot->operand(1), dot->operand(0)});
    d->mutable_attrs() = dot->attrs();
    DotDimensionNumbers& sd = *d->mutable_attrs().dot_dimension_numbers;
    std::swap(sd.lhs_batch_dimensions, sd.rhs_batch_dimensions);
    std::swap(sd.lhs_contracting_dimensions, sd.rhs_contracting_dimensions);
    Replace(transpose, Add(std::move(d)));
  }

  static bool IsBroadcastOfScalar(const HloInstruction* instr) {
    return instr->opcode() == HloOpcode::kBroadcast && instr->operand(0)->shape().IsArray() &&
           instr->operand(0)->shape().rank() == 0;
  }

  void HandleReshape(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    if (op->shape().dimensions() == instr->shape().dimensions() && Replace(instr, op)) return;
    if (op->opcode() == HloOpcode::kReshape) {
      HloInstruction* x = op->operand(0);
      HloInstruction* r = MakeReshape(x, instr->shape().dimensions(), instr->shape());
      Replace(instr, r);
      return;
    }
    if (IsBroadcastOfScalar(op)) Replace(instr, MakeBroadcast(op->operand(0), instr->shape(), {}));
  }

  void HandleBroadcast(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    const std::vector<int64_t>& dims = instr->dimensions();
    if (op->shape().dimensions() == instr->shape().dimensions() &&
        static_cast<int>(dims.size()) == op->shape().rank() && IsIdentityPermutation(dims) &&
        Replace(instr, op))
      return;
    if (op->opcode() == HloOpcode::kBroadcast) {
      // x dim i -> inner dim d1[i] -> outer dim d2[d1[i]].
      const std::vector<int64_t>& inner = op->dimensions();
      std::vector<int64_t> combined;
      for (int64_t d : inner) {
        if (d < 0 || d >= static_cast<int64_t>(dims.size())) return;
        combined.push_back(dims[d]);
      }
      Replace(instr, MakeBroadcast(op->operand(0), instr->shape(), combined));
    }
  }

  void HandleSlice(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    const InstructionAttributes& a = instr->attrs();
    int rank = op->shape().rank();
    if (static_cast<int>(a.slice_starts.size()) != rank ||
        a.slice_limits.size() != a.slice_starts.size() ||
        a.slice_strides.size() != a.slice_starts.size())
      return;
    bool whole = true;
    for (int d = 0; d < rank; ++d)
      whole &= a.slice_starts[d] == 0 && a.slice_limits[d] == op->shape().dimensions(d) &&
               a.slice_strides[d] == 1;
    if (whole && Replace(instr, op)) return;
    if (op->opcode() != HloOpcode::kSlice) return;
    const InstructionAttributes& b = op->attrs();
    if (b.slice_starts.size() != a.slice_starts.size() ||
        b.slice_strides.size() != a.slice_starts.size())
      return;
    // Element j of the outer slice is x[b.start + (a.start + j*a.stride) * b.stride].
    auto s = HloInstruction::CreateUnary(HloOpcode::kSlice, instr->shape(), op->operand(0));
    InstructionAttributes& n = s->mutable_attrs();
    for (int d = 0; d < rank; ++d) {
      int64_t count = instr->shape().dimensions(d);
      if (count == 0) {
        n.slice_starts.push_back(0);
        n.slice_limits.push_back(0);
        n.slice_strides.push_back(1);
        continue;
      }
      // A single element needs no stride (strides may be as large as INT64_MAX, whose
      // product would overflow); otherwise the products stay below x's size, but are still
      // checked: a slice that cannot be merged exactly is left alone.
      std::optional<int64_t> stride =
          count == 1 ? 1 : CheckedMul(a.slice_strides[d], b.slice_strides[d]);
      std::optional<int64_t> start = CheckedMul(a.slice_starts[d], b.slice_strides[d]);
      if (start) start = CheckedAdd(*start, b.slice_starts[d]);
      std::optional<int64_t> limit = stride ? CheckedMul(count - 1, *stride) : std::nullopt;
      if (limit && start) limit = CheckedAdd(*limit, *start);
      if (limit) limit = CheckedAdd(*limit, 1);
      if (!stride || !start || !limit) return;
      n.slice_starts.push_back(*start);
      n.slice_limits.push_back(*limit);
      n.slice_strides.push_back(*stride);
    }
    Replace(instr, Add(std::move(s)));
  }

  void HandleConcatenate(HloInstruction* instr) {
    if (instr->dimensions().size() != 1) return;
    int64_t dim = instr->dimensions()[0];
    std::vector<HloInstruction*> nonempty;
    for (HloInstruction* o : instr->operands()) {
      if (dim < 0 || dim >= o->shape().rank()) return;
      if (o->shape().dimensions(static_cast<int>(dim)) != 0) nonempty.push_back(o);
    }
    if (nonempty.empty()) return;
    if (nonempty.size() == 1) {
      Replace(instr, nonempty[0]);
      return;
    }
    if (nonempty.size() == static_cast<size_t>(instr->operand_count())) return;
    auto c = std::make_unique<HloInstruction>(HloOpcode::kConcatenate, instr->shape(), nonempty);
    c->mutable_attrs().dimensions = instr->dimensions();
    c->mutable_attrs().has_dimensions = true;
    Replace(instr, Add(std::move(c)));
  }

  void HandlePad(HloInstruction* instr) {
    for (const PaddingDimension& p : instr->attrs().padding_config)
      if (p.edge_padding_low != 0 || p.edge_padding_high != 0 || p.interior_padding != 0) return;
    Replace(instr, instr->operand(0));
  }

  // --- reduce --------------------------------------------------------------------------------
  // Whether `init` is the identity of `reducer` (a two-parameter computation whose root
  // applies one associative op to both parameters).
  static bool InitIsIdentity(const HloComputation& reducer, const HloInstruction* init) {
    if (reducer.num_parameters() != 2 || !reducer.root()) return false;
    const HloInstruction* root = reducer.root();
    if (root->operand_count() != 2) return false;
    const HloInstruction* p0 = reducer.parameter(0);
    const HloInstruction* p1 = reducer.parameter(1);
    if (!p0 || !p1) return false;
    bool uses_both = (root->operand(0) == p0 && root->operand(1) == p1) ||
                     (root->operand(0) == p1 && root->operand(1) == p0);
    if (!uses_both) return false;
    PrimitiveType t = init->shape().element_type();
    switch (root->opcode()) {
      case HloOpcode::kAdd:
        return IsAllValue(init, 0);
      case HloOpcode::kMultiply:
        return IsAllValue(init, 1);
      case HloOpcode::kMaximum:
        return IsAllLowest(init);
      case HloOpcode::kMinimum:
        return IsAllHighest(init);
      case HloOpcode::kOr:
        return IsAllValue(init, 0);
      case HloOpcode::kAnd:
        if (t == PrimitiveType::PRED) return IsAllValue(init, 1);
        if (IsUnsignedInt(t)) return IsAllHighest(init);
        return IsSignedInt(t) && IsAllValue(init, -1);
      default:
        return false;
    }
  }

  void HandleReduce(HloInstruction* instr) {
    // One input, one init: variadic reduces are left alone.
    if (instr->operand_count() != 2 || !instr->to_apply() || !instr->shape().IsArray()) return;
    HloInstruction* x = instr->operand(0);
    for (int64_t d : instr->dimensions())
      if (d < 0 || d >= x->shape().rank() || x->shape().dimensions(static_cast<int>(d)) != 1)
        return;
    // Each result element is reducer(init, the one element): x itself iff init is neutral.
    if (!InitIsIdentity(*instr->to_apply(), instr->operand(1))) return;
    Replace(instr, MakeReshape(x, instr->shape().dimensions(), instr->shape()));
  }

  // --- dot -------------------------------------------------------------------------------------
  // An outer product in disguise: every contracting dim has size 1, so each result element
  // is one product. Batch dims must lead both operands, in order, so that dropping the
  // contracting dims is a reshape and the broadcasts keep their dims increasing.
  void HandleDot(HloInstruction* instr) {
    if (instr->operand_count() != 2 || !instr->attrs().dot_dimension_numbers) return;
    const DotDimensionNumbers& dn = *instr->attrs().dot_dimension_numbers;
    HloInstruction* lhs = instr->operand(0);
    HloInstruction* rhs = instr->operand(1);
    int64_t b = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
    if (dn.lhs_batch_dimensions != Iota(b) || dn.rhs_batch_dimensions != Iota(b)) return;
    for (int64_t d : dn.lhs_contracting_dimensions)
      if (d < b || d >= lhs->shape().rank() || lhs->shape().dimensions(static_cast<int>(d)) != 1)
        return;
    for (int64_t d : dn.rhs_contracting_dimensions)
      if (d < b || d >= rhs->shape().rank() || rhs->shape().dimensions(static_cast<int>(d)) != 1)
        return;
    // Mixed precision: only widening float conversions keep the single product exact
    // (the product of two narrower floats is representable in the wider type).
    PrimitiveType t = instr->shape().element_type();
    for (const HloInstruction* o : {lhs, rhs}) {
      PrimitiveType ot = o->shape().element_type();
      if (ot == t) continue;
      if (!IsFloating(ot) || !IsFloating(t) || BitWidth(ot) >= BitWidth(t)) return;
      if (ot == PrimitiveType::F16 && t == PrimitiveType::BF16) return;
    }
    auto kept = [](const Shape& s, const std::vector<int64_t>& contracting) {
      std::vector<int64_t> dims;
      for (int d = 0; d < s.rank(); ++d)
        if (!Contains(contracting, d)) dims.push_back(s.dimensions(d));
      return dims;
    };
    std::vector<int64_t> lhs_dims = kept(lhs->shape(), dn.lhs_contracting_dimensions);
    std::vector<int64_t> rhs_dims = kept(rhs->shape(), dn.rhs_contracting_dimensions);
    int64_t nl = static_cast<int64_t>(lhs_dims.size()) - b;
    int64_t nr = static_cast<int64_t>(rhs_dims.size()) - b;
    if (b + nl + nr != instr->shape().rank()) return;
    const Shape& out = instr->shape();
    HloInstruction* l = MakeConvert(MakeReshape(lhs, lhs_dims, out), t, out);
    HloInstruction* r = MakeConvert(MakeReshape(rhs, rhs_dims, out), t, out);
    std::vector<int64_t> ldims = Iota(b), rdims = Iota(b);
    for (int64_t i = 0; i < nl; ++i) ldims.push_back(b + i);
    for (int64_t i = 0; i < nr; ++i) rdims.push_back(b + nl + i);
    HloInstruction* lb = MakeBroadcast(l, out, ldims);
    HloInstruction* rb = MakeBroadcast(r, out, rdims);
    Replace(instr, Add(HloInstruction::CreateBinary(HloOpcode::kMultiply, out, lb, rb)));
  }

  // --- select / compare / convert / copy ------------------------------------------------------
  void HandleSelect(HloInstruction* instr) {
    HloInstruction* on_true = instr->operand(1);
    HloInstruction* on_false = instr->operand(2);
    if (on_true == on_false && Replace(instr, on_true)) return;
    const Literal* pred = UniformConstant(instr->operand(0));
    if (pred && pred->shape().element_type() == PrimitiveType::PRED)
      Replace(instr, pred->GetAsInt64(0) != 0 ? on_true : on_false);
  }

  void HandleCompare(HloInstruction* instr) {
    if (instr->operand(0) != instr->operand(1) || !instr->attrs().comparison_direction) return;
    PrimitiveType t = instr->operand(0)->shape().element_type();
    // Floats: NaN compares unequal to itself.
    if (!IsInteger(t) && t != PrimitiveType::PRED) return;
    bool value = false;
    switch (*instr->attrs().comparison_direction) {
      case ComparisonDirection::kEq:
      case ComparisonDirection::kGe:
      case ComparisonDirection::kLe:
        value = true;
        break;
      default:
        value = false;
    }
    Shape scalar = ShapeLike(PrimitiveType::PRED, {}, instr->shape());
    auto c = HloInstruction::CreateConstant(Literal::Scalar(PrimitiveType::PRED, value));
    *c->mutable_shape() = scalar;
    HloInstruction* constant = AddWithFreshName(comp_, std::move(c), names_, "constant");
    if (instr->shape().rank() == 0) {
      Replace(instr, constant);
      return;
    }
    Replace(instr, MakeBroadcast(constant, instr->shape(), {}));
  }

  void HandleConvert(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    if (op->shape().element_type() == instr->shape().element_type()) Replace(instr, op);
  }

  void HandleCopy(HloInstruction* instr) {
    HloInstruction* op = instr->operand(0);
    if (op->shape() != instr->shape()) return;  // compares layouts too
    if (op->shape().has_layout() && instr->shape().has_layout() &&
        op->shape().layout().suffix != instr->shape().layout().suffix)
      return;
    Replace(instr, op);
  }

  HloComputation* comp_;
  NameUniquer& names_;
  std::vector<HloInstruction*> replaced_;
  bool changed_ = false;
};

}  // namespace

absl::StatusOr<bool> AlgebraicSimplifier::Run(HloModule& module) {
  bool changed = false;
  NameUniquer names(module);
  for (HloComputation* comp : NonFusionComputations(module)) {
    // A rewrite can expose another (reshape(reshape(reshape))): repeat a few sweeps here so
    // one run of the pass reaches its own fixed point in the common cases.
    for (int sweep = 0; sweep < 8; ++sweep) {
      if (!Simplifier(comp, names).Run()) break;
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln
