// The dot-variant expanders and the narrow-dot upcast (see dot_expanders.h).
#include "hlo/passes/dot_expanders.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Builds instructions in one computation.
struct Builder {
  HloComputation& comp;

  HloInstruction* Add(std::unique_ptr<HloInstruction> i) {
    return comp.AddInstruction(std::move(i));
  }
  HloInstruction* Convert(HloInstruction* x, PrimitiveType t) {
    if (x->shape().element_type() == t) return x;
    return Add(
        HloInstruction::CreateUnary(HloOpcode::kConvert, Shape(t, x->shape().dimensions()), x));
  }
  HloInstruction* Broadcast(HloInstruction* x, const Shape& to, std::vector<int64_t> dims) {
    auto b = HloInstruction::CreateUnary(HloOpcode::kBroadcast, to, x);
    b->mutable_attrs().dimensions = std::move(dims);
    b->mutable_attrs().has_dimensions = true;
    return Add(std::move(b));
  }
  HloInstruction* Reshape(HloInstruction* x, const Shape& to) {
    return Add(HloInstruction::CreateUnary(HloOpcode::kReshape, to, x));
  }
  HloInstruction* Binary(HloOpcode op, HloInstruction* a, HloInstruction* b) {
    return Add(HloInstruction::CreateBinary(op, a->shape(), a, b));
  }
  HloInstruction* Dot(const Shape& out, HloInstruction* a, HloInstruction* b,
                      const DotDimensionNumbers& dn) {
    auto d = HloInstruction::CreateBinary(HloOpcode::kDot, out, a, b);
    DotDimensionNumbers plain = dn;
    plain.lhs_ragged_dimensions.clear();
    plain.rhs_group_dimensions.clear();
    d->mutable_attrs().dot_dimension_numbers = plain;
    return Add(std::move(d));
  }
};

// x (converted to t) times its scale spread over the blocks: a scale of dims [s0, s1] for
// x of dims [n0, n1] is broadcast to [s0, n0/s0, s1, n1/s1] and reshaped to [n0, n1].
HloInstruction* Scaled(Builder& b, HloInstruction* x, HloInstruction* scale, PrimitiveType t) {
  HloInstruction* xf = b.Convert(x, t);
  HloInstruction* sf = b.Convert(scale, t);
  const Shape& xs = xf->shape();
  HloInstruction* spread;
  if (scale->shape().rank() == 0) {
    spread = b.Broadcast(sf, xs, {});
  } else {
    std::vector<int64_t> blocked, dims;
    for (int d = 0; d < xs.rank(); ++d) {
      const int64_t s = scale->shape().dimensions(d);
      dims.push_back(static_cast<int64_t>(blocked.size()));
      blocked.push_back(s);
      blocked.push_back(s == 0 ? 0 : xs.dimensions(d) / s);
    }
    spread = b.Reshape(b.Broadcast(sf, Shape(t, blocked), dims), xs);
  }
  return b.Binary(HloOpcode::kMultiply, xf, spread);
}

// Offers `rewrite` each dot of two array operands with dimension numbers outside fusion
// computations, in post-order; true when it rewrote any (returned true).
bool RewriteArrayDots(HloModule& module,
                      const std::function<bool(HloComputation&, HloInstruction*)>& rewrite) {
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    if (comp->is_fusion_computation()) continue;
    for (HloInstruction* i : comp->MakeInstructionPostOrder())
      if (i->opcode() == HloOpcode::kDot && i->operand_count() == 2 && i->shape().IsArray() &&
          i->attrs().dot_dimension_numbers && i->operand(0)->shape().IsArray() &&
          i->operand(1)->shape().IsArray())
        changed |= rewrite(*comp, i);
  }
  return changed;
}

bool In(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Replaces `old` by `now` everywhere, the root included, and drops `old`.
void Replace(HloComputation& comp, HloInstruction* old, HloInstruction* now) {
  old->ReplaceAllUsesWith(now);
  if (comp.root() == old) comp.set_root(now);
  comp.RemoveInstruction(old);
}

}  // namespace

