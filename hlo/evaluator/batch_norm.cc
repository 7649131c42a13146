// Evaluation of batch-norm-training, batch-norm-inference and batch-norm-grad.
//
// Statistics are accumulated in f64 whatever the operand type (a reference should not add
// its own rounding; XLA's expander computes in the operand type), the variance is the
// biased one, mean((x - mean)^2), and results are rounded once to the operand type.
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_util.h"

namespace kiln::eval {
namespace {

// Operand viewed as [outer, features, inner] around feature_index.
struct FeatureView {
  int64_t outer = 1, features = 1, inner = 1;
  int64_t Index(int64_t o, int64_t f, int64_t i) const { return (o * features + f) * inner + i; }
  int64_t per_feature() const { return outer * inner; }
};

absl::StatusOr<FeatureView> View(const HloInstruction& instr, Operands ops, size_t n_ops) {
  if (auto st = ExpectOperands(instr, ops, n_ops); !st.ok()) return st;
  const Shape& s = ops[0]->shape();
  if (!IsFloating(s.element_type())) return EvalError(instr, "operand must be floating point");
  const int64_t fi = instr.attrs().feature_index;
  if (fi < 0 || fi >= s.rank())
    return EvalError(instr, absl::StrCat("feature_index ", fi, " out of range"));
  FeatureView v;
  for (int d = 0; d < s.rank(); ++d) {
    if (d < fi) v.outer *= s.dimensions(d);
    if (d > fi) v.inner *= s.dimensions(d);
  }
  v.features = s.dimensions(fi);
  for (size_t i = 1; i < n_ops; ++i) {
    const Shape& p = ops[i]->shape();
    const bool full = instr.opcode() == HloOpcode::kBatchNormGrad && i == 4;
    if (p.element_type() != s.element_type() ||
        (full ? p.dimensions() != s.dimensions()
              : (p.rank() != 1 || p.dimensions(0) != v.features)))
      return EvalError(
          instr,
          absl::StrCat("operand ", i, " has shape ", p.ToString(false), ", expected ",
                       full ? s.ToString(false) : "a [features] vector of the operand type"));
  }
  return v;
}

std::vector<double> ToDoubles(const Literal& l) {
  std::vector<double> v(l.element_count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = l.GetAsDouble(static_cast<int64_t>(i));
  return v;
}
Literal FromDoubles(const Shape& s, const std::vector<double>& v) {
  return Literal::FromDoubles(Shape(s.element_type(), s.dimensions()), v);
}

// Per-feature mean and biased variance.
void Moments(const FeatureView& v, const std::vector<double>& x, std::vector<double>& mean,
             std::vector<double>& var) {
  mean.assign(v.features, 0);
  var.assign(v.features, 0);
  const double n = static_cast<double>(v.per_feature());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t f = 0; f < v.features; ++f)
      for (int64_t i = 0; i < v.inner; ++i) mean[f] += x[v.Index(o, f, i)];
  for (double& m : mean) m = n > 0 ? m / n : 0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t f = 0; f < v.features; ++f)
      for (int64_t i = 0; i < v.inner; ++i) {
        const double d = x[v.Index(o, f, i)] - mean[f];
        var[f] += d * d;
      }
  for (double& s : var) s = n > 0 ? s / n : 0;
}

absl::StatusOr<Literal> Training(const HloInstruction& instr, Operands ops) {
  auto v = View(instr, ops, 3);
  if (!v.ok()) return v.status();
  const auto x = ToDoubles(*ops[0]), scale = ToDoubles(*ops[1]), offset = ToDoubles(*ops[2]);
  std::vector<double> mean, var;
  Moments(*v, x, mean, var);
  std::vector<double> y(x.size());
  const double eps = instr.attrs().epsilon;
  for (int64_t o = 0; o < v->outer; ++o)
    for (int64_t f = 0; f < v->features; ++f)
      for (int64_t i = 0; i < v->inner; ++i) {
        const int64_t k = v->Index(o, f, i);
        y[k] = (x[k] - mean[f]) / std::sqrt(var[f] + eps) * scale[f] + offset[f];
      }
  std::vector<Literal> out;
  out.push_back(FromDoubles(ops[0]->shape(), y));
  out.push_back(FromDoubles(ops[1]->shape(), mean));
  out.push_back(FromDoubles(ops[1]->shape(), var));
  return Literal::MakeTuple(std::move(out));
}

absl::StatusOr<Literal> Inference(const HloInstruction& instr, Operands ops) {
  auto v = View(instr, ops, 5);
  if (!v.ok()) return v.status();
  const auto x = ToDoubles(*ops[0]), scale = ToDoubles(*ops[1]), offset = ToDoubles(*ops[2]);
  const auto mean = ToDoubles(*ops[3]), var = ToDoubles(*ops[4]);
  std::vector<double> y(x.size());
  const double eps = instr.attrs().epsilon;
  for (int64_t o = 0; o < v->outer; ++o)
    for (int64_t f = 0; f < v->features; ++f)
      for (int64_t i = 0; i < v->inner; ++i) {
        const int64_t k = v->Index(o, f, i);
        y[k] = (x[k] - mean[f]) / std::sqrt(var[f] + eps) * scale[f] + offset[f];
      }
  return FromDoubles(ops[0]->shape(), y);
}

// XLA's formulas, per feature with N elements:
//   grad_offset = sum(dy); grad_scale = sum(dy * (x - mean)) / sqrt(var + eps);
//   grad_x = scale / sqrt(var + eps) *
//            (dy - grad_offset / N - (x - mean) * sum(dy * (x - mean)) / (N * (var + eps))).
absl::StatusOr<Literal> Grad(const HloInstruction& instr, Operands ops) {
  auto v = View(instr, ops, 5);
  if (!v.ok()) return v.status();
  const auto x = ToDoubles(*ops[0]), scale = ToDoubles(*ops[1]), mean = ToDoubles(*ops[2]);
  const auto var = ToDoubles(*ops[3]), dy = ToDoubles(*ops[4]);
  const double eps = instr.attrs().epsilon;
  const double n = static_cast<double>(v->per_feature());
  std::vector<double> sum_dy(v->features, 0), sum_dy_xc(v->features, 0);
  for (int64_t o = 0; o < v->outer; ++o)
    for (int64_t f = 0; f < v->features; ++f)
      for (int64_t i = 0; i < v->inner; ++i) {
        const int64_t k = v->Index(o, f, i);
        sum_dy[f] += dy[k];
        sum_dy_xc[f] += dy[k] * (x[k] - mean[f]);
      }
  std::vector<double> gx(x.size()), gscale(v->features);
  for (int64_t f = 0; f < v->features; ++f) gscale[f] = sum_dy_xc[f] / std::sqrt(var[f] + eps);
  for (int64_t o = 0; o < v->outer; ++o)
    for (int64_t f = 0; f < v->features; ++f)
      for (int64_t i = 0; i < v->inner; ++i) {
        const int64_t k = v->Index(o, f, i);
        const double ve = var[f] + eps;
        gx[k] = scale[f] / std::sqrt(ve) *
                (dy[k] - sum_dy[f] / n - (x[k] - mean[f]) * sum_dy_xc[f] / (n * ve));
      }
  std::vector<Literal> out;
  out.push_back(FromDoubles(ops[0]->shape(), gx));
  out.push_back(FromDoubles(ops[1]->shape(), gscale));
  out.push_back(FromDoubles(ops[1]->shape(), sum_dy));
  return Literal::MakeTuple(std::move(out));
}

}  // namespace

absl::StatusOr<Literal> EvalBatchNorm(const HloInstruction& instr, Operands ops) {
  switch (instr.opcode()) {
    case HloOpcode::kBatchNormTraining:
      return Training(instr, ops);
    case HloOpcode::kBatchNormInference:
      return Inference(instr, ops);
    case HloOpcode::kBatchNormGrad:
      return Grad(instr, ops);
    default:
      return EvalError(instr, "not a batch-norm opcode");
  }
}

}  // namespace kiln::eval
