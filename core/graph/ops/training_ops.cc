// Gradient ops a training step needs, with TensorFlow's names and semantics:
// SparseSoftmaxCrossEntropyWithLogits / SoftmaxCrossEntropyWithLogits (per-example loss and
// its backprop), ReluGrad, SigmoidGrad, TanhGrad, BiasAddGrad. MatMul's gradients are
// MatMuls with transpose flags and need no op of their own.
#include <cmath>
#include <limits>

#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;
using Lowered = absl::StatusOr<std::vector<HloInstruction*>>;

absl::Status SameTypeAndShape(const ValueInfo& a, const ValueInfo& b, const char* what) {
  bool ok = a.dtype == b.dtype && a.shape.rank() == b.shape.rank();
  for (int i = 0; ok && i < a.shape.rank(); ++i) {
    ok = a.shape.dims[i] < 0 || b.shape.dims[i] < 0 || a.shape.dims[i] == b.shape.dims[i];
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        fmt::format("{} must match: {} vs {}", what, a.ToString(), b.ToString()));
  }
  return absl::OkStatus();
}

// ReluGrad(gradients, features), SigmoidGrad(y, dy), TanhGrad(y, dy): same types and shapes.
absl::StatusOr<Infos> ElementwiseGradShape(const Node& n, const Infos& in) {
  if (!IsFloating(in[0].dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs a float type, got {}", n.op, PrimitiveTypeName(in[0].dtype)));
  }
  if (absl::Status s = SameTypeAndShape(in[0], in[1], "the two operands"); !s.ok()) return s;
  return Infos{in[0].shape.IsFullyDefined() ? in[0] : in[1]};
}

HloInstruction* Compare(LowerContext& ctx, HloInstruction* a, HloInstruction* b,
                        ComparisonDirection dir) {
  auto c = std::make_unique<HloInstruction>(
      HloOpcode::kCompare, LowerContext::HloShape(PrimitiveType::PRED, a->shape().dimensions()),
      std::vector<HloInstruction*>{a, b});
  c->mutable_attrs().comparison_direction = dir;
  return ctx.Add(std::move(c));
}

HloInstruction* Select(LowerContext& ctx, HloInstruction* pred, HloInstruction* a,
                       HloInstruction* b) {
  return ctx.Add(std::make_unique<HloInstruction>(HloOpcode::kSelect, a->shape(),
                                                  std::vector<HloInstruction*>{pred, a, b}));
}

HloInstruction* Splat(LowerContext& ctx, PrimitiveType t, double v,
                      const std::vector<int64_t>& dims) {
  return ctx.BroadcastTo(ctx.ScalarConstant(t, v), dims);
}

// gradients * (features > 0)
Lowered LowerReluGrad(LowerContext& ctx) {
  HloInstruction* g = ctx.input(0);
  HloInstruction* f = ctx.input(1);
  const std::vector<int64_t>& dims = g->shape().dimensions();
  const PrimitiveType t = g->shape().element_type();
  HloInstruction* positive = Compare(ctx, f, Splat(ctx, t, 0, dims), ComparisonDirection::kGt);
  return std::vector<HloInstruction*>{Select(ctx, positive, g, Splat(ctx, t, 0, dims))};
}

// dy * y * (1 - y), y = sigmoid(x)
Lowered LowerSigmoidGrad(LowerContext& ctx) {
  HloInstruction* y = ctx.input(0);
  HloInstruction* dy = ctx.input(1);
  HloInstruction* one = Splat(ctx, y->shape().element_type(), 1, y->shape().dimensions());
  HloInstruction* dsig =
      ctx.Binary(HloOpcode::kMultiply, y, ctx.Binary(HloOpcode::kSubtract, one, y));
  return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kMultiply, dy, dsig)};
}

// dy * (1 - y * y), y = tanh(x)
Lowered LowerTanhGrad(LowerContext& ctx) {
  HloInstruction* y = ctx.input(0);
  HloInstruction* dy = ctx.input(1);
  HloInstruction* one = Splat(ctx, y->shape().element_type(), 1, y->shape().dimensions());
  HloInstruction* dtanh =
      ctx.Binary(HloOpcode::kSubtract, one, ctx.Binary(HloOpcode::kMultiply, y, y));
  return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kMultiply, dy, dtanh)};
}

// BiasAddGrad(out_backprop): the sum over every dimension but the last (the bias's).
absl::StatusOr<Infos> BiasAddGradShape(const Node&, const Infos& in) {
  if (in[0].shape.rank() < 1) {
    return absl::InvalidArgumentError(
        fmt::format("BiasAddGrad needs rank >= 1, got {}", in[0].shape.ToString()));
  }
  return Infos{{in[0].dtype, TensorShape{{in[0].shape.dims.back()}}}};
}

Lowered LowerBiasAddGrad(LowerContext& ctx) {
  HloInstruction* g = ctx.input(0);
  std::vector<int64_t> axes;
  for (int64_t i = 0; i + 1 < g->shape().rank(); ++i) axes.push_back(i);
  return std::vector<HloInstruction*>{ctx.Reduce(g, axes, HloOpcode::kAdd, 0)};
}

