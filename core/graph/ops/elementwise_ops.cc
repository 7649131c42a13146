// Elementwise graph ops with NumPy broadcasting: Add/Sub/Mul/Div/Maximum/Minimum/Pow,
// comparisons (Equal..GreaterEqual, pred result), Select/SelectV2; unary Neg/Abs/Exp/Log/
// Sqrt/Rsqrt/Tanh/Sigmoid/Relu; Cast (DstT).
#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

absl::StatusOr<Infos> BinaryShape(const Node&, const Infos& in) {
  if (in[0].dtype != in[1].dtype) {
    return absl::InvalidArgumentError(
        fmt::format("operand types differ: {} vs {}", in[0].ToString(), in[1].ToString()));
  }
  absl::StatusOr<TensorShape> s = BroadcastShapes(in[0].shape, in[1].shape);
  if (!s.ok()) return s.status();
  return Infos{{in[0].dtype, *s}};
}

absl::StatusOr<Infos> CompareShape(const Node& n, const Infos& in) {
  absl::StatusOr<Infos> s = BinaryShape(n, in);
  if (!s.ok()) return s.status();
  (*s)[0].dtype = PrimitiveType::PRED;
  return s;
}

// Select (TF1): cond has x's shape, or is a vector over x's first dimension; x, y equal.
absl::StatusOr<Infos> SelectShape(const Node&, const Infos& in) {
  if (in[0].dtype != PrimitiveType::PRED) {
    return absl::InvalidArgumentError(
        fmt::format("condition must be pred, got {}", in[0].ToString()));
  }
  if (in[1].dtype != in[2].dtype || in[1].shape != in[2].shape) {
    return absl::InvalidArgumentError(fmt::format(
        "Select needs equal value operands, got {} and {}", in[1].ToString(), in[2].ToString()));
  }
  const TensorShape& c = in[0].shape;
  const TensorShape& x = in[1].shape;
  const bool vector_cond = c.rank() == 1 && x.rank() > 1 && c.dims[0] == x.dims[0];
  if (c != x && !vector_cond) {
    return absl::InvalidArgumentError(fmt::format(
        "Select condition {} must have the values' shape {} or be a vector over its first "
        "dimension (use SelectV2 for broadcasting)",
        c.ToString(), x.ToString()));
  }
  return Infos{in[1]};
}

// SelectV2: cond, x and y broadcast together (NumPy rules).
absl::StatusOr<Infos> SelectV2Shape(const Node&, const Infos& in) {
  if (in[0].dtype != PrimitiveType::PRED) {
    return absl::InvalidArgumentError(
        fmt::format("condition must be pred, got {}", in[0].ToString()));
  }
  if (in[1].dtype != in[2].dtype) {
    return absl::InvalidArgumentError(
        fmt::format("operand types differ: {} vs {}", in[1].ToString(), in[2].ToString()));
  }
  absl::StatusOr<TensorShape> s = BroadcastShapes(in[1].shape, in[2].shape);
  if (s.ok()) s = BroadcastShapes(in[0].shape, *s);
  if (!s.ok()) return s.status();
  return Infos{{in[1].dtype, *s}};
}

// `per_row`: Select's vector condition picks whole rows (leading dimension); otherwise the
// condition broadcasts like NumPy (right-aligned), as in SelectV2.
LowerFn LowerSelect(bool per_row) {
  return [per_row](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    const std::vector<int64_t>& dims = ctx.output(0).shape.dims;
    HloInstruction* c = ctx.input(0);
    if (per_row && c->shape().rank() == 1 && dims.size() > 1) {
      c = ctx.Broadcast(c, dims, {0});
    } else {
      c = ctx.BroadcastTo(c, dims);
    }
    return std::vector<HloInstruction*>{
        ctx.Select(c, ctx.BroadcastTo(ctx.input(1), dims), ctx.BroadcastTo(ctx.input(2), dims))};
  };
}

absl::StatusOr<Infos> CastShape(const Node& n, const Infos& in) {
  if (const AttrValue* src = n.FindAttr("SrcT"); src != nullptr && src->type() != in[0].dtype) {
    return absl::InvalidArgumentError(fmt::format(
        "SrcT={} but the operand is {}", PrimitiveTypeName(src->type()), in[0].ToString()));
  }
  return Infos{{n.FindAttr("DstT")->type(), in[0].shape}};
}

