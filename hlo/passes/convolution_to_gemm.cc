// Convolution as im2col + dot (see convolution_to_gemm.h).
#include "hlo/passes/convolution_to_gemm.h"

#include <algorithm>
#include <numeric>

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

int64_t Product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Builds the replacement of one convolution in its computation.
class Rewriter {
 public:
  Rewriter(HloComputation* comp, NameUniquer& names) : comp_(comp), names_(names) {}

  HloInstruction* Add(HloOpcode op, std::vector<int64_t> dims,
                      std::vector<HloInstruction*> operands, PrimitiveType t, const Shape& like) {
    return AddArrayInstruction(comp_, names_, op, t, std::move(dims), std::move(operands), like);
  }
  HloInstruction* Transpose(HloInstruction* x, const std::vector<int64_t>& perm) {
    return IsIdentity(perm) ? x : AddTranspose(comp_, names_, x, perm);
  }
  HloInstruction* Reshape(HloInstruction* x, std::vector<int64_t> dims) {
    if (x->shape().dimensions() == dims) return x;
    return Add(HloOpcode::kReshape, std::move(dims), {x}, x->shape().element_type(), x->shape());
  }

 private:
  HloComputation* comp_;
  NameUniquer& names_;
};

// Past this many slices the patch matrix is left to the convolution itself (a 200x200 filter
// gradient's window with a 200x200 output would be 40,000 instructions either way).
constexpr int64_t kMaxPatchSlices = 4096;

// The strided slice of the padded input `xt` ([batch, spatial..., features]) starting at
// `starts` (per spatial dimension) with `counts` elements `strides` apart, all features.
HloInstruction* SliceOf(Rewriter& r, HloInstruction* xt, int64_t batch, int64_t cin,
                        const std::vector<int64_t>& starts, const std::vector<int64_t>& counts,
                        const std::vector<int64_t>& strides) {
  InstructionAttributes sa;
  std::vector<int64_t> dims = {batch};
  sa.slice_starts = {0};
  sa.slice_limits = {batch};
  sa.slice_strides = {1};
  for (size_t i = 0; i < starts.size(); ++i) {
    sa.slice_starts.push_back(starts[i]);
    sa.slice_limits.push_back(starts[i] + (counts[i] - 1) * strides[i] + 1);
    sa.slice_strides.push_back(strides[i]);
    dims.push_back(counts[i]);
  }
  sa.slice_starts.push_back(0);
  sa.slice_limits.push_back(cin);
  sa.slice_strides.push_back(1);
  dims.push_back(cin);
  HloInstruction* s = r.Add(HloOpcode::kSlice, dims, {xt}, xt->shape().element_type(), xt->shape());
  s->mutable_attrs().slice_starts = sa.slice_starts;
  s->mutable_attrs().slice_limits = sa.slice_limits;
  s->mutable_attrs().slice_strides = sa.slice_strides;
  return s;
}

// Index number `k` of a row-major iteration over `dims`.
std::vector<int64_t> Unflatten(int64_t k, const std::vector<int64_t>& dims) {
  std::vector<int64_t> at(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    at[i] = k % dims[i];
    k /= dims[i];
  }
  return at;
}

// One strided slice per kernel tap (taps in row-major order), each [batch, output
// positions..., features] as a [rows, features] matrix, concatenated along the features:
// [rows, taps*cin]. The matrices, not the slices, are concatenated so that the patch
// kernel's output is the concatenation itself, whose parts a backend can write one at a time
// (cpu-llvm: a root concatenation along the minor dimension).
HloInstruction* PatchesByTap(Rewriter& r, HloInstruction* xt, int64_t batch, int64_t cin,
                             const std::vector<int64_t>& taps_dims,
                             const std::vector<int64_t>& out_spatial,
                             const std::vector<WindowDimension>& win) {
  const int64_t taps = Product(taps_dims), rows = batch * Product(out_spatial);
  std::vector<int64_t> strides;
  for (const WindowDimension& w : win) strides.push_back(w.stride);
  std::vector<HloInstruction*> slices;
  for (int64_t k = 0; k < taps; ++k) {
    std::vector<int64_t> starts = Unflatten(k, taps_dims);
    for (size_t i = 0; i < starts.size(); ++i) starts[i] *= win[i].window_dilation;
    slices.push_back(
        r.Reshape(SliceOf(r, xt, batch, cin, starts, out_spatial, strides), {rows, cin}));
  }
  if (taps == 1) return slices[0];
  HloInstruction* c = r.Add(HloOpcode::kConcatenate, {rows, taps * cin}, slices,
                            xt->shape().element_type(), xt->shape());
  c->mutable_attrs().dimensions = {1};
  return c;
}

