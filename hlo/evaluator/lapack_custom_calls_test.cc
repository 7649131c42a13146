// JAX's LAPACK custom-calls on the evaluator against hand-computed factorizations (the JAX
// programs suite compares them with XLA:CPU as well).
#include "hlo/evaluator/lapack_custom_calls.h"

#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/kernel_test_util.h"

namespace kiln::eval {
namespace {

using testing::ExpectValues;
using testing::F32;
using testing::Lit;

std::unique_ptr<HloInstruction> CustomCall(const std::string& target, Shape shape,
                                           std::string backend_config) {
  auto cc = std::make_unique<HloInstruction>(HloOpcode::kCustomCall, std::move(shape));
  cc->mutable_attrs().custom_call_target = target;
  if (!backend_config.empty()) cc->mutable_attrs().SetExtra("backend_config", backend_config);
  return cc;
}

TEST(LapackCustomCallTest, TargetsItRuns) {
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgetrf_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_zpotrf_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_dtrsm_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgeqrf_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_cungqr_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_ssyevd_ffi"));
  EXPECT_FALSE(IsLapackCustomCall("lapack_cheevd_ffi"));  // complex eigh: not yet
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgesdd_ffi"));
  EXPECT_FALSE(IsLapackCustomCall("lapack_cgesdd_ffi"));  // complex svd: not yet
  EXPECT_FALSE(IsLapackCustomCall("lapack_xgetrf_ffi"));
  EXPECT_FALSE(IsLapackCustomCall("TopK"));
}

// [[0, 1], [2, 3]]: the pivot swaps the rows; LU = [[2, 3], [0, 1]], ipiv = [2, 2].
// A singular [[1, 2], [2, 4]]: L21 = 2, U22 = 0, info = 2 (the 1-based zero pivot).
TEST(LapackCustomCallTest, GetrfPivotsAndReportsZeroPivots) {
  Shape out = Shape::Tuple({Shape(PrimitiveType::F32, {2, 2}), Shape(PrimitiveType::S32, {2}),
                            Shape(PrimitiveType::S32, {})});
  auto lu = CustomCall("lapack_sgetrf_ffi", out, "{}");
  Literal a = F32({2, 2}, {0, 1, 2, 3});
  auto r = EvalLapackCustomCall(*lu, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 2}, {2, 3, 0, 1});
  ExpectValues(r->element(1), {2}, {2, 2});
  ExpectValues(r->element(2), {}, {0});

  Literal s = F32({2, 2}, {1, 2, 2, 4});
  r = EvalLapackCustomCall(*lu, std::vector<const Literal*>{&s});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 2}, {2, 4, 0.5, 0});
  ExpectValues(r->element(2), {}, {2});
}

// [[2, 1], [1, 2]] (only the lower triangle read: the upper holds junk) has eigenvalues 1 and
// 3 with eigenvectors (1, -1) and (1, 1) / sqrt 2; a random symmetric 7x7 batch of two gives
// A V = V diag(w) with V orthonormal and w ascending.
TEST(LapackCustomCallTest, SyevdEigenvaluesAndVectors) {
  Shape out = Shape::Tuple({Shape(PrimitiveType::F64, {2, 2}), Shape(PrimitiveType::F64, {2}),
                            Shape(PrimitiveType::S32, {})});
  auto eig = CustomCall("lapack_dsyevd_ffi", out, "{mode = 86 : ui8, uplo = 76 : ui8}");
  Literal a = Lit(PrimitiveType::F64, {2, 2}, {2, 99, 1, 2});
  auto r = EvalLapackCustomCall(*eig, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->element(1).GetAsDouble(0), 1, 1e-12);
  EXPECT_NEAR(r->element(1).GetAsDouble(1), 3, 1e-12);
  const double h = std::sqrt(0.5);
  EXPECT_NEAR(std::abs(r->element(0).GetAsDouble(0)), h, 1e-12);                    // v[0][0]
  EXPECT_NEAR(r->element(0).GetAsDouble(0), -r->element(0).GetAsDouble(2), 1e-12);  // (1, -1)
  EXPECT_NEAR(r->element(0).GetAsDouble(1), r->element(0).GetAsDouble(3), 1e-12);   // (1, 1)
  ExpectValues(r->element(2), {}, {0});

  const int n = 7;
  std::vector<double> m(2 * n * n);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j)
        m[b * n * n + i * n + j] = m[b * n * n + j * n + i] = std::sin(1.0 + b + 3 * i + 7 * j);
  Literal batch = Lit(PrimitiveType::F64, {2, n, n}, m);
  Shape bout = Shape::Tuple({Shape(PrimitiveType::F64, {2, n, n}),
                             Shape(PrimitiveType::F64, {2, n}), Shape(PrimitiveType::S32, {2})});
  auto beig = CustomCall("lapack_dsyevd_ffi", bout, "{mode = 86 : ui8, uplo = 76 : ui8}");
  r = EvalLapackCustomCall(*beig, std::vector<const Literal*>{&batch});
  ASSERT_TRUE(r.ok()) << r.status();
  for (int b = 0; b < 2; ++b) {
    auto V = [&](int i, int k) { return r->element(0).GetAsDouble(b * n * n + i * n + k); };
    auto w = [&](int k) { return r->element(1).GetAsDouble(b * n + k); };
    for (int k = 0; k + 1 < n; ++k) EXPECT_LE(w(k), w(k + 1));
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        double av = 0, vtv = 0;
        for (int j = 0; j < n; ++j) {
          av += m[b * n * n + i * n + j] * V(j, k);
          vtv += V(j, i) * V(j, k);
        }
        EXPECT_NEAR(av, w(k) * V(i, k), 1e-10) << b << " " << i << " " << k;
        EXPECT_NEAR(vtv, i == k ? 1 : 0, 1e-10);
      }
  }
}

