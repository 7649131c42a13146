// Reductions: Sum, Mean, Max over `axes` (default: all), with `keep_dims`.
#include <limits>

#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

absl::StatusOr<std::vector<int64_t>> Axes(const Node& n, int rank) {
  const AttrValue* a = n.FindAttr("axes");
  std::vector<int64_t> axes;
  if (a == nullptr) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  } else {
    axes = a->ints();
  }
  return NormalizeAxes(axes, rank);
}

absl::StatusOr<Infos> ReduceShape(const Node& n, const Infos& in) {
  absl::StatusOr<std::vector<int64_t>> axes = Axes(n, in[0].shape.rank());
  if (!axes.ok()) return axes.status();
  const bool keep = AttrBool(n, "keep_dims", false);
  TensorShape out;
  for (int i = 0; i < in[0].shape.rank(); ++i) {
    bool reduced = std::find(axes->begin(), axes->end(), i) != axes->end();
    if (!reduced) {
      out.dims.push_back(in[0].shape.dims[i]);
    } else if (keep) {
      out.dims.push_back(1);
    }
  }
  return Infos{{in[0].dtype, out}};
}

enum class Kind { kSum, kMean, kMax };

LowerFn LowerReduce(Kind kind) {
  return [kind](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    HloInstruction* x = ctx.input(0);
    absl::StatusOr<std::vector<int64_t>> axes = Axes(ctx.node(), x->shape().rank());
    if (!axes.ok()) return axes.status();
    const PrimitiveType t = x->shape().element_type();
    HloInstruction* r =
        kind == Kind::kMax
            ? ctx.Reduce(x, *axes, HloOpcode::kMaximum,
                         IsFloating(t) ? -std::numeric_limits<double>::infinity()
                                       : static_cast<double>(std::numeric_limits<int32_t>::min()))
            : ctx.Reduce(x, *axes, HloOpcode::kAdd, 0);
    if (kind == Kind::kMean) {
      int64_t count = 1;
      for (int64_t a : *axes) count *= x->shape().dimensions(static_cast<int>(a));
      r = ctx.Binary(HloOpcode::kDivide, r,
                     ctx.BroadcastTo(ctx.ScalarConstant(t, static_cast<double>(count)),
                                     r->shape().dimensions()));
    }
    return std::vector<HloInstruction*>{ctx.Reshape(r, ctx.output(0).shape.dims)};
  };
}

}  // namespace

void RegisterReductionOps(OpRegistry& r) {
  const std::pair<const char*, Kind> ops[] = {
      {"Sum", Kind::kSum}, {"Mean", Kind::kMean}, {"Max", Kind::kMax}};
  for (const auto& [name, kind] : ops) {
    r.Register({.name = name, .min_inputs = 1, .max_inputs = 1,
                .attrs = {{"axes", AttrKind::kInts}, {"keep_dims", AttrKind::kBool}},
                .shape_fn = ReduceShape, .lower = LowerReduce(kind)});
  }
}

}  // namespace kiln::graph
