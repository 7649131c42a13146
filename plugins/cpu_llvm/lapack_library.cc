#include "plugins/cpu_llvm/lapack_library.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hlo/evaluator/lapack_custom_calls.h"

#if KILN_HAVE_OPENBLAS
#include <cblas.h>

// LAPACK's Fortran entry points in OpenBLAS (32-bit integers; a character argument has a
// hidden length after the last argument, as gfortran passes it).
extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
             float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
             int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info, size_t);
using C64 = std::complex<float>;
using C128 = std::complex<double>;
void cgetrf_(const int* m, const int* n, C64* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, C128* a, const int* lda, int* ipiv, int* info);
void cpotrf_(const char* uplo, const int* n, C64* a, const int* lda, int* info, size_t);
void zpotrf_(const char* uplo, const int* n, C128* a, const int* lda, int* info, size_t);
void cgeqrf_(const int* m, const int* n, C64* a, const int* lda, C64* tau, C64* work,
             const int* lwork, int* info);
void zgeqrf_(const int* m, const int* n, C128* a, const int* lda, C128* tau, C128* work,
             const int* lwork, int* info);
void cungqr_(const int* m, const int* n, const int* k, C64* a, const int* lda, const C64* tau,
             C64* work, const int* lwork, int* info);
void zungqr_(const int* m, const int* n, const int* k, C128* a, const int* lda, const C128* tau,
             C128* work, const int* lwork, int* info);
void sgehrd_(const int* n, const int* ilo, const int* ihi, float* a, const int* lda, float* tau,
             float* work, const int* lwork, int* info);
void dgehrd_(const int* n, const int* ilo, const int* ihi, double* a, const int* lda, double* tau,
             double* work, const int* lwork, int* info);
void cgehrd_(const int* n, const int* ilo, const int* ihi, C64* a, const int* lda, C64* tau,
             C64* work, const int* lwork, int* info);
void zgehrd_(const int* n, const int* ilo, const int* ihi, C128* a, const int* lda, C128* tau,
             C128* work, const int* lwork, int* info);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, C64* a, const int* lda, C64* w,
            C64* vl, const int* ldvl, C64* vr, const int* ldvr, C64* work, const int* lwork,
            float* rwork, int* info, size_t, size_t);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, C128* a, const int* lda, C128* w,
            C128* vl, const int* ldvl, C128* vr, const int* ldvr, C128* work, const int* lwork,
            double* rwork, int* info, size_t, size_t);
void cgees_(const char* jobvs, const char* sort, void* select, const int* n, C64* a, const int* lda,
            int* sdim, C64* w, C64* vs, const int* ldvs, C64* work, const int* lwork, float* rwork,
            int* bwork, int* info, size_t, size_t);
void zgees_(const char* jobvs, const char* sort, void* select, const int* n, C128* a,
            const int* lda, int* sdim, C128* w, C128* vs, const int* ldvs, C128* work,
            const int* lwork, double* rwork, int* bwork, int* info, size_t, size_t);
void cheevd_(const char* jobz, const char* uplo, const int* n, std::complex<float>* a,
             const int* lda, float* w, std::complex<float>* work, const int* lwork, float* rwork,
             const int* lrwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void zheevd_(const char* jobz, const char* uplo, const int* n, std::complex<double>* a,
             const int* lda, double* w, std::complex<double>* work, const int* lwork, double* rwork,
             const int* lrwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void cgesdd_(const char* jobz, const int* m, const int* n, std::complex<float>* a, const int* lda,
             float* s, std::complex<float>* u, const int* ldu, std::complex<float>* vt,
             const int* ldvt, std::complex<float>* work, const int* lwork, float* rwork, int* iwork,
             int* info, size_t);
void zgesdd_(const char* jobz, const int* m, const int* n, std::complex<double>* a, const int* lda,
             double* s, std::complex<double>* u, const int* ldu, std::complex<double>* vt,
             const int* ldvt, std::complex<double>* work, const int* lwork, double* rwork,
             int* iwork, int* info, size_t);
void sgees_(const char* jobvs, const char* sort, void* select, const int* n, float* a,
            const int* lda, int* sdim, float* wr, float* wi, float* vs, const int* ldvs,
            float* work, const int* lwork, int* bwork, int* info, size_t, size_t);
void dgees_(const char* jobvs, const char* sort, void* select, const int* n, double* a,
            const int* lda, int* sdim, double* wr, double* wi, double* vs, const int* ldvs,
            double* work, const int* lwork, int* bwork, int* info, size_t, size_t);
void sgtsv_(const int* n, const int* nrhs, float* dl, float* d, float* du, float* b, const int* ldb,
            int* info);
void dgtsv_(const int* n, const int* nrhs, double* dl, double* d, double* du, double* b,
            const int* ldb, int* info);
void cgtsv_(const int* n, const int* nrhs, std::complex<float>* dl, std::complex<float>* d,
            std::complex<float>* du, std::complex<float>* b, const int* ldb, int* info);
void zgtsv_(const int* n, const int* nrhs, std::complex<double>* dl, std::complex<double>* d,
            std::complex<double>* du, std::complex<double>* b, const int* ldb, int* info);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
            float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work,
            const int* lwork, int* info, size_t, size_t);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda,
            double* wr, double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr,
            double* work, const int* lwork, int* info, size_t, size_t);
}
#endif