// (features (batch, classes), labels): labels (batch) of class indices for the sparse op,
// (batch, classes) probabilities for the dense one. Outputs: loss (batch), backprop.
absl::StatusOr<Infos> XentShape(const Node& n, const Infos& in, bool sparse) {
  const ValueInfo& f = in[0];
  const ValueInfo& l = in[1];
  if (f.shape.rank() != 2 || !IsFloating(f.dtype)) {
    return absl::InvalidArgumentError(fmt::format(
        "{} needs float logits of rank 2 (batch, classes), got {}", n.op, f.ToString()));
  }
  if (sparse) {
    if (l.shape.rank() != 1 || (l.dtype != PrimitiveType::S32 && l.dtype != PrimitiveType::S64)) {
      return absl::InvalidArgumentError(
          fmt::format("labels must be s32 or s64 of rank 1 (batch), got {}", l.ToString()));
    }
    const int64_t a = f.shape.dims[0], b = l.shape.dims[0];
    if (a >= 0 && b >= 0 && a != b) {
      return absl::InvalidArgumentError(fmt::format(
          "logits {} and labels {} have different batch sizes", f.ToString(), l.ToString()));
    }
  } else if (absl::Status s = SameTypeAndShape(f, l, "logits and labels"); !s.ok()) {
    return s;
  }
  const int64_t batch = f.shape.dims[0] >= 0 ? f.shape.dims[0] : l.shape.dims[0];
  return Infos{{f.dtype, TensorShape{{batch}}}, {f.dtype, TensorShape{{batch, f.shape.dims[1]}}}};
}

// loss = logsumexp(x) - x[label] = -sum(onehot * log_softmax(x)); backprop = softmax - onehot.
// Sparse labels outside [0, classes) give NaN loss and backprop rows, as TensorFlow on GPU.
Lowered LowerXent(LowerContext& ctx, bool sparse) {
  HloInstruction* x = ctx.input(0);
  HloInstruction* labels = ctx.input(1);
  const std::vector<int64_t>& dims = x->shape().dimensions();
  const PrimitiveType t = x->shape().element_type();
  const std::vector<int64_t> row = {dims[0]};
  HloInstruction* mx =
      ctx.Reduce(x, {1}, HloOpcode::kMaximum, -std::numeric_limits<double>::infinity());
  HloInstruction* shifted = ctx.Binary(HloOpcode::kSubtract, x, ctx.Broadcast(mx, dims, {0}));
  HloInstruction* e = ctx.Unary(HloOpcode::kExp, shifted);
  HloInstruction* sum = ctx.Reduce(e, {1}, HloOpcode::kAdd, 0);
  HloInstruction* logp = ctx.Binary(HloOpcode::kSubtract, shifted,
                                    ctx.Broadcast(ctx.Unary(HloOpcode::kLog, sum), dims, {0}));
  HloInstruction* softmax = ctx.Binary(HloOpcode::kDivide, e, ctx.Broadcast(sum, dims, {0}));
  HloInstruction* target = labels;  // dense: the label probabilities themselves
  HloInstruction* valid = nullptr;
  if (sparse) {
    const PrimitiveType lt = labels->shape().element_type();
    auto iota =
        std::make_unique<HloInstruction>(HloOpcode::kIota, LowerContext::HloShape(lt, dims));
    iota->mutable_attrs().iota_dimension = 1;
    HloInstruction* hot = Compare(ctx, ctx.Add(std::move(iota)), ctx.Broadcast(labels, dims, {0}),
                                  ComparisonDirection::kEq);
    target = Select(ctx, hot, Splat(ctx, t, 1, dims), Splat(ctx, t, 0, dims));
    HloInstruction* ge0 = Compare(ctx, labels, Splat(ctx, lt, 0, row), ComparisonDirection::kGe);
    HloInstruction* lt_n = Compare(ctx, labels, Splat(ctx, lt, static_cast<double>(dims[1]), row),
                                   ComparisonDirection::kLt);
    valid = ctx.Add(std::make_unique<HloInstruction>(
        HloOpcode::kAnd, LowerContext::HloShape(PrimitiveType::PRED, row),
        std::vector<HloInstruction*>{ge0, lt_n}));
  }
  HloInstruction* loss = ctx.Unary(
      HloOpcode::kNegate,
      ctx.Reduce(ctx.Binary(HloOpcode::kMultiply, target, logp), {1}, HloOpcode::kAdd, 0));
  HloInstruction* backprop = ctx.Binary(HloOpcode::kSubtract, softmax, target);
  if (valid != nullptr) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    loss = Select(ctx, valid, loss, Splat(ctx, t, nan, row));
    backprop = Select(ctx, ctx.Broadcast(valid, dims, {0}), backprop, Splat(ctx, t, nan, dims));
  }
  return std::vector<HloInstruction*>{loss, backprop};
}

}  // namespace

void RegisterTrainingOps(OpRegistry& r) {
  r.Register({.name = "ReluGrad",
              .min_inputs = 2,
              .max_inputs = 2,
              .shape_fn = ElementwiseGradShape,
              .lower = LowerReluGrad});
  r.Register({.name = "SigmoidGrad",
              .min_inputs = 2,
              .max_inputs = 2,
              .shape_fn = ElementwiseGradShape,
              .lower = LowerSigmoidGrad});
  r.Register({.name = "TanhGrad",
              .min_inputs = 2,
              .max_inputs = 2,
              .shape_fn = ElementwiseGradShape,
              .lower = LowerTanhGrad});
  r.Register({.name = "BiasAddGrad",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = BiasAddGradShape,
              .lower = LowerBiasAddGrad});
  r.Register({.name = "SparseSoftmaxCrossEntropyWithLogits",
              .min_inputs = 2,
              .max_inputs = 2,
              .num_outputs = 2,
              .shape_fn = [](const Node& n, const Infos& in) { return XentShape(n, in, true); },
              .lower = [](LowerContext& ctx) { return LowerXent(ctx, true); }});
  r.Register({.name = "SoftmaxCrossEntropyWithLogits",
              .min_inputs = 2,
              .max_inputs = 2,
              .num_outputs = 2,
              .shape_fn = [](const Node& n, const Infos& in) { return XentShape(n, in, false); },
              .lower = [](LowerContext& ctx) { return LowerXent(ctx, false); }});
}

}  // namespace kiln::graph
