// The GEMM calls (which dots qualify: gemm_match.cc): f32 through oneDNN's dnnl_sgemm when the
// build has it, else OpenBLAS's cblas_sgemm; f64 through cblas_dgemm; s8 x s8 -> s32 through
// oneDNN's dnnl_gemm_s8s8s32 where it is exact (HaveS8Gemm); bf16 x bf16 through oneDNN's
// matmul primitive where it has native bf16 kernels (onednn_matmul.h). oneDNN because on this
// project's AVX-512 machines it measured 1.8-2x OpenBLAS's sgemm GFLOP/s at every workload
// shape (benchmarks/gemm_libraries.cc; Debian's OpenBLAS 0.3.21 runs Zen 4 on AVX2 kernels).
//
// The library runs single-threaded, on cpu-llvm's own pool: a large GEMM is cut into row or
// column blocks, one library call per block. With the library's own threads (OpenMP for
// oneDNN, pthreads for OpenBLAS) beside the pool, their spinning workers and the pool's
// fought over the cores, and on a busy machine every synchronization waited for a
// descheduled spinner (issue #12: 962 ms against 7.9 ms for the while-loop stacked LSTM).
#include "plugins/cpu_llvm/blas_dot.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "hlo/float16.h"
#include "plugins/cpu_llvm/int_gemm.h"
#include "plugins/cpu_llvm/onednn_matmul.h"

#ifdef KILN_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef KILN_HAVE_ONEDNN
#include <dnnl.h>
#include <omp.h>
#endif

namespace kiln::cpu {
namespace {

// Below this many flops a GEMM runs on the calling thread: waking the pool costs about as
// much as a single core's ~10 µs of work.
constexpr double kParallelMinFlops = 2e6;
// From this many flops (about a millisecond on one core) a GEMM may stay on the pool while the
// pool is contended (ThreadPool::ParallelFor's `large_cost`, its flops).
constexpr double kLargeFlops = 1e8;
// Blocks are cut at multiples of this many rows or columns, the library's register tiles.
constexpr int64_t kBlock = 16;

// ThreadPool::ParallelFor's large_cost of a call of `flops`: 0 below kLargeFlops.
int64_t LargeCost(double flops) { return flops >= kLargeFlops ? static_cast<int64_t>(flops) : 0; }

void GemmBlock(const GemmShape& g, const void* a, const void* b, void* out, int64_t i, int64_t r0,
               int64_t r1, int64_t c0, int64_t c1);

// A bf16 block oneDNN did not compute: its operands widened (exactly) to f32, the f32 GEMM,
// and the result rounded once, as the upcast dot would be.
void Bf16BlockThroughF32(const GemmShape& g, const void* a, const void* b, void* out, int64_t i,
                         int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const int64_t m = r1 - r0, n = c1 - c0, k = g.k;
  const auto* a16 = static_cast<const bfloat16*>(a) + i * g.m * k;
  const auto* b16 = static_cast<const bfloat16*>(b) + i * k * g.n;
  std::vector<float> wa(m * k), wb(k * n), wc(m * n);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t d = 0; d < k; ++d)
      wa[r * k + d] = g.trans_a ? a16[d * g.m + r0 + r] : a16[(r0 + r) * k + d];
  for (int64_t d = 0; d < k; ++d)
    for (int64_t c = 0; c < n; ++c)
      wb[d * n + c] = g.trans_b ? b16[(c0 + c) * k + d] : b16[d * g.n + c0 + c];
  GemmShape f;
  f.m = m, f.n = n, f.k = k;
  GemmBlock(f, wa.data(), wb.data(), wc.data(), 0, 0, m, 0, n);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const int64_t at = i * g.m * g.n + (r0 + r) * g.n + c0 + c;
      if (g.type == GemmType::kBF16BF16)
        static_cast<bfloat16*>(out)[at] = bfloat16(wc[r * n + c]);
      else
        static_cast<float*>(out)[at] = wc[r * n + c];
    }
}

