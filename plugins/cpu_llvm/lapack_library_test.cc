// LAPACK custom-calls and triangular-solve through OpenBLAS's LAPACK (lapack_library.h)
// against the HLO evaluator's own factorizations, f32 and f64, single matrices and batches,
// every flag of the triangular solves; eigen- and singular vectors up to sign (complex ones up
// to phase); real gees as a Schur form with the evaluator's eigenvalues. And what must stay
// on the evaluator: complex types other than heevd's and gesdd's, result shapes that do not
// fit the routine.
#include "plugins/cpu_llvm/lapack_library.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

// Random values in [-1, 1]; `diagonal` is added to the diagonal of each trailing square
// matrix (a well-conditioned or, with a symmetric part, a positive definite one).
Literal Random(const Shape& s, uint32_t seed, double diagonal = 0, bool symmetric = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(s.num_elements());
  for (double& x : v) x = dist(rng);
  const int64_t r = s.dimensions(s.rank() - 2), c = s.dimensions(s.rank() - 1);
  for (int64_t b = 0; b < s.num_elements() / (r * c); ++b) {
    double* m = v.data() + b * r * c;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        if (symmetric && j < i) m[i * c + j] = m[j * c + i];
        if (i == j) m[i * c + j] += diagonal;
      }
  }
  return Literal::FromDoubles(s, v);
}

// Element `i` of a c64 or c128 literal (of a real one, as a complex number).
std::complex<double> ComplexAt(const Literal& l, int64_t i) {
  if (l.shape().element_type() == PrimitiveType::C64)
    return std::complex<double>(l.data<std::complex<float>>()[i]);
  if (l.shape().element_type() == PrimitiveType::C128) return l.data<std::complex<double>>()[i];
  return l.GetAsDouble(i);
}

// Random complex values, re and im in [-1, 1]; with `hermitian`, each trailing square
// matrix made Hermitian with `diagonal` added (positive definite for a large enough one).
Literal RandomComplex(const Shape& s, uint32_t seed, double diagonal = 0, bool hermitian = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<std::complex<double>> v(s.num_elements());
  for (auto& x : v) x = {dist(rng), dist(rng)};
  const int64_t r = s.dimensions(s.rank() - 2), c = s.dimensions(s.rank() - 1);
  for (int64_t b = 0; b < s.num_elements() / (r * c); ++b) {
    std::complex<double>* m = v.data() + b * r * c;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        if (hermitian && j < i) m[i * c + j] = std::conj(m[j * c + i]);
        if (hermitian && i == j) m[i * c + j] = m[i * c + j].real();
        if (i == j) m[i * c + j] += diagonal;
      }
  }
  Literal l(s);
  for (int64_t i = 0; i < s.num_elements(); ++i) {
    if (s.element_type() == PrimitiveType::C64)
      l.data<std::complex<float>>()[i] = std::complex<float>(v[i]);
    else
      l.data<std::complex<double>>()[i] = v[i];
  }
  return l;
}

void ExpectComplexNear(const Literal& got, const Literal& want, double tol,
                       const std::string& what) {
  ASSERT_EQ(got.shape().dimensions(), want.shape().dimensions()) << what;
  for (int64_t i = 0; i < want.element_count(); ++i)
    ASSERT_LE(std::abs(ComplexAt(got, i) - ComplexAt(want, i)), tol)
        << what << ", element " << i << ": " << ComplexAt(got, i) << " vs " << ComplexAt(want, i);
}

// Random(...) for a real shape, RandomComplex(...) (Hermitian where `symmetric`) for a complex
// one.
Literal RandomOf(const Shape& s, uint32_t seed, double diagonal = 0, bool symmetric = false) {
  return IsComplex(s.element_type()) ? RandomComplex(s, seed, diagonal, symmetric)
                                     : Random(s, seed, diagonal, symmetric);
}

struct Ran {
  Literal got, want;
  bool library = false;
};

// Runs `ROOT %r = <result> <call>` over parameters of `params` on cpu-llvm and the evaluator
// (with `run` false, only plans it).
Ran RunBoth(const std::vector<std::string>& params, const std::string& result,
            const std::string& call, const std::vector<Literal>& args, bool run = true) {
  std::string header, body;
  for (size_t i = 0; i < params.size(); ++i) {
    header += fmt::format("{}p{}: {}", i ? ", " : "", i, params[i]);
    body += fmt::format("  %p{0} = {1} parameter({0})\n", i, params[i]);
  }
  const std::string text =
      fmt::format("HloModule lapack\nENTRY %main ({}) -> {} {{\n{}  ROOT %r = {} {}\n}}\n", header,
                  result, body, result, call);
  Ran out;
  const testing::CompiledText c = testing::CompileText(text);
  if (c.exe == nullptr) return out;
  for (const Step& s : c.exe->plan().steps) out.library |= s.kind == Disposition::kLibrary;
  if (!run) return out;
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  if (got.ok()) out.got = std::move(*got);
  if (want.ok()) out.want = std::move(*want);
  return out;
}

void ExpectNear(const Literal& got, const Literal& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape().dimensions(), want.shape().dimensions()) << what;
  for (int64_t i = 0; i < want.element_count(); ++i)
    ASSERT_NEAR(got.GetAsDouble(i), want.GetAsDouble(i), tol) << what << ", element " << i;
}