namespace kiln::cpu {
namespace {

// The matrices of a [..., rows, cols] array.
struct Batch {
  int64_t count = 1, rows = 0, cols = 0;
};

Batch BatchOf(const Shape& s) {
  Batch b;
  b.rows = s.dimensions(s.rank() - 2);
  b.cols = s.dimensions(s.rank() - 1);
  for (int d = 0; d < s.rank() - 2; ++d) b.count *= s.dimensions(d);
  return b;
}

std::vector<int64_t> Dims(const Shape& s, int drop, std::vector<int64_t> tail) {
  std::vector<int64_t> d(s.dimensions().begin(), s.dimensions().end() - drop);
  d.insert(d.end(), tail.begin(), tail.end());
  return d;
}

// The result shapes the routine gives for operands `ops`, or an empty list when the
// operands are not what it takes.
std::vector<Shape> ExpectedResults(std::string_view routine, char mode,
                                   const std::vector<const Shape*>& ops) {
  const Shape& a = *ops[0];
  const PrimitiveType t = a.element_type();
  const int64_t m = a.dimensions(a.rank() - 2), n = a.dimensions(a.rank() - 1);
  const int64_t k = std::min(m, n);
  const Shape info(PrimitiveType::S32, Dims(a, 2, {}));
  if (routine == "getrf" && ops.size() == 1)
    return {a, Shape(PrimitiveType::S32, Dims(a, 2, {k})), info};
  if (routine == "potrf" && ops.size() == 1 && m == n) return {a, info};
  if (routine == "geqrf" && ops.size() == 1) return {a, Shape(t, Dims(a, 2, {k}))};
  // Eigen- and singular values are real for complex matrices too.
  const PrimitiveType real = t == PrimitiveType::C64    ? PrimitiveType::F32
                             : t == PrimitiveType::C128 ? PrimitiveType::F64
                                                        : t;
  if ((routine == "syevd" || routine == "heevd") && ops.size() == 1 && m == n)
    return {a, Shape(real, Dims(a, 2, {n})), info};
  const bool complex = t == PrimitiveType::C64 || t == PrimitiveType::C128;
  if (routine == "gees" && ops.size() == 1 && m == n) {
    const Shape values(t, Dims(a, 2, {n}));
    if (complex) return {a, a, values, info, info};  // T, Z, w, sdim, info
    return {a, a, values, values, info, info};       // T, Z, wr, wi, sdim, info
  }
  if (routine == "gehrd" && ops.size() == 1 && m == n)
    return {a, Shape(t, Dims(a, 2, {std::max<int64_t>(n - 1, 0)})), info};
  if (routine == "geev" && ops.size() == 1 && m == n && complex) {
    const Shape vectors(t, Dims(a, 2, {n, n}));
    return {Shape(t, Dims(a, 2, {n})), vectors, vectors, info};  // w, vl, vr, info
  }
  if (routine == "geev" && ops.size() == 1 && m == n) {
    const Shape vectors(t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64,
                        Dims(a, 2, {n, n}));
    return {Shape(t, Dims(a, 2, {n})), Shape(t, Dims(a, 2, {n})), vectors, vectors, info};
  }
  if (routine == "orgqr" && ops.size() == 2) {
    const Shape& tau = *ops[1];
    if (tau.element_type() != t || tau.rank() != a.rank() - 1 ||
        !std::equal(a.dimensions().begin(), a.dimensions().end() - 2, tau.dimensions().begin()) ||
        tau.dimensions(tau.rank() - 1) > n || n > m)
      return {};
    return {a};
  }
  if (routine == "gesdd" && ops.size() == 1) {
    if (mode != 'A' && mode != 'S' && mode != 'N') return {};
    const int64_t uc = mode == 'A' ? m : k, vr = mode == 'A' ? n : k;
    // 'N' leaves u and vt zero in whatever shape the call declares: only s and info count.
    return {a, Shape(real, Dims(a, 2, {k})), Shape(t, Dims(a, 2, {m, uc})),
            Shape(t, Dims(a, 2, {vr, n})), info};
  }
  if ((routine == "trsm" || routine == "triangular-solve") && ops.size() == 2) {
    return {*ops[1]};
  }
  return {};
}

// gtsv's operands: diagonals [..., m] and B [..., m, nrhs] of one type; its results: the
// same shapes and info [...].
bool IsGtsv(const HloInstruction& h, const std::vector<const Shape*>& ops) {
  if (ops.size() != 4) return false;
  const Shape& b = *ops[3];
  if (b.rank() < 2) return false;
  const std::vector<int64_t> diagonal(b.dimensions().begin(), b.dimensions().end() - 1);
  for (const Shape* s : ops)
    if (s->element_type() != b.element_type() || (s != &b && s->dimensions() != diagonal))
      return false;
  if (!h.shape().IsTuple() || h.shape().tuple_size() != 5) return false;
  for (int i = 0; i < 4; ++i)
    if (!h.shape().tuple_shapes(i).Compatible(*ops[i])) return false;
  return h.shape().tuple_shapes(4).Compatible(Shape(PrimitiveType::S32, Dims(b, 2, {})));
}

bool FitsLapackInt(const Shape& s) {
  for (int64_t d : s.dimensions())
    if (d > std::numeric_limits<int>::max() / 4) return false;
  return s.num_elements() < std::numeric_limits<int>::max();
}

// "getrf" for lapack_sgetrf_ffi, "triangular-solve" for that instruction, else "".
std::string_view RoutineOf(const HloInstruction& h) {
  if (h.opcode() == HloOpcode::kTriangularSolve) return "triangular-solve";
  if (h.opcode() != HloOpcode::kCustomCall) return "";
  std::string_view r = eval::LapackRoutine(h.attrs().custom_call_target);
  return r == "ungqr" ? "orgqr" : r;  // the complex orgqr
}

#if KILN_HAVE_OPENBLAS

// Fortran's by-reference integers and flags, typed for float and double.
struct Lapack {
  static void getrf(int m, int n, float* a, int* ipiv, int* info) {
    sgetrf_(&m, &n, a, &m, ipiv, info);
  }
  static void getrf(int m, int n, double* a, int* ipiv, int* info) {
    dgetrf_(&m, &n, a, &m, ipiv, info);
  }
  static void getrf(int m, int n, C64* a, int* ipiv, int* info) {
    cgetrf_(&m, &n, a, &m, ipiv, info);
  }
  static void getrf(int m, int n, C128* a, int* ipiv, int* info) {
    zgetrf_(&m, &n, a, &m, ipiv, info);
  }
  static void potrf(char uplo, int n, float* a, int* info) { spotrf_(&uplo, &n, a, &n, info, 1); }
  static void potrf(char uplo, int n, C64* a, int* info) { cpotrf_(&uplo, &n, a, &n, info, 1); }
  static void potrf(char uplo, int n, C128* a, int* info) { zpotrf_(&uplo, &n, a, &n, info, 1); }
  static void geqrf(int m, int n, C64* a, C64* tau, C64* work, int lwork, int* info) {
    cgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  }
  static void geqrf(int m, int n, C128* a, C128* tau, C128* work, int lwork, int* info) {
    zgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  }
  // The complex orgqr is ungqr (Q unitary).
  static void orgqr(int m, int n, int k, C64* a, const C64* tau, C64* work, int lwork, int* info) {
    cungqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  }
  static void orgqr(int m, int n, int k, C128* a, const C128* tau, C128* work, int lwork,
                    int* info) {
    zungqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  }
  static void potrf(char uplo, int n, double* a, int* info) { dpotrf_(&uplo, &n, a, &n, info, 1); }
  static void geqrf(int m, int n, float* a, float* tau, float* work, int lwork, int* info) {
    sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  }
  static void geqrf(int m, int n, double* a, double* tau, double* work, int lwork, int* info) {
    dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  }
  static void orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork,
                    int* info) {
    sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  }
  static void orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork,
                    int* info) {
    dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  }
  static void syevd(char uplo, int n, float* a, float* w, float* work, int lwork, int* iwork,
                    int liwork, int* info) {
    const char jobz = 'V';
    ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  }
  static void syevd(char uplo, int n, double* a, double* w, double* work, int lwork, int* iwork,
                    int liwork, int* info) {
    const char jobz = 'V';
    dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  }
  // Real gesdd takes no rwork (the complex one's real workspace); it is here for one call.
  static void gesdd(char jobz, int m, int n, float* a, float* s, float* u, int ldu, float* vt,
                    int ldvt, float* work, int lwork, float* /*rwork*/, int* iwork, int* info) {
    sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  }
  static void gesdd(char jobz, int m, int n, double* a, double* s, double* u, int ldu, double* vt,
                    int ldvt, double* work, int lwork, double* /*rwork*/, int* iwork, int* info) {
    dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  }
  static void heevd(char uplo, int n, std::complex<float>* a, float* w, std::complex<float>* work,
                    int lwork, float* rwork, int lrwork, int* iwork, int liwork, int* info) {
    const char jobz = 'V';
    cheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info, 1, 1);
  }
  static void heevd(char uplo, int n, std::complex<double>* a, double* w,
                    std::complex<double>* work, int lwork, double* rwork, int lrwork, int* iwork,
                    int liwork, int* info) {
    const char jobz = 'V';
    zheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info, 1, 1);
  }
  static void gesdd(char jobz, int m, int n, std::complex<float>* a, float* s,
                    std::complex<float>* u, int ldu, std::complex<float>* vt, int ldvt,
                    std::complex<float>* work, int lwork, float* rwork, int* iwork, int* info) {
    cgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, 1);
  }
  static void gesdd(char jobz, int m, int n, std::complex<double>* a, double* s,
                    std::complex<double>* u, int ldu, std::complex<double>* vt, int ldvt,
                    std::complex<double>* work, int lwork, double* rwork, int* iwork, int* info) {
    zgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, 1);
  }
  // Real gees takes no rwork (the complex one's real workspace), complex gees no wi (its
  // eigenvalues are one complex array): each is here for one call in Gees.
  static void gees(char jobvs, int n, float* a, float* wr, float* wi, float* vs, int ldvs,
                   float* work, int lwork, float* /*rwork*/, int* sdim, int* info) {
    const char sort = 'N';
    sgees_(&jobvs, &sort, nullptr, &n, a, &n, sdim, wr, wi, vs, &ldvs, work, &lwork, nullptr, info,
           1, 1);
  }
  static void gees(char jobvs, int n, double* a, double* wr, double* wi, double* vs, int ldvs,
                   double* work, int lwork, double* /*rwork*/, int* sdim, int* info) {
    const char sort = 'N';
    dgees_(&jobvs, &sort, nullptr, &n, a, &n, sdim, wr, wi, vs, &ldvs, work, &lwork, nullptr, info,
           1, 1);
  }
  static void gtsv(int n, int nrhs, float* dl, float* d, float* du, float* b, int* info) {
    sgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
  }
  static void gtsv(int n, int nrhs, double* dl, double* d, double* du, double* b, int* info) {
    dgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
  }
  static void gtsv(int n, int nrhs, C64* dl, C64* d, C64* du, C64* b, int* info) {
    cgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
  }
  static void gtsv(int n, int nrhs, C128* dl, C128* d, C128* du, C128* b, int* info) {
    zgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
  }
  static void geev(char jobvl, char jobvr, int n, float* a, float* wr, float* wi, float* vl,
                   int ldvl, float* vr, int ldvr, float* work, int lwork, int* info) {
    sgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, vl, &ldvl, vr, &ldvr, work, &lwork, info, 1, 1);
  }
  static void geev(char jobvl, char jobvr, int n, double* a, double* wr, double* wi, double* vl,
                   int ldvl, double* vr, int ldvr, double* work, int lwork, int* info) {
    dgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, vl, &ldvl, vr, &ldvr, work, &lwork, info, 1, 1);
  }
  static void gehrd(int n, int ilo, int ihi, float* a, float* tau, float* work, int lwork,
                    int* info) {
    sgehrd_(&n, &ilo, &ihi, a, &n, tau, work, &lwork, info);
  }
  static void gehrd(int n, int ilo, int ihi, double* a, double* tau, double* work, int lwork,
                    int* info) {
    dgehrd_(&n, &ilo, &ihi, a, &n, tau, work, &lwork, info);
  }
  static void gehrd(int n, int ilo, int ihi, C64* a, C64* tau, C64* work, int lwork, int* info) {
    cgehrd_(&n, &ilo, &ihi, a, &n, tau, work, &lwork, info);
  }
  static void gehrd(int n, int ilo, int ihi, C128* a, C128* tau, C128* work, int lwork, int* info) {
    zgehrd_(&n, &ilo, &ihi, a, &n, tau, work, &lwork, info);
  }
  // Complex geev and gees: one eigenvalue array w, a real workspace rwork (2n and n).
  static void geev(char jobvl, char jobvr, int n, C64* a, C64* w, C64* vl, int ldvl, C64* vr,
                   int ldvr, C64* work, int lwork, float* rwork, int* info) {
    cgeev_(&jobvl, &jobvr, &n, a, &n, w, vl, &ldvl, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
  }
  static void geev(char jobvl, char jobvr, int n, C128* a, C128* w, C128* vl, int ldvl, C128* vr,
                   int ldvr, C128* work, int lwork, double* rwork, int* info) {
    zgeev_(&jobvl, &jobvr, &n, a, &n, w, vl, &ldvl, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
  }
  static void gees(char jobvs, int n, C64* a, C64* w, C64* /*wi*/, C64* vs, int ldvs, C64* work,
                   int lwork, float* rwork, int* sdim, int* info) {
    const char sort = 'N';
    cgees_(&jobvs, &sort, nullptr, &n, a, &n, sdim, w, vs, &ldvs, work, &lwork, rwork, nullptr,
           info, 1, 1);
  }
  static void gees(char jobvs, int n, C128* a, C128* w, C128* /*wi*/, C128* vs, int ldvs,
                   C128* work, int lwork, double* rwork, int* sdim, int* info) {
    const char sort = 'N';
    zgees_(&jobvs, &sort, nullptr, &n, a, &n, sdim, w, vs, &ldvs, work, &lwork, rwork, nullptr,
           info, 1, 1);
  }
  static void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m,
                   int n, const float* a, int lda, float* b) {
    cblas_strsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0f, a, lda, b, n);
  }
  static void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m,
                   int n, const double* a, int lda, double* b) {
    cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0, a, lda, b, n);
  }
  static void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m,
                   int n, const C64* a, int lda, C64* b) {
    const C64 one = 1;
    cblas_ctrsm(CblasRowMajor, side, uplo, trans, diag, m, n, &one, a, lda, b, n);
  }
  static void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m,
                   int n, const C128* a, int lda, C128* b) {
    const C128 one = 1;
    cblas_ztrsm(CblasRowMajor, side, uplo, trans, diag, m, n, &one, a, lda, b, n);
  }
};

