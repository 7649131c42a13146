// Neural-network graph ops: MatMul (transpose_a/transpose_b), BatchMatMul/BatchMatMulV2
// (adj_x/adj_y; V2 broadcasts batch dimensions), BiasAdd, Softmax/LogSoftmax (last axis),
// Gelu (`approximate`: tanh form, else erf form). Convolution and pooling: conv_ops.cc.
#include <cmath>

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
    return absl::InvalidArgumentError(
        fmt::format("operand types differ: {} vs {}", in[0].ToString(), in[1].ToString()));
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

// Batch dimensions are all but the last two; V1 needs them equal, V2 broadcasts them.
absl::StatusOr<Infos> BatchMatMulShape(const Node& n, const Infos& in, bool broadcast) {
  const TensorShape& a = in[0].shape;
  const TensorShape& b = in[1].shape;
  if (a.rank() < 2 || b.rank() < 2) {
    return absl::InvalidArgumentError(fmt::format("{} needs operands of rank >= 2, got {} and {}",
                                                  n.op, a.ToString(), b.ToString()));
  }
  if (in[0].dtype != in[1].dtype) {
    return absl::InvalidArgumentError(
        fmt::format("operand types differ: {} vs {}", in[0].ToString(), in[1].ToString()));
  }
  TensorShape batch_a{{a.dims.begin(), a.dims.end() - 2}};
  TensorShape batch_b{{b.dims.begin(), b.dims.end() - 2}};
  TensorShape out;
  if (broadcast) {
    absl::StatusOr<TensorShape> s = BroadcastShapes(batch_a, batch_b);
    if (!s.ok())
      return absl::InvalidArgumentError(
          fmt::format("batch dimensions: {}", std::string(s.status().message())));
    out = *s;
  } else {
    absl::StatusOr<TensorShape> s = BroadcastShapes(batch_a, batch_b);
    if (batch_a.rank() != batch_b.rank() || !s.ok() ||
        (batch_a.IsFullyDefined() && batch_b.IsFullyDefined() && batch_a != batch_b)) {
      return absl::InvalidArgumentError(fmt::format(
          "BatchMatMul needs equal batch dimensions, got {} and {} (BatchMatMulV2 broadcasts)",
          a.ToString(), b.ToString()));
    }
    out = *s;
  }
  const bool ax = AttrBool(n, "adj_x", false), ay = AttrBool(n, "adj_y", false);
  const int ra = a.rank(), rb = b.rank();
  const int64_t m = a.dims[ax ? ra - 1 : ra - 2], ka = a.dims[ax ? ra - 2 : ra - 1];
  const int64_t kb = b.dims[ay ? rb - 1 : rb - 2], nn = b.dims[ay ? rb - 2 : rb - 1];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return absl::InvalidArgumentError(
        fmt::format("{} contracting dimensions differ: {} ({}{}) vs {} ({}{})", n.op, ka,
                    a.ToString(), ax ? ", adjoint" : "", kb, b.ToString(), ay ? ", adjoint" : ""));
  }
  out.dims.push_back(m);
  out.dims.push_back(nn);
  return Infos{{in[0].dtype, out}};
}

// Both operands broadcast to the result's batch dimensions, then one batched dot.
absl::StatusOr<std::vector<HloInstruction*>> LowerBatchMatMul(LowerContext& ctx) {
  const std::vector<int64_t>& out = ctx.output(0).shape.dims;
  const int64_t nb = static_cast<int64_t>(out.size()) - 2;
  auto with_batch = [&](HloInstruction* x) {
    std::vector<int64_t> dims(out.begin(), out.begin() + nb);
    const std::vector<int64_t>& have = x->shape().dimensions();
    dims.insert(dims.end(), have.end() - 2, have.end());
    return ctx.BroadcastTo(x, dims);
  };
  HloInstruction* a = with_batch(ctx.input(0));
  HloInstruction* b = with_batch(ctx.input(1));
  const bool ax = AttrBool(ctx.node(), "adj_x", false), ay = AttrBool(ctx.node(), "adj_y", false);
  DotDimensionNumbers dnums;
  for (int64_t i = 0; i < nb; ++i) {
    dnums.lhs_batch_dimensions.push_back(i);
    dnums.rhs_batch_dimensions.push_back(i);
  }
  dnums.lhs_contracting_dimensions = {ax ? nb : nb + 1};
  dnums.rhs_contracting_dimensions = {ay ? nb + 1 : nb};
  auto dot = std::make_unique<HloInstruction>(HloOpcode::kDot,
                                              LowerContext::HloShape(ctx.output(0).dtype, out),
                                              std::vector<HloInstruction*>{a, b});
  dot->mutable_attrs().dot_dimension_numbers = dnums;
  return std::vector<HloInstruction*>{ctx.Add(std::move(dot))};
}

absl::StatusOr<Infos> BiasAddShape(const Node&, const Infos& in) {
  const TensorShape& x = in[0].shape;
  const TensorShape& b = in[1].shape;
  if (x.rank() < 1 || b.rank() != 1) {
    return absl::InvalidArgumentError(
        fmt::format("BiasAdd needs a rank>=1 value and a rank-1 bias, got {} and {}", x.ToString(),
                    b.ToString()));
  }
  const int64_t last = x.dims.back();
  if (last >= 0 && b.dims[0] >= 0 && last != b.dims[0]) {
    return absl::InvalidArgumentError(
        fmt::format("bias {} does not match the last dimension of {}", b.ToString(), x.ToString()));
  }
  if (in[0].dtype != in[1].dtype) {
    return absl::InvalidArgumentError(
        fmt::format("operand types differ: {} vs {}", in[0].ToString(), in[1].ToString()));
  }
  return Infos{in[0]};
}