// Columns (or rows) of two [..., r, c] arrays equal up to each one's sign, for the first
// `count` of them.
void ExpectEqualUpToSign(const Literal& got, const Literal& want, bool columns, int64_t count,
                         double tol, const std::string& what) {
  const Shape& s = want.shape();
  ASSERT_EQ(got.shape().dimensions(), s.dimensions()) << what;
  const int64_t r = s.dimensions(s.rank() - 2), c = s.dimensions(s.rank() - 1);
  for (int64_t b = 0; b < s.num_elements() / (r * c); ++b)
    for (int64_t v = 0; v < count; ++v) {
      auto at = [&](const Literal& l, int64_t i) {
        return l.GetAsDouble(b * r * c + (columns ? i * c + v : v * c + i));
      };
      const int64_t length = columns ? r : c;
      double dot = 0;
      for (int64_t i = 0; i < length; ++i) dot += at(got, i) * at(want, i);
      const double sign = dot < 0 ? -1 : 1;
      for (int64_t i = 0; i < length; ++i)
        ASSERT_NEAR(at(got, i), sign * at(want, i), tol)
            << what << ", matrix " << b << (columns ? ", column " : ", row ") << v;
    }
}

// For a [..., m, n] shape: its batch dimensions as a prefix "b0,b1," of a shape's dimensions,
// and LAPACK's s32 info shape over them.
std::pair<std::string, std::string> BatchAndInfo(const Shape& shape) {
  std::string batch;
  for (int d = 0; d < shape.rank() - 2; ++d) batch += fmt::format("{},", shape.dimensions(d));
  return {batch, fmt::format("s32[{}]", batch.empty() ? "" : batch.substr(0, batch.size() - 1))};
}

struct Type {
  std::string name;  // f32 / f64 / c64 / c128
  char letter;       // s / d / c / z
  double tol;
};
const std::vector<Type> kTypes = {{"f32", 's', 2e-4}, {"f64", 'd', 1e-9}};
const std::vector<Type> kComplexTypes = {{"c64", 'c', 2e-4}, {"c128", 'z', 1e-9}};
const std::vector<Type> kAllTypes = {kTypes[0], kTypes[1], kComplexTypes[0], kComplexTypes[1]};

// getrf, geqrf, orgqr (ungqr) and potrf of real and complex batches against the evaluator:
// the pivots are LAPACK's (a complex one by |re| + |im|, as the evaluator picks it too), so LU,
// pivots, QR factors and Cholesky factors all match.
TEST(LapackLibrary, GetrfPotrfGeqrfOrgqrMatchTheEvaluator) {
  for (const Type& t : kAllTypes)
    for (const char* dims : {"7,7", "3,9,6", "2,5,8", "4,17,17"}) {  // the last on the pool
      SCOPED_TRACE(t.name + "[" + dims + "]");
      const std::string a = fmt::format("{}[{}]", t.name, dims);
      const Shape shape = *ParseShape(a);
      const int64_t m = shape.dimensions(shape.rank() - 2), n = shape.dimensions(shape.rank() - 1);
      const int64_t k = std::min(m, n);
      const auto [batch, info] = BatchAndInfo(shape);
      std::vector<Literal> args;
      args.push_back(RandomOf(shape, 7, 0.5));
      const bool complex = IsComplex(shape.element_type());

      Ran lu = RunBoth({a}, fmt::format("({}, s32[{}{}], {})", a, batch, k, info),
                       fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}getrf_ffi\", "
                                   "backend_config={{}}",
                                   t.letter),
                       args);
      EXPECT_TRUE(lu.library);
      ExpectComplexNear(lu.got.element(0), lu.want.element(0), t.tol * 10, "getrf LU");
      ExpectNear(lu.got.element(1), lu.want.element(1), 0, "getrf pivots");
      ExpectNear(lu.got.element(2), lu.want.element(2), 0, "getrf info");

      Ran qr = RunBoth(
          {a}, fmt::format("({}, {}[{}{}])", a, t.name, batch, k),
          fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}geqrf_ffi\"", t.letter),
          args);
      EXPECT_TRUE(qr.library);
      ExpectComplexNear(qr.got.element(0), qr.want.element(0), t.tol * 10,
                        "geqrf R and reflectors");
      ExpectComplexNear(qr.got.element(1), qr.want.element(1), t.tol * 10, "geqrf tau");

      if (m >= n) {  // orgqr (ungqr, complex): Q's n columns from geqrf's reflectors
        std::vector<Literal> q_args;
        q_args.push_back(qr.want.element(0));
        q_args.push_back(qr.want.element(1));
        Ran q = RunBoth({a, fmt::format("{}[{}{}]", t.name, batch, k)}, a,
                        fmt::format("custom-call(%p0, %p1), custom_call_target="
                                    "\"lapack_{}{}_ffi\"",
                                    t.letter, complex ? "ungqr" : "orgqr"),
                        q_args);
        EXPECT_TRUE(q.library);
        ExpectComplexNear(q.got, q.want, t.tol * 10, "orgqr Q");
      }

      if (m == n)
        for (char uplo : {'L', 'U'}) {
          std::vector<Literal> spd;
          // Hermitian with a diagonal that makes it positive definite (complex: 2n).
          spd.push_back(RandomOf(shape, 11, (complex ? 2.0 : 1.0) * n, /*symmetric=*/true));
          Ran c =
              RunBoth({a}, fmt::format("({}, {})", a, info),
                      fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}potrf_ffi\", "
                                  "backend_config={{uplo = {} : ui8}}",
                                  t.letter, static_cast<int>(uplo)),
                      spd);
          EXPECT_TRUE(c.library);
          ExpectComplexNear(c.got.element(0), c.want.element(0), t.tol * 10,
                            std::string("potrf ") + uplo);
          ExpectNear(c.got.element(1), c.want.element(1), 0, "potrf info");
        }
    }
}