// Row-major rows x cols <-> column-major (the same matrix, transposed storage).
template <typename T>
void ToColumnMajor(const T* in, int64_t rows, int64_t cols, T* out) {
  // In 16x16 tiles, so the reads and the writes each stay within a few cache lines: element by
  // element, the transposes were a quarter of a loop of 128x128 LU factorizations.
  constexpr int64_t kTile = 16;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) out[j * rows + i] = in[i * cols + j];
    }
}
template <typename T>
void FromColumnMajor(const T* in, int64_t rows, int64_t cols, T* out) {
  ToColumnMajor(in, cols, rows, out);  // `in` is the cols x rows transpose, row-major
}

char OtherTriangle(char uplo) { return uplo == 'U' ? 'L' : 'U'; }

template <typename T>
T* Data(Literal& l) {
  return l.data<T>().data();
}
template <typename T>
const T* Data(const Literal& l) {
  return l.data<T>().data();
}

// Calls fn(lo, hi) over ranges of a batch's matrices, spread over the pool when there are
// several of at least 16^3 multiply-adds each: 256 16x16 SVDs 2.3 -> 1.1 ms. Smaller ones stay
// on the calling thread: OpenBLAS's LAPACK takes a lock per call, and 4096 4x4 solves on two
// threads took 2.5-2.8 ms against 1.05 on one.
void OverBatch(ThreadPool* pool, const Batch& b, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kParallelMatrixWork = 16 * 16 * 16;
  const bool large = b.rows * b.cols * std::min(b.rows, b.cols) >= kParallelMatrixWork;
  if (pool == nullptr || pool->size() <= 1 || b.count < 2 || !large) return fn(0, b.count);
  pool->ParallelFor(b.count, fn);
}

