// The GEMM calls (which dots qualify: gemm_match.cc): f32 through oneDNN's dnnl_sgemm when the
// build has it, else OpenBLAS's cblas_sgemm; f64 through cblas_dgemm. oneDNN because on this
// project's AVX-512 machines it measured 1.8-2x OpenBLAS's sgemm GFLOP/s at every workload
// shape (benchmarks/gemm_libraries.cc; Debian's OpenBLAS 0.3.21 runs Zen 4 on AVX2 kernels).
#include "plugins/cpu_llvm/blas_dot.h"

#include <atomic>

#include "absl/strings/str_cat.h"

#ifdef KILN_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef KILN_HAVE_ONEDNN
#include <dnnl.h>
#include <omp.h>
#endif

namespace kiln::cpu {
namespace {
// oneDNN's sgemm runs on OpenMP; the thread count is per calling thread in OpenMP, so each
// call sets it from here (0: the OpenMP default).
std::atomic<int> blas_threads{0};
}  // namespace

void RunBlasDot(const GemmShape& g, const void* a, const void* b, void* out) {
#ifdef KILN_HAVE_OPENBLAS
  // Leading dimensions of the stored (row-major) matrices.
  const blasint lda = static_cast<blasint>(g.trans_a ? g.m : g.k);
  const blasint ldb = static_cast<blasint>(g.trans_b ? g.k : g.n);
  const blasint ldc = static_cast<blasint>(g.n);
  const CBLAS_TRANSPOSE ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = g.trans_b ? CblasTrans : CblasNoTrans;
  const int64_t sa = g.m * g.k, sb = g.k * g.n, sc = g.m * g.n;
  for (int64_t i = 0; i < g.batch; ++i) {
    if (g.f64) {
      cblas_dgemm(CblasRowMajor, ta, tb, g.m, g.n, g.k, 1.0, static_cast<const double*>(a) + i * sa,
                  lda, static_cast<const double*>(b) + i * sb, ldb, 0.0,
                  static_cast<double*>(out) + i * sc, ldc);
    } else {
#ifdef KILN_HAVE_ONEDNN
      if (int t = blas_threads.load(std::memory_order_relaxed); t > 0) omp_set_num_threads(t);
      dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n, g.k, 1.0f,
                 static_cast<const float*>(a) + i * sa, lda, static_cast<const float*>(b) + i * sb,
                 ldb, 0.0f, static_cast<float*>(out) + i * sc, ldc);
      continue;
#endif
      cblas_sgemm(CblasRowMajor, ta, tb, g.m, g.n, g.k, 1.0f, static_cast<const float*>(a) + i * sa,
                  lda, static_cast<const float*>(b) + i * sb, ldb, 0.0f,
                  static_cast<float*>(out) + i * sc, ldc);
    }
  }
#else
  (void)g, (void)a, (void)b, (void)out;
#endif
}

void SetBlasThreads(int threads) {
  blas_threads.store(threads, std::memory_order_relaxed);
#ifdef KILN_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#else
  (void)threads;
#endif
}

}  // namespace kiln::cpu