TEST(LapackLibrary, TriangularSolvesMatchTheEvaluatorForEveryFlag) {
  for (const Type& t : kTypes)
    for (char side : {'L', 'R'})
      for (char uplo : {'L', 'U'})
        for (char trans : {'N', 'T'})
          for (char diag : {'N', 'U'}) {
            const std::string flags = fmt::format("{}{}{}{}", side, uplo, trans, diag);
            SCOPED_TRACE(t.name + " " + flags);
            const std::string a = t.name + "[2,6,6]";
            const std::string b = t.name + (side == 'L' ? "[2,6,4]" : "[2,4,6]");
            std::vector<Literal> args;
            args.push_back(Random(*ParseShape(a), 3, 4.0));
            args.push_back(Random(*ParseShape(b), 5));
            Ran ffi = RunBoth({a, b}, b,
                              fmt::format("custom-call(%p0, %p1), custom_call_target="
                                          "\"lapack_{}trsm_ffi\", backend_config={{diag = {} : "
                                          "ui8, side = {} : ui8, trans_x = {} : ui8, uplo = {} : "
                                          "ui8}}",
                                          t.letter, int{diag}, int{side}, int{trans}, int{uplo}),
                              args);
            EXPECT_TRUE(ffi.library);
            ExpectNear(ffi.got, ffi.want, t.tol, "lapack trsm");

            Ran hlo = RunBoth({a, b}, b,
                              fmt::format("triangular-solve(%p0, %p1), left_side={}, lower={}, "
                                          "unit_diagonal={}, transpose_a={}",
                                          side == 'L', uplo == 'L', diag == 'U',
                                          trans == 'T' ? "TRANSPOSE" : "NO_TRANSPOSE"),
                              args);
            EXPECT_TRUE(hlo.library);
            ExpectNear(hlo.got, hlo.want, t.tol, "triangular-solve");
          }
}

TEST(LapackLibrary, EigenAndSingularValuesMatchTheEvaluatorVectorsUpToSign) {
  for (const Type& t : kTypes) {
    SCOPED_TRACE(t.name);
    const std::string sq = t.name + "[3,6,6]";
    std::vector<Literal> sym;
    sym.push_back(Random(*ParseShape(sq), 13, 0, /*symmetric=*/true));
    for (char uplo : {'L', 'U'}) {
      Ran e = RunBoth({sq}, fmt::format("({}, {}[3,6], s32[3])", sq, t.name),
                      fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}syevd_ffi\", "
                                  "backend_config={{mode = 86 : ui8, uplo = {} : ui8}}",
                                  t.letter, int{uplo}),
                      sym);
      EXPECT_TRUE(e.library);
      ExpectNear(e.got.element(1), e.want.element(1), t.tol * 10, "syevd eigenvalues");
      ExpectEqualUpToSign(e.got.element(0), e.want.element(0), /*columns=*/true, 6, t.tol * 50,
                          "syevd eigenvectors");
      ExpectNear(e.got.element(2), e.want.element(2), 0, "syevd info");
    }
    for (auto [m, n] : {std::pair<int64_t, int64_t>{7, 4}, {4, 7}, {5, 5}, {17, 17}})
      for (char mode : {'A', 'S', 'N'}) {
        SCOPED_TRACE(fmt::format("gesdd {}x{} mode {}", m, n, mode));
        const int64_t k = std::min(m, n);
        const int64_t uc = mode == 'S' ? k : m, vr = mode == 'S' ? k : n;
        std::vector<Literal> args;
        const std::string a = fmt::format("{}[2,{},{}]", t.name, m, n);
        args.push_back(Random(*ParseShape(a), 17));
        Ran s = RunBoth({a},
                        fmt::format("({0}, {1}[2,{2}], {1}[2,{3},{4}], {1}[2,{5},{6}], s32[2])", a,
                                    t.name, k, m, uc, vr, n),
                        fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}gesdd_ffi\", "
                                    "backend_config={{mode = {} : ui8}}",
                                    t.letter, int{mode}),
                        args);
        EXPECT_TRUE(s.library);
        ExpectNear(s.got.element(1), s.want.element(1), t.tol * 10, "singular values");
        ExpectNear(s.got.element(4), s.want.element(4), 0, "gesdd info");
        if (mode == 'N') continue;
        // The first k columns of U and rows of V^T are determined up to sign (distinct
        // singular values); the completion of a full basis is not.
        ExpectEqualUpToSign(s.got.element(2), s.want.element(2), /*columns=*/true, k, t.tol * 50,
                            "U");
        ExpectEqualUpToSign(s.got.element(3), s.want.element(3), /*columns=*/false, k, t.tol * 50,
                            "V^T");
      }
  }
}