// One window-sized slice per output position (positions in row-major order), each
// [batch, taps..., features] flattened to [batch, 1, taps*cin], concatenated along the
// positions: [batch, positions, taps*cin], the same matrix as PatchesByTap's.
HloInstruction* PatchesByPosition(Rewriter& r, HloInstruction* xt, int64_t batch, int64_t cin,
                                  const std::vector<int64_t>& taps_dims,
                                  const std::vector<int64_t>& out_spatial,
                                  const std::vector<WindowDimension>& win) {
  const int64_t taps = Product(taps_dims), positions = Product(out_spatial);
  std::vector<int64_t> dilations;
  for (const WindowDimension& w : win) dilations.push_back(w.window_dilation);
  std::vector<HloInstruction*> rows;
  for (int64_t q = 0; q < positions; ++q) {
    std::vector<int64_t> starts = Unflatten(q, out_spatial);
    for (size_t i = 0; i < starts.size(); ++i) starts[i] *= win[i].stride;
    rows.push_back(r.Reshape(SliceOf(r, xt, batch, cin, starts, taps_dims, dilations),
                             {batch, 1, taps * cin}));
  }
  if (positions == 1) return rows[0];
  HloInstruction* c = r.Add(HloOpcode::kConcatenate, {batch, positions, taps * cin}, rows,
                            xt->shape().element_type(), xt->shape());
  c->mutable_attrs().dimensions = {1};
  return c;
}

// The types a rewrite takes: floating-point convolutions of one type, or (`integer`) integer
// ones whose operands share a type (an s8 x s8 -> s32 convolution: its dot is the integer
// GEMM's). A dot converts its operands to the result type as the convolution does.
bool TypesTaken(const Shape& out, const Shape& x, const Shape& w, bool integer) {
  const PrimitiveType t = out.element_type(), xt = x.element_type();
  if (!integer) return IsFloating(t) && xt == t && w.element_type() == t;
  return IsInteger(t) && IsInteger(xt) && xt == w.element_type() && !IsSubByteInt(xt);
}