absl::StatusOr<bool> ScaledDotExpander::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kScaledDot || !instr->shape().IsArray() ||
          !IsFloating(instr->shape().element_type()) || !instr->attrs().dot_dimension_numbers)
        continue;
      Builder b{*comp};
      const PrimitiveType t = instr->shape().element_type() == PrimitiveType::F64
                                  ? PrimitiveType::F64
                                  : PrimitiveType::F32;
      HloInstruction* lhs = Scaled(b, instr->operand(0), instr->operand(2), t);
      HloInstruction* rhs = Scaled(b, instr->operand(1), instr->operand(3), t);
      Replace(*comp, instr, b.Dot(instr->shape(), lhs, rhs, *instr->attrs().dot_dimension_numbers));
      changed = true;
    }
  }
  return changed;
}

absl::StatusOr<bool> RaggedDotExpander::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kRaggedDot || !instr->shape().IsArray() ||
          !instr->attrs().dot_dimension_numbers)
        continue;
      const DotDimensionNumbers& dn = *instr->attrs().dot_dimension_numbers;
      if (dn.lhs_ragged_dimensions.size() != 1) continue;
      const int64_t ragged = dn.lhs_ragged_dimensions[0];
      Builder b{*comp};
      HloInstruction* lhs = instr->operand(0);
      HloInstruction* rhs = instr->operand(1);
      HloInstruction* sizes = instr->operand(2);
      if (In(dn.lhs_batch_dimensions, ragged)) {  // every batch is an ordinary dot
        Replace(*comp, instr, b.Dot(instr->shape(), lhs, rhs, dn));
        changed = true;
        continue;
      }
      if (In(dn.lhs_contracting_dimensions, ragged) || dn.rhs_group_dimensions.size() != 1 ||
          sizes->shape().rank() != 1)
        continue;
      const int64_t g = sizes->shape().dimensions(0);
      const PrimitiveType st = sizes->shape().element_type();
      // A negative size is an empty group (as the evaluator reads it).
      HloInstruction* zeros = b.Broadcast(
          b.Add(HloInstruction::CreateConstant(Literal(Shape::Scalar(st)))), sizes->shape(), {});
      sizes = b.Binary(HloOpcode::kMaximum, sizes, zeros);
      // ends[j] = sizes[0] + ... + sizes[j], as a product with upper-triangular ones.
      Literal tri(Shape(st, {g, g}));
      for (int64_t i = 0; i < g; ++i)
        for (int64_t j = i; j < g; ++j) tri.SetFromDouble(i * g + j, 1);
      HloInstruction* ones = b.Add(HloInstruction::CreateConstant(std::move(tri)));
      DotDimensionNumbers sum;
      sum.lhs_contracting_dimensions = {0};
      sum.rhs_contracting_dimensions = {0};
      HloInstruction* ends = b.Dot(Shape(st, {g}), sizes, ones, sum);
      HloInstruction* starts = b.Binary(HloOpcode::kSubtract, ends, sizes);
      // Row r of lhs belongs to group j when starts[j] <= r < ends[j].
      std::vector<int64_t> wide = {g};
      for (int64_t d : lhs->shape().dimensions()) wide.push_back(d);
      const Shape index_shape(st, wide);
      auto iota = std::make_unique<HloInstruction>(HloOpcode::kIota, index_shape);
      iota->mutable_attrs().iota_dimension = ragged + 1;
      HloInstruction* row = b.Add(std::move(iota));
      HloInstruction* lo = b.Broadcast(starts, index_shape, {0});
      HloInstruction* hi = b.Broadcast(ends, index_shape, {0});
      const Shape pred(PrimitiveType::PRED, wide);
      auto ge = HloInstruction::CreateBinary(HloOpcode::kCompare, pred, row, lo);
      ge->mutable_attrs().comparison_direction = ComparisonDirection::kGe;
      auto lt = HloInstruction::CreateBinary(HloOpcode::kCompare, pred, row, hi);
      lt->mutable_attrs().comparison_direction = ComparisonDirection::kLt;
      HloInstruction* in_group =
          b.Binary(HloOpcode::kAnd, b.Add(std::move(ge)), b.Add(std::move(lt)));
      std::vector<int64_t> after_group;
      for (int64_t d = 0; d < lhs->shape().rank(); ++d) after_group.push_back(d + 1);
      const Shape lhs_wide(lhs->shape().element_type(), wide);
      HloInstruction* spread = b.Broadcast(lhs, lhs_wide, after_group);
      HloInstruction* zero = b.Broadcast(b.Add(HloInstruction::CreateConstant(
                                             Literal(Shape::Scalar(lhs->shape().element_type())))),
                                         lhs_wide, {});
      auto select = std::make_unique<HloInstruction>(
          HloOpcode::kSelect, lhs_wide, std::vector<HloInstruction*>{in_group, spread, zero});
      HloInstruction* masked = b.Add(std::move(select));
      // Contract the group dimension with rhs's too; lhs dimensions move up by one.
      DotDimensionNumbers grouped;
      for (int64_t d : dn.lhs_batch_dimensions) grouped.lhs_batch_dimensions.push_back(d + 1);
      grouped.rhs_batch_dimensions = dn.rhs_batch_dimensions;
      grouped.lhs_contracting_dimensions = {0};
      for (int64_t d : dn.lhs_contracting_dimensions)
        grouped.lhs_contracting_dimensions.push_back(d + 1);
      grouped.rhs_contracting_dimensions = {dn.rhs_group_dimensions[0]};
      for (int64_t d : dn.rhs_contracting_dimensions)
        grouped.rhs_contracting_dimensions.push_back(d);
      Replace(*comp, instr, b.Dot(instr->shape(), masked, rhs, grouped));
      changed = true;
    }
  }
  return changed;
}

