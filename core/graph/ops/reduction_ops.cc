// Reductions: Sum, Mean, Max, Min, Prod over `axes` (default: all), with `keep_dims`;
// ArgMax/ArgMin over one `axis` (an attribute here, TF's `dimension` input; default 0) with
// `output_type` s32/s64 (default s64), the first index of the extreme value like NumPy.
#include <cmath>
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

// The identity of max (lowest = true) or min reductions for `t`.
double Extreme(PrimitiveType t, bool lowest) {
  if (IsFloating(t)) {
    return lowest ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
  }
  const int bits = BitWidth(t);
  if (IsUnsignedInt(t)) return lowest ? 0 : std::nextafter(std::ldexp(1.0, bits), 0.0);
  if (IsSignedInt(t)) {
    return lowest ? -std::ldexp(1.0, bits - 1) : std::nextafter(std::ldexp(1.0, bits - 1), 0.0);
  }
  return lowest ? 0 : 1;  // pred
}

enum class Kind { kSum, kMean, kMax, kMin, kProd };

LowerFn LowerReduce(Kind kind) {
  return [kind](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    HloInstruction* x = ctx.input(0);
    absl::StatusOr<std::vector<int64_t>> axes = Axes(ctx.node(), x->shape().rank());
    if (!axes.ok()) return axes.status();
    const PrimitiveType t = x->shape().element_type();
    HloInstruction* r = nullptr;
    switch (kind) {
      case Kind::kSum:
      case Kind::kMean:
        r = ctx.Reduce(x, *axes, HloOpcode::kAdd, 0);
        break;
      case Kind::kMax:
        r = ctx.Reduce(x, *axes, HloOpcode::kMaximum, Extreme(t, true));
        break;
      case Kind::kMin:
        r = ctx.Reduce(x, *axes, HloOpcode::kMinimum, Extreme(t, false));
        break;
      case Kind::kProd:
        r = ctx.Reduce(x, *axes, HloOpcode::kMultiply, 1);
        break;
    }
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

absl::StatusOr<int64_t> ArgAxis(const Node& n, int rank) {
  absl::StatusOr<int64_t> axis = AttrInt(n, "axis", 0);
  if (!axis.ok()) return axis.status();
  absl::StatusOr<std::vector<int64_t>> a = NormalizeAxes({*axis}, rank);
  if (!a.ok()) return a.status();
  return (*a)[0];
}

absl::StatusOr<Infos> ArgShape(const Node& n, const Infos& in) {
  if (in[0].shape.rank() < 1) {
    return absl::InvalidArgumentError(fmt::format("{} needs rank >= 1", n.op));
  }
  absl::StatusOr<int64_t> axis = ArgAxis(n, in[0].shape.rank());
  if (!axis.ok()) return axis.status();
  const AttrValue* ot = n.FindAttr("output_type");
  const PrimitiveType t = ot == nullptr ? PrimitiveType::S64 : ot->type();
  if (t != PrimitiveType::S32 && t != PrimitiveType::S64) {
    return absl::InvalidArgumentError(
        fmt::format("output_type must be s32 or s64, got {}", PrimitiveTypeName(t)));
  }
  TensorShape out = in[0].shape;
  out.dims.erase(out.dims.begin() + *axis);
  return Infos{{t, out}};
}

// The extreme along the axis, then the smallest index where x equals it.
LowerFn LowerArg(bool max) {
  return [max](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    HloInstruction* x = ctx.input(0);
    const std::vector<int64_t>& dims = x->shape().dimensions();
    absl::StatusOr<int64_t> axis = ArgAxis(ctx.node(), static_cast<int>(dims.size()));
    if (!axis.ok()) return axis.status();
    const PrimitiveType t = x->shape().element_type();
    const PrimitiveType it = ctx.output(0).dtype;
    HloInstruction* ext =
        ctx.Reduce(x, {*axis}, max ? HloOpcode::kMaximum : HloOpcode::kMinimum, Extreme(t, max));
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
      if (i != *axis) keep.push_back(i);
    }
    HloInstruction* hit = ctx.Compare(ComparisonDirection::kEq, x, ctx.Broadcast(ext, dims, keep));
    const double n = static_cast<double>(dims[*axis]);
    HloInstruction* idx = ctx.Select(hit, ctx.Iota(it, dims, *axis),
                                     ctx.BroadcastTo(ctx.ScalarConstant(it, n), dims));
    return std::vector<HloInstruction*>{ctx.Reduce(idx, {*axis}, HloOpcode::kMinimum, n)};
  };
}

}  // namespace

void RegisterReductionOps(OpRegistry& r) {
  const std::pair<const char*, Kind> ops[] = {{"Sum", Kind::kSum},
                                              {"Mean", Kind::kMean},
                                              {"Max", Kind::kMax},
                                              {"Min", Kind::kMin},
                                              {"Prod", Kind::kProd}};
  for (const auto& [name, kind] : ops) {
    r.Register({.name = name,
                .min_inputs = 1,
                .max_inputs = 1,
                .attrs = {{"axes", AttrKind::kInts}, {"keep_dims", AttrKind::kBool}},
                .shape_fn = ReduceShape,
                .lower = LowerReduce(kind)});
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    r.Register({.name = name,
                .min_inputs = 1,
                .max_inputs = 1,
                .attrs = {{"axis", AttrKind::kInt}, {"output_type", AttrKind::kType}},
                .shape_fn = ArgShape,
                .lower = LowerArg(std::string(name) == "ArgMax")});
  }
}

}  // namespace kiln::graph
