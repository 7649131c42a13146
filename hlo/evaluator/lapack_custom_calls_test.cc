// JAX's LAPACK custom-calls on the evaluator against hand-computed factorizations (the JAX
// programs suite compares them with XLA:CPU as well).
#include "hlo/evaluator/lapack_custom_calls.h"

#include <cmath>
#include <complex>
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
  EXPECT_TRUE(IsLapackCustomCall("lapack_cheevd_ffi"));
  EXPECT_FALSE(IsLapackCustomCall("lapack_dheevd_ffi"));  // heevd is complex only
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgesdd_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgeev_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_zgeev_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_dgtsv_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_cgees_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgehrd_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_sgees_ffi"));
  EXPECT_TRUE(IsLapackCustomCall("lapack_zgesdd_ffi"));
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

// A complex pivot is chosen by |re| + |im|, as LAPACK's icamax does: in [[3, 1], [2+2i, 1]]
// the second row's 4 beats the first's 3 (by modulus, 2.83 would lose), so ipiv = [2, 2].
TEST(LapackCustomCallTest, ComplexGetrfPivotsByLapacksSize) {
  Shape out = Shape::Tuple({Shape(PrimitiveType::C64, {2, 2}), Shape(PrimitiveType::S32, {2}),
                            Shape(PrimitiveType::S32, {})});
  auto lu = CustomCall("lapack_cgetrf_ffi", out, "{}");
  Literal a(Shape(PrimitiveType::C64, {2, 2}));
  auto* v = a.data<std::complex<float>>().data();
  v[0] = {3, 0};
  v[1] = {1, 0};
  v[2] = {2, 2};
  v[3] = {1, 0};
  auto r = EvalLapackCustomCall(*lu, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(1), {2}, {2, 2});
  const std::complex<float> u00 = r->element(0).data<std::complex<float>>()[0];
  EXPECT_EQ(u00, std::complex<float>(2, 2));
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

// geev's (w, vl, vr, info) (or (wr, wi, vl, vr, info)) for a `type`[n, n] input, both vectors.
absl::StatusOr<Literal> Geev(char letter, PrimitiveType type, PrimitiveType complex_type,
                             const Literal& a, int64_t n) {
  std::vector<Shape> parts;
  if (type == complex_type) {
    parts.push_back(Shape(type, {n}));
  } else {
    parts.push_back(Shape(type, {n}));
    parts.push_back(Shape(type, {n}));
  }
  parts.push_back(Shape(complex_type, {n, n}));
  parts.push_back(Shape(complex_type, {n, n}));
  parts.push_back(Shape(PrimitiveType::S32, {}));
  auto cc = CustomCall(std::string("lapack_") + letter + "geev_ffi", Shape::Tuple(parts),
                       "{compute_left = 86 : ui8, compute_right = 86 : ui8}");
  return EvalLapackCustomCall(*cc, std::vector<const Literal*>{&a});
}

using C = std::complex<double>;

C At(const Literal& l, int64_t i) {
  if (l.shape().element_type() == PrimitiveType::C64) return C(l.data<std::complex<float>>()[i]);
  return l.data<std::complex<double>>()[i];
}

// The companion matrix of (x - 1)(x - 2)(x - 3)(x^2 + 1) = x^5 - 6x^4 + 12x^3 - 12x^2 + 11x - 6:
// eigenvalues 1, 2, 3, i, -i (wi exactly 0 for the real ones, the pair adjacent with +i
// first); the right eigenvector of lambda is (lambda^4, .., lambda, 1) normalized, its largest
// component real and positive: (1, -i, -1, i, 1) / sqrt(5) for i. Left vectors: u^H A =
// lambda u^H.
TEST(LapackCustomCallTest, GeevCompanionMatrix) {
  const std::vector<double> companion = {6, -12, 12, -11, 6, 1, 0, 0, 0, 0, 0, 1, 0,
                                         0, 0,   0,  0,   1, 0, 0, 0, 0, 0, 1, 0};
  Literal a = F32({5, 5}, companion);
  auto r = Geev('s', PrimitiveType::F32, PrimitiveType::C64, a, 5);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(4), {}, {0});
  std::vector<C> w;
  for (int j = 0; j < 5; ++j)
    w.push_back(C(r->element(0).GetAsDouble(j), r->element(1).GetAsDouble(j)));
  int found = 0;
  for (int j = 0; j < 5; ++j) {
    SCOPED_TRACE(j);
    const C lambda = w[j];
    if (std::abs(lambda.imag()) < 0.5) {
      EXPECT_EQ(lambda.imag(), 0.0);  // exactly real
      EXPECT_NEAR(lambda.real(), std::round(lambda.real()), 1e-5);
      found |= 1 << static_cast<int>(std::round(lambda.real()));
    } else {
      EXPECT_NEAR(std::abs(lambda.imag()), 1, 1e-5);
      EXPECT_NEAR(lambda.real(), 0, 1e-5);
      if (lambda.imag() > 0) {
        ASSERT_LT(j + 1, 5);
        EXPECT_EQ(w[j + 1], std::conj(lambda));  // the pair, +i first
        found |= 16;
      }
    }
    // Right: (lambda^4, .., 1) / |.|, phase by the largest (the first of equal ones).
    std::vector<C> v(5);
    double norm = 0;
    for (int i = 0; i < 5; ++i) norm += std::norm(v[i] = std::pow(lambda, 4 - i));
    int big = 0;
    for (int i = 1; i < 5; ++i)
      if (std::abs(v[i]) > std::abs(v[big]) + 1e-6) big = i;
    const C phase = std::conj(v[big]) / std::abs(v[big]) / std::sqrt(norm);
    for (int i = 0; i < 5; ++i) {
      const C got = At(r->element(3), i * 5 + j), want = v[i] * phase;
      EXPECT_NEAR(got.real(), want.real(), 1e-5) << "vr row " << i;
      EXPECT_NEAR(got.imag(), want.imag(), 1e-5) << "vr row " << i;
    }
    // Left: sum_i conj(u_i) A[i][k] = lambda conj(u_k), unit length.
    double unorm = 0;
    for (int k = 0; k < 5; ++k) {
      C lhs = 0;
      for (int i = 0; i < 5; ++i)
        lhs += std::conj(At(r->element(2), i * 5 + j)) * companion[i * 5 + k];
      const C rhs = lambda * std::conj(At(r->element(2), k * 5 + j));
      EXPECT_NEAR(std::abs(lhs - rhs), 0, 1e-5) << "vl column " << k;
      unorm += std::norm(At(r->element(2), k * 5 + j));
    }
    EXPECT_NEAR(unorm, 1, 1e-6);
  }
  EXPECT_EQ(found, 2 | 4 | 8 | 16);
}