// The workspace size a routine asked for in a query (lwork = -1), at least 1.
template <typename T>
int WorkSize(T query) {
  return std::max(1, static_cast<int>(std::real(query)));
}

template <typename T>
void Getrf(const Literal& a, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t k = std::min(b.rows, b.cols), size = b.rows * b.cols;
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size);
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, b.rows, b.cols, col.data());
      Lapack::getrf(b.rows, b.cols, col.data(), Data<int32_t>(out.elements()[1]) + i * k,
                    Data<int32_t>(out.elements()[2]) + i);
      FromColumnMajor(col.data(), b.rows, b.cols, Data<T>(out.elements()[0]) + i * size);
    }
  });
}

template <typename T>
void Potrf(const Literal& a, char uplo, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t size = b.rows * b.cols;
  T* f = Data<T>(out.elements()[0]);
  std::copy_n(Data<T>(a), b.count * size, f);
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      Lapack::potrf(OtherTriangle(uplo), b.rows, f + i * size,
                    Data<int32_t>(out.elements()[1]) + i);
  });
}

template <typename T>
void Geqrf(const Literal& a, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t k = std::min(b.rows, b.cols), size = b.rows * b.cols;
  T query = 0;
  {
    std::vector<T> col(size);
    int info = 0;
    Lapack::geqrf(b.rows, b.cols, col.data(), Data<T>(out.elements()[1]), &query, -1, &info);
  }
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), work(WorkSize(query));
    int info = 0;
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, b.rows, b.cols, col.data());
      Lapack::geqrf(b.rows, b.cols, col.data(), Data<T>(out.elements()[1]) + i * k, work.data(),
                    work.size(), &info);
      FromColumnMajor(col.data(), b.rows, b.cols, Data<T>(out.elements()[0]) + i * size);
    }
  });
}

template <typename T>
void Orgqr(const Literal& a, const Literal& tau, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t k = tau.shape().dimensions(tau.shape().rank() - 1), size = b.rows * b.cols;
  T query = 0;
  {
    std::vector<T> col(size);
    int info = 0;
    Lapack::orgqr(b.rows, b.cols, k, col.data(), Data<T>(tau), &query, -1, &info);
  }
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), work(WorkSize(query));
    int info = 0;
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, b.rows, b.cols, col.data());
      Lapack::orgqr(b.rows, b.cols, k, col.data(), Data<T>(tau) + i * k, work.data(), work.size(),
                    &info);
      FromColumnMajor(col.data(), b.rows, b.cols, Data<T>(out) + i * size);
    }
  });
}

