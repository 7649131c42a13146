// im2col + GEMM for convolutions (see conv_library.h).
#include "plugins/cpu_llvm/conv_library.h"

#include <algorithm>
#include <cstring>

#include "plugins/cpu_llvm/blas_dot.h"

namespace kiln::cpu {
namespace {

// Above this the patch matrix is not worth its memory; the evaluator path is used instead.
constexpr int64_t kMaxPatchBytes = int64_t{1} << 30;

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// Advances a multi-index over `sizes` in row-major order; false after the last one.
bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
    if (++idx[d] < sizes[d]) return true;
    idx[d] = 0;
  }
  return false;
}

}  // namespace

std::optional<ConvGemm> MatchLibraryConv(const HloInstruction& conv, int64_t min_work,
                                         std::string* why) {
  auto no = [&](std::string reason) -> std::optional<ConvGemm> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!HaveBlas()) return no("built without a BLAS library");
  const InstructionAttributes& a = conv.attrs();
  if (conv.opcode() != HloOpcode::kConvolution || conv.operand_count() != 2 || !a.window ||
      !a.convolution_dimension_numbers)
    return no("not a convolution");
  if (a.feature_group_count != 1 || a.batch_group_count != 1) return no("grouped convolution");
  const Shape& in = conv.operand(0)->shape();
  const Shape& k = conv.operand(1)->shape();
  const Shape& out = conv.shape();
  if (!in.IsArray() || !k.IsArray() || !out.IsArray()) return no("not an array convolution");
  for (const Shape* s : {&in, &k, &out})
    if (s->element_type() != PrimitiveType::F32) return no("not f32");
  ConvGemm c;
  c.in_dims = in.dimensions();
  c.kernel_dims = k.dimensions();
  c.out_dims = out.dimensions();
  c.dnums = *a.convolution_dimension_numbers;
  c.window = *a.window;
  const size_t ns = c.dnums.input_spatial_dimensions.size();
  if (c.window.dimensions.size() != ns || c.dnums.kernel_spatial_dimensions.size() != ns ||
      c.dnums.output_spatial_dimensions.size() != ns)
    return no("window rank differs from the spatial rank");
  int64_t positions = 1, kernel_positions = 1;
  for (size_t i = 0; i < ns; ++i) {
    positions *= c.out_dims[c.dnums.output_spatial_dimensions[i]];
    kernel_positions *= c.kernel_dims[c.dnums.kernel_spatial_dimensions[i]];
  }
  c.rows = c.out_dims[c.dnums.output_batch_dimension] * positions;
  c.depth = kernel_positions * c.in_dims[c.dnums.input_feature_dimension];
  c.out_features = c.out_dims[c.dnums.output_feature_dimension];
  if (c.rows == 0 || c.depth == 0 || c.out_features == 0) return no("empty convolution");
  if (c.rows * c.depth * c.out_features < min_work) return no("too small for a library call");
  if (c.rows * c.depth * 4 > kMaxPatchBytes) return no("patch matrix too large");
  return c;
}

void RunLibraryConv(const ConvGemm& c, const float* input, const float* kernel, float* out) {
  const ConvolutionDimensionNumbers& dn = c.dnums;
  const size_t ns = dn.input_spatial_dimensions.size();
  const std::vector<int64_t> is = RowMajorStrides(c.in_dims), ks = RowMajorStrides(c.kernel_dims),
                             os = RowMajorStrides(c.out_dims);
  const int64_t cin = c.in_dims[dn.input_feature_dimension];
  const int64_t in_fstride = is[dn.input_feature_dimension];
  std::vector<int64_t> out_sizes{c.out_dims[dn.output_batch_dimension]}, win_sizes;
  for (size_t i = 0; i < ns; ++i) {
    out_sizes.push_back(c.out_dims[dn.output_spatial_dimensions[i]]);
    win_sizes.push_back(c.kernel_dims[dn.kernel_spatial_dimensions[i]]);
  }
  if (win_sizes.empty()) win_sizes.push_back(1);  // no spatial dims: one kernel position

  // Patches [rows, depth]: row (batch, output position), column (kernel position, feature).
  std::vector<float> patches(static_cast<size_t>(c.rows * c.depth));
  std::vector<int64_t> o(out_sizes.size(), 0);
  int64_t row = 0;
  do {
    float* prow = patches.data() + row * c.depth;
    std::vector<int64_t> w(win_sizes.size(), 0);
    do {
      int64_t base = o[0] * is[dn.input_batch_dimension];
      bool inside = true;
      for (size_t i = 0; i < ns && inside; ++i) {
        const WindowDimension& wd = c.window.dimensions[i];
        int64_t kpos = wd.window_reversal ? wd.size - 1 - w[i] : w[i];
        // Position in the (base-dilated, padded) input.
        int64_t p = o[i + 1] * wd.stride - wd.padding_low + kpos * wd.window_dilation;
        if (p < 0 || p % wd.base_dilation != 0) inside = false;
        p /= wd.base_dilation;
        if (p >= c.in_dims[dn.input_spatial_dimensions[i]]) inside = false;
        base += p * is[dn.input_spatial_dimensions[i]];
      }
      if (inside) {
        if (in_fstride == 1) std::memcpy(prow, input + base, cin * sizeof(float));
        else for (int64_t f = 0; f < cin; ++f) prow[f] = input[base + f * in_fstride];
      } else {
        std::memset(prow, 0, cin * sizeof(float));
      }
      prow += cin;
    } while (Next(w, win_sizes));
    ++row;
  } while (Next(o, out_sizes));

  // Kernel [depth, out_features] in the patches' column order.
  std::vector<float> weights(static_cast<size_t>(c.depth * c.out_features));
  {
    std::vector<int64_t> w(win_sizes.size(), 0);
    int64_t col = 0;
    do {
      int64_t base = 0;
      for (size_t i = 0; i < ns; ++i) base += w[i] * ks[dn.kernel_spatial_dimensions[i]];
      for (int64_t f = 0; f < cin; ++f, ++col)
        for (int64_t g = 0; g < c.out_features; ++g)
          weights[col * c.out_features + g] =
              kernel[base + f * ks[dn.kernel_input_feature_dimension] +
                     g * ks[dn.kernel_output_feature_dimension]];
    } while (Next(w, win_sizes));
  }

  GemmShape g;
  g.m = c.rows, g.k = c.depth, g.n = c.out_features;
  const bool direct = os[dn.output_feature_dimension] == 1 &&
                      dn.output_batch_dimension == 0 &&
                      [&] {  // output already [batch, spatial..., feature] in that order
                        for (size_t i = 0; i < ns; ++i)
                          if (dn.output_spatial_dimensions[i] != static_cast<int64_t>(i) + 1)
                            return false;
                        return true;
                      }();
  if (direct) {
    RunBlasDot(g, patches.data(), weights.data(), out);
    return;
  }
  std::vector<float> product(static_cast<size_t>(c.rows * c.out_features));
  RunBlasDot(g, patches.data(), weights.data(), product.data());
  std::fill(o.begin(), o.end(), 0);
  row = 0;
  do {
    int64_t base = o[0] * os[dn.output_batch_dimension];
    for (size_t i = 0; i < ns; ++i) base += o[i + 1] * os[dn.output_spatial_dimensions[i]];
    for (int64_t f = 0; f < c.out_features; ++f)
      out[base + f * os[dn.output_feature_dimension]] = product[row * c.out_features + f];
    ++row;
  } while (Next(o, out_sizes));
}

}  // namespace kiln::cpu