// A complex triangular [[1+i, 2], [0, 3]]: eigenvalues 1+i and 3, vectors (1, 0) and
// (2 (2+i) / sqrt(5), sqrt(5)) / 3 (the larger second component made real). The 4x4 f64
// identity: one repeated eigenvalue, four orthonormal vectors.
TEST(LapackCustomCallTest, GeevComplexAndRepeated) {
  Literal a(Shape(PrimitiveType::C64, {2, 2}));
  a.data<std::complex<float>>()[0] = {1, 1};
  a.data<std::complex<float>>()[1] = {2, 0};
  a.data<std::complex<float>>()[2] = {0, 0};
  a.data<std::complex<float>>()[3] = {3, 0};
  auto r = Geev('c', PrimitiveType::C64, PrimitiveType::C64, a, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int j = 0; j < 2; ++j) {
    const C lambda = At(r->element(0), j);
    const bool first = std::abs(lambda - C(1, 1)) < 1e-5;
    EXPECT_TRUE(first || std::abs(lambda - C(3, 0)) < 1e-5) << lambda;
    const C want0 = first ? C(1, 0) : C(2, 1) * (2 / std::sqrt(5.0) / 3);
    const C want1 = first ? C(0, 0) : C(std::sqrt(5.0) / 3, 0);
    EXPECT_NEAR(std::abs(At(r->element(2), j) - want0), 0, 1e-6) << j;
    EXPECT_NEAR(std::abs(At(r->element(2), 2 + j) - want1), 0, 1e-6) << j;
  }

  // A NaN has no answer: info -4 (JAX then gives NaNs), as XLA's FFI reports it.
  Literal with_nan = F32({2, 2}, {1, std::nan(""), 0, 2});
  r = Geev('s', PrimitiveType::F32, PrimitiveType::C64, with_nan, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(4), {}, {-4});

  Literal eye = Lit(PrimitiveType::F64, {4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  r = Geev('d', PrimitiveType::F64, PrimitiveType::C128, eye, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(r->element(0).GetAsDouble(p), 1.0);
    EXPECT_EQ(r->element(1).GetAsDouble(p), 0.0);
    for (int q = 0; q < 4; ++q) {
      C dot = 0;
      for (int i = 0; i < 4; ++i)
        dot += std::conj(At(r->element(3), i * 4 + p)) * At(r->element(3), i * 4 + q);
      EXPECT_NEAR(std::abs(dot - C(p == q ? 1 : 0)), 0, 1e-12) << p << ", " << q;
    }
  }
}

// A = [[1, 2, 0], [4, 1, 3], [0, 5, 2]] (dl = [-, 4, 5], d = [1, 1, 2], du = [2, 3, -]) and
// B = A [1, -1, 2]^T = [-1, 9, -1]: the first pivot swaps rows 0 and 1; X = [1, -1, 2]. An
// all-zero 2x2 reports its first zero pivot.
TEST(LapackCustomCallTest, GtsvPivotsAndReportsZeroPivots) {
  Shape v(PrimitiveType::F32, {3});
  Shape out =
      Shape::Tuple({v, v, v, Shape(PrimitiveType::F32, {3, 1}), Shape(PrimitiveType::S32, {})});
  auto gtsv = CustomCall("lapack_sgtsv_ffi", out, "");
  Literal dl = F32({3}, {0, 4, 5}), d = F32({3}, {1, 1, 2}), du = F32({3}, {2, 3, 0});
  Literal b = F32({3, 1}, {-1, 9, -1});
  auto r = EvalLapackCustomCall(*gtsv, std::vector<const Literal*>{&dl, &d, &du, &b});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(3), {3, 1}, {1, -1, 2});
  ExpectValues(r->element(4), {}, {0});

  Shape v2(PrimitiveType::F32, {2});
  auto zero = CustomCall(
      "lapack_sgtsv_ffi",
      Shape::Tuple({v2, v2, v2, Shape(PrimitiveType::F32, {2, 1}), Shape(PrimitiveType::S32, {})}),
      "");
  Literal z = F32({2}, {0, 0}), zb = F32({2, 1}, {1, 1});
  r = EvalLapackCustomCall(*zero, std::vector<const Literal*>{&z, &z, &z, &zb});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(4), {}, {1});
}

