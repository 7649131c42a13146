// Host-only graph ops, run by host kernels in the core: Unique (data-dependent output
// shape, so it has no lowering and can never be inside a compiled cluster).
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
    idx.SetFromDouble(i, static_cast<double>(std::lower_bound(uniq.begin(), uniq.end(), vals[i]) -
                                             uniq.begin()));
  }
  std::vector<Literal> out;
  out.push_back(std::move(y));
  out.push_back(std::move(idx));
  return out;
}

}  // namespace

void RegisterHostOps(OpRegistry& r) {
  r.Register({.name = "Unique", .min_inputs = 1, .max_inputs = 1, .num_outputs = 2,
              .shape_fn = UniqueShape, .host_kernel = UniqueKernel,
              .host_only_reason = "data-dependent output shape"});
}

}  // namespace kiln::graph
