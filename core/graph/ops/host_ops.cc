// Host-only graph ops, run by host kernels in the core: Unique, Where (one input: the
// coordinates of the non-zero/true elements, s64 [n, rank], like TF's raw Where op) and
// NonZero (the same, transposed to [rank, n] like ONNX / np.nonzero stacked). Their output
// sizes depend on the data, so they have no lowering and never sit in a compiled cluster.
#include <algorithm>

#include "core/graph/ops/ops.h"
#include "fmt/format.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

absl::StatusOr<Infos> UniqueShape(const Node&, const Infos& in) {
  if (in[0].shape.rank() != 1) {
    return absl::InvalidArgumentError(
        fmt::format("Unique needs a rank-1 operand, got {}", in[0].shape.ToString()));
  }
  // Output 0: the distinct values (count known only at run time); output 1: for each
  // input element, the index of its value in output 0.
  return Infos{{in[0].dtype, TensorShape{{-1}}}, {PrimitiveType::S32, in[0].shape}};
}

// Like np.unique(x, return_inverse=True): sorted distinct values and inverse indices.
absl::StatusOr<std::vector<Literal>> UniqueKernel(const Node&, const std::vector<Literal>& in) {
  const Literal& x = in[0];
  const int64_t n = x.element_count();
  std::vector<double> vals(n);
  for (int64_t i = 0; i < n; ++i) vals[i] = x.GetAsDouble(i);
  std::vector<double> uniq = vals;
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  Literal y(Shape(x.shape().element_type(), {static_cast<int64_t>(uniq.size())}));
  for (size_t i = 0; i < uniq.size(); ++i) y.SetFromDouble(static_cast<int64_t>(i), uniq[i]);
  Literal idx(Shape(PrimitiveType::S32, {n}));
  for (int64_t i = 0; i < n; ++i) {
    idx.SetFromDouble(
        i, static_cast<double>(std::lower_bound(uniq.begin(), uniq.end(), vals[i]) - uniq.begin()));
  }
  std::vector<Literal> out;
  out.push_back(std::move(y));
  out.push_back(std::move(idx));
  return out;
}

// The three-argument tf.where is SelectV2 (compiled); the raw Where op has one input.
absl::StatusOr<Infos> WhereShape(const Node& n, const Infos& in, bool transposed) {
  if (in.size() != 1) {
    return absl::InvalidArgumentError(
        fmt::format("{} takes one input (the coordinates of the true elements){}; got {}", n.op,
                    transposed ? "" : " or three (condition, x, y)", in.size()));
  }
  const int64_t rank = in[0].shape.rank();
  return Infos{
      {PrimitiveType::S64, transposed ? TensorShape{{rank, -1}} : TensorShape{{-1, rank}}}};
}

// Coordinates of the non-zero elements in row-major order.
HostKernel WhereKernel(bool transposed) {
  return [transposed](const Node&,
                      const std::vector<Literal>& in) -> absl::StatusOr<std::vector<Literal>> {
    const Literal& x = in[0];
    const std::vector<int64_t>& dims = x.shape().dimensions();
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < x.element_count(); ++i) {
      if (x.GetAsDouble(i) != 0) hits.push_back(i);
    }
    const int64_t n = static_cast<int64_t>(hits.size());
    Literal out(transposed ? Shape(PrimitiveType::S64, {rank, n})
                           : Shape(PrimitiveType::S64, {n, rank}));
    for (int64_t k = 0; k < n; ++k) {
      int64_t rest = hits[k];
      for (int64_t d = rank - 1; d >= 0; --d) {
        out.SetFromDouble(transposed ? d * n + k : k * rank + d,
                          static_cast<double>(rest % dims[d]));
        rest /= dims[d];
      }
    }
    std::vector<Literal> result;
    result.push_back(std::move(out));
    return result;
  };
}

}  // namespace

void RegisterHostOps(OpRegistry& r) {
  r.Register({.name = "Unique",
              .min_inputs = 1,
              .max_inputs = 1,
              .num_outputs = 2,
              .shape_fn = UniqueShape,
              .host_kernel = UniqueKernel,
              .host_only_reason = "data-dependent output shape"});
  r.Register({.name = "NonZero",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = [](const Node& n, const Infos& in) { return WhereShape(n, in, true); },
              .host_kernel = WhereKernel(true),
              .host_only_reason = "data-dependent output shape"});
  // Where(cond) is a host kernel; Where(cond, x, y) is tf.where's select form and compiles
  // exactly like SelectV2 (looked up when used, so registration order does not matter).
  auto select_v2 = [] { return OpRegistry::Global().Find("SelectV2"); };
  r.Register({.name = "Where",
              .min_inputs = 1,
              .max_inputs = 3,
              .shape_fn = [select_v2](const Node& n, const Infos& in) -> absl::StatusOr<Infos> {
                if (in.size() == 3) return select_v2()->shape_fn(n, in);
                return WhereShape(n, in, false);
              },
              .lower = [select_v2](LowerContext& ctx) { return select_v2()->lower(ctx); },
              .host_kernel = WhereKernel(false),
              .host_only_reason = "data-dependent output shape (one-input Where)",
              .lower_if = [](const Node& n) { return n.inputs.size() == 3; }});
}

}  // namespace kiln::graph