// Complex Schur (sqrtm's first step) of the companion matrix of (x - 1)(x - 2)(x - 3)(x^2 + 1)
// and of a 9x9 with entries (i * 7 + j * 3) % 11 - 5 + i (j % 4): T upper triangular (exact
// zeros below), Z unitary, Z T Z^H = A, diag(T) the eigenvalues (1, 2, 3, i, -i for the first)
// and w = diag(T); with mode 'N', Z is left zero.
TEST(LapackCustomCallTest, GeesComplexSchurForm) {
  const std::vector<double> companion = {6, -12, 12, -11, 6, 1, 0, 0, 0, 0, 0, 1, 0,
                                         0, 0,   0,  0,   1, 0, 0, 0, 0, 0, 1, 0};
  for (int n : {5, 9}) {
    SCOPED_TRACE(n);
    Literal a(Shape(PrimitiveType::C128, {n, n}));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        a.data<C>()[i * n + j] =
            n == 5 ? C(companion[i * 5 + j], 0) : C((i * 7 + j * 3) % 11 - 5, j % 4);
    Shape m(PrimitiveType::C128, {n, n}), v(PrimitiveType::C128, {n}), i32(PrimitiveType::S32, {});
    for (char mode : {'V', 'N'}) {
      auto cc = CustomCall("lapack_zgees_ffi", Shape::Tuple({m, m, v, i32, i32}),
                           mode == 'V' ? "{mode = 86 : ui8, sort = 78 : ui8}"
                                       : "{mode = 78 : ui8, sort = 78 : ui8}");
      auto r = EvalLapackCustomCall(*cc, std::vector<const Literal*>{&a});
      ASSERT_TRUE(r.ok()) << r.status();
      ExpectValues(r->element(4), {}, {0});
      const Literal &t = r->element(0), &z = r->element(1);
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(At(r->element(2), i), At(t, i * n + i));
        for (int j = 0; j < i; ++j) EXPECT_EQ(At(t, i * n + j), C(0)) << i << ", " << j;
      }
      if (mode == 'N') {
        for (int k = 0; k < n * n; ++k) EXPECT_EQ(At(z, k), C(0));
        continue;
      }
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          C zz = 0, ztz = 0;
          for (int k = 0; k < n; ++k) {
            zz += std::conj(At(z, k * n + i)) * At(z, k * n + j);
            for (int l = 0; l < n; ++l)
              ztz += At(z, i * n + k) * At(t, k * n + l) * std::conj(At(z, j * n + l));
          }
          EXPECT_NEAR(std::abs(zz - C(i == j ? 1 : 0)), 0, 1e-12) << i << ", " << j;
          EXPECT_NEAR(std::abs(ztz - a.data<C>()[i * n + j]), 0, 1e-10) << i << ", " << j;
        }
      if (n == 5) {
        int found = 0;
        for (int i = 0; i < 5; ++i) {
          const C w = At(t, i * 5 + i);
          for (int k = 0; k < 5; ++k)
            if (std::abs(w - std::vector<C>{1, 2, 3, C(0, 1), C(0, -1)}[k]) < 1e-8) found |= 1 << k;
        }
        EXPECT_EQ(found, 31);
      }
    }
  }
}

