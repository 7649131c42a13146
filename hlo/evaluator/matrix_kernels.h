// Batched matrix kernels in double (or complex<double>) precision that the evaluator's
// cholesky and triangular-solve and its LAPACK custom-calls (lapack_custom_calls.cc) share.
// Matrices are row-major, batch after batch.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

#include "hlo/evaluator/kernel_util.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"

namespace kiln::eval {

// Converts a whole array to Acc, keeping its row-major layout.
template <typename Acc>
std::vector<Acc> ToAcc(const Literal& src) {
  std::vector<Acc> dst(src.element_count());
  PrimitiveTypeSwitch(src.shape().element_type(), [&](auto tag) {
    using In = decltype(tag);
    auto data = src.data<In>();
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = CastTo<Acc>(data[i]);
  });
  return dst;
}

// Loads batch matrices of a float or complex array into double / complex<double>.
template <typename C>
std::vector<C> LoadWide(const Literal& lit) {
  return ToAcc<C>(lit);
}
template <typename C>
void StoreWide(const std::vector<C>& src, Literal& lit) {
  PrimitiveTypeSwitch(lit.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    auto d = lit.data<T>();
    for (size_t i = 0; i < src.size(); ++i) d[i] = CastTo<T>(src[i]);
  });
}

// An s32 array of `dims` holding `values` (a LAPACK call's info, pivots or sdim).
inline Literal Int32s(std::vector<int64_t> dims, const std::vector<int32_t>& values) {
  Literal l(Shape(PrimitiveType::S32, std::move(dims)));
  std::copy(values.begin(), values.end(), l.data<int32_t>().begin());
  return l;
}

// The size LAPACK compares to choose a pivot: |x| of a real, |re| + |im| of a complex
// (icamax/izamax and ?gtsv use that, not the modulus: with the modulus, a complex LU picked
// other rows than XLA:CPU's LAPACK, and jax.scipy.linalg.lu's factors differed).
inline double PivotSize(double v) { return std::abs(v); }
inline double PivotSize(std::complex<double> v) { return std::abs(v.real()) + std::abs(v.imag()); }

inline double Conj(double v) { return v; }
inline std::complex<double> Conj(std::complex<double> v) { return std::conj(v); }
inline double RealPart(double v) { return v; }
inline double RealPart(std::complex<double> v) { return v.real(); }

// g = size * phase for the Jacobi rotations (syevd/heevd, gesdd): a complex g is |g| e^{i phi};
// a real one keeps its sign in the size (phase 1), so that real matrices rotate exactly as
// the real algorithm does.
inline void SplitPhase(double g, double& size, double& phase) {
  size = g;
  phase = 1;
}
inline void SplitPhase(std::complex<double> g, double& size, std::complex<double>& phase) {
  size = std::abs(g);
  phase = g / size;
}

template <typename C>
void CholeskyBatch(const std::vector<C>& a, std::vector<C>& out, int64_t n, int64_t batches,
                   bool lower) {
  out.assign(a.size(), C(0));
  for (int64_t bi = 0; bi < batches; ++bi) {
    const C* A = a.data() + bi * n * n;
    C* X = out.data() + bi * n * n;
    // Reads the lower triangle as is, or the upper triangle conjugate-transposed, and
    // factors A = L L^H; the upper result is U = L^H.
    auto at = [&](int64_t i, int64_t j) { return lower ? A[i * n + j] : Conj(A[j * n + i]); };
    std::vector<C> L(n * n, C(0));
    bool ok = true;
    for (int64_t j = 0; j < n && ok; ++j) {
      double d = RealPart(at(j, j));
      for (int64_t k = 0; k < j; ++k) d -= std::norm(std::complex<double>(L[j * n + k]));
      if (!(d > 0)) {
        ok = false;
        break;
      }
      const double djj = std::sqrt(d);
      L[j * n + j] = C(djj);
      for (int64_t i = j + 1; i < n; ++i) {
        C s = at(i, j);
        for (int64_t k = 0; k < j; ++k) s -= L[i * n + k] * Conj(L[j * n + k]);
        L[i * n + j] = s / djj;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (!ok) {
          X[i * n + j] = C(std::numeric_limits<double>::quiet_NaN());
        } else if (lower) {
          X[i * n + j] = L[i * n + j];
        } else {
          X[i * n + j] = Conj(L[j * n + i]);
        }
      }
  }
}

// Solves op(A) X = B (left) or X op(A) = B (right) for each batch, reading only the
// triangle of A that `lower` names (and not its diagonal when unit_diagonal).
template <typename C>
void TriangularSolveBatch(const std::vector<C>& a, std::vector<C>& b, int64_t m, int64_t n,
                          int64_t batches, const InstructionAttributes& at) {
  const bool left = at.left_side;
  const int64_t k = left ? m : n;  // order of A
  std::vector<C> T(k * k), X;
  for (int64_t bi = 0; bi < batches; ++bi) {
    const C* A = a.data() + bi * k * k;
    C* Bm = b.data() + bi * m * n;
    // T = op(tri(A)).
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const bool in_tri = at.lower ? j <= i : j >= i;
        C v = in_tri ? A[i * k + j] : C(0);
        if (i == j && at.unit_diagonal) v = C(1);
        switch (at.transpose_a) {
          case TriangularSolveTranspose::kNoTranspose:
            T[i * k + j] = v;
            break;
          case TriangularSolveTranspose::kTranspose:
            T[j * k + i] = v;
            break;
          case TriangularSolveTranspose::kAdjoint:
            T[j * k + i] = Conj(v);
            break;
        }
      }
    const bool t_lower = at.lower == (at.transpose_a == TriangularSolveTranspose::kNoTranspose);
    if (left) {
      // T X = B, column by column of B.
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t step = 0; step < m; ++step) {
          const int64_t i = t_lower ? step : m - 1 - step;
          C s = Bm[i * n + col];
          if (t_lower) {
            for (int64_t j = 0; j < i; ++j) s -= T[i * k + j] * Bm[j * n + col];
          } else {
            for (int64_t j = i + 1; j < m; ++j) s -= T[i * k + j] * Bm[j * n + col];
          }
          Bm[i * n + col] = s / T[i * k + i];
        }
      }
    } else {
      // X T = B, row by row of B: x_j = (b_j - sum_{i != j} x_i T[i][j]) / T[j][j], where
      // for lower T the x_i with i > j are known first, so j runs downwards.
      for (int64_t row = 0; row < m; ++row) {
        C* x = Bm + row * n;
        for (int64_t step = 0; step < n; ++step) {
          const int64_t j = t_lower ? n - 1 - step : step;
          C s = x[j];
          if (t_lower) {
            for (int64_t i = j + 1; i < n; ++i) s -= x[i] * T[i * k + j];
          } else {
            for (int64_t i = 0; i < j; ++i) s -= x[i] * T[i * k + j];
          }
          x[j] = s / T[j * k + j];
        }
      }
    }
  }
}

}  // namespace kiln::eval