absl::StatusOr<std::vector<HloInstruction*>> LowerBiasAdd(LowerContext& ctx) {
  HloInstruction* x = ctx.input(0);
  const std::vector<int64_t>& dims = x->shape().dimensions();
  HloInstruction* b = ctx.Broadcast(ctx.input(1), dims, {static_cast<int64_t>(dims.size()) - 1});
  return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kAdd, x, b)};
}

absl::StatusOr<Infos> FloatShape(const Node& n, const Infos& in) {
  if (!IsFloating(in[0].dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs a float type, got {}", n.op, in[0].ToString()));
  }
  return in;
}

absl::StatusOr<Infos> SoftmaxShape(const Node& n, const Infos& in) {
  if (in[0].shape.rank() < 1) {
    return absl::InvalidArgumentError(fmt::format("{} needs rank >= 1", n.op));
  }
  return FloatShape(n, in);
}

// softmax(x) = exp(x - max) / sum(exp(x - max)) along the last axis;
// log_softmax(x) = (x - max) - log(sum(exp(x - max))).
LowerFn LowerSoftmax(bool log) {
  return [log](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    HloInstruction* x = ctx.input(0);
    const std::vector<int64_t>& dims = x->shape().dimensions();
    const int64_t last = static_cast<int64_t>(dims.size()) - 1;
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < last; ++i) keep.push_back(i);
    HloInstruction* mx =
        ctx.Reduce(x, {last}, HloOpcode::kMaximum, -std::numeric_limits<double>::infinity());
    HloInstruction* shifted = ctx.Binary(HloOpcode::kSubtract, x, ctx.Broadcast(mx, dims, keep));
    HloInstruction* e = ctx.Unary(HloOpcode::kExp, shifted);
    HloInstruction* sum = ctx.Reduce(e, {last}, HloOpcode::kAdd, 0);
    if (log) {
      HloInstruction* lse = ctx.Broadcast(ctx.Unary(HloOpcode::kLog, sum), dims, keep);
      return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kSubtract, shifted, lse)};
    }
    return std::vector<HloInstruction*>{
        ctx.Binary(HloOpcode::kDivide, e, ctx.Broadcast(sum, dims, keep))};
  };
}

// gelu(x) = x/2 * (1 + erf(x/sqrt(2))), or with approximate=true
// x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
absl::StatusOr<std::vector<HloInstruction*>> LowerGelu(LowerContext& ctx) {
  HloInstruction* x = ctx.input(0);
  const PrimitiveType t = x->shape().element_type();
  const std::vector<int64_t>& dims = x->shape().dimensions();
  auto c = [&](double v) { return ctx.BroadcastTo(ctx.ScalarConstant(t, v), dims); };
  auto mul = [&](HloInstruction* a, HloInstruction* b) {
    return ctx.Binary(HloOpcode::kMultiply, a, b);
  };
  HloInstruction* inner;
  if (AttrBool(ctx.node(), "approximate", false)) {
    HloInstruction* x3 = mul(mul(x, x), x);
    HloInstruction* arg =
        mul(c(std::sqrt(2.0 / M_PI)), ctx.Binary(HloOpcode::kAdd, x, mul(c(0.044715), x3)));
    inner = ctx.Unary(HloOpcode::kTanh, arg);
  } else {
    inner = ctx.Unary(HloOpcode::kErf, mul(x, c(M_SQRT1_2)));
  }
  HloInstruction* one_plus = ctx.Binary(HloOpcode::kAdd, c(1.0), inner);
  return std::vector<HloInstruction*>{mul(mul(c(0.5), x), one_plus)};
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Register({.name = "MatMul",
              .min_inputs = 2,
              .max_inputs = 2,
              .attrs = {{"transpose_a", AttrKind::kBool}, {"transpose_b", AttrKind::kBool}},
              .shape_fn = MatMulShape,
              .lower = LowerMatMul});
  r.Register({.name = "BiasAdd",
              .min_inputs = 2,
              .max_inputs = 2,
              .shape_fn = BiasAddShape,
              .lower = LowerBiasAdd});
  for (const char* name : {"BatchMatMul", "BatchMatMulV2"}) {
    const bool broadcast = std::string(name) == "BatchMatMulV2";
    r.Register(
        {.name = name,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = {{"adj_x", AttrKind::kBool}, {"adj_y", AttrKind::kBool}},
         .shape_fn = [broadcast](const Node& n,
                                 const Infos& in) { return BatchMatMulShape(n, in, broadcast); },
         .lower = LowerBatchMatMul});
  }
  r.Register({.name = "Softmax",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = SoftmaxShape,
              .lower = LowerSoftmax(false)});
  r.Register({.name = "LogSoftmax",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = SoftmaxShape,
              .lower = LowerSoftmax(true)});
  r.Register({.name = "Gelu",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"approximate", AttrKind::kBool}},
              .shape_fn = FloatShape,
              .lower = LowerGelu});
}

}  // namespace kiln::graph