// Real Schur forms (jax.scipy.linalg.schur): the companion matrix of (x - 1)(x - 2)(x - 3)
// (x^2 + 1), a rotation by 90 degrees (eigenvalues +-i) and a 9x9 with entries
// (i * 7 + j * 3) % 11 - 5: Z orthogonal, Z T Z^T = A, T zero below the subdiagonal, each
// nonzero subdiagonal entry a standard 2x2 block [[a, b], [c, a]] with b c < 0 whose (wr, wi)
// are a +- i sqrt(-b c), positive first; 1x1 blocks give (t_ii, 0). The companion matrix's
// (wr, wi) are 1, 2, 3, +-i in some order.
TEST(LapackCustomCallTest, GeesRealSchurForm) {
  const std::vector<double> companion = {6, -12, 12, -11, 6, 1, 0, 0, 0, 0, 0, 1, 0,
                                         0, 0,   0,  0,   1, 0, 0, 0, 0, 0, 1, 0};
  for (int n : {5, 2, 9}) {
    SCOPED_TRACE(n);
    std::vector<double> values(n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        values[i * n + j] = n == 5   ? companion[i * 5 + j]
                            : n == 2 ? std::vector<double>{0, -1, 1, 0}[i * 2 + j]
                                     : (i * 7 + j * 3) % 11 - 5;
    Literal a = Lit(PrimitiveType::F64, {n, n}, values);
    Shape m(PrimitiveType::F64, {n, n}), v(PrimitiveType::F64, {n}), i32(PrimitiveType::S32, {});
    auto cc = CustomCall("lapack_dgees_ffi", Shape::Tuple({m, m, v, v, i32, i32}),
                         "{mode = 86 : ui8, sort = 78 : ui8}");
    auto r = EvalLapackCustomCall(*cc, std::vector<const Literal*>{&a});
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectValues(r->element(5), {}, {0});
    const Literal &t = r->element(0), &z = r->element(1);
    auto T = [&](int i, int j) { return t.GetAsDouble(i * n + j); };
    auto Z = [&](int i, int j) { return z.GetAsDouble(i * n + j); };
    auto wr = [&](int i) { return r->element(2).GetAsDouble(i); };
    auto wi = [&](int i) { return r->element(3).GetAsDouble(i); };
    for (int i = 0; i < n; ++i)
      for (int j = 0; j + 1 < i; ++j) EXPECT_EQ(T(i, j), 0) << i << ", " << j;
    for (int i = 0; i < n; ++i) {
      if (i + 1 < n && T(i + 1, i) != 0) {
        EXPECT_EQ(T(i, i), T(i + 1, i + 1)) << i;
        EXPECT_LT(T(i, i + 1) * T(i + 1, i), 0) << i;
        EXPECT_TRUE(i + 2 >= n || T(i + 2, i + 1) == 0) << "blocks of two at most, " << i;
        const double im = std::sqrt(-T(i, i + 1) * T(i + 1, i));
        EXPECT_NEAR(wr(i), T(i, i), 1e-15);
        EXPECT_NEAR(wr(i + 1), T(i, i), 1e-15);
        EXPECT_NEAR(wi(i), im, 1e-12);
        EXPECT_NEAR(wi(i + 1), -im, 1e-12);
        ++i;
      } else {
        EXPECT_EQ(wr(i), T(i, i));
        EXPECT_EQ(wi(i), 0);
      }
    }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double zz = 0, ztz = 0;
        for (int k = 0; k < n; ++k) {
          zz += Z(k, i) * Z(k, j);
          for (int l = 0; l < n; ++l) ztz += Z(i, k) * T(k, l) * Z(j, l);
        }
        EXPECT_NEAR(zz, i == j ? 1 : 0, 1e-12) << i << ", " << j;
        EXPECT_NEAR(ztz, values[i * n + j], 1e-10) << i << ", " << j;
      }
    if (n == 5) {
      int found = 0;
      for (int i = 0; i < 5; ++i)
        for (int k = 0; k < 5; ++k)
          if (std::abs(C(wr(i), wi(i)) - std::vector<C>{1, 2, 3, C(0, 1), C(0, -1)}[k]) < 1e-8)
            found |= 1 << k;
      EXPECT_EQ(found, 31);
    }
  }
}