// out[rows r0..r1, cols c0..c1) of batch entry i, with one single-threaded library call.
void GemmBlock(const GemmShape& g, const void* a, const void* b, void* out, int64_t i, int64_t r0,
               int64_t r1, int64_t c0, int64_t c1) {
  if (g.type == GemmType::kI32 || g.type == GemmType::kI64)
    return IntGemmBlock(g, a, b, out, i, r0, r1, c0, c1);
  if (g.type == GemmType::kBF16F32 || g.type == GemmType::kBF16BF16) {
    if (!OneDnnBf16GemmBlock(g, a, b, out, i, r0, r1, c0, c1))
      Bf16BlockThroughF32(g, a, b, out, i, r0, r1, c0, c1);
    return;
  }
#ifdef KILN_HAVE_OPENBLAS
  // Leading dimensions of the stored (row-major) matrices; a block keeps them and moves its
  // pointers: row r of op(A) starts at a + r*lda (or a + r when A is stored transposed),
  // column c of op(B) at b + c (or b + c*ldb).
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n, ldc = g.n;
  const int64_t a_off = i * g.m * g.k + (g.trans_a ? r0 : r0 * lda);
  const int64_t b_off = i * g.k * g.n + (g.trans_b ? c0 * ldb : c0);
  const int64_t c_off = i * g.m * g.n + r0 * ldc + c0;
  const int64_t m = r1 - r0, n = c1 - c0;
  const CBLAS_TRANSPOSE ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = g.trans_b ? CblasTrans : CblasNoTrans;
  switch (g.type) {
    case GemmType::kF64:
      cblas_dgemm(CblasRowMajor, ta, tb, m, n, g.k, 1.0, static_cast<const double*>(a) + a_off, lda,
                  static_cast<const double*>(b) + b_off, ldb, 0.0,
                  static_cast<double*>(out) + c_off, ldc);
      return;
    case GemmType::kS8S32: {
#ifdef KILN_HAVE_ONEDNN
      // Planned only where HaveS8Gemm(): exact s32 sums (MatchBlasDot bounds the depth).
      omp_set_num_threads(1);
      const int32_t no_offset = 0;
      dnnl_gemm_s8s8s32(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', 'F', m, n, g.k, 1.0f,
                        static_cast<const int8_t*>(a) + a_off, lda, 0,
                        static_cast<const int8_t*>(b) + b_off, ldb, 0, 0.0f,
                        static_cast<int32_t*>(out) + c_off, ldc, &no_offset);
#endif
      return;
    }
    case GemmType::kF32:
    case GemmType::kI32:
    case GemmType::kI64:
    case GemmType::kBF16F32:
    case GemmType::kBF16BF16:
      break;
  }
#ifdef KILN_HAVE_ONEDNN
  omp_set_num_threads(1);  // per calling thread in OpenMP: each pool thread sets its own
  dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', m, n, g.k, 1.0f,
             static_cast<const float*>(a) + a_off, lda, static_cast<const float*>(b) + b_off, ldb,
             0.0f, static_cast<float*>(out) + c_off, ldc);
#else
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, g.k, 1.0f, static_cast<const float*>(a) + a_off, lda,
              static_cast<const float*>(b) + b_off, ldb, 0.0f, static_cast<float*>(out) + c_off,
              ldc);
#endif
#else
  (void)g, (void)a, (void)b, (void)out, (void)i, (void)r0, (void)r1, (void)c0, (void)c1;
#endif
}

// A Gram product, C = A A^T (A stored m x k, B the same buffer read transposed) or A^T A (A
// stored k x m, B the same buffer): C is symmetric, so only the blocks on and below the
// diagonal are computed, then the part above it is mirrored: 5/8 of the flops (Muon's
// Newton-Schulz x x^T, a covariance X^T X).
bool IsGram(const GemmShape& g, const void* a, const void* b) {
  return a == b && g.m == g.n && g.trans_a != g.trans_b && g.m >= 4 * kBlock &&
         (g.type == GemmType::kF32 || g.type == GemmType::kF64);
}

struct Block {
  int64_t r0, r1, c0, c1;
  int64_t size() const { return (r1 - r0) * (c1 - c0); }
};

// The lower triangle of rows and columns [r0, r1) as GEMM blocks: the two diagonal halves
// (recursively) and the square below them, down to squares of at most `leaf` rows.
void GramBlocks(int64_t r0, int64_t r1, int64_t leaf, std::vector<Block>& out) {
  if (r1 - r0 <= leaf) {
    out.push_back({r0, r1, r0, r1});
    return;
  }
  const int64_t mid = r0 + (r1 - r0 + kBlock) / (2 * kBlock) * kBlock;
  GramBlocks(r0, mid, leaf, out);
  out.push_back({mid, r1, r0, mid});
  GramBlocks(mid, r1, leaf, out);
}

// Rows [r0, r1) of batch entry i above the diagonal, copied from below it, in tiles.
template <typename T>
void MirrorRows(T* c, int64_t m, int64_t r0, int64_t r1) {
  constexpr int64_t kTile = 32;
  for (int64_t rt = r0; rt < r1; rt += kTile)
    for (int64_t ct = rt; ct < m; ct += kTile)
      for (int64_t r = rt; r < std::min(r1, rt + kTile); ++r)
        for (int64_t col = std::max(ct, r + 1); col < std::min(m, ct + kTile); ++col)
          c[r * m + col] = c[col * m + r];
}

