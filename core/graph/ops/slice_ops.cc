// Slicing and joining graph ops, TensorFlow semantics with the index operands as attributes:
// Slice (`begin`, `size`; size -1 = to the end), StridedSlice (`begin`/`end`/`strides`,
// `begin_mask`/`end_mask`/`shrink_axis_mask`; negative strides; no ellipsis/new-axis
// masks), Pad (`paddings` = [before0, after0, before1, ...], `constant_values`), ConcatV2
// (`axis`), Tile (`multiples`).
#include <algorithm>

#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;
using Result = absl::StatusOr<std::vector<HloInstruction*>>;

std::vector<int64_t> IntsOr(const Node& n, const std::string& name, std::vector<int64_t> fallback) {
  const AttrValue* a = n.FindAttr(name);
  return a == nullptr ? fallback : a->ints();
}

absl::StatusOr<Infos> SliceShape(const Node& n, const Infos& in) {
  const TensorShape& s = in[0].shape;
  const std::vector<int64_t>& begin = n.FindAttr("begin")->ints();
  const std::vector<int64_t>& size = n.FindAttr("size")->ints();
  if (static_cast<int>(begin.size()) != s.rank() || static_cast<int>(size.size()) != s.rank()) {
    return absl::InvalidArgumentError(
        fmt::format("begin and size need {} entries (the rank of {}), got {} and {}", s.rank(),
                    s.ToString(), begin.size(), size.size()));
  }
  TensorShape out;
  for (int i = 0; i < s.rank(); ++i) {
    const int64_t d = s.dims[i];
    const int64_t len = size[i] == -1 ? (d < 0 ? -1 : d - begin[i]) : size[i];
    if (begin[i] < 0 || size[i] < -1 || (d >= 0 && (len < 0 || begin[i] + len > d))) {
      return absl::InvalidArgumentError(
          fmt::format("slice begin {} size {} is out of range for dimension {} of {}", begin[i],
                      size[i], i, s.ToString()));
    }
    out.dims.push_back(len);
  }
  return Infos{{in[0].dtype, out}};
}

Result LowerSlice(LowerContext& ctx) {
  const std::vector<int64_t>& begin = ctx.node().FindAttr("begin")->ints();
  const std::vector<int64_t>& out = ctx.output(0).shape.dims;
  std::vector<int64_t> limits, strides(out.size(), 1);
  for (size_t i = 0; i < out.size(); ++i) limits.push_back(begin[i] + out[i]);
  return std::vector<HloInstruction*>{ctx.Slice(ctx.input(0), begin, limits, strides)};
}

// One dimension of a strided slice: first index, step, element count (-1: unknown size).
struct StridedDim {
  int64_t start = 0, stride = 1, count = -1;
  bool shrink = false;
};

absl::StatusOr<std::vector<StridedDim>> PlanStridedSlice(const Node& n, const TensorShape& s) {
  const std::vector<int64_t>& begin = n.FindAttr("begin")->ints();
  const std::vector<int64_t>& end = n.FindAttr("end")->ints();
  const std::vector<int64_t> strides = IntsOr(n, "strides", std::vector<int64_t>(begin.size(), 1));
  if (end.size() != begin.size() || strides.size() != begin.size() ||
      static_cast<int>(begin.size()) > s.rank()) {
    return absl::InvalidArgumentError(fmt::format(
        "begin, end and strides need the same length, at most the rank of {}; got {}, {}, {}",
        s.ToString(), begin.size(), end.size(), strides.size()));
  }
  int64_t masks[3];
  const char* mask_names[3] = {"begin_mask", "end_mask", "shrink_axis_mask"};
  for (int k = 0; k < 3; ++k) {
    absl::StatusOr<int64_t> m = AttrInt(n, mask_names[k], 0);
    if (!m.ok()) return m.status();
    masks[k] = *m;
  }
  std::vector<StridedDim> plan;
  for (int i = 0; i < s.rank(); ++i) {
    const int64_t d = s.dims[i];
    StridedDim p;
    if (i >= static_cast<int>(begin.size())) {  // dimensions past the spec: all of them
      p.count = d;
      plan.push_back(p);
      continue;
    }
    const bool bm = (masks[0] >> i) & 1, em = (masks[1] >> i) & 1;
    p.shrink = (masks[2] >> i) & 1;
    p.stride = strides[i];
    if (p.stride == 0) return absl::InvalidArgumentError(fmt::format("stride {} is 0", i));
    if (p.shrink) {
      p.start = begin[i] < 0 && d >= 0 ? begin[i] + d : begin[i];
      if (d >= 0 && (p.start < 0 || p.start >= d)) {
        return absl::InvalidArgumentError(fmt::format(
            "shrink index {} is out of range for dimension {} of {}", begin[i], i, s.ToString()));
      }
      p.stride = 1;
      p.count = 1;
    } else if (d >= 0) {
      // Python slice rules: negative indices count from the end, then clamp.
      auto norm = [d](int64_t v, int64_t lo, int64_t hi) {
        return std::clamp(v < 0 ? v + d : v, lo, hi);
      };
      if (p.stride > 0) {
        p.start = bm ? 0 : norm(begin[i], 0, d);
        const int64_t stop = em ? d : norm(end[i], 0, d);
        p.count = std::max<int64_t>(0, (stop - p.start + p.stride - 1) / p.stride);
      } else {
        p.start = bm ? d - 1 : norm(begin[i], -1, d - 1);
        const int64_t stop = em ? -1 : norm(end[i], -1, d - 1);
        p.count = std::max<int64_t>(0, (p.start - stop - p.stride - 1) / -p.stride);
      }
    }
    plan.push_back(p);
  }
  return plan;
}