absl::StatusOr<bool> NarrowDotUpcast::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    if (comp->is_fusion_computation()) continue;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      const bool dot = instr->opcode() == HloOpcode::kDot && instr->attrs().dot_dimension_numbers;
      const bool conv = instr->opcode() == HloOpcode::kConvolution &&
                        instr->attrs().convolution_dimension_numbers;
      if ((!dot && !conv) || instr->operand_count() != 2 || !instr->shape().IsArray()) continue;
      HloInstruction* lhs = instr->operand(0);
      HloInstruction* rhs = instr->operand(1);
      const PrimitiveType t = instr->shape().element_type();
      if (!lhs->shape().IsArray() || !rhs->shape().IsArray()) continue;
      const PrimitiveType lt = lhs->shape().element_type(), rt = rhs->shape().element_type();
      const bool floats = (IsNarrowFloat(t) || t == PrimitiveType::F32) &&
                          (IsNarrowFloat(lt) || lt == PrimitiveType::F32) &&
                          (IsNarrowFloat(rt) || rt == PrimitiveType::F32);
      if (!floats || (!IsNarrowFloat(lt) && !IsNarrowFloat(rt) && !IsNarrowFloat(t))) continue;
      // Multiply-adds: per output element, a convolution's kernel over its output features.
      int64_t work;
      if (dot) {
        work = DotMultiplyAdds(*instr);
      } else {
        const int64_t out_features = rhs->shape().dimensions(static_cast<int>(
            instr->attrs().convolution_dimension_numbers->kernel_output_feature_dimension));
        work = out_features == 0
                   ? 0
                   : instr->shape().num_elements() * (rhs->shape().num_elements() / out_features);
      }
      if (work < min_mnk_ || (keep_ && keep_(*instr))) continue;
      Builder b{*comp};
      const Shape wide(PrimitiveType::F32, instr->shape().dimensions());
      HloInstruction* lw = b.Convert(lhs, PrimitiveType::F32);
      HloInstruction* rw = b.Convert(rhs, PrimitiveType::F32);
      HloInstruction* product;
      if (dot) {
        product = b.Dot(wide, lw, rw, *instr->attrs().dot_dimension_numbers);
      } else {
        // The same convolution (window, dimension numbers, groups) on f32 operands.
        std::unique_ptr<HloInstruction> c =
            HloInstruction::CreateBinary(HloOpcode::kConvolution, wide, lw, rw);
        c->mutable_attrs() = instr->attrs();
        product = b.Add(std::move(c));
      }
      Replace(*comp, instr, b.Convert(product, t));
      changed = true;
    }
  }
  return changed;
}