template <typename T>
void Syevd(const Literal& a, char uplo, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t n = b.rows, size = n * n;
  T query = 0;
  int iquery = 0;
  {
    std::vector<T> col(size);
    int info = 0;
    Lapack::syevd(OtherTriangle(uplo), n, col.data(), Data<T>(out.elements()[1]), &query, -1,
                  &iquery, -1, &info);
  }
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), work(WorkSize(query));
    std::vector<int> iwork(std::max(1, iquery));
    for (int64_t i = lo; i < hi; ++i) {
      std::copy_n(Data<T>(a) + i * size, size, col.data());  // column-major: the transpose
      Lapack::syevd(OtherTriangle(uplo), n, col.data(), Data<T>(out.elements()[1]) + i * n,
                    work.data(), work.size(), iwork.data(), iwork.size(),
                    Data<int32_t>(out.elements()[2]) + i);
      FromColumnMajor(col.data(), n, n, Data<T>(out.elements()[0]) + i * size);
    }
  });
}

// gesdd on the column-major copy of each matrix, as XLA's FFI calls it (LAPACK factors a tall
// matrix by QR first; the row-major A read column-major as it stands is the transpose, wide,
// and took 1.5x as long for a complex 256x64); U and V^T come back column-major. Complex
// gesdd also takes a real workspace.
template <typename T>
void Gesdd(const Literal& a, char mode, Literal& out, ThreadPool* pool) {
  using R = decltype(std::abs(T()));  // the singular values' type
  const Batch b = BatchOf(a.shape());
  const int64_t m = b.rows, n = b.cols, k = std::min(m, n), size = m * n;
  const bool vectors = mode != 'N';
  const int64_t u_cols = mode == 'A' ? m : k, vt_rows = mode == 'A' ? n : k;
  const int ldu = m, ldvt = std::max<int64_t>(vt_rows, 1);
  const int64_t u_size = vectors ? m * u_cols : 1, vt_size = vectors ? vt_rows * n : 1;
  const int64_t mx = std::max(m, n);
  const int64_t rwork_size = std::is_same_v<T, R> ? 1
                             : vectors ? std::max(5 * k * k + 5 * k, 2 * mx * k + 2 * k * k + k)
                                       : 7 * k;
  std::vector<T> col(size), dummy(1);
  std::vector<R> rwork(std::max<int64_t>(rwork_size, 1));
  std::vector<int> iwork(8 * std::max<int64_t>(k, 1));
  T query = 0;
  int info = 0;
  Lapack::gesdd(mode, m, n, col.data(), Data<R>(out.elements()[1]), dummy.data(), ldu, dummy.data(),
                ldvt, &query, -1, rwork.data(), iwork.data(), &info);
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), u(u_size), vt(vt_size), work(WorkSize(std::real(query)));
    std::vector<R> rwork(std::max<int64_t>(rwork_size, 1));
    std::vector<int> iwork(8 * std::max<int64_t>(k, 1));
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, m, n, col.data());
      Lapack::gesdd(mode, m, n, col.data(), Data<R>(out.elements()[1]) + i * k, u.data(), ldu,
                    vt.data(), ldvt, work.data(), work.size(), rwork.data(), iwork.data(),
                    Data<int32_t>(out.elements()[4]) + i);
      if (!vectors) continue;
      FromColumnMajor(u.data(), m, u_cols, Data<T>(out.elements()[2]) + i * u_size);
      FromColumnMajor(vt.data(), vt_rows, n, Data<T>(out.elements()[3]) + i * vt_size);
    }
  });
}

// heevd on each Hermitian matrix: read column-major and conjugated, the row-major A is A^H = A
// with its stored triangle on the other side; the eigenvectors come back column-major.
template <typename T>
void Heevd(const Literal& a, char uplo, Literal& out, ThreadPool* pool) {
  using R = typename T::value_type;
  const Batch b = BatchOf(a.shape());
  const int64_t n = b.rows, size = n * n;
  T query = 0;
  R rquery = 0;
  int iquery = 0;
  {
    std::vector<T> col(size);
    int info = 0;
    Lapack::heevd(OtherTriangle(uplo), n, col.data(), Data<R>(out.elements()[1]), &query, -1,
                  &rquery, -1, &iquery, -1, &info);
  }
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), work(WorkSize(query.real()));
    std::vector<R> rwork(WorkSize(rquery));
    std::vector<int> iwork(std::max(1, iquery));
    for (int64_t i = lo; i < hi; ++i) {
      const T* m = Data<T>(a) + i * size;
      for (int64_t e = 0; e < size; ++e) col[e] = std::conj(m[e]);
      Lapack::heevd(OtherTriangle(uplo), n, col.data(), Data<R>(out.elements()[1]) + i * n,
                    work.data(), work.size(), rwork.data(), rwork.size(), iwork.data(),
                    iwork.size(), Data<int32_t>(out.elements()[2]) + i);
      FromColumnMajor(col.data(), n, n, Data<T>(out.elements()[0]) + i * size);
    }
  });
}

// The complex routines cpu-llvm calls LAPACK for (the others stay on the evaluator).

// LAPACK's real eigenvectors (column-major: column j is vector j, and a conjugate pair's
// first column holds the real part, the next the imaginary part) as complex columns of the
// row-major n x n `out`, as XLA's FFI unpacks them.
template <typename T>
void UnpackEigenvectors(const T* packed, const T* wi, int64_t n, std::complex<T>* out) {
  for (int64_t j = 0; j < n; ++j) {
    const T* re = packed + j * n;
    if (wi[j] == 0 || j + 1 == n) {
      for (int64_t i = 0; i < n; ++i) out[i * n + j] = std::complex<T>(re[i], 0);
      continue;
    }
    const T* im = re + n;
    for (int64_t i = 0; i < n; ++i) {
      out[i * n + j] = std::complex<T>(re[i], im[i]);
      out[i * n + j + 1] = std::complex<T>(re[i], -im[i]);
    }
    ++j;
  }
}

