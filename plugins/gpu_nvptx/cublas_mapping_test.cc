// The row-major -> column-major GEMM mapping, checked by running a column-major reference
// GEMM (written here, BLAS semantics) with the mapped arguments on row-major buffers and
// comparing with a row-major reference, for every transpose combination and batching.
#include "plugins/gpu_nvptx/cublas_mapping.h"

#include <vector>

#include "gtest/gtest.h"

namespace kiln::gpu {
namespace {

// Column-major, like cublasSgemmStridedBatched: C[i + j*ldc] = sum_p opX(i,p) * opY(p,j).
void ColumnMajorReference(const ColumnMajorGemm& c, const float* x, const float* y, float* out) {
  for (int64_t b = 0; b < c.batch; ++b) {
    const float* xb = x + b * c.stride_first;
    const float* yb = y + b * c.stride_second;
    float* ob = out + b * c.stride_c;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          float xv = c.trans_first ? xb[p + i * c.ld_first] : xb[i + p * c.ld_first];
          float yv = c.trans_second ? yb[j + p * c.ld_second] : yb[p + j * c.ld_second];
          acc += static_cast<double>(xv) * yv;
        }
        ob[i + j * c.ldc] = static_cast<float>(acc);
      }
  }
}

// Row-major, straight from the GemmShape definition (A stored [k,m] when trans_a, etc.).
void RowMajorReference(const kernel_plan::GemmShape& g, const float* a, const float* b,
                       float* out) {
  for (int64_t t = 0; t < g.batch; ++t)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          float av = g.trans_a ? a[t * g.m * g.k + p * g.m + i] : a[t * g.m * g.k + i * g.k + p];
          float bv = g.trans_b ? b[t * g.k * g.n + j * g.k + p] : b[t * g.k * g.n + p * g.n + j];
          acc += static_cast<double>(av) * bv;
        }
        out[t * g.m * g.n + i * g.n + j] = static_cast<float>(acc);
      }
}

TEST(CublasMapping, ColumnMajorCallComputesRowMajorProduct) {
  for (int64_t batch : {1, 3})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        kernel_plan::GemmShape g;
        g.batch = batch, g.m = 5, g.n = 3, g.k = 7, g.trans_a = ta, g.trans_b = tb;
        std::vector<float> a(batch * g.m * g.k), b(batch * g.k * g.n);
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7 + 3) % 11) - 5;
        for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5 + 1) % 13) - 6;
        std::vector<float> want(batch * g.m * g.n), got(want.size(), -999.f);
        RowMajorReference(g, a.data(), b.data(), want.data());
        ColumnMajorGemm c = MapRowMajorGemm(g);
        ASSERT_TRUE(c.first_is_b);
        ColumnMajorReference(c, b.data(), a.data(), got.data());
        EXPECT_EQ(got, want) << "batch " << batch << " trans_a " << ta << " trans_b " << tb;
      }
}

TEST(CublasMapping, SwapsDimensionsAndOperands) {
  kernel_plan::GemmShape g;
  g.m = 2, g.n = 9, g.k = 4;
  ColumnMajorGemm c = MapRowMajorGemm(g);
  EXPECT_EQ(c.m, 9);
  EXPECT_EQ(c.n, 2);
  EXPECT_EQ(c.k, 4);
  EXPECT_EQ(c.ldc, 9);
}

}  // namespace
}  // namespace kiln::gpu