absl::StatusOr<bool> IntegerDotWidening::Run(HloModule& module) {
  auto whole = [](PrimitiveType t) { return IsInteger(t) && !IsSubByteInt(t); };
  return RewriteArrayDots(module, [&](HloComputation& comp, HloInstruction* instr) {
    HloInstruction* lhs = instr->operand(0);
    HloInstruction* rhs = instr->operand(1);
    const PrimitiveType t = instr->shape().element_type();
    const PrimitiveType lt = lhs->shape().element_type(), rt = rhs->shape().element_type();
    if (!whole(t) || !whole(lt) || !whole(rt)) return false;
    if (BitWidth(t) >= 32 && lt == t && rt == t) return false;  // already one wide type
    // The wide type keeps the result's signedness, so a 32- or 64-bit result is kept.
    const PrimitiveType wide = BitWidth(t) == 64  ? t
                               : IsUnsignedInt(t) ? PrimitiveType::U32
                                                  : PrimitiveType::S32;
    if (DotMultiplyAdds(*instr) < min_mnk_ || (keep_ && keep_(*instr))) return false;
    Builder b{comp};
    HloInstruction* dot = b.Dot(Shape(wide, instr->shape().dimensions()), b.Convert(lhs, wide),
                                b.Convert(rhs, wide), *instr->attrs().dot_dimension_numbers);
    Replace(comp, instr, b.Convert(dot, t));
    return true;
  });
}

absl::StatusOr<bool> ComplexDotExpander::Run(HloModule& module) {
  return RewriteArrayDots(module, [&](HloComputation& comp, HloInstruction* instr) {
    HloInstruction* lhs = instr->operand(0);
    HloInstruction* rhs = instr->operand(1);
    const PrimitiveType t = instr->shape().element_type();
    if (!IsComplex(t) || lhs->shape().element_type() != t || rhs->shape().element_type() != t ||
        DotMultiplyAdds(*instr) < min_mnk_)
      return false;
    int64_t contraction = 1;
    for (int64_t d : instr->attrs().dot_dimension_numbers->lhs_contracting_dimensions)
      contraction *= lhs->shape().dimensions(d);
    if (contraction < min_contraction_) return false;
    const PrimitiveType part = t == PrimitiveType::C128 ? PrimitiveType::F64 : PrimitiveType::F32;
    Builder b{comp};
    auto take = [&](HloOpcode op, HloInstruction* x) {
      return b.Add(HloInstruction::CreateUnary(op, Shape(part, x->shape().dimensions()), x));
    };
    HloInstruction* ar = take(HloOpcode::kReal, lhs);
    HloInstruction* ai = take(HloOpcode::kImag, lhs);
    HloInstruction* br = take(HloOpcode::kReal, rhs);
    HloInstruction* bi = take(HloOpcode::kImag, rhs);
    const Shape out(part, instr->shape().dimensions());
    const DotDimensionNumbers& dn = *instr->attrs().dot_dimension_numbers;
    HloInstruction* re =
        b.Binary(HloOpcode::kSubtract, b.Dot(out, ar, br, dn), b.Dot(out, ai, bi, dn));
    HloInstruction* im = b.Binary(HloOpcode::kAdd, b.Dot(out, ar, bi, dn), b.Dot(out, ai, br, dn));
    Replace(comp, instr,
            b.Add(HloInstruction::CreateBinary(HloOpcode::kComplex, instr->shape(), re, im)));
    return true;
  });
}

}  // namespace kiln