bool Rewrite(HloInstruction* conv, int64_t min_work, int64_t max_patch_bytes, bool integer,
             NameUniquer& names) {
  const InstructionAttributes& a = conv->attrs();
  if (!a.convolution_dimension_numbers || conv->operand_count() != 2) return false;
  if (a.feature_group_count != 1 || a.batch_group_count != 1) return false;
  const Shape& out_shape = conv->shape();
  HloInstruction* x = conv->operand(0);
  HloInstruction* w = conv->operand(1);
  if (!out_shape.IsArray() || !x->shape().IsArray() || !w->shape().IsArray() ||
      !TypesTaken(out_shape, x->shape(), w->shape(), integer))
    return false;
  const ConvolutionDimensionNumbers& dn = *a.convolution_dimension_numbers;
  const size_t n = dn.input_spatial_dimensions.size();
  if (dn.kernel_spatial_dimensions.size() != n || dn.output_spatial_dimensions.size() != n)
    return false;
  std::vector<WindowDimension> win(n);
  if (a.window) {
    if (a.window->dimensions.size() != n) return false;
    win = a.window->dimensions;
  }
  const PrimitiveType t = out_shape.element_type(), in_t = x->shape().element_type();
  const int64_t batch = x->shape().dimensions(dn.input_batch_dimension);
  const int64_t cin = x->shape().dimensions(dn.input_feature_dimension);
  const int64_t cout = w->shape().dimensions(dn.kernel_output_feature_dimension);
  std::vector<int64_t> taps_dims, out_spatial;
  for (size_t i = 0; i < n; ++i) {
    taps_dims.push_back(w->shape().dimensions(dn.kernel_spatial_dimensions[i]));
    out_spatial.push_back(out_shape.dimensions(dn.output_spatial_dimensions[i]));
  }
  const int64_t taps = Product(taps_dims), rows = batch * Product(out_spatial);
  if (rows == 0 || taps == 0 || cin == 0 || cout == 0) return false;
  if (rows * taps * cin * cout < min_work) return false;
  if (rows * taps * cin * ByteSizeOf(in_t) > max_patch_bytes) return false;
  // Each slice is an instruction: past this many the module itself becomes the cost.
  if (std::min(taps, Product(out_spatial)) > kMaxPatchSlices) return false;

  Rewriter r(conv->parent(), names);
  // Input as [batch, spatial..., features], padded: window padding and lhs dilation.
  std::vector<int64_t> in_perm = {dn.input_batch_dimension};
  for (int64_t d : dn.input_spatial_dimensions) in_perm.push_back(d);
  in_perm.push_back(dn.input_feature_dimension);
  HloInstruction* xt = r.Transpose(x, in_perm);
  PaddingConfig pads(n + 2);
  bool padded = false;
  std::vector<int64_t> padded_dims = xt->shape().dimensions();
  for (size_t i = 0; i < n; ++i) {
    PaddingDimension& p = pads[i + 1];
    p.edge_padding_low = win[i].padding_low;
    p.edge_padding_high = win[i].padding_high;
    p.interior_padding = win[i].base_dilation - 1;
    padded |= p.edge_padding_low != 0 || p.edge_padding_high != 0 || p.interior_padding != 0;
    int64_t s = padded_dims[i + 1];
    padded_dims[i + 1] = (s == 0 ? 0 : (s - 1) * win[i].base_dilation + 1) + p.edge_padding_low +
                         p.edge_padding_high;
  }
  if (padded) {
    HloInstruction* zero = AddWithFreshName(
        conv->parent(), HloInstruction::CreateConstant(Literal(Shape(in_t, {}))), names, "zero");
    xt = r.Add(HloOpcode::kPad, padded_dims, {xt, zero}, in_t, x->shape());
    xt->mutable_attrs().padding_config = pads;
  }
  // The patch matrix [rows, taps * features] from as few slices as possible: one strided
  // slice per kernel tap, or, when there are fewer output positions than taps (a filter
  // gradient, whose window is the whole image), one window-sized slice per output position.
  const int64_t positions = Product(out_spatial);
  HloInstruction* patches = positions < taps
                                ? PatchesByPosition(r, xt, batch, cin, taps_dims, out_spatial, win)
                                : PatchesByTap(r, xt, batch, cin, taps_dims, out_spatial, win);
  patches = r.Reshape(patches, {rows, taps * cin});
  // Kernel as [taps * input features, output features], reversed where the window says so.
  HloInstruction* wk = w;
  std::vector<int64_t> reversed;
  for (size_t i = 0; i < n; ++i)
    if (win[i].window_reversal) reversed.push_back(dn.kernel_spatial_dimensions[i]);
  if (!reversed.empty()) {
    wk = r.Add(HloOpcode::kReverse, w->shape().dimensions(), {w}, in_t, w->shape());
    wk->mutable_attrs().dimensions = reversed;
  }
  std::vector<int64_t> k_perm(dn.kernel_spatial_dimensions.begin(),
                              dn.kernel_spatial_dimensions.end());
  k_perm.push_back(dn.kernel_input_feature_dimension);
  k_perm.push_back(dn.kernel_output_feature_dimension);
  HloInstruction* kmat = r.Reshape(r.Transpose(wk, k_perm), {taps * cin, cout});
  HloInstruction* dot = r.Add(HloOpcode::kDot, {rows, cout}, {patches, kmat}, t, out_shape);
  DotDimensionNumbers dd;
  dd.lhs_contracting_dimensions = {1};
  dd.rhs_contracting_dimensions = {0};
  dot->mutable_attrs().dot_dimension_numbers = dd;
  // [batch, output spatial..., output features] into the output's dimension order.
  std::vector<int64_t> grid = {batch};
  for (int64_t o : out_spatial) grid.push_back(o);
  grid.push_back(cout);
  HloInstruction* y = r.Reshape(dot, grid);
  std::vector<int64_t> out_perm(n + 2);
  out_perm[dn.output_batch_dimension] = 0;
  for (size_t i = 0; i < n; ++i)
    out_perm[dn.output_spatial_dimensions[i]] = static_cast<int64_t>(i) + 1;
  out_perm[dn.output_feature_dimension] = static_cast<int64_t>(n) + 1;
  y = r.Transpose(y, out_perm);
  return ReplaceUsesIfCompatible(conv, y);
}

}  // namespace

absl::StatusOr<bool> ConvolutionToGemm::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kConvolution) continue;
      if (Rewrite(instr, min_work_, max_patch_bytes_, integer_, names)) dead.push_back(instr);
    }
    RemoveDeadFrom(comp, dead);
    changed |= !dead.empty();
  }
  return changed;
}

}  // namespace kiln
