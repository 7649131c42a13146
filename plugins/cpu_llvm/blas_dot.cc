// Matching dots to GEMM calls, and the calls: f32 through oneDNN's dnnl_sgemm when the
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

bool HaveBlas() {
#ifdef KILN_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

std::optional<GemmShape> MatchBlasDot(const HloInstruction& dot, int64_t min_mnk,
                                      std::string* why) {
  auto no = [&](std::string reason) -> std::optional<GemmShape> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!HaveBlas()) return no("built without a BLAS library");
  return MatchGemmDot(dot, min_mnk, why);
}

std::optional<GemmShape> MatchGemmDot(const HloInstruction& dot, int64_t min_mnk,
                                      std::string* why) {
  auto no = [&](std::string reason) -> std::optional<GemmShape> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (dot.opcode() != HloOpcode::kDot || dot.operand_count() != 2 ||
      !dot.attrs().dot_dimension_numbers)
    return no("not a dot");
  const HloInstruction* lhs = dot.operand(0);
  const HloInstruction* rhs = dot.operand(1);
  if (!dot.shape().IsArray() || !lhs->shape().IsArray() || !rhs->shape().IsArray())
    return no("not an array dot");
  PrimitiveType t = dot.shape().element_type();
  if ((t != PrimitiveType::F32 && t != PrimitiveType::F64) ||
      lhs->shape().element_type() != t || rhs->shape().element_type() != t)
    return no("element type is not f32 or f64 throughout");
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  if (static_cast<int64_t>(dn.rhs_batch_dimensions.size()) != nb) return no("batch dims differ");
  for (int64_t i = 0; i < nb; ++i)
    if (dn.lhs_batch_dimensions[i] != i || dn.rhs_batch_dimensions[i] != i)
      return no("batch dimensions are not the leading ones in order");
  if (dn.lhs_contracting_dimensions.size() != 1 || dn.rhs_contracting_dimensions.size() != 1)
    return no("not exactly one contracting dimension");
  const auto& ld = lhs->shape().dimensions();
  const auto& rd = rhs->shape().dimensions();
  const int64_t lc = dn.lhs_contracting_dimensions[0], rc = dn.rhs_contracting_dimensions[0];
  const int64_t lr = static_cast<int64_t>(ld.size()), rr = static_cast<int64_t>(rd.size());
  if (lr != nb + 1 && lr != nb + 2) return no("lhs is not a matrix or vector per batch");
  if (rr != nb + 1 && rr != nb + 2) return no("rhs is not a matrix or vector per batch");
  if (lc < nb || lc >= lr || rc < nb || rc >= rr) return no("bad contracting dimension");
  GemmShape g;
  g.f64 = t == PrimitiveType::F64;
  for (int64_t i = 0; i < nb; ++i) {
    if (ld[i] != rd[i]) return no("batch sizes differ");
    g.batch *= ld[i];
  }
  g.k = ld[lc];
  if (rd[rc] != g.k) return no("contracting sizes differ");
  if (lr == nb + 2) {
    g.trans_a = lc == nb;  // stored [k, m]
    g.m = ld[g.trans_a ? nb + 1 : nb];
  }
  if (rr == nb + 2) {
    g.trans_b = rc == nb + 1;  // stored [n, k]
    g.n = rd[g.trans_b ? nb : nb + 1];
  }
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return no("empty dot");
  if (g.batch * g.m * g.n * g.k < min_mnk) return no("too small for a BLAS call");
  return g;
}

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
      cblas_dgemm(CblasRowMajor, ta, tb, g.m, g.n, g.k, 1.0,
                  static_cast<const double*>(a) + i * sa, lda,
                  static_cast<const double*>(b) + i * sb, ldb, 0.0,
                  static_cast<double*>(out) + i * sc, ldc);
    } else {
#ifdef KILN_HAVE_ONEDNN
      if (int t = blas_threads.load(std::memory_order_relaxed); t > 0) omp_set_num_threads(t);
      dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n, g.k, 1.0f,
                 static_cast<const float*>(a) + i * sa, lda,
                 static_cast<const float*>(b) + i * sb, ldb, 0.0f,
                 static_cast<float*>(out) + i * sc, ldc);
      continue;
#endif
      cblas_sgemm(CblasRowMajor, ta, tb, g.m, g.n, g.k, 1.0f,
                  static_cast<const float*>(a) + i * sa, lda,
                  static_cast<const float*>(b) + i * sb, ldb, 0.0f,
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