void MirrorBand(const GemmShape& g, void* out, int64_t i, int64_t r0, int64_t r1) {
  if (g.type == GemmType::kF64)
    MirrorRows(static_cast<double*>(out) + i * g.m * g.m, g.m, r0, r1);
  else
    MirrorRows(static_cast<float*>(out) + i * g.m * g.m, g.m, r0, r1);
}

void RunGram(const GemmShape& g, const void* a, void* out, ThreadPool* pool, int threads,
             double flops) {
  // Two levels of halving: seven blocks, the largest first so that the pool's workers,
  // claiming them in order, finish together.
  std::vector<Block> blocks;
  GramBlocks(0, g.m, std::max<int64_t>(2 * kBlock, g.m / 4), blocks);
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const Block& x, const Block& y) { return x.size() > y.size(); });
  auto run = [&](int64_t i, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      GemmBlock(g, a, a, out, i, blocks[j].r0, blocks[j].r1, blocks[j].c0, blocks[j].c1);
  };
  if (threads <= 1 || g.batch >= threads) {
    auto entry = [&](int64_t i) {
      run(i, 0, static_cast<int64_t>(blocks.size()));
      MirrorBand(g, out, i, 0, g.m);
    };
    if (threads <= 1) {
      for (int64_t i = 0; i < g.batch; ++i) entry(i);
    } else {
      pool->ParallelFor(
          g.batch,
          [&](int64_t b0, int64_t b1) {
            for (int64_t i = b0; i < b1; ++i) entry(i);
          },
          threads, /*even=*/true, LargeCost(flops / 2));
    }
    return;
  }
  const int64_t large = LargeCost(flops / g.batch / 2);
  const int64_t rows = (g.m + kBlock - 1) / kBlock;
  for (int64_t i = 0; i < g.batch; ++i) {
    pool->ParallelFor(
        static_cast<int64_t>(blocks.size()), [&](int64_t j0, int64_t j1) { run(i, j0, j1); },
        static_cast<int>(blocks.size()), /*even=*/false, large);
    pool->ParallelFor(
        rows,
        [&](int64_t k0, int64_t k1) {
          MirrorBand(g, out, i, k0 * kBlock, std::min(g.m, k1 * kBlock));
        },
        threads, /*even=*/false);
  }
}

}  // namespace

void RunBlasDot(const GemmShape& g, const void* a, const void* b, void* out, ThreadPool* pool) {
  const int threads = pool != nullptr ? pool->size() : 1;
  const double flops = 2.0 * g.batch * g.m * g.n * g.k;
  if (IsGram(g, a, b))
    return RunGram(g, a, out, pool, flops < kParallelMinFlops ? 1 : threads, flops);
  if (threads <= 1 || flops < kParallelMinFlops) {
    for (int64_t i = 0; i < g.batch; ++i) GemmBlock(g, a, b, out, i, 0, g.m, 0, g.n);
    return;
  }
  if (g.batch >= threads) {  // whole batch entries per thread
    pool->ParallelFor(
        g.batch,
        [&](int64_t b0, int64_t b1) {
          for (int64_t i = b0; i < b1; ++i) GemmBlock(g, a, b, out, i, 0, g.m, 0, g.n);
        },
        threads, /*even=*/true, LargeCost(flops));
    return;
  }
  // Otherwise split the longer of m and n into one block range per thread.
  const bool split_rows = g.m >= g.n;
  const int64_t extent = split_rows ? g.m : g.n;
  const int64_t blocks = (extent + kBlock - 1) / kBlock;
  const int64_t large = LargeCost(flops / g.batch);
  for (int64_t i = 0; i < g.batch; ++i) {
    pool->ParallelFor(
        blocks,
        [&](int64_t k0, int64_t k1) {
          const int64_t lo = k0 * kBlock, hi = std::min(extent, k1 * kBlock);
          if (split_rows)
            GemmBlock(g, a, b, out, i, lo, hi, 0, g.n);
          else
            GemmBlock(g, a, b, out, i, 0, g.m, lo, hi);
        },
        threads, /*even=*/true, large);
  }
}

bool HaveS8Gemm() {
#ifdef KILN_HAVE_ONEDNN
  // Without VNNI, oneDNN's int8 kernels add pairs of u8 x s8 products in saturating 16-bit
  // lanes (its documentation warns of it); VNNI's dot-product instructions add into s32.
  static const bool vnni =
      __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
  const char* env = std::getenv("KILN_CPU_S8_GEMM");
  return vnni && (env == nullptr || std::string_view(env) != "0");
#else
  return false;
#endif
}

void UseSingleThreadedBlas() {
#ifdef KILN_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
}

}  // namespace kiln::cpu