// Eigenvalues (wr, wi) and the left and right eigenvectors asked for (complex; zero when
// not), LAPACK's geev on the column-major copy of each matrix.
template <typename T>
void Geev(const Literal& a, char left, char right, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t n = b.rows, size = n * n;
  const int ldvl = left == 'V' ? n : 1, ldvr = right == 'V' ? n : 1;
  T query = 0;
  {
    std::vector<T> col(size), wr(n), wi(n), vl(size), vr(size);
    int info = 0;
    Lapack::geev(left, right, n, col.data(), wr.data(), wi.data(), vl.data(), ldvl, vr.data(), ldvr,
                 &query, -1, &info);
  }
  auto* vl_out = Data<std::complex<T>>(out.elements()[2]);
  auto* vr_out = Data<std::complex<T>>(out.elements()[3]);
  std::fill_n(vl_out, b.count * size, std::complex<T>(0));
  std::fill_n(vr_out, b.count * size, std::complex<T>(0));
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), vl(left == 'V' ? size : 1), vr(right == 'V' ? size : 1),
        work(WorkSize(query));
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, n, n, col.data());
      T* wr = Data<T>(out.elements()[0]) + i * n;
      T* wi = Data<T>(out.elements()[1]) + i * n;
      // geev can loop forever on NaN or infinity: such a matrix gets info -4 and no call, as
      // XLA's FFI does it (JAX then gives NaNs).
      if (!std::all_of(col.begin(), col.end(), [](T x) { return std::isfinite(x); })) {
        std::fill_n(wr, n, T(0));
        std::fill_n(wi, n, T(0));
        Data<int32_t>(out.elements()[4])[i] = -4;
        continue;
      }
      Lapack::geev(left, right, n, col.data(), wr, wi, vl.data(), ldvl, vr.data(), ldvr,
                   work.data(), work.size(), Data<int32_t>(out.elements()[4]) + i);
      if (left == 'V') UnpackEigenvectors(vl.data(), wi, n, vl_out + i * size);
      if (right == 'V') UnpackEigenvectors(vr.data(), wi, n, vr_out + i * size);
    }
  });
}

// The Schur form A = Z T Z^H (jax.scipy.linalg.schur, sqrtm's complex one) by LAPACK's gees,
// unsorted, on the column-major copy of each matrix, so T and Z are XLA's; Z zero when `mode`
// is 'N'. Real eigenvalues come as two outputs (wr, wi), complex ones as one (w): sdim and
// info follow them.
template <typename T>
void Gees(const Literal& a, char mode, Literal& out, ThreadPool* pool) {
  using R = decltype(std::abs(T()));
  constexpr int kValues = std::is_same_v<T, R> ? 2 : 1;
  const Batch b = BatchOf(a.shape());
  const int64_t n = b.rows, size = n * n;
  const char jobvs = mode == 'V' ? 'V' : 'N';
  T query = 0;
  {
    std::vector<T> col(size), w(n), wi(n), vs(size);
    std::vector<R> rwork(n);
    int sdim = 0, info = 0;
    Lapack::gees(jobvs, n, col.data(), w.data(), wi.data(), vs.data(), n, &query, -1, rwork.data(),
                 &sdim, &info);
  }
  std::fill_n(Data<T>(out.elements()[1]), b.count * size, T(0));
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), vs(size), work(WorkSize(query));
    std::vector<R> rwork(n);
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, n, n, col.data());
      T* wi = kValues == 2 ? Data<T>(out.elements()[3]) + i * n : nullptr;
      Lapack::gees(jobvs, n, col.data(), Data<T>(out.elements()[2]) + i * n, wi, vs.data(), n,
                   work.data(), work.size(), rwork.data(),
                   Data<int32_t>(out.elements()[2 + kValues]) + i,
                   Data<int32_t>(out.elements()[3 + kValues]) + i);
      FromColumnMajor(col.data(), n, n, Data<T>(out.elements()[0]) + i * size);
      if (jobvs == 'V') FromColumnMajor(vs.data(), n, n, Data<T>(out.elements()[1]) + i * size);
    }
  });
}

// The Hessenberg form (jax.scipy.linalg.hessenberg): LAPACK's gehrd over rows and columns
// [low, high] (1-based) of the column-major copy; its reflectors below the subdiagonal.
template <typename T>
void Gehrd(const Literal& a, int low, int high, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(a.shape());
  const int64_t n = b.rows, size = n * n, k = std::max<int64_t>(n - 1, 0);
  T query = 0;
  {
    std::vector<T> col(size), tau(std::max<int64_t>(k, 1));
    int info = 0;
    Lapack::gehrd(n, low, high, col.data(), tau.data(), &query, -1, &info);
  }
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), tau(std::max<int64_t>(k, 1)), work(WorkSize(query));
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, n, n, col.data());
      Lapack::gehrd(n, low, high, col.data(), tau.data(), work.data(), work.size(),
                    Data<int32_t>(out.elements()[2]) + i);
      FromColumnMajor(col.data(), n, n, Data<T>(out.elements()[0]) + i * size);
      std::copy_n(tau.data(), k, Data<T>(out.elements()[1]) + i * k);
    }
  });
}

// Complex eigenvalues and the left and right eigenvectors asked for (jnp.linalg.eig of a
// complex matrix), LAPACK's geev on the column-major copy; zero vectors when not asked for.
template <typename T>
void ComplexGeev(const Literal& a, char left, char right, Literal& out, ThreadPool* pool) {
  using R = decltype(std::abs(T()));
  const Batch b = BatchOf(a.shape());
  const int64_t n = b.rows, size = n * n;
  const int ldvl = left == 'V' ? n : 1, ldvr = right == 'V' ? n : 1;
  T query = 0;
  {
    std::vector<T> col(size), w(n), vl(size), vr(size);
    std::vector<R> rwork(2 * n);
    int info = 0;
    Lapack::geev(left, right, n, col.data(), w.data(), vl.data(), ldvl, vr.data(), ldvr, &query, -1,
                 rwork.data(), &info);
  }
  T* vl_out = Data<T>(out.elements()[1]);
  T* vr_out = Data<T>(out.elements()[2]);
  std::fill_n(vl_out, b.count * size, T(0));
  std::fill_n(vr_out, b.count * size, T(0));
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(size), vl(left == 'V' ? size : 1), vr(right == 'V' ? size : 1),
        work(WorkSize(query));
    std::vector<R> rwork(2 * n);
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(a) + i * size, n, n, col.data());
      T* w = Data<T>(out.elements()[0]) + i * n;
      // As the real geev: no call on NaN or infinity (it can loop forever), info -4.
      if (!std::all_of(col.begin(), col.end(), [](T x) { return std::isfinite(std::abs(x)); })) {
        std::fill_n(w, n, T(0));
        Data<int32_t>(out.elements()[3])[i] = -4;
        continue;
      }
      Lapack::geev(left, right, n, col.data(), w, vl.data(), ldvl, vr.data(), ldvr, work.data(),
                   work.size(), rwork.data(), Data<int32_t>(out.elements()[3]) + i);
      if (left == 'V') FromColumnMajor(vl.data(), n, n, vl_out + i * size);
      if (right == 'V') FromColumnMajor(vr.data(), n, n, vr_out + i * size);
    }
  });
}