// Hessenberg reduction of [[1, 2, 3], [4, 5, 6], [7, 8, 10]] by LAPACK's reflector: the
// first column below the diagonal, (4, 7), becomes beta = -sqrt(65) with tau = 1 + 4 / sqrt(65)
// and the tail 7 / (4 + sqrt(65)); the last reflector is the identity (tau 0). With Q = H_1 =
// I - tau v v^T, Q^T A Q is the result's upper Hessenberg part.
TEST(LapackCustomCallTest, GehrdFollowsLapacksReflectors) {
  const std::vector<double> values = {1, 2, 3, 4, 5, 6, 7, 8, 10};
  Literal a = Lit(PrimitiveType::F64, {3, 3}, values);
  auto cc =
      CustomCall("lapack_dgehrd_ffi",
                 Shape::Tuple({Shape(PrimitiveType::F64, {3, 3}), Shape(PrimitiveType::F64, {2}),
                               Shape(PrimitiveType::S32, {})}),
                 "{high = 3 : i32, low = 1 : i32}");
  auto r = EvalLapackCustomCall(*cc, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  const double root = std::sqrt(65.0), tau = 1 + 4 / root, tail = 7 / (4 + root);
  const Literal& h = r->element(0);
  EXPECT_NEAR(h.GetAsDouble(3), -root, 1e-12);
  EXPECT_NEAR(h.GetAsDouble(6), tail, 1e-12);
  EXPECT_NEAR(r->element(1).GetAsDouble(0), tau, 1e-12);
  EXPECT_EQ(r->element(1).GetAsDouble(1), 0.0);
  ExpectValues(r->element(2), {}, {0});
  const double v[3] = {0, 1, tail};
  double q[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) q[i][j] = (i == j ? 1 : 0) - tau * v[i] * v[j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double qaq = 0;
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l) qaq += q[k][i] * values[k * 3 + l] * q[l][j];
      EXPECT_NEAR(qaq, i > j + 1 ? 0.0 : h.GetAsDouble(i * 3 + j), 1e-12) << i << ", " << j;
    }
}