// geev (jnp.linalg.eig) of random real matrices, one batch of 17x17 on the pool: the
// eigenvalues the evaluator's as a set (their order is each implementation's own), each
// eigenvector its eigenvalue's evaluator vector up to a complex phase, and the same with
// only right or no vectors (the others left zero).
TEST(LapackLibrary, GeevMatchesTheEvaluatorUpToOrderAndPhase) {
  for (const Type& t : kTypes)
    for (int64_t n : {6, 17})
      for (auto [left, right] : {std::pair<char, char>{'V', 'V'}, {'N', 'V'}, {'N', 'N'}}) {
        SCOPED_TRACE(fmt::format("{} n {} left {} right {}", t.name, n, left, right));
        const std::string a = fmt::format("{}[3,{},{}]", t.name, n, n);
        const std::string c = fmt::format("{}[3,{},{}]", t.name == "f32" ? "c64" : "c128", n, n);
        std::vector<Literal> args;
        args.push_back(Random(*ParseShape(a), 23));
        Ran e =
            RunBoth({a}, fmt::format("({0}[3,{1}], {0}[3,{1}], {2}, {2}, s32[3])", t.name, n, c),
                    fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}geev_ffi\", "
                                "backend_config={{compute_left = {} : ui8, compute_right = {} "
                                ": ui8}}",
                                t.letter, int{left}, int{right}),
                    args);
        EXPECT_TRUE(e.library);
        ExpectNear(e.got.element(4), e.want.element(4), 0, "geev info");
        for (int64_t b = 0; b < 3; ++b) {
          auto value = [&](const Literal& out, int64_t k) {
            return std::complex<double>(out.element(0).GetAsDouble(b * n + k),
                                        out.element(1).GetAsDouble(b * n + k));
          };
          std::vector<bool> used(n, false);
          for (int64_t j = 0; j < n; ++j) {
            const std::complex<double> w = value(e.got, j);
            int64_t best = -1;  // the nearest evaluator eigenvalue not matched yet
            for (int64_t k = 0; k < n; ++k)
              if (!used[k] &&
                  (best < 0 || std::abs(value(e.want, k) - w) < std::abs(value(e.want, best) - w)))
                best = k;
            used[best] = true;
            ASSERT_NEAR(std::abs(value(e.want, best) - w), 0, t.tol * 20) << j;
            for (int which : {2, 3}) {
              const bool asked = (which == 2 ? left : right) == 'V';
              std::complex<double> dot = 0;
              double norm = 0;
              for (int64_t i = 0; i < n; ++i) {
                const std::complex<double> g = ComplexAt(e.got.element(which), (b * n + i) * n + j);
                dot += std::conj(ComplexAt(e.want.element(which), (b * n + i) * n + best)) * g;
                norm += std::norm(g);
              }
              // Unit vectors equal up to a phase: |<want, got>| = 1; zero when not asked for.
              ASSERT_NEAR(std::abs(dot), asked ? 1 : 0, t.tol * 100) << which << ", " << j;
              ASSERT_NEAR(norm, asked ? 1 : 0, t.tol * 10) << which << ", " << j;
            }
          }
        }
      }
  // A matrix holding NaN (the second of two) is not handed to geev: info -4 as the
  // evaluator's, the first matrix solved.
  std::vector<Literal> nan_args;
  nan_args.push_back(Random(*ParseShape("f32[2,5,5]"), 29));
  nan_args[0].data<float>()[25 + 7] = std::nanf("");
  Ran nan_run = RunBoth({"f32[2,5,5]"}, "(f32[2,5], f32[2,5], c64[2,5,5], c64[2,5,5], s32[2])",
                        "custom-call(%p0), custom_call_target=\"lapack_sgeev_ffi\", "
                        "backend_config={compute_left = 78 : ui8, compute_right = 86 : ui8}",
                        nan_args);
  EXPECT_TRUE(nan_run.library);
  EXPECT_EQ(nan_run.got.element(4).GetAsDouble(0), 0);
  EXPECT_EQ(nan_run.got.element(4).GetAsDouble(1), -4);
  ExpectNear(nan_run.got.element(4), nan_run.want.element(4), 0, "geev info with a NaN");
}