// Tridiagonal A X = B: JAX's diagonals (dl[0] and du[m-1] unused; LAPACK's DL starts at
// dl[1]) and B copied into the outputs, which LAPACK overwrites with its factors and X.
template <typename T>
void Gtsv(std::span<const Literal* const> operands, Literal& out, ThreadPool* pool) {
  const Batch b = BatchOf(operands[3]->shape());
  const int64_t m = b.rows, nrhs = b.cols;
  T* diagonals[3];
  for (int k = 0; k < 3; ++k) {
    diagonals[k] = Data<T>(out.elements()[k]);
    std::copy_n(Data<T>(*operands[k]), b.count * m, diagonals[k]);
  }
  OverBatch(pool, b, [&](int64_t lo, int64_t hi) {
    std::vector<T> col(m * nrhs);
    for (int64_t i = lo; i < hi; ++i) {
      ToColumnMajor(Data<T>(*operands[3]) + i * m * nrhs, m, nrhs, col.data());
      Lapack::gtsv(m, nrhs, diagonals[0] + i * m + 1, diagonals[1] + i * m, diagonals[2] + i * m,
                   col.data(), Data<int32_t>(out.elements()[4]) + i);
      FromColumnMajor(col.data(), m, nrhs, Data<T>(out.elements()[3]) + i * m * nrhs);
    }
  });
}

// op(A) X = B (left) or X op(A) = B, A's other triangle unread, into out (a copy of B).
template <typename T>
void Trsm(const Literal& a, const Literal& rhs, bool left, bool lower, char trans,
          bool unit_diagonal, Literal& out, ThreadPool* pool) {
  const Batch ab = BatchOf(a.shape()), bb = BatchOf(rhs.shape());
  const int64_t a_size = ab.rows * ab.cols, b_size = bb.rows * bb.cols;
  T* x = Data<T>(out);
  std::copy_n(Data<T>(rhs), bb.count * b_size, x);
  OverBatch(pool, bb, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      Lapack::trsm(left ? CblasLeft : CblasRight, lower ? CblasLower : CblasUpper,
                   trans == 'N'   ? CblasNoTrans
                   : trans == 'C' ? CblasConjTrans
                                  : CblasTrans,
                   unit_diagonal ? CblasUnit : CblasNonUnit, bb.rows, bb.cols,
                   Data<T>(a) + i * a_size, ab.cols, x + i * b_size);
  });
}

template <typename T>
void Run(const LapackCall& call, std::span<const Literal* const> operands, Literal& out,
         ThreadPool* pool) {
  const Literal& a = *operands[0];
  switch (call.routine) {
    case LapackRoutine::kGetrf:
      return Getrf<T>(a, out, pool);
    case LapackRoutine::kPotrf:
      return Potrf<T>(a, call.uplo, out, pool);
    case LapackRoutine::kGeqrf:
      return Geqrf<T>(a, out, pool);
    case LapackRoutine::kOrgqr:
      return Orgqr<T>(a, *operands[1], out, pool);
    case LapackRoutine::kGesdd:
      return Gesdd<T>(a, call.mode, out, pool);
    case LapackRoutine::kTrsm:
      return Trsm<T>(a, *operands[1], call.left, call.lower, call.trans, call.unit_diagonal, out,
                     pool);
    case LapackRoutine::kGehrd:
      return Gehrd<T>(a, static_cast<int>(call.low),
                      static_cast<int>(call.high >= 0 ? call.high : BatchOf(a.shape()).rows), out,
                      pool);
    case LapackRoutine::kGtsv:
      return Gtsv<T>(operands, out, pool);
    case LapackRoutine::kGees:
      return Gees<T>(a, call.mode, out, pool);
    case LapackRoutine::kSyevd:
    case LapackRoutine::kHeevd:
    case LapackRoutine::kGeev:
      break;
  }
  if constexpr (!std::is_floating_point_v<T>) {  // complex
    if (call.routine == LapackRoutine::kHeevd) Heevd<T>(a, call.uplo, out, pool);
    if (call.routine == LapackRoutine::kGeev)
      ComplexGeev<T>(a, call.compute_left, call.compute_right, out, pool);
  } else {
    if (call.routine == LapackRoutine::kSyevd) Syevd<T>(a, call.uplo, out, pool);
    if (call.routine == LapackRoutine::kGeev)
      Geev<T>(a, call.compute_left, call.compute_right, out, pool);
  }
}

std::optional<LapackRoutine> RoutineNamed(std::string_view r) {
  static const std::pair<std::string_view, LapackRoutine> kNames[] = {
      {"getrf", LapackRoutine::kGetrf},
      {"potrf", LapackRoutine::kPotrf},
      {"geqrf", LapackRoutine::kGeqrf},
      {"orgqr", LapackRoutine::kOrgqr},
      {"syevd", LapackRoutine::kSyevd},
      {"heevd", LapackRoutine::kHeevd},
      {"gesdd", LapackRoutine::kGesdd},
      {"trsm", LapackRoutine::kTrsm},
      {"triangular-solve", LapackRoutine::kTrsm},
      {"gehrd", LapackRoutine::kGehrd},
      {"gtsv", LapackRoutine::kGtsv},
      {"gees", LapackRoutine::kGees},
      {"geev", LapackRoutine::kGeev}};
  for (const auto& [name, routine] : kNames)
    if (name == r) return routine;
  return std::nullopt;
}