// [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]]; the upper triangle keeps the input.
TEST(LapackCustomCallTest, PotrfLowerAndNotPositiveDefinite) {
  Shape out = Shape::Tuple({Shape(PrimitiveType::F32, {2, 2}), Shape(PrimitiveType::S32, {})});
  auto chol = CustomCall("lapack_spotrf_ffi", out, "{uplo = 76 : ui8}");
  Literal a = F32({2, 2}, {4, 2, 2, 5});
  auto r = EvalLapackCustomCall(*chol, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 2}, {2, 2, 1, 2});
  ExpectValues(r->element(1), {}, {0});
  Literal neg = F32({2, 2}, {-4, 2, 2, 5});
  r = EvalLapackCustomCall(*chol, std::vector<const Literal*>{&neg});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(1), {}, {1});
}

// U = [[2, 1], [0, 4]], B = [[4], [8]]: U X = B gives X = [[1], [2]]; with trans_x = 'T'
// and diag = 'U' (U^T with ones on the diagonal) X = [[4], [4]].
TEST(LapackCustomCallTest, TrsmFlags) {
  Literal u = F32({2, 2}, {2, 1, 0, 4});
  Literal b = F32({2, 1}, {4, 8});
  auto plain = CustomCall("lapack_strsm_ffi", Shape(PrimitiveType::F32, {2, 1}),
                          "{diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, "
                          "uplo = 85 : ui8}");
  auto r = EvalLapackCustomCall(*plain, std::vector<const Literal*>{&u, &b});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 1}, {1, 2});
  auto unit_t = CustomCall("lapack_strsm_ffi", Shape(PrimitiveType::F32, {2, 1}),
                           "{diag = 85 : ui8, side = 76 : ui8, trans_x = 84 : ui8, "
                           "uplo = 85 : ui8}");
  r = EvalLapackCustomCall(*unit_t, std::vector<const Literal*>{&u, &b});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 1}, {4, 4});
}

// A = [[3], [4]]: LAPACK's reflector gives beta = -5 (R), tau = (beta - 3) / beta = 1.6 and
// v = (1, 4 / (3 - beta)) = (1, 0.5); Q = (I - tau v v^T) e1 = (-0.6, -0.8), so Q R = A.
TEST(LapackCustomCallTest, GeqrfAndOrgqrFollowLapacksReflectors) {
  Shape qr_shape =
      Shape::Tuple({Shape(PrimitiveType::F32, {2, 1}), Shape(PrimitiveType::F32, {1})});
  auto geqrf = CustomCall("lapack_sgeqrf_ffi", qr_shape, "{}");
  Literal a = F32({2, 1}, {3, 4});
  auto r = EvalLapackCustomCall(*geqrf, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 1}, {-5, 0.5});
  ExpectValues(r->element(1), {1}, {1.6}, 1e-6);
  auto orgqr = CustomCall("lapack_sorgqr_ffi", Shape(PrimitiveType::F32, {2, 1}), "{}");
  auto q =
      EvalLapackCustomCall(*orgqr, std::vector<const Literal*>{&r->element(0), &r->element(1)});
  ASSERT_TRUE(q.ok()) << q.status();
  ExpectValues(*q, {2, 1}, {-0.6, -0.8}, 1e-6);
}