// Complex geev (jnp.linalg.eig of a complex matrix): eigenvalues the evaluator's as a set,
// each right and left eigenvector of unit norm and its eigenvalue's evaluator vector up to a
// phase; vectors not asked for zero.
TEST(LapackLibrary, ComplexGeevMatchesTheEvaluatorUpToOrderAndPhase) {
  for (const auto& [name, letter, tol] : kComplexTypes)
    for (int64_t n : {5, 17})
      for (auto [left, right] : {std::pair<char, char>{'V', 'V'}, {'N', 'V'}, {'N', 'N'}}) {
        SCOPED_TRACE(fmt::format("{} n {} left {} right {}", name, n, left, right));
        const std::string a = fmt::format("{}[3,{},{}]", name, n, n);
        std::vector<Literal> args;
        args.push_back(RandomComplex(*ParseShape(a), 31));
        Ran e = RunBoth({a}, fmt::format("({0}[3,{1}], {2}, {2}, s32[3])", name, n, a),
                        fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}geev_ffi\", "
                                    "backend_config={{compute_left = {} : ui8, compute_right = {} "
                                    ": ui8}}",
                                    letter, int{left}, int{right}),
                        args);
        EXPECT_TRUE(e.library);
        ExpectNear(e.got.element(3), e.want.element(3), 0, "geev info");
        for (int64_t b = 0; b < 3; ++b) {
          std::vector<bool> used(n, false);
          for (int64_t j = 0; j < n; ++j) {
            const std::complex<double> w = ComplexAt(e.got.element(0), b * n + j);
            int64_t best = -1;
            for (int64_t k = 0; k < n; ++k) {
              const std::complex<double> v = ComplexAt(e.want.element(0), b * n + k);
              if (!used[k] &&
                  (best < 0 ||
                   std::abs(v - w) < std::abs(ComplexAt(e.want.element(0), b * n + best) - w)))
                best = k;
            }
            used[best] = true;
            ASSERT_NEAR(std::abs(ComplexAt(e.want.element(0), b * n + best) - w), 0, tol * 20);
            for (int which : {1, 2}) {
              const bool asked = (which == 1 ? left : right) == 'V';
              std::complex<double> dot = 0;
              double norm = 0;
              for (int64_t i = 0; i < n; ++i) {
                const std::complex<double> g = ComplexAt(e.got.element(which), (b * n + i) * n + j);
                dot += std::conj(ComplexAt(e.want.element(which), (b * n + i) * n + best)) * g;
                norm += std::norm(g);
              }
              ASSERT_NEAR(std::abs(dot), asked ? 1 : 0, tol * 100) << which << ", " << j;
              ASSERT_NEAR(norm, asked ? 1 : 0, tol * 10) << which << ", " << j;
            }
          }
        }
      }
}

// Complex gees (jax.scipy.linalg.schur, sqrtm): T upper triangular, Z unitary, Z T Z^H = A, the
// diagonal w and T's diagonal the evaluator's eigenvalues as a set.
TEST(LapackLibrary, ComplexGeesIsASchurForm) {
  for (const auto& [name, letter, tol] : kComplexTypes) {
    SCOPED_TRACE(name);
    const int64_t n = 9;
    const std::string a = fmt::format("{}[2,{},{}]", name, n, n);
    std::vector<Literal> args;
    args.push_back(RandomComplex(*ParseShape(a), 37));
    Ran e = RunBoth({a}, fmt::format("({0}, {0}, {1}[2,{2}], s32[2], s32[2])", a, name, n),
                    fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}gees_ffi\", "
                                "backend_config={{mode = 86 : ui8, sort = 78 : ui8}}",
                                letter),
                    args);
    EXPECT_TRUE(e.library);
    for (int64_t b = 0; b < 2; ++b) {
      auto at = [&](const Literal& l, int64_t i, int64_t j) {
        return ComplexAt(l, (b * n + i) * n + j);
      };
      const Literal &t = e.got.element(0), &z = e.got.element(1);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          if (i > j) {
            ASSERT_EQ(std::abs(at(t, i, j)), 0) << i << "," << j;
          }
          std::complex<double> ztzh = 0, zhz = 0;
          for (int64_t p = 0; p < n; ++p) {
            zhz += std::conj(at(z, p, i)) * at(z, p, j);
            for (int64_t q = 0; q < n; ++q)
              ztzh += at(z, i, p) * at(t, p, q) * std::conj(at(z, j, q));
          }
          ASSERT_NEAR(std::abs(ztzh - at(args[0], i, j)), 0, tol * 50)
              << "Z T Z^H at " << i << "," << j;
          ASSERT_NEAR(std::abs(zhz - (i == j ? 1.0 : 0.0)), 0, tol * 10)
              << "Z^H Z at " << i << "," << j;
        }
      std::vector<bool> used(n, false);
      for (int64_t j = 0; j < n; ++j) {
        const std::complex<double> w = ComplexAt(e.got.element(2), b * n + j);
        ASSERT_NEAR(std::abs(w - at(t, j, j)), 0, tol) << "w is T's diagonal";
        int64_t best = -1;
        for (int64_t k = 0; k < n; ++k)
          if (!used[k] &&
              (best < 0 || std::abs(ComplexAt(e.want.element(2), b * n + k) - w) <
                               std::abs(ComplexAt(e.want.element(2), b * n + best) - w)))
            best = k;
        used[best] = true;
        ASSERT_NEAR(std::abs(ComplexAt(e.want.element(2), b * n + best) - w), 0, tol * 50);
      }
    }
  }
}