absl::StatusOr<Infos> StridedSliceShape(const Node& n, const Infos& in) {
  absl::StatusOr<std::vector<StridedDim>> plan = PlanStridedSlice(n, in[0].shape);
  if (!plan.ok()) return plan.status();
  TensorShape out;
  for (const StridedDim& p : *plan) {
    if (!p.shrink) out.dims.push_back(p.count);
  }
  return Infos{{in[0].dtype, out}};
}

// Negative strides: reverse those dimensions, then one positive-stride slice and a reshape
// that drops the shrunk dimensions.
Result LowerStridedSlice(LowerContext& ctx) {
  HloInstruction* x = ctx.input(0);
  const std::vector<int64_t>& dims = x->shape().dimensions();
  absl::StatusOr<std::vector<StridedDim>> plan = PlanStridedSlice(ctx.node(), TensorShape{dims});
  if (!plan.ok()) return plan.status();
  std::vector<int64_t> reversed, starts, limits, strides;
  for (size_t i = 0; i < dims.size(); ++i) {
    StridedDim p = (*plan)[i];
    if (p.stride < 0) {
      reversed.push_back(static_cast<int64_t>(i));
      p.start = dims[i] - 1 - p.start;
      p.stride = -p.stride;
    }
    starts.push_back(p.start);
    strides.push_back(p.stride);
    limits.push_back(p.count == 0 ? p.start : p.start + (p.count - 1) * p.stride + 1);
  }
  if (!reversed.empty()) {
    auto rev = std::make_unique<HloInstruction>(HloOpcode::kReverse, x->shape(),
                                                std::vector<HloInstruction*>{x});
    rev->mutable_attrs().dimensions = reversed;
    rev->mutable_attrs().has_dimensions = true;
    x = ctx.Add(std::move(rev));
  }
  return std::vector<HloInstruction*>{
      ctx.Reshape(ctx.Slice(x, starts, limits, strides), ctx.output(0).shape.dims)};
}

absl::StatusOr<Infos> PadShape(const Node& n, const Infos& in) {
  const TensorShape& s = in[0].shape;
  const std::vector<int64_t>& p = n.FindAttr("paddings")->ints();
  if (static_cast<int>(p.size()) != 2 * s.rank()) {
    return absl::InvalidArgumentError(
        fmt::format("paddings needs 2 entries per dimension ({} for {}), got {}", 2 * s.rank(),
                    s.ToString(), p.size()));
  }
  if (const AttrValue* c = n.FindAttr("constant_values");
      c != nullptr && c->AsNumbers().size() != 1) {
    return absl::InvalidArgumentError("constant_values must be one number");
  }
  TensorShape out;
  for (int i = 0; i < s.rank(); ++i) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) {
      return absl::InvalidArgumentError(fmt::format(
          "paddings must be >= 0, got {} {} for dimension {}", p[2 * i], p[2 * i + 1], i));
    }
    out.dims.push_back(s.dims[i] < 0 ? -1 : s.dims[i] + p[2 * i] + p[2 * i + 1]);
  }
  return Infos{{in[0].dtype, out}};
}

Result LowerPad(LowerContext& ctx) {
  const std::vector<int64_t>& p = ctx.node().FindAttr("paddings")->ints();
  const AttrValue* c = ctx.node().FindAttr("constant_values");
  const ValueInfo& out = ctx.output(0);
  auto pad = std::make_unique<HloInstruction>(
      HloOpcode::kPad, LowerContext::HloShape(out.dtype, out.shape.dims),
      std::vector<HloInstruction*>{
          ctx.input(0), ctx.ScalarConstant(out.dtype, c == nullptr ? 0 : c->AsNumbers()[0])});
  for (size_t i = 0; i < p.size(); i += 2) {
    pad->mutable_attrs().padding_config.push_back({p[i], p[i + 1], 0});
  }
  return std::vector<HloInstruction*>{ctx.Add(std::move(pad))};
}