// A complex[b, m, n] literal of sin/cos values, and its element (bi, i, j).
Literal ComplexBatch(int64_t b, int64_t m, int64_t n, double seed) {
  Literal a(Shape(PrimitiveType::C128, {b, m, n}));
  auto d = a.data<std::complex<double>>();
  for (int64_t k = 0; k < b * m * n; ++k)
    d[k] = {std::sin(seed + 1.7 * k), std::cos(seed * 3 + 0.9 * k * k)};
  return a;
}

// [[2, i], [-i, 2]] (Hermitian; the upper triangle holds junk, only the lower one is read)
// has eigenvalues 1 and 3 with eigenvectors (1, i) / sqrt 2 and (1, -i) / sqrt 2 up to a
// phase; a batch of two random 6x6 Hermitian matrices gives A V = V diag(w), V^H V = I.
TEST(LapackCustomCallTest, HeevdComplexHermitian) {
  Shape out = Shape::Tuple({Shape(PrimitiveType::C128, {2, 2}), Shape(PrimitiveType::F64, {2}),
                            Shape(PrimitiveType::S32, {})});
  auto eig = CustomCall("lapack_zheevd_ffi", out, "{mode = 86 : ui8, uplo = 76 : ui8}");
  Literal a(Shape(PrimitiveType::C128, {2, 2}));
  auto ad = a.data<std::complex<double>>();
  ad[0] = 2;
  ad[1] = {99, 99};
  ad[2] = {0, -1};
  ad[3] = 2;
  auto r = EvalLapackCustomCall(*eig, std::vector<const Literal*>{&a});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->element(1).shape().element_type(), PrimitiveType::F64);
  EXPECT_NEAR(r->element(1).GetAsDouble(0), 1, 1e-12);
  EXPECT_NEAR(r->element(1).GetAsDouble(1), 3, 1e-12);
  auto v = r->element(0).data<std::complex<double>>();
  // Column 0 ~ (1, i): v[1][0] / v[0][0] = i; column 1 ~ (1, -i).
  EXPECT_NEAR(std::abs(v[2] / v[0] - C(0, 1)), 0, 1e-12);
  EXPECT_NEAR(std::abs(v[3] / v[1] - C(0, -1)), 0, 1e-12);
  EXPECT_NEAR(std::abs(v[0]), std::sqrt(0.5), 1e-12);

  const int n = 6;
  Literal m = ComplexBatch(2, n, n, 0.3);
  auto md = m.data<std::complex<double>>();
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < n; ++i) {
      md[b * n * n + i * n + i] = md[b * n * n + i * n + i].real();
      for (int j = 0; j < i; ++j) md[b * n * n + j * n + i] = std::conj(md[b * n * n + i * n + j]);
    }
  Shape bout = Shape::Tuple({Shape(PrimitiveType::C128, {2, n, n}),
                             Shape(PrimitiveType::F64, {2, n}), Shape(PrimitiveType::S32, {2})});
  auto beig = CustomCall("lapack_zheevd_ffi", bout, "{mode = 86 : ui8, uplo = 85 : ui8}");
  r = EvalLapackCustomCall(*beig, std::vector<const Literal*>{&m});
  ASSERT_TRUE(r.ok()) << r.status();
  auto V = r->element(0).data<std::complex<double>>();
  for (int b = 0; b < 2; ++b) {
    auto w = [&](int k) { return r->element(1).GetAsDouble(b * n + k); };
    for (int k = 0; k + 1 < n; ++k) EXPECT_LE(w(k), w(k + 1));
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        C av = 0, vhv = 0;
        for (int j = 0; j < n; ++j) {
          av += md[b * n * n + i * n + j] * V[b * n * n + j * n + k];
          vhv += std::conj(V[b * n * n + j * n + i]) * V[b * n * n + j * n + k];
        }
        EXPECT_NEAR(std::abs(av - w(k) * V[b * n * n + i * n + k]), 0, 1e-10) << b << i << k;
        EXPECT_NEAR(std::abs(vhv - C(i == k ? 1 : 0)), 0, 1e-10);
      }
  }
}

