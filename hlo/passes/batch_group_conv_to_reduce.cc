// A depthwise filter gradient as a multiply and reduce per output position (see
// batch_group_conv_to_reduce.h).
#include "hlo/passes/batch_group_conv_to_reduce.h"

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Adds instructions next to the convolution being replaced.
class Builder {
 public:
  Builder(HloModule& module, HloInstruction* conv, NameUniquer& names)
      : module_(module), comp_(conv->parent()), like_(conv->shape()), names_(names) {}

  HloInstruction* Add(HloOpcode op, std::vector<int64_t> dims,
                      std::vector<HloInstruction*> operands) {
    const PrimitiveType t = like_.element_type();
    return AddArrayInstruction(comp_, names_, op, t, std::move(dims), std::move(operands), like_);
  }
  HloInstruction* Transpose(HloInstruction* x, const std::vector<int64_t>& perm) {
    bool identity = true;
    std::vector<int64_t> dims;
    for (size_t i = 0; i < perm.size(); ++i) {
      identity &= perm[i] == static_cast<int64_t>(i);
      dims.push_back(x->shape().dimensions(perm[i]));
    }
    if (identity) return x;
    HloInstruction* t = Add(HloOpcode::kTranspose, dims, {x});
    t->mutable_attrs().dimensions = perm;
    return t;
  }
  HloInstruction* Zero() { return AddScalarConstant(comp_, names_, like_.element_type(), 0.0); }
  // The sum of `x` over `dims`.
  HloInstruction* Sum(HloInstruction* x, std::vector<int64_t> kept, std::vector<int64_t> dims) {
    HloInstruction* r = Add(HloOpcode::kReduce, std::move(kept), {x, Zero()});
    r->mutable_attrs().dimensions = std::move(dims);
    r->mutable_attrs().has_dimensions = true;
    r->AppendCalledComputation(BinaryComputation(module_, HloOpcode::kAdd, like_.element_type()));
    return r;
  }

 private:
  HloModule& module_;
  HloComputation* comp_;
  Shape like_;
  NameUniquer& names_;
};

