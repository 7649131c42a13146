// im2col + GEMM for convolutions (see conv_library.h).
#include "plugins/cpu_llvm/conv_library.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "hlo/shape.h"
#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/onednn_conv.h"

namespace kiln::cpu {
namespace {

// Advances a multi-index over `sizes` in row-major order; false after the last one.
bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
    if (++idx[d] < sizes[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Patch matrices smaller than this are filled on the calling thread.
constexpr int64_t kParallelMinPatchElements = 1 << 16;

template <typename T>
void Im2colConv(const ConvGemm& c, const T* input, const T* kernel, T* out, ThreadPool* pool) {
  const ConvolutionDimensionNumbers& dn = c.dnums;
  const size_t ns = dn.input_spatial_dimensions.size();
  const std::vector<int64_t> is = RowMajorStrides(c.in_dims), ks = RowMajorStrides(c.kernel_dims),
                             os = RowMajorStrides(c.out_dims);
  const int64_t cin = c.kernel_dims[dn.kernel_input_feature_dimension];  // of one group
  const int64_t cout = c.out_features / c.groups;
  const int64_t in_fstride = is[dn.input_feature_dimension];
  std::vector<int64_t> out_sizes{c.out_dims[dn.output_batch_dimension]}, win_sizes;
  for (size_t i = 0; i < ns; ++i) {
    out_sizes.push_back(c.out_dims[dn.output_spatial_dimensions[i]]);
    win_sizes.push_back(c.kernel_dims[dn.kernel_spatial_dimensions[i]]);
  }
  if (win_sizes.empty()) win_sizes.push_back(1);  // no spatial dims: one kernel position
  const bool direct = c.groups == 1 && os[dn.output_feature_dimension] == 1 &&
                      dn.output_batch_dimension == 0 &&
                      [&] {  // output already [batch, spatial..., feature] in that order
                        for (size_t i = 0; i < ns; ++i)
                          if (dn.output_spatial_dimensions[i] != static_cast<int64_t>(i) + 1)
                            return false;
                        return true;
                      }();
  std::vector<T> patches(static_cast<size_t>(c.rows * c.depth));
  std::vector<T> weights(static_cast<size_t>(c.depth * cout));
  std::vector<T> product(direct ? 0 : static_cast<size_t>(c.rows * cout));
  // Group `group` reads input features [group * cin, (group + 1) * cin) and writes output
  // features [group * cout, (group + 1) * cout): one GEMM each.
  for (int64_t group = 0; group < c.groups; ++group) {
    const T* group_input = input + group * cin * in_fstride;
    // Patches [rows, depth]: row (batch, output position), column (kernel position,
    // feature). Rows are independent: they are filled in parallel on the pool.
    auto fill_rows = [&](int64_t first, int64_t last) {
      std::vector<int64_t> o(out_sizes.size());  // the output position of row `first`
      int64_t rest = first;
      for (int d = static_cast<int>(o.size()) - 1; d >= 0; --d) {
        o[d] = rest % out_sizes[d];
        rest /= out_sizes[d];
      }
      for (int64_t row = first; row < last; ++row, Next(o, out_sizes)) {
        T* prow = patches.data() + row * c.depth;
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
            if (in_fstride == 1)
              std::memcpy(prow, group_input + base, cin * sizeof(T));
            else
              for (int64_t f = 0; f < cin; ++f) prow[f] = group_input[base + f * in_fstride];
          } else {
            std::memset(prow, 0, cin * sizeof(T));
          }
          prow += cin;
        } while (Next(w, win_sizes));
      }
    };
    if (pool != nullptr && pool->size() > 1 && c.rows * c.depth >= kParallelMinPatchElements)
      pool->ParallelFor(c.rows, fill_rows);
    else
      fill_rows(0, c.rows);

    // Kernel [depth, cout] in the patches' column order.
    {
      std::vector<int64_t> w(win_sizes.size(), 0);
      int64_t col = 0;
      do {
        int64_t base = 0;
        for (size_t i = 0; i < ns; ++i) base += w[i] * ks[dn.kernel_spatial_dimensions[i]];
        for (int64_t f = 0; f < cin; ++f, ++col)
          for (int64_t g = 0; g < cout; ++g)
            weights[col * cout + g] =
                kernel[base + f * ks[dn.kernel_input_feature_dimension] +
                       (group * cout + g) * ks[dn.kernel_output_feature_dimension]];
      } while (Next(w, win_sizes));
    }

    GemmShape g;
    g.type = std::is_same_v<T, double> ? GemmType::kF64 : GemmType::kF32;
    g.m = c.rows, g.k = c.depth, g.n = cout;
    if (direct) {
      RunBlasDot(g, patches.data(), weights.data(), out, pool);
      return;
    }
    RunBlasDot(g, patches.data(), weights.data(), product.data(), pool);
    std::vector<int64_t> o(out_sizes.size(), 0);
    int64_t row = 0;
    do {
      int64_t base = o[0] * os[dn.output_batch_dimension];
      for (size_t i = 0; i < ns; ++i) base += o[i + 1] * os[dn.output_spatial_dimensions[i]];
      for (int64_t f = 0; f < cout; ++f)
        out[base + (group * cout + f) * os[dn.output_feature_dimension]] = product[row * cout + f];
      ++row;
    } while (Next(o, out_sizes));
  }
}

}  // namespace

void RunLibraryConv(const ConvGemm& c, const void* input, const void* kernel, void* out,
                    ThreadPool* pool) {
  if (c.type == PrimitiveType::F64)
    return Im2colConv(c, static_cast<const double*>(input), static_cast<const double*>(kernel),
                      static_cast<double*>(out), pool);
  const auto* in = static_cast<const float*>(input);
  const auto* k = static_cast<const float*>(kernel);
  auto* o = static_cast<float*>(out);
  if (!RunOneDnnConv(c, in, k, o, pool)) Im2colConv(c, in, k, o, pool);
}

}  // namespace kiln::cpu