// gehrd (jax.scipy.linalg.hessenberg), real and complex: the reduced matrix with its
// reflectors and the taus are the evaluator's, which follows LAPACK's reflectors.
TEST(LapackLibrary, GehrdMatchesTheEvaluator) {
  for (const auto& [name, letter, tol] : kAllTypes) {
    SCOPED_TRACE(name);
    const std::string a = fmt::format("{}[3,8,8]", name);
    const Shape shape = *ParseShape(a);
    std::vector<Literal> args;
    args.push_back(RandomOf(shape, 41));
    Ran e = RunBoth({a}, fmt::format("({0}, {1}[3,7], s32[3])", a, name),
                    fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}gehrd_ffi\", "
                                "backend_config={{high = 8 : i32, low = 1 : i32}}",
                                letter),
                    args);
    EXPECT_TRUE(e.library);
    ExpectComplexNear(e.got.element(0), e.want.element(0), tol * 20, "gehrd H and reflectors");
    ExpectComplexNear(e.got.element(1), e.want.element(1), tol * 20, "gehrd tau");
    ExpectNear(e.got.element(2), e.want.element(2), 0, "gehrd info");
  }
}

// Complex heevd (Hermitian eigh) and gesdd, c64 and c128, against the evaluator's Jacobi
// methods: values equal; each eigenvector and the first k singular vectors equal up to a
// phase (|<got, want>| = 1, both unit); the Hermitian input keeps junk in its unread triangle.
TEST(LapackLibrary, ComplexHeevdAndGesddMatchTheEvaluator) {
  struct C {
    std::string name;
    char letter;
    double tol;
  };
  for (const C& t : {C{"c64", 'c', 2e-4}, C{"c128", 'z', 1e-9}}) {
    SCOPED_TRACE(t.name);
    const std::string real = t.name == "c64" ? "f32" : "f64";
    // |<column v of got, column v of want>| (columns) or of rows, for a [b, r, c] pair.
    auto overlap = [](const Literal& got, const Literal& want, bool columns, int64_t b, int64_t v) {
      const Shape& s = want.shape();
      const int64_t r = s.dimensions(s.rank() - 2), c = s.dimensions(s.rank() - 1);
      std::complex<double> dot = 0;
      for (int64_t i = 0; i < (columns ? r : c); ++i) {
        const int64_t at = b * r * c + (columns ? i * c + v : v * c + i);
        dot += std::conj(ComplexAt(got, at)) * ComplexAt(want, at);
      }
      return std::abs(dot);
    };
    const int64_t n = 9;
    const std::string sq = fmt::format("{}[3,{},{}]", t.name, n, n);
    std::vector<Literal> args;
    args.emplace_back(*ParseShape(sq));
    std::mt19937 rng(41);
    std::uniform_real_distribution<double> dist(-1, 1);
    for (int64_t e = 0; e < 3 * n * n; ++e) {
      std::complex<double> x(dist(rng), e % (n + 1) == 0 ? 0.0 : dist(rng));  // real diagonal
      if (t.letter == 'c')
        args[0].data<std::complex<float>>()[e] = std::complex<float>(x);
      else
        args[0].data<std::complex<double>>()[e] = x;
    }
    for (char uplo : {'L', 'U'}) {
      Ran e = RunBoth({sq}, fmt::format("({}, {}[3,{}], s32[3])", sq, real, n),
                      fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}heevd_ffi\", "
                                  "backend_config={{mode = 86 : ui8, uplo = {} : ui8}}",
                                  t.letter, int{uplo}),
                      args);
      EXPECT_TRUE(e.library);
      ExpectNear(e.got.element(1), e.want.element(1), t.tol * 10, "heevd eigenvalues");
      ExpectNear(e.got.element(2), e.want.element(2), 0, "heevd info");
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t v = 0; v < n; ++v)
          EXPECT_NEAR(overlap(e.got.element(0), e.want.element(0), true, b, v), 1, t.tol * 50)
              << uplo << " matrix " << b << " vector " << v;
    }
    for (auto [m, k, mode] :
         {std::tuple<int64_t, int64_t, char>{7, 4, 'S'}, {4, 7, 'A'}, {6, 6, 'N'}}) {
      SCOPED_TRACE(fmt::format("gesdd {}x{} mode {}", m, k, mode));
      const int64_t mn = std::min(m, k), uc = mode == 'S' ? mn : m, vr = mode == 'S' ? mn : k;
      const std::string a = fmt::format("{}[2,{},{}]", t.name, m, k);
      std::vector<Literal> svd_args;
      svd_args.emplace_back(*ParseShape(a));
      for (int64_t e = 0; e < 2 * m * k; ++e) {
        std::complex<double> x(dist(rng), dist(rng));
        if (t.letter == 'c')
          svd_args[0].data<std::complex<float>>()[e] = std::complex<float>(x);
        else
          svd_args[0].data<std::complex<double>>()[e] = x;
      }
      Ran s = RunBoth({a},
                      fmt::format("({0}, {1}[2,{2}], {3}[2,{4},{5}], {3}[2,{6},{7}], s32[2])", a,
                                  real, mn, t.name, m, uc, vr, k),
                      fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}gesdd_ffi\", "
                                  "backend_config={{mode = {} : ui8}}",
                                  t.letter, int{mode}),
                      svd_args);
      EXPECT_TRUE(s.library);
      ExpectNear(s.got.element(1), s.want.element(1), t.tol * 10, "singular values");
      ExpectNear(s.got.element(4), s.want.element(4), 0, "gesdd info");
      if (mode == 'N') continue;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t v = 0; v < mn; ++v) {
          EXPECT_NEAR(overlap(s.got.element(2), s.want.element(2), true, b, v), 1, t.tol * 50)
              << "U column " << v;
          EXPECT_NEAR(overlap(s.got.element(3), s.want.element(3), false, b, v), 1, t.tol * 50)
              << "V^H row " << v;
        }
    }
  }
}