bool Rewrite(HloModule& module, HloInstruction* conv, NameUniquer& names) {
  const InstructionAttributes& a = conv->attrs();
  if (!a.convolution_dimension_numbers || conv->operand_count() != 2) return false;
  const Shape& out = conv->shape();
  HloInstruction* x = conv->operand(0);
  HloInstruction* w = conv->operand(1);
  if (!out.IsArray() || x->shape().element_type() != out.element_type() ||
      w->shape().element_type() != out.element_type())
    return false;
  const PrimitiveType t = out.element_type();
  if (t != PrimitiveType::F32 && t != PrimitiveType::F64) return false;
  const ConvolutionDimensionNumbers& dn = *a.convolution_dimension_numbers;
  const size_t n = dn.input_spatial_dimensions.size();
  if (dn.kernel_spatial_dimensions.size() != n || dn.output_spatial_dimensions.size() != n)
    return false;
  // One output feature per input batch slice and per kernel output feature.
  const int64_t groups = a.batch_group_count;
  if (groups <= 1 || a.feature_group_count != 1 ||
      x->shape().dimensions(dn.input_batch_dimension) != groups ||
      w->shape().dimensions(dn.kernel_output_feature_dimension) != groups ||
      out.dimensions(dn.output_feature_dimension) != groups ||
      out.dimensions(dn.output_batch_dimension) != 1)
    return false;
  std::vector<WindowDimension> win(n);
  if (a.window) {
    if (a.window->dimensions.size() != n) return false;
    win = a.window->dimensions;
  }
  std::vector<int64_t> out_spatial, taps;
  int64_t positions = 1;
  for (size_t i = 0; i < n; ++i) {
    if (win[i].base_dilation != 1 || win[i].padding_low < 0 || win[i].padding_high < 0 ||
        win[i].stride < 1 || win[i].window_dilation < 1)
      return false;
    out_spatial.push_back(out.dimensions(dn.output_spatial_dimensions[i]));
    taps.push_back(w->shape().dimensions(dn.kernel_spatial_dimensions[i]));
    positions *= out_spatial.back();
  }
  if (positions == 0 || positions > BatchGroupConvToReduce::kMaxPositions) return false;

  Builder b(module, conv, names);
  // Input as [features, spatial..., batch], padded; kernel as [input features, spatial...,
  // output features], reversed where the window says so. Batch slice g meets kernel output g.
  std::vector<int64_t> in_perm = {dn.input_feature_dimension};
  for (int64_t d : dn.input_spatial_dimensions) in_perm.push_back(d);
  in_perm.push_back(dn.input_batch_dimension);
  HloInstruction* xt = b.Transpose(x, in_perm);
  PaddingConfig pads(n + 2);
  bool padded = false;
  std::vector<int64_t> padded_dims = xt->shape().dimensions();
  for (size_t i = 0; i < n; ++i) {
    pads[i + 1].edge_padding_low = win[i].padding_low;
    pads[i + 1].edge_padding_high = win[i].padding_high;
    padded |= win[i].padding_low != 0 || win[i].padding_high != 0;
    padded_dims[i + 1] += win[i].padding_low + win[i].padding_high;
  }
  if (padded) {
    xt = b.Add(HloOpcode::kPad, padded_dims, {xt, b.Zero()});
    xt->mutable_attrs().padding_config = pads;
  }
  HloInstruction* wk = w;
  std::vector<int64_t> reversed;
  for (size_t i = 0; i < n; ++i)
    if (win[i].window_reversal) reversed.push_back(dn.kernel_spatial_dimensions[i]);
  if (!reversed.empty()) {
    wk = b.Add(HloOpcode::kReverse, w->shape().dimensions(), {w});
    wk->mutable_attrs().dimensions = reversed;
  }
  std::vector<int64_t> k_perm = {dn.kernel_input_feature_dimension};
  for (int64_t d : dn.kernel_spatial_dimensions) k_perm.push_back(d);
  k_perm.push_back(dn.kernel_output_feature_dimension);
  HloInstruction* wt = b.Transpose(wk, k_perm);
  const std::vector<int64_t> window_dims = wt->shape().dimensions();
  std::vector<int64_t> summed;
  for (size_t i = 0; i <= n; ++i) summed.push_back(static_cast<int64_t>(i));

  // Output position q (row-major) sums the window-sized strided slice at q * stride times the
  // kernel.
  std::vector<HloInstruction*> rows;
  for (int64_t q = 0; q < positions; ++q) {
    InstructionAttributes sa;
    sa.slice_starts = {0};
    sa.slice_limits = {window_dims[0]};
    sa.slice_strides = {1};
    for (int64_t i = static_cast<int64_t>(n) - 1, rest = q; i >= 0; --i) {
      const int64_t at = rest % out_spatial[i];
      rest /= out_spatial[i];
      const int64_t start = at * win[i].stride;
      sa.slice_starts.insert(sa.slice_starts.begin() + 1, start);
      sa.slice_limits.insert(sa.slice_limits.begin() + 1,
                             start + (taps[i] - 1) * win[i].window_dilation + 1);
      sa.slice_strides.insert(sa.slice_strides.begin() + 1, win[i].window_dilation);
    }
    sa.slice_starts.push_back(0);
    sa.slice_limits.push_back(groups);
    sa.slice_strides.push_back(1);
    HloInstruction* s = b.Add(HloOpcode::kSlice, window_dims, {xt});
    s->mutable_attrs().slice_starts = sa.slice_starts;
    s->mutable_attrs().slice_limits = sa.slice_limits;
    s->mutable_attrs().slice_strides = sa.slice_strides;
    HloInstruction* product = b.Add(HloOpcode::kMultiply, window_dims, {s, wt});
    rows.push_back(b.Add(HloOpcode::kReshape, {1, groups}, {b.Sum(product, {groups}, summed)}));
  }
  HloInstruction* stacked = rows[0];
  if (positions > 1) {
    stacked = b.Add(HloOpcode::kConcatenate, {positions, groups}, rows);
    stacked->mutable_attrs().dimensions = {0};
  }
  // [spatial..., batch 1, features] into the output's dimension order.
  std::vector<int64_t> grid = out_spatial;
  grid.push_back(1);
  grid.push_back(groups);
  HloInstruction* y = b.Add(HloOpcode::kReshape, grid, {stacked});
  std::vector<int64_t> out_perm(n + 2);
  for (size_t i = 0; i < n; ++i)
    out_perm[dn.output_spatial_dimensions[i]] = static_cast<int64_t>(i);
  out_perm[dn.output_batch_dimension] = static_cast<int64_t>(n);
  out_perm[dn.output_feature_dimension] = static_cast<int64_t>(n) + 1;
  return ReplaceUsesIfCompatible(conv, b.Transpose(y, out_perm));
}

}  // namespace

absl::StatusOr<bool> BatchGroupConvToReduce::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kConvolution) continue;
      if (Rewrite(module, instr, names)) dead.push_back(instr);
    }
    RemoveDeadFrom(comp, dead);
    changed |= !dead.empty();
  }
  return changed;
}

}  // namespace kiln