absl::StatusOr<int64_t> ConcatAxis(const Node& n, int rank) {
  absl::StatusOr<std::vector<int64_t>> a = NormalizeAxes({n.FindAttr("axis")->i()}, rank);
  if (!a.ok()) return a.status();
  return (*a)[0];
}

absl::StatusOr<Infos> ConcatShape(const Node& n, const Infos& in) {
  const TensorShape& first = in[0].shape;
  absl::StatusOr<int64_t> axis = ConcatAxis(n, first.rank());
  if (!axis.ok()) return axis.status();
  TensorShape out = first;
  for (size_t k = 1; k < in.size(); ++k) {
    const TensorShape& s = in[k].shape;
    bool ok = in[k].dtype == in[0].dtype && s.rank() == first.rank();
    for (int i = 0; ok && i < s.rank(); ++i) {
      if (i == *axis) {
        out.dims[i] = out.dims[i] < 0 || s.dims[i] < 0 ? -1 : out.dims[i] + s.dims[i];
      } else {
        ok = s.dims[i] == out.dims[i] || s.dims[i] < 0 || out.dims[i] < 0;
        if (out.dims[i] < 0) out.dims[i] = s.dims[i];
      }
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          fmt::format("input {} is {}, which does not concatenate with {} along axis {}", k,
                      in[k].ToString(), in[0].ToString(), *axis));
    }
  }
  return Infos{{in[0].dtype, out}};
}

Result LowerConcat(LowerContext& ctx) {
  absl::StatusOr<int64_t> axis = ConcatAxis(ctx.node(), ctx.input(0)->shape().rank());
  if (!axis.ok()) return axis.status();
  const ValueInfo& out = ctx.output(0);
  auto c = std::make_unique<HloInstruction>(
      HloOpcode::kConcatenate, LowerContext::HloShape(out.dtype, out.shape.dims), ctx.inputs());
  c->mutable_attrs().dimensions = {*axis};
  c->mutable_attrs().has_dimensions = true;
  return std::vector<HloInstruction*>{ctx.Add(std::move(c))};
}

absl::StatusOr<Infos> TileShape(const Node& n, const Infos& in) {
  const TensorShape& s = in[0].shape;
  const std::vector<int64_t>& m = n.FindAttr("multiples")->ints();
  if (static_cast<int>(m.size()) != s.rank()) {
    return absl::InvalidArgumentError(
        fmt::format("multiples has {} entries for an operand of rank {}", m.size(), s.rank()));
  }
  TensorShape out;
  for (int i = 0; i < s.rank(); ++i) {
    if (m[i] < 0) return absl::InvalidArgumentError(fmt::format("multiple {} is negative", i));
    out.dims.push_back(s.dims[i] < 0 ? -1 : s.dims[i] * m[i]);
  }
  return Infos{{in[0].dtype, out}};
}

// x broadcast to (m0, d0, m1, d1, ...) and reshaped to (m0*d0, m1*d1, ...).
Result LowerTile(LowerContext& ctx) {
  HloInstruction* x = ctx.input(0);
  const std::vector<int64_t>& m = ctx.node().FindAttr("multiples")->ints();
  std::vector<int64_t> wide, mapping;
  for (size_t i = 0; i < m.size(); ++i) {
    wide.push_back(m[i]);
    wide.push_back(x->shape().dimensions(static_cast<int>(i)));
    mapping.push_back(static_cast<int64_t>(2 * i + 1));
  }
  return std::vector<HloInstruction*>{
      ctx.Reshape(ctx.Broadcast(x, wide, mapping), ctx.output(0).shape.dims)};
}

}  // namespace

void RegisterSliceOps(OpRegistry& r) {
  r.Register({.name = "Slice",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"begin", AttrKind::kInts, true}, {"size", AttrKind::kInts, true}},
              .shape_fn = SliceShape,
              .lower = LowerSlice});
  r.Register({.name = "StridedSlice",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"begin", AttrKind::kInts, true},
                        {"end", AttrKind::kInts, true},
                        {"strides", AttrKind::kInts},
                        {"begin_mask", AttrKind::kInt},
                        {"end_mask", AttrKind::kInt},
                        {"shrink_axis_mask", AttrKind::kInt}},
              .shape_fn = StridedSliceShape,
              .lower = LowerStridedSlice});
  r.Register({.name = "Pad",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"paddings", AttrKind::kInts, true},
                        {"constant_values", AttrKind::kFloat, false, true}},
              .shape_fn = PadShape,
              .lower = LowerPad});
  r.Register({.name = "ConcatV2",
              .min_inputs = 1,
              .max_inputs = -1,
              .attrs = {{"axis", AttrKind::kInt, true}},
              .shape_fn = ConcatShape,
              .lower = LowerConcat});
  r.Register({.name = "Tile",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"multiples", AttrKind::kInts, true}},
              .shape_fn = TileShape,
              .lower = LowerTile});
}

}  // namespace kiln::graph