// Complex triangular solves (after a complex solve's LU or a cholesky) call LAPACK's c/z trsm:
// no transpose, transpose and the conjugate transpose (HLO's ADJOINT), left and right.
TEST(LapackLibrary, ComplexTriangularSolvesMatchTheEvaluator) {
  for (const auto& [name, letter, tol] : kComplexTypes)
    for (const char* dims : {"6,6", "4,17,17"}) {
      SCOPED_TRACE(name + "[" + dims + "]");
      const std::string a = fmt::format("{}[{}]", name, dims);
      const Shape shape = *ParseShape(a);
      const int64_t n = shape.dimensions(shape.rank() - 1);
      const auto [batch, info] = BatchAndInfo(shape);
      for (char trans : {'N', 'T', 'C'})
        for (char side : {'L', 'R'}) {
          SCOPED_TRACE(fmt::format("trsm side {} trans {}", side, trans));
          const std::string b =
              fmt::format("{}[{}{}]", name, batch,
                          side == 'L' ? fmt::format("{},3", n) : fmt::format("3,{}", n));
          std::vector<Literal> targs;
          targs.push_back(RandomComplex(shape, 3, 4.0));
          targs.push_back(RandomComplex(*ParseShape(b), 5));
          Ran ffi = RunBoth({a, b}, b,
                            fmt::format("custom-call(%p0, %p1), custom_call_target="
                                        "\"lapack_{}trsm_ffi\", backend_config={{diag = {} : "
                                        "ui8, side = {} : ui8, trans_x = {} : ui8, uplo = {} : "
                                        "ui8}}",
                                        letter, int{'N'}, int{side}, int{trans}, int{'L'}),
                            targs);
          EXPECT_TRUE(ffi.library);
          ExpectComplexNear(ffi.got, ffi.want, tol * 10, "lapack trsm");
          Ran hlo = RunBoth({a, b}, b,
                            fmt::format("triangular-solve(%p0, %p1), left_side={}, lower=true, "
                                        "unit_diagonal=false, transpose_a={}",
                                        side == 'L',
                                        trans == 'N'   ? "NO_TRANSPOSE"
                                        : trans == 'T' ? "TRANSPOSE"
                                                       : "ADJOINT"),
                            targs);
          EXPECT_TRUE(hlo.library);
          ExpectComplexNear(hlo.got, hlo.want, tol * 10, "triangular-solve");
        }
    }
}

// Real gees (jax.scipy.linalg.schur) of random matrices, f32 and f64, a batch of 3: Z T Z^T
// reconstructs A, T is zero below its subdiagonal, and (wr, wi) are the evaluator's as a set
// (both Schur forms are valid; the order of eigenvalues on the diagonal may differ).
TEST(LapackLibrary, RealGeesIsASchurFormWithTheEvaluatorsEigenvalues) {
  for (const Type& t : kTypes) {
    SCOPED_TRACE(t.name);
    const int64_t n = 9;
    const std::string a = fmt::format("{}[3,{},{}]", t.name, n, n);
    const std::string v = fmt::format("{}[3,{}]", t.name, n);
    std::vector<Literal> args;
    args.push_back(Random(*ParseShape(a), 43));
    Ran g = RunBoth({a}, fmt::format("({0}, {0}, {1}, {1}, s32[3], s32[3])", a, v),
                    fmt::format("custom-call(%p0), custom_call_target=\"lapack_{}gees_ffi\", "
                                "backend_config={{mode = 86 : ui8, sort = 78 : ui8}}",
                                t.letter),
                    args);
    EXPECT_TRUE(g.library);
    ExpectNear(g.got.element(5), g.want.element(5), 0, "gees info");
    for (int64_t b = 0; b < 3; ++b) {
      auto T = [&](int64_t i, int64_t j) {
        return g.got.element(0).GetAsDouble(b * n * n + i * n + j);
      };
      auto Z = [&](int64_t i, int64_t j) {
        return g.got.element(1).GetAsDouble(b * n * n + i * n + j);
      };
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          if (i > j + 1) {
            EXPECT_EQ(T(i, j), 0) << i << ", " << j;
          }
          double ztz = 0;
          for (int64_t k = 0; k < n; ++k)
            for (int64_t l = 0; l < n; ++l) ztz += Z(i, k) * T(k, l) * Z(j, l);
          EXPECT_NEAR(ztz, args[0].GetAsDouble(b * n * n + i * n + j), t.tol * 20);
        }
      auto values = [&](const Literal& r) {
        std::vector<std::pair<double, double>> w;
        for (int64_t i = 0; i < n; ++i)
          w.emplace_back(r.element(2).GetAsDouble(b * n + i), r.element(3).GetAsDouble(b * n + i));
        std::sort(w.begin(), w.end());
        return w;
      };
      const auto got = values(g.got), want = values(g.want);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(got[i].first, want[i].first, t.tol * 50) << "wr " << i;
        EXPECT_NEAR(got[i].second, want[i].second, t.tol * 50) << "wi " << i;
      }
    }
  }
}