// Complex SVDs, tall (5x3, mode S) and wide (3x5, mode A): u diag(s) vt reconstructs A, u and
// vt^H have orthonormal columns, s descends; [[0, 2i], [0, 0]] has s = (2, 0).
TEST(LapackCustomCallTest, GesddComplex) {
  for (auto [m, n, mode] : {std::tuple<int64_t, int64_t, char>{5, 3, 'S'}, {3, 5, 'A'}}) {
    const int64_t k = std::min(m, n), uc = mode == 'A' ? m : k, vr = mode == 'A' ? n : k;
    Literal a = ComplexBatch(1, m, n, m + 0.5);
    Shape out = Shape::Tuple(
        {a.shape(), Shape(PrimitiveType::F64, {1, k}), Shape(PrimitiveType::C128, {1, m, uc}),
         Shape(PrimitiveType::C128, {1, vr, n}), Shape(PrimitiveType::S32, {1})});
    auto svd = CustomCall("lapack_zgesdd_ffi", out, "{mode = " + std::to_string(mode) + " : ui8}");
    auto r = EvalLapackCustomCall(*svd, std::vector<const Literal*>{&a});
    ASSERT_TRUE(r.ok()) << r.status();
    auto A = a.data<std::complex<double>>();
    auto u = r->element(2).data<std::complex<double>>();
    auto vt = r->element(3).data<std::complex<double>>();
    auto s = [&](int64_t i) { return r->element(1).GetAsDouble(i); };
    for (int64_t i = 0; i + 1 < k; ++i) EXPECT_GE(s(i), s(i + 1));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        C x = 0;
        for (int64_t q = 0; q < k; ++q) x += u[i * uc + q] * s(q) * vt[q * n + j];
        EXPECT_NEAR(std::abs(x - A[i * n + j]), 0, 1e-12) << m << "x" << n << " " << i << j;
      }
    for (int64_t p = 0; p < uc; ++p)
      for (int64_t q = 0; q < uc; ++q) {
        C d = 0;
        for (int64_t i = 0; i < m; ++i) d += std::conj(u[i * uc + p]) * u[i * uc + q];
        EXPECT_NEAR(std::abs(d - C(p == q ? 1 : 0)), 0, 1e-12) << "u " << p << q;
      }
    for (int64_t p = 0; p < vr; ++p)
      for (int64_t q = 0; q < vr; ++q) {
        C d = 0;
        for (int64_t j = 0; j < n; ++j) d += vt[p * n + j] * std::conj(vt[q * n + j]);
        EXPECT_NEAR(std::abs(d - C(p == q ? 1 : 0)), 0, 1e-12) << "vt " << p << q;
      }
  }
  Literal b(Shape(PrimitiveType::C128, {2, 2}));
  b.data<std::complex<double>>()[1] = {0, 2};
  Shape out =
      Shape::Tuple({b.shape(), Shape(PrimitiveType::F64, {2}), Shape(PrimitiveType::C128, {2, 2}),
                    Shape(PrimitiveType::C128, {2, 2}), Shape(PrimitiveType::S32, {})});
  auto svd = CustomCall("lapack_zgesdd_ffi", out, "{mode = 78 : ui8}");
  auto r = EvalLapackCustomCall(*svd, std::vector<const Literal*>{&b});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->element(1).GetAsDouble(0), 2, 1e-12);
  EXPECT_NEAR(r->element(1).GetAsDouble(1), 0, 1e-12);
}

}  // namespace
}  // namespace kiln::eval
