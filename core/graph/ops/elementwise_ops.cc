// Elementwise graph ops: Add/Sub/Mul/Div/Maximum/Minimum with NumPy broadcasting of
// equal-rank or scalar operands, and Neg/Exp/Log/Sqrt/Rsqrt/Tanh/Sigmoid/Relu.
#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

absl::StatusOr<Infos> BinaryShape(const Node&, const Infos& in) {
  if (in[0].dtype != in[1].dtype) {
    return absl::InvalidArgumentError(fmt::format("operand types differ: {} vs {}",
                                                  in[0].ToString(), in[1].ToString()));
  }
  absl::StatusOr<TensorShape> s = BroadcastShapes(in[0].shape, in[1].shape);
  if (!s.ok()) return s.status();
  return Infos{{in[0].dtype, *s}};
}

absl::StatusOr<Infos> UnaryShape(const Node&, const Infos& in) {
  if (!IsFloating(in[0].dtype) && !IsInteger(in[0].dtype)) {
    return absl::InvalidArgumentError(fmt::format("operand type {} is not numeric",
                                                  PrimitiveTypeName(in[0].dtype)));
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
      {"Maximum", HloOpcode::kMaximum}, {"Minimum", HloOpcode::kMinimum}};
  for (const auto& [name, op] : binary) {
    r.Register({.name = name, .min_inputs = 2, .max_inputs = 2, .shape_fn = BinaryShape,
                .lower = LowerBinary(op)});
  }
  const std::pair<const char*, HloOpcode> unary[] = {
      {"Neg", HloOpcode::kNegate}, {"Exp", HloOpcode::kExp},     {"Log", HloOpcode::kLog},
      {"Sqrt", HloOpcode::kSqrt},  {"Rsqrt", HloOpcode::kRsqrt}, {"Tanh", HloOpcode::kTanh},
      {"Sigmoid", HloOpcode::kLogistic}};
  for (const auto& [name, op] : unary) {
    r.Register({.name = name, .min_inputs = 1, .max_inputs = 1, .shape_fn = UnaryShape,
                .lower = LowerUnary(op)});
  }
  r.Register({.name = "Relu", .min_inputs = 1, .max_inputs = 1, .shape_fn = UnaryShape,
              .lower = [](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                HloInstruction* x = ctx.input(0);
                HloInstruction* zero = ctx.BroadcastTo(
                    ctx.ScalarConstant(x->shape().element_type(), 0), x->shape().dimensions());
                return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kMaximum, x, zero)};
              }});
}

}  // namespace kiln::graph
