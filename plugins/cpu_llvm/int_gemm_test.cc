// The integer GEMM against a plain triple loop in wrapping unsigned arithmetic: every
// transpose form, edges of the register tiles and the packed blocks, batches, 32 and 64 bits,
// values whose products and sums overflow, and blocks split across a pool.
#include "plugins/cpu_llvm/int_gemm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {
namespace {

template <typename T>
std::vector<T> Reference(const GemmShape& g, const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> c(g.batch * g.m * g.n);
  for (int64_t i = 0; i < g.batch; ++i)
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t col = 0; col < g.n; ++col) {
        T sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          T x = g.trans_a ? a[i * g.m * g.k + p * g.m + r] : a[i * g.m * g.k + r * g.k + p];
          T y = g.trans_b ? b[i * g.k * g.n + col * g.k + p] : b[i * g.k * g.n + p * g.n + col];
          sum += x * y;
        }
        c[i * g.m * g.n + r * g.n + col] = sum;
      }
  return c;
}

template <typename T>
void Check(GemmShape g, int threads) {
  std::mt19937_64 rng(g.m * 131 + g.n * 17 + g.k + threads);
  std::vector<T> a(g.batch * g.m * g.k), b(g.batch * g.k * g.n);
  for (T& x : a) x = static_cast<T>(rng());
  for (T& x : b) x = static_cast<T>(rng());
  std::vector<T> out(g.batch * g.m * g.n, T{12345});  // overwritten, not accumulated into
  if (threads == 0) {
    for (int64_t i = 0; i < g.batch; ++i)
      IntGemmBlock(g, a.data(), b.data(), out.data(), i, 0, g.m, 0, g.n);
  } else {
    ThreadPool pool(threads);
    RunBlasDot(g, a.data(), b.data(), out.data(), &pool);
  }
  std::vector<T> want = Reference(g, a, b);
  int64_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += out[i] != want[i];
  EXPECT_EQ(wrong, 0) << "batch " << g.batch << " m " << g.m << " n " << g.n << " k " << g.k
                      << " trans " << g.trans_a << g.trans_b << " threads " << threads;
}

TEST(IntGemm, MatchesTheWrappingTripleLoop) {
  struct Dims {
    int64_t batch, m, n, k;
  };
  // Exact tiles; ragged edges in rows and columns; depth and columns past one packed block
  // (256 deep, 512 wide); a single row or column.
  for (Dims d : {Dims{1, 16, 32, 8}, Dims{1, 13, 45, 7}, Dims{2, 37, 70, 300}, Dims{1, 9, 600, 260},
                 Dims{3, 1, 33, 5}, Dims{1, 40, 1, 65}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int threads : {0, 1, 2}) {
          GemmShape g{kernel_plan::GemmType::kI32, d.batch, d.m, d.n, d.k, ta, tb};
          Check<uint32_t>(g, threads);
          g.type = kernel_plan::GemmType::kI64;
          Check<uint64_t>(g, threads);
        }
}

TEST(IntGemm, LargeEnoughToSplitAcrossThePool) {
  for (int threads : {2, 3}) {
    Check<uint32_t>(GemmShape{kernel_plan::GemmType::kI32, 1, 256, 200, 256, false, false},
                    threads);
    Check<uint32_t>(GemmShape{kernel_plan::GemmType::kI32, 1, 100, 700, 128, false, true}, threads);
    Check<uint64_t>(GemmShape{kernel_plan::GemmType::kI64, 4, 64, 64, 64, true, false}, threads);
  }
}

}  // namespace
}  // namespace kiln::cpu