// The routine's flags from the instruction (its backend_config, or triangular-solve's
// attributes).
LapackCall CallOf(const HloInstruction& h, LapackRoutine routine) {
  LapackCall c;
  c.routine = routine;
  if (h.opcode() == HloOpcode::kTriangularSolve) {
    const InstructionAttributes& at = h.attrs();
    c.trans = at.transpose_a == TriangularSolveTranspose::kNoTranspose ? 'N'
              : at.transpose_a == TriangularSolveTranspose::kAdjoint   ? 'C'
                                                                       : 'T';
    c.left = at.left_side;
    c.lower = at.lower;
    c.unit_diagonal = at.unit_diagonal;
    return c;
  }
  const auto flags = eval::LapackAttributes(h);
  c.uplo = eval::LapackFlag(flags, "uplo", 'L');
  c.mode = eval::LapackFlag(flags, "mode", routine == LapackRoutine::kGees ? 'V' : 'A');
  c.trans = eval::LapackFlag(flags, "trans_x", 'N');
  c.left = eval::LapackFlag(flags, "side", 'L') == 'L';
  c.lower = c.uplo == 'L';
  c.unit_diagonal = eval::LapackFlag(flags, "diag", 'N') == 'U';
  c.compute_left = eval::LapackFlag(flags, "compute_left", 'N');
  c.compute_right = eval::LapackFlag(flags, "compute_right", 'N');
  if (const auto low = flags.find("low"); low != flags.end()) c.low = low->second;
  if (const auto high = flags.find("high"); high != flags.end()) c.high = high->second;
  return c;
}

// Whether `routine`, as `h` calls it with the flags of `call`, has operand and result shapes it
// takes.
bool ShapesFit(const HloInstruction& h, std::string_view routine, const LapackCall& call) {
  if (h.operand_count() == 0) return false;
  std::vector<const Shape*> ops;
  for (const HloInstruction* o : h.operands()) {
    const Shape& s = o->shape();
    // Empty matrices stay with the evaluator: LAPACK rejects a leading dimension of 0.
    if (!s.IsArray() || s.is_dynamic() || s.num_elements() == 0 || !FitsLapackInt(s)) return false;
    ops.push_back(&s);
  }
  const Shape& a = *ops[0];
  const PrimitiveType t = a.element_type();
  const bool complex = t == PrimitiveType::C64 || t == PrimitiveType::C128;
  // Complex: every routine has a complex LAPACK call here (JAX's complex solve, inv, qr,
  // cholesky, slogdet, eigh, svd, eig, schur, hessenberg, tridiagonal_solve) but syevd, whose
  // complex form is heevd.
  const bool complex_routine = call.routine != LapackRoutine::kSyevd;
  if (complex ? !complex_routine : t != PrimitiveType::F32 && t != PrimitiveType::F64) return false;
  if (h.opcode() == HloOpcode::kCustomCall) {
    const char type = h.attrs().custom_call_target[std::string_view("lapack_").size()];
    const char want = t == PrimitiveType::F32   ? 's'
                      : t == PrimitiveType::F64 ? 'd'
                      : t == PrimitiveType::C64 ? 'c'
                                                : 'z';
    if (type != want) return false;
  }
  if (routine == "gtsv") return IsGtsv(h, ops);
  if (a.rank() < 2) return false;
  const char mode = call.mode;
  if (call.routine == LapackRoutine::kTrsm) {
    const Shape& b = *ops[1];
    const int64_t order = a.dimensions(a.rank() - 1);
    if (b.element_type() != t || b.rank() != a.rank() || a.dimensions(a.rank() - 2) != order ||
        !std::equal(a.dimensions().begin(), a.dimensions().end() - 2, b.dimensions().begin()) ||
        b.dimensions(b.rank() - (call.left ? 2 : 1)) != order)
      return false;
  }
  // gehrd: LAPACK wants 1 <= low <= high <= n (the evaluator says why not).
  if (call.routine == LapackRoutine::kGehrd) {
    const int64_t n = a.dimensions(a.rank() - 1);
    const int64_t lo = call.low, hi = call.high >= 0 ? call.high : n;
    if (lo < 1 || hi > n || lo > std::max<int64_t>(hi, 1)) return false;
  }
  const std::vector<Shape> expected = ExpectedResults(routine, mode, ops);
  if (expected.empty()) return false;
  if (expected.size() == 1 && !h.shape().IsTuple()) return h.shape().Compatible(expected[0]);
  if (!h.shape().IsTuple() || h.shape().tuple_size() != static_cast<int>(expected.size()))
    return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Shape& got = h.shape().tuple_shapes(i);
    const bool free_vectors = routine == "gesdd" && mode == 'N' && (i == 2 || i == 3);
    if (free_vectors ? !got.IsArray() : !got.Compatible(expected[i])) return false;
  }
  return true;
}

#endif  // KILN_HAVE_OPENBLAS

}  // namespace

std::optional<LapackCall> PrepareLapackCall(const HloInstruction& h) {
#if KILN_HAVE_OPENBLAS
  const std::string_view routine = RoutineOf(h);
  const std::optional<LapackRoutine> known = RoutineNamed(routine);
  if (!known) return std::nullopt;
  const LapackCall call = CallOf(h, *known);
  if (!ShapesFit(h, routine, call)) return std::nullopt;
  return call;
#else
  (void)h;
  return std::nullopt;
#endif
}

bool IsLapackLibraryCall(const HloInstruction& h) { return PrepareLapackCall(h).has_value(); }

void RunLapackLibrary(const LapackCall& call, std::span<const Literal* const> operands,
                      Literal& out, ThreadPool* pool) {
#if KILN_HAVE_OPENBLAS
  switch (operands[0]->shape().element_type()) {
    case PrimitiveType::F32:
      return Run<float>(call, operands, out, pool);
    case PrimitiveType::C64:
      return Run<std::complex<float>>(call, operands, out, pool);
    case PrimitiveType::C128:
      return Run<std::complex<double>>(call, operands, out, pool);
    default:
      return Run<double>(call, operands, out, pool);
  }
#else
  (void)call;
  (void)operands;
  (void)out;
  (void)pool;
#endif
}

absl::Status RunLapackLibrary(const HloInstruction& h, std::span<const Literal* const> operands,
                              Literal& out, ThreadPool* pool) {
  const std::optional<LapackCall> call = PrepareLapackCall(h);
  if (!call || operands.size() != static_cast<size_t>(h.operand_count()))
    return absl::InternalError(absl::StrCat("%", h.name(), " is not a LAPACK library call"));
  RunLapackLibrary(*call, operands, out, pool);
  return absl::OkStatus();
}

}  // namespace kiln::cpu