// gtsv (jax.lax.linalg.tridiagonal_solve) of random tridiagonal systems, some rows needing a
// swap, one batch of 3 and one of 40 (on the pool): X, info and the factors LAPACK leaves in
// the diagonals all the evaluator's (the same elimination).
TEST(LapackLibrary, GtsvMatchesTheEvaluator) {
  for (const Type& t : kTypes)
    for (int64_t batch : {3, 40}) {
      SCOPED_TRACE(fmt::format("{} batch {}", t.name, batch));
      const std::string v = fmt::format("{}[{},20]", t.name, batch);
      const std::string b = fmt::format("{}[{},20,5]", t.name, batch);
      std::vector<Literal> args;
      for (uint32_t seed : {31u, 32u, 33u}) args.push_back(Random(*ParseShape(v), seed));
      args.push_back(Random(*ParseShape(b), 34));
      Ran g = RunBoth({v, v, v, b}, fmt::format("({0}, {0}, {0}, {1}, s32[{2}])", v, b, batch),
                      fmt::format("custom-call(%p0, %p1, %p2, %p3), "
                                  "custom_call_target=\"lapack_{}gtsv_ffi\"",
                                  t.letter),
                      args);
      EXPECT_TRUE(g.library);
      for (int i = 0; i < 3; ++i)
        ExpectNear(g.got.element(i), g.want.element(i), t.tol * 50, fmt::format("factor {}", i));
      // Random diagonals make some systems ill-conditioned: X relative to its size.
      for (int64_t i = 0; i < g.want.element(3).element_count(); ++i) {
        const double want = g.want.element(3).GetAsDouble(i);
        ASSERT_NEAR(g.got.element(3).GetAsDouble(i), want, t.tol * 50 * (1 + std::abs(want))) << i;
      }
      ExpectNear(g.got.element(4), g.want.element(4), 0, "gtsv info");
    }
  // Complex (lax.linalg.tridiagonal_solve of complex diagonals): c/z gtsv, pivoting as the
  // evaluator does (|re| + |im|).
  for (const auto& [name, letter, tol] : kComplexTypes) {
    SCOPED_TRACE(name);
    const std::string v = fmt::format("{}[6,20]", name), b = fmt::format("{}[6,20,3]", name);
    std::vector<Literal> args;
    for (uint32_t seed : {41u, 42u, 43u}) args.push_back(RandomComplex(*ParseShape(v), seed));
    args.push_back(RandomComplex(*ParseShape(b), 44));
    Ran g = RunBoth({v, v, v, b}, fmt::format("({0}, {0}, {0}, {1}, s32[6])", v, b),
                    fmt::format("custom-call(%p0, %p1, %p2, %p3), "
                                "custom_call_target=\"lapack_{}gtsv_ffi\"",
                                letter),
                    args);
    EXPECT_TRUE(g.library);
    for (int i = 0; i < 3; ++i)
      ExpectComplexNear(g.got.element(i), g.want.element(i), tol * 50, "complex gtsv factor");
    for (int64_t i = 0; i < g.want.element(3).element_count(); ++i) {
      const std::complex<double> want = ComplexAt(g.want.element(3), i);
      ASSERT_LE(std::abs(ComplexAt(g.got.element(3), i) - want), tol * 50 * (1 + std::abs(want)))
          << i;
    }
    ExpectNear(g.got.element(4), g.want.element(4), 0, "complex gtsv info");
  }
}

// What the library does not take stays on the evaluator: pivots that do not fit the matrix,
// a routine letter that is not the operand's type, diagonals that do not fit the right-hand
// side, an empty matrix.
TEST(LapackLibrary, LeavesWhatItDoesNotTakeToTheEvaluator) {
  const std::string lu = "custom-call(%p0), custom_call_target=";
  EXPECT_TRUE(
      RunBoth({"f32[4,4]"}, "(f32[4,4], s32[4], s32[])", lu + "\"lapack_sgetrf_ffi\"", {}, false)
          .library);
  EXPECT_FALSE(
      RunBoth({"f32[4,4]"}, "(f32[4,4], s32[3], s32[])", lu + "\"lapack_sgetrf_ffi\"", {}, false)
          .library);
  EXPECT_FALSE(
      RunBoth({"f32[4,4]"}, "(f32[4,4], s32[4], s32[])", lu + "\"lapack_dgetrf_ffi\"", {}, false)
          .library);
  EXPECT_TRUE(
      RunBoth({"c64[4,4]"}, "(c64[4,4], s32[4], s32[])", lu + "\"lapack_cgetrf_ffi\"", {}, false)
          .library);
  EXPECT_FALSE(RunBoth({"c64[3]", "c64[4]", "c64[4]", "c64[4,1]"},
                       "(c64[3], c64[4], c64[4], c64[4,1], s32[])",
                       "custom-call(%p0, %p1, %p2, %p3), custom_call_target=\"lapack_cgtsv_ffi\"",
                       {}, false)
                   .library);
  EXPECT_FALSE(
      RunBoth({"f32[0,4]"}, "(f32[0,4], s32[0], s32[])", lu + "\"lapack_sgetrf_ffi\"", {}, false)
          .library);
}

}  // namespace
}  // namespace kiln::cpu
