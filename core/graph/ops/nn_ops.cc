// Neural-network graph ops: MatMul (transpose_a/transpose_b), BiasAdd, Softmax (last axis).
#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

absl::StatusOr<Infos> MatMulShape(const Node& n, const Infos& in) {
  const TensorShape& a = in[0].shape;
  const TensorShape& b = in[1].shape;
  if (a.rank() != 2 || b.rank() != 2) {
    return absl::InvalidArgumentError(
        fmt::format("MatMul needs rank-2 operands, got {} and {}", a.ToString(), b.ToString()));
  }
  if (in[0].dtype != in[1].dtype) {
    return absl::InvalidArgumentError(fmt::format("operand types differ: {} vs {}",
                                                  in[0].ToString(), in[1].ToString()));
  }
  const bool ta = AttrBool(n, "transpose_a", false), tb = AttrBool(n, "transpose_b", false);
  const int64_t m = ta ? a.dims[1] : a.dims[0], ka = ta ? a.dims[0] : a.dims[1];
  const int64_t kb = tb ? b.dims[1] : b.dims[0], nn = tb ? b.dims[0] : b.dims[1];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return absl::InvalidArgumentError(fmt::format(
        "MatMul contracting dimensions differ: {} ({}{}) vs {} ({}{})", ka, a.ToString(),
        ta ? ", transposed" : "", kb, b.ToString(), tb ? ", transposed" : ""));
  }
  return Infos{{in[0].dtype, TensorShape{{m, nn}}}};
}

absl::StatusOr<std::vector<HloInstruction*>> LowerMatMul(LowerContext& ctx) {
  const bool ta = AttrBool(ctx.node(), "transpose_a", false);
  const bool tb = AttrBool(ctx.node(), "transpose_b", false);
  auto dot = std::make_unique<HloInstruction>(
      HloOpcode::kDot, LowerContext::HloShape(ctx.output(0).dtype, ctx.output(0).shape.dims),
      std::vector<HloInstruction*>{ctx.input(0), ctx.input(1)});
  DotDimensionNumbers dnums;
  dnums.lhs_contracting_dimensions = {ta ? 0 : 1};
  dnums.rhs_contracting_dimensions = {tb ? 1 : 0};
  dot->mutable_attrs().dot_dimension_numbers = dnums;
  return std::vector<HloInstruction*>{ctx.Add(std::move(dot))};
}

absl::StatusOr<Infos> BiasAddShape(const Node&, const Infos& in) {
  const TensorShape& x = in[0].shape;
  const TensorShape& b = in[1].shape;
  if (x.rank() < 1 || b.rank() != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "BiasAdd needs a rank>=1 value and a rank-1 bias, got {} and {}", x.ToString(),
        b.ToString()));
  }
  const int64_t last = x.dims.back();
  if (last >= 0 && b.dims[0] >= 0 && last != b.dims[0]) {
    return absl::InvalidArgumentError(fmt::format(
        "bias {} does not match the last dimension of {}", b.ToString(), x.ToString()));
  }
  if (in[0].dtype != in[1].dtype) {
    return absl::InvalidArgumentError(fmt::format("operand types differ: {} vs {}",
                                                  in[0].ToString(), in[1].ToString()));
  }
  return Infos{in[0]};
}

absl::StatusOr<std::vector<HloInstruction*>> LowerBiasAdd(LowerContext& ctx) {
  HloInstruction* x = ctx.input(0);
  const std::vector<int64_t>& dims = x->shape().dimensions();
  HloInstruction* b = ctx.Broadcast(ctx.input(1), dims, {static_cast<int64_t>(dims.size()) - 1});
  return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kAdd, x, b)};
}

absl::StatusOr<Infos> SoftmaxShape(const Node&, const Infos& in) {
  if (in[0].shape.rank() < 1) return absl::InvalidArgumentError("Softmax needs rank >= 1");
  if (!IsFloating(in[0].dtype)) return absl::InvalidArgumentError("Softmax needs a float type");
  return in;
}

// softmax(x) = exp(x - max) / sum(exp(x - max)) along the last axis.
absl::StatusOr<std::vector<HloInstruction*>> LowerSoftmax(LowerContext& ctx) {
  HloInstruction* x = ctx.input(0);
  const std::vector<int64_t>& dims = x->shape().dimensions();
  const int64_t last = static_cast<int64_t>(dims.size()) - 1;
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < last; ++i) keep.push_back(i);
  HloInstruction* mx = ctx.Reduce(x, {last}, HloOpcode::kMaximum,
                                  -std::numeric_limits<double>::infinity());
  HloInstruction* shifted = ctx.Binary(HloOpcode::kSubtract, x, ctx.Broadcast(mx, dims, keep));
  HloInstruction* e = ctx.Unary(HloOpcode::kExp, shifted);
  HloInstruction* sum = ctx.Reduce(e, {last}, HloOpcode::kAdd, 0);
  return std::vector<HloInstruction*>{
      ctx.Binary(HloOpcode::kDivide, e, ctx.Broadcast(sum, dims, keep))};
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Register({.name = "MatMul", .min_inputs = 2, .max_inputs = 2,
              .attrs = {{"transpose_a", AttrKind::kBool}, {"transpose_b", AttrKind::kBool}},
              .shape_fn = MatMulShape, .lower = LowerMatMul});
  r.Register({.name = "BiasAdd", .min_inputs = 2, .max_inputs = 2, .shape_fn = BiasAddShape,
              .lower = LowerBiasAdd});
  r.Register({.name = "Softmax", .min_inputs = 1, .max_inputs = 1, .shape_fn = SoftmaxShape,
              .lower = LowerSoftmax});
}

}  // namespace kiln::graph