// [[3, 0], [4, 5]]: A^T A = [[25, 20], [20, 25]], so s = (sqrt 45, sqrt 5) and, full, u and
// vt reconstruct A. A wide rank-1 2x3 outer product (1, 2)^T (1, 0, 1) has s = (sqrt 10, 0);
// with full matrices the zero singular value's u column and vt's other rows complete
// orthonormal bases. Mode 'N' gives the values alone.
TEST(LapackCustomCallTest, GesddValuesVectorsAndCompletedBases) {
  auto svd = [](Shape a, int64_t ucols, int64_t vtrows, int mode) {
    const int64_t m = a.dimensions(0), n = a.dimensions(1);
    Shape out = Shape::Tuple(
        {a, Shape(PrimitiveType::F64, {std::min(m, n)}), Shape(PrimitiveType::F64, {m, ucols}),
         Shape(PrimitiveType::F64, {vtrows, n}), Shape(PrimitiveType::S32, {})});
    return CustomCall("lapack_dgesdd_ffi", out, "{mode = " + std::to_string(mode) + " : ui8}");
  };
  // u s vt == a, u^T u == I, vt vt^T == I.
  auto check = [](const Literal& r, const std::vector<double>& a, int64_t m, int64_t n) {
    const Literal &s = r.element(1), &u = r.element(2), &vt = r.element(3);
    const int64_t uc = u.shape().dimensions(1), vr = vt.shape().dimensions(0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double x = 0;
        for (int64_t k = 0; k < std::min(m, n); ++k)
          x += u.GetAsDouble(i * uc + k) * s.GetAsDouble(k) * vt.GetAsDouble(k * n + j);
        EXPECT_NEAR(x, a[i * n + j], 1e-12) << i << "," << j;
      }
    for (int64_t p = 0; p < uc; ++p)
      for (int64_t q = 0; q < uc; ++q) {
        double d = 0;
        for (int64_t i = 0; i < m; ++i) d += u.GetAsDouble(i * uc + p) * u.GetAsDouble(i * uc + q);
        EXPECT_NEAR(d, p == q ? 1 : 0, 1e-12) << "u columns " << p << "," << q;
      }
    for (int64_t p = 0; p < vr; ++p)
      for (int64_t q = 0; q < vr; ++q) {
        double d = 0;
        for (int64_t j = 0; j < n; ++j) d += vt.GetAsDouble(p * n + j) * vt.GetAsDouble(q * n + j);
        EXPECT_NEAR(d, p == q ? 1 : 0, 1e-12) << "vt rows " << p << "," << q;
      }
  };
  const std::vector<double> sq = {3, 0, 4, 5};
  Literal a = Lit(PrimitiveType::F64, {2, 2}, sq);
  auto full = svd(a.shape(), 2, 2, 'A');
  auto r = EvalLapackCustomCall(*full, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->element(1).GetAsDouble(0), std::sqrt(45.0), 1e-12);
  EXPECT_NEAR(r->element(1).GetAsDouble(1), std::sqrt(5.0), 1e-12);
  ExpectValues(r->element(4), {}, {0});
  check(*r, sq, 2, 2);

  const std::vector<double> outer = {1, 0, 1, 2, 0, 2};
  Literal w = Lit(PrimitiveType::F64, {2, 3}, outer);
  auto wide = svd(w.shape(), 2, 3, 'A');
  r = EvalLapackCustomCall(*wide, std::vector<const Literal*>{&w});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->element(1).GetAsDouble(0), std::sqrt(10.0), 1e-12);
  EXPECT_NEAR(r->element(1).GetAsDouble(1), 0, 1e-12);
  check(*r, outer, 2, 3);

  auto values = svd(w.shape(), 2, 3, 'N');
  r = EvalLapackCustomCall(*values, std::vector<const Literal*>{&w});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->element(1).GetAsDouble(0), std::sqrt(10.0), 1e-12);
}

}  // namespace
}  // namespace kiln::eval