absl::StatusOr<Infos> UnaryShape(const Node&, const Infos& in) {
  if (!IsFloating(in[0].dtype) && !IsInteger(in[0].dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("operand type {} is not numeric", PrimitiveTypeName(in[0].dtype)));
  }
  return in;
}

LowerFn LowerBinary(HloOpcode op) {
  return [op](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    const std::vector<int64_t>& dims = ctx.output(0).shape.dims;
    return std::vector<HloInstruction*>{
        ctx.Binary(op, ctx.BroadcastTo(ctx.input(0), dims), ctx.BroadcastTo(ctx.input(1), dims))};
  };
}

LowerFn LowerUnary(HloOpcode op) {
  return [op](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    return std::vector<HloInstruction*>{ctx.Unary(op, ctx.input(0))};
  };
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  const std::pair<const char*, HloOpcode> binary[] = {
      {"Add", HloOpcode::kAdd},         {"Sub", HloOpcode::kSubtract},
      {"Mul", HloOpcode::kMultiply},    {"Div", HloOpcode::kDivide},
      {"Maximum", HloOpcode::kMaximum}, {"Minimum", HloOpcode::kMinimum},
      {"Pow", HloOpcode::kPower}};
  for (const auto& [name, op] : binary) {
    r.Register({.name = name,
                .min_inputs = 2,
                .max_inputs = 2,
                .shape_fn = BinaryShape,
                .lower = LowerBinary(op)});
  }
  const std::pair<const char*, HloOpcode> unary[] = {
      {"Neg", HloOpcode::kNegate},       {"Exp", HloOpcode::kExp},     {"Log", HloOpcode::kLog},
      {"Sqrt", HloOpcode::kSqrt},        {"Rsqrt", HloOpcode::kRsqrt}, {"Tanh", HloOpcode::kTanh},
      {"Sigmoid", HloOpcode::kLogistic}, {"Abs", HloOpcode::kAbs}};
  for (const auto& [name, op] : unary) {
    r.Register({.name = name,
                .min_inputs = 1,
                .max_inputs = 1,
                .shape_fn = UnaryShape,
                .lower = LowerUnary(op)});
  }
  const std::pair<const char*, ComparisonDirection> compare[] = {
      {"Equal", ComparisonDirection::kEq},   {"NotEqual", ComparisonDirection::kNe},
      {"Less", ComparisonDirection::kLt},    {"LessEqual", ComparisonDirection::kLe},
      {"Greater", ComparisonDirection::kGt}, {"GreaterEqual", ComparisonDirection::kGe}};
  for (const auto& [name, dir] : compare) {
    r.Register({.name = name,
                .min_inputs = 2,
                .max_inputs = 2,
                .shape_fn = CompareShape,
                .lower = [dir](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                  const std::vector<int64_t>& dims = ctx.output(0).shape.dims;
                  return std::vector<HloInstruction*>{
                      ctx.Compare(dir, ctx.BroadcastTo(ctx.input(0), dims),
                                  ctx.BroadcastTo(ctx.input(1), dims))};
                }});
  }
  r.Register({.name = "Select",
              .min_inputs = 3,
              .max_inputs = 3,
              .shape_fn = SelectShape,
              .lower = LowerSelect(true)});
  r.Register({.name = "SelectV2",
              .min_inputs = 3,
              .max_inputs = 3,
              .shape_fn = SelectV2Shape,
              .lower = LowerSelect(false)});
  r.Register({.name = "Cast",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"DstT", AttrKind::kType, true}, {"SrcT", AttrKind::kType}},
              .shape_fn = CastShape,
              .lower = [](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                return std::vector<HloInstruction*>{ctx.Convert(ctx.input(0), ctx.output(0).dtype)};
              }});
  r.Register({.name = "Relu",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = UnaryShape,
              .lower = [](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                HloInstruction* x = ctx.input(0);
                HloInstruction* zero = ctx.BroadcastTo(
                    ctx.ScalarConstant(x->shape().element_type(), 0), x->shape().dimensions());
                return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kMaximum, x, zero)};
              }});
}

}  // namespace kiln::graph
