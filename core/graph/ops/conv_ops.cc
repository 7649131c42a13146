// Windowed NHWC graph ops, TensorFlow semantics: Conv2D (HWIO filter, strides, dilations,
// padding SAME/VALID) and MaxPool/AvgPool (ksize, strides, padding; AvgPool with SAME
// padding divides by the number of valid elements under each window, like TF).
#include <array>
#include <limits>

#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

// The (H, W) entries of a 4-element NHWC attribute whose N and C entries must be 1.
absl::StatusOr<std::array<int64_t, 2>> SpatialAttr(const Node& n, const std::string& name) {
  const AttrValue* a = n.FindAttr(name);
  if (a == nullptr) return std::array<int64_t, 2>{1, 1};
  const std::vector<int64_t>& v = a->ints();
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be [1, h, w, 1] with h, w >= 1 (NHWC), got {}", name, a->ToString()));
  }
  return std::array<int64_t, 2>{v[1], v[2]};
}

// One spatial dimension of a window: result size and padding, as TF computes them.
struct SpatialDim {
  int64_t out = -1, pad_low = 0, pad_high = 0;
};

SpatialDim Plan(int64_t in, int64_t window, int64_t stride, int64_t dilation, bool same) {
  if (in < 0) return {};
  const int64_t span = (window - 1) * dilation + 1;
  if (!same) return {in >= span ? (in - span) / stride + 1 : 0, 0, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
  return {out, total / 2, total - total / 2};
}

// The attributes every windowed op shares, checked.
struct WindowAttrs {
  std::array<int64_t, 2> window{1, 1}, strides{1, 1}, dilations{1, 1};
  bool same = false;
};

absl::StatusOr<WindowAttrs> ReadWindowAttrs(const Node& n, const char* window_attr) {
  if (const AttrValue* f = n.FindAttr("data_format"); f != nullptr && f->s() != "NHWC") {
    return absl::InvalidArgumentError(
        fmt::format("data_format \"{}\" is not supported (only NHWC)", f->s()));
  }
  const std::string& padding = n.FindAttr("padding")->s();
  if (padding != "SAME" && padding != "VALID") {
    return absl::InvalidArgumentError(
        fmt::format("padding must be \"SAME\" or \"VALID\", got \"{}\"", padding));
  }
  WindowAttrs w;
  w.same = padding == "SAME";
  absl::StatusOr<std::array<int64_t, 2>> s = SpatialAttr(n, "strides");
  if (!s.ok()) return s.status();
  w.strides = *s;
  s = SpatialAttr(n, "dilations");
  if (!s.ok()) return s.status();
  w.dilations = *s;
  if (window_attr != nullptr) {
    s = SpatialAttr(n, window_attr);
    if (!s.ok()) return s.status();
    w.window = *s;
  }
  return w;
}

absl::Status CheckNhwc(const ValueInfo& x, const char* what) {
  if (x.shape.rank() != 4) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be rank 4 (NHWC), got {}", what, x.ToString()));
  }
  if (!IsFloating(x.dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be a float type, got {}", what, x.ToString()));
  }
  return absl::OkStatus();
}

// The HLO window over `spatial` (dimensions 1, 2 of NHWC; or all four for pooling).
Window MakeWindow(const std::vector<int64_t>& in_dims, const WindowAttrs& w, bool all_dims) {
  Window window;
  if (all_dims) window.dimensions.push_back({});  // N
  for (int i = 0; i < 2; ++i) {
    SpatialDim d = Plan(in_dims[1 + i], w.window[i], w.strides[i], w.dilations[i], w.same);
    WindowDimension wd;
    wd.size = w.window[i];
    wd.stride = w.strides[i];
    wd.window_dilation = w.dilations[i];
    wd.padding_low = d.pad_low;
    wd.padding_high = d.pad_high;
    window.dimensions.push_back(wd);
  }
  if (all_dims) window.dimensions.push_back({});  // C
  return window;
}

absl::StatusOr<Infos> Conv2DShape(const Node& n, const Infos& in) {
  if (absl::Status s = CheckNhwc(in[0], "input"); !s.ok()) return s;
  if (in[1].shape.rank() != 4 || in[1].dtype != in[0].dtype) {
    return absl::InvalidArgumentError(
        fmt::format("filter must be rank 4 (HWIO) of the input's type, got {}", in[1].ToString()));
  }
  absl::StatusOr<WindowAttrs> w = ReadWindowAttrs(n, nullptr);
  if (!w.ok()) return w.status();
  const std::vector<int64_t>& x = in[0].shape.dims;
  const std::vector<int64_t>& f = in[1].shape.dims;
  if (x[3] >= 0 && f[2] >= 0 && x[3] != f[2]) {
    return absl::InvalidArgumentError(fmt::format(
        "input has {} channels but the filter {} expects {}", x[3], in[1].shape.ToString(), f[2]));
  }
  TensorShape out{{x[0]}};
  for (int i = 0; i < 2; ++i) {
    out.dims.push_back(
        f[i] < 0 ? -1 : Plan(x[1 + i], f[i], w->strides[i], w->dilations[i], w->same).out);
  }
  out.dims.push_back(f[3]);
  return Infos{{in[0].dtype, out}};
}

absl::StatusOr<std::vector<HloInstruction*>> LowerConv2D(LowerContext& ctx) {
  absl::StatusOr<WindowAttrs> w = ReadWindowAttrs(ctx.node(), nullptr);
  if (!w.ok()) return w.status();
  const std::vector<int64_t>& f = ctx.input(1)->shape().dimensions();
  w->window = {f[0], f[1]};
  ConvolutionDimensionNumbers dn;
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = 3;
  dn.input_spatial_dimensions = {1, 2};
  dn.kernel_spatial_dimensions = {0, 1};
  dn.kernel_input_feature_dimension = 2;
  dn.kernel_output_feature_dimension = 3;
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = 3;
  dn.output_spatial_dimensions = {1, 2};
  auto conv = std::make_unique<HloInstruction>(
      HloOpcode::kConvolution,
      LowerContext::HloShape(ctx.output(0).dtype, ctx.output(0).shape.dims),
      std::vector<HloInstruction*>{ctx.input(0), ctx.input(1)});
  conv->mutable_attrs().window = MakeWindow(ctx.input(0)->shape().dimensions(), *w, false);
  conv->mutable_attrs().convolution_dimension_numbers = dn;
  return std::vector<HloInstruction*>{ctx.Add(std::move(conv))};
}

absl::StatusOr<Infos> PoolShape(const Node& n, const Infos& in) {
  if (absl::Status s = CheckNhwc(in[0], "input"); !s.ok()) return s;
  absl::StatusOr<WindowAttrs> w = ReadWindowAttrs(n, "ksize");
  if (!w.ok()) return w.status();
  const std::vector<int64_t>& x = in[0].shape.dims;
  TensorShape out{{x[0]}};
  for (int i = 0; i < 2; ++i) {
    out.dims.push_back(Plan(x[1 + i], w->window[i], w->strides[i], 1, w->same).out);
  }
  out.dims.push_back(x[3]);
  return Infos{{in[0].dtype, out}};
}

LowerFn LowerPool(bool max) {
  return [max](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    absl::StatusOr<WindowAttrs> w = ReadWindowAttrs(ctx.node(), "ksize");
    if (!w.ok()) return w.status();
    HloInstruction* x = ctx.input(0);
    const Window window = MakeWindow(x->shape().dimensions(), *w, true);
    if (max) {
      return std::vector<HloInstruction*>{ctx.ReduceWindow(
          x, window, HloOpcode::kMaximum, -std::numeric_limits<double>::infinity())};
    }
    // Padding adds zeros to the sum; the divisor counts only the real elements (a window
    // of ones summed the same way).
    const PrimitiveType t = x->shape().element_type();
    HloInstruction* sum = ctx.ReduceWindow(x, window, HloOpcode::kAdd, 0);
    HloInstruction* ones = ctx.BroadcastTo(ctx.ScalarConstant(t, 1), x->shape().dimensions());
    HloInstruction* count = ctx.ReduceWindow(ones, window, HloOpcode::kAdd, 0);
    return std::vector<HloInstruction*>{ctx.Binary(HloOpcode::kDivide, sum, count)};
  };
}

}  // namespace

void RegisterConvOps(OpRegistry& r) {
  r.Register({.name = "Conv2D",
              .min_inputs = 2,
              .max_inputs = 2,
              .attrs = {{"strides", AttrKind::kInts, true},
                        {"padding", AttrKind::kString, true},
                        {"dilations", AttrKind::kInts},
                        {"data_format", AttrKind::kString}},
              .shape_fn = Conv2DShape,
              .lower = LowerConv2D});
  for (const char* name : {"MaxPool", "AvgPool"}) {
    r.Register({.name = name,
                .min_inputs = 1,
                .max_inputs = 1,
                .attrs = {{"ksize", AttrKind::kInts, true},
                          {"strides", AttrKind::kInts, true},
                          {"padding", AttrKind::kString, true},
                          {"data_format", AttrKind::kString}},
                .shape_fn = PoolShape,
                .lower = LowerPool(std::string(name) == "MaxPool")});
  }
}

}  // namespace kiln::graph
