#include "hlo/evaluator/lapack_custom_calls.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/lapack_eig.h"
#include "hlo/evaluator/lapack_svd.h"
#include "hlo/evaluator/matrix_kernels.h"

namespace kiln::eval {
namespace {

constexpr std::string_view kPrefix = "lapack_", kSuffix = "_ffi";

struct MatrixBatch {
  int64_t m = 0, n = 0, batches = 0;
};

absl::StatusOr<MatrixBatch> Matrices(const HloInstruction& instr, const Shape& s) {
  if (s.rank() < 2 || !(IsFloating(s.element_type()) || IsComplex(s.element_type())))
    return EvalError(instr,
                     "expects a floating or complex batch of matrices, got " + s.ToString(false));
  MatrixBatch b;
  b.m = s.dimensions(s.rank() - 2);
  b.n = s.dimensions(s.rank() - 1);
  b.batches = 1;
  for (int d = 0; d < s.rank() - 2; ++d) b.batches *= s.dimensions(d);
  return b;
}

std::vector<int64_t> BatchDims(const Shape& s) {
  return std::vector<int64_t>(s.dimensions().begin(), s.dimensions().end() - 2);
}

// LU with partial pivoting (LAPACK getrf): rows are swapped whole; ipiv is 1-based; info is
// the 1-based column of the first exactly zero pivot (that column is left unscaled).
template <typename C>
void LuBatch(std::vector<C>& a, const MatrixBatch& b, std::vector<int32_t>& ipiv,
             std::vector<int32_t>& info) {
  const int64_t k = std::min(b.m, b.n);
  ipiv.assign(b.batches * k, 0);
  info.assign(b.batches, 0);
  for (int64_t bi = 0; bi < b.batches; ++bi) {
    C* A = a.data() + bi * b.m * b.n;
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = j;
      for (int64_t i = j + 1; i < b.m; ++i)
        if (PivotSize(A[i * b.n + j]) > PivotSize(A[p * b.n + j])) p = i;
      ipiv[bi * k + j] = static_cast<int32_t>(p + 1);
      if (A[p * b.n + j] == C(0)) {
        if (info[bi] == 0) info[bi] = static_cast<int32_t>(j + 1);
        continue;
      }
      if (p != j)
        for (int64_t c = 0; c < b.n; ++c) std::swap(A[j * b.n + c], A[p * b.n + c]);
      for (int64_t i = j + 1; i < b.m; ++i) {
        A[i * b.n + j] /= A[j * b.n + j];
        for (int64_t c = j + 1; c < b.n; ++c) A[i * b.n + c] -= A[i * b.n + j] * A[j * b.n + c];
      }
    }
  }
}

template <typename C>
absl::StatusOr<Literal> Getrf(const HloInstruction& instr, const Literal& a) {
  auto b = Matrices(instr, a.shape());
  if (!b.ok()) return b.status();
  std::vector<C> values = LoadWide<C>(a);
  std::vector<int32_t> ipiv, info;
  LuBatch(values, *b, ipiv, info);
  Literal lu(Shape(a.shape().element_type(), a.shape().dimensions()));
  StoreWide(values, lu);
  std::vector<int64_t> pivot_dims = BatchDims(a.shape());
  pivot_dims.push_back(std::min(b->m, b->n));
  std::vector<Literal> out;
  out.push_back(std::move(lu));
  out.push_back(Int32s(pivot_dims, ipiv));
  out.push_back(Int32s(BatchDims(a.shape()), info));
  return Literal::MakeTuple(std::move(out));
}

// Cholesky in the `uplo` triangle; the other triangle keeps the input (as LAPACK leaves it).
// A matrix that is not positive definite gets info 1 and NaNs (JAX replaces it with NaNs).
template <typename C>
absl::StatusOr<Literal> Potrf(const HloInstruction& instr, const Literal& a, bool lower) {
  auto b = Matrices(instr, a.shape());
  if (!b.ok()) return b.status();
  if (b->m != b->n) return EvalError(instr, "potrf needs square matrices");
  const std::vector<C> in = LoadWide<C>(a);
  std::vector<C> factor;
  CholeskyBatch(in, factor, b->n, b->batches, lower);
  std::vector<int32_t> info(b->batches, 0);
  const int64_t n = b->n;
  for (int64_t bi = 0; bi < b->batches; ++bi) {
    C* F = factor.data() + bi * n * n;
    const C* A = in.data() + bi * n * n;
    if (n > 0 && std::isnan(RealPart(F[0]))) {
      info[bi] = 1;
      continue;
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (lower ? j > i : j < i) F[i * n + j] = A[i * n + j];
  }
  Literal out_a(Shape(a.shape().element_type(), a.shape().dimensions()));
  StoreWide(factor, out_a);
  std::vector<Literal> out;
  out.push_back(std::move(out_a));
  out.push_back(Int32s(BatchDims(a.shape()), info));
  return Literal::MakeTuple(std::move(out));
}

template <typename C>
absl::StatusOr<Literal> Trsm(const HloInstruction& instr, const Literal& a, const Literal& x,
                             const std::map<std::string, int64_t>& flags) {
  auto ab = Matrices(instr, a.shape());
  auto xb = Matrices(instr, x.shape());
  if (!ab.ok()) return ab.status();
  if (!xb.ok()) return xb.status();
  InstructionAttributes at;
  at.left_side = LapackFlag(flags, "side", 'L') == 'L';
  at.lower = LapackFlag(flags, "uplo", 'L') == 'L';
  at.unit_diagonal = LapackFlag(flags, "diag", 'N') == 'U';
  const char trans = LapackFlag(flags, "trans_x", 'N');
  at.transpose_a = trans == 'T'   ? TriangularSolveTranspose::kTranspose
                   : trans == 'C' ? TriangularSolveTranspose::kAdjoint
                                  : TriangularSolveTranspose::kNoTranspose;
  const int64_t order = at.left_side ? xb->m : xb->n;
  if (ab->m != ab->n || ab->m != order || ab->batches != xb->batches)
    return EvalError(instr, "trsm: a " + a.shape().ToString(false) + " does not fit b " +
                                x.shape().ToString(false));
  std::vector<C> values = LoadWide<C>(x);
  TriangularSolveBatch(LoadWide<C>(a), values, xb->m, xb->n, xb->batches, at);
  Literal out(Shape(x.shape().element_type(), x.shape().dimensions()));
  StoreWide(values, out);
  return out;
}

// LAPACK's elementary reflector (xLARFG) for x = (alpha, rest): H = I - tau v v^H with v =
// (1, rest / (alpha - beta)), H^H x = (beta, 0...), beta real and of the opposite sign to
// Re(alpha); tau = 0 (H = I) when rest is zero and alpha real. Writes v's tail over `rest`
// and beta over alpha.
template <typename C>
C Reflector(C& alpha, C* rest, int64_t count, int64_t stride) {
  double xnorm2 = 0;
  for (int64_t i = 0; i < count; ++i) xnorm2 += std::norm(rest[i * stride]);
  if (xnorm2 == 0 && std::imag(alpha) == 0) return C(0);
  double beta = std::sqrt(std::norm(alpha) + xnorm2);
  if (RealPart(alpha) >= 0) beta = -beta;
  const C tau = (C(beta) - alpha) / C(beta);
  const C scale = C(1) / (alpha - C(beta));
  for (int64_t i = 0; i < count; ++i) rest[i * stride] *= scale;
  alpha = C(beta);
  return tau;
}

// Applies I - t v v^H (v = (1, A[r+1.., col]) read from column `vcol` of A) from the left to
// the columns [c0, c1) of rows [r, m) of the m x n row-major A (or of Q).
template <typename C>
void ApplyReflector(const C* V, int64_t vstride, C t, C* A, int64_t m, int64_t n, int64_t r,
                    int64_t c0, int64_t c1) {
  if (t == C(0)) return;
  for (int64_t c = c0; c < c1; ++c) {
    C dot = A[r * n + c];  // v^H a with v_0 = 1
    for (int64_t i = r + 1; i < m; ++i) dot += Conj(V[(i - r) * vstride]) * A[i * n + c];
    dot *= t;
    A[r * n + c] -= dot;
    for (int64_t i = r + 1; i < m; ++i) A[i * n + c] -= V[(i - r) * vstride] * dot;
  }
}

// The matrices of `s` (`values`, reflector tails stored in them) and tau [..., k], as
// geqrf and gehrd return them.
template <typename C>
std::vector<Literal> ReflectorsAndTaus(const Shape& s, const std::vector<C>& values,
                                       const std::vector<C>& taus, int64_t k) {
  std::vector<Literal> out;
  out.emplace_back(Shape(s.element_type(), s.dimensions()));
  StoreWide(values, out.back());
  std::vector<int64_t> tau_dims = BatchDims(s);
  tau_dims.push_back(k);
  out.emplace_back(Shape(s.element_type(), tau_dims));
  StoreWide(taus, out.back());
  return out;
}

// QR (xGEQRF): R in the upper triangle, the reflectors' tails below it, tau per reflector.
template <typename C>
absl::StatusOr<Literal> Geqrf(const HloInstruction& instr, const Literal& a) {
  auto b = Matrices(instr, a.shape());
  if (!b.ok()) return b.status();
  const int64_t m = b->m, n = b->n, k = std::min(m, n);
  std::vector<C> values = LoadWide<C>(a), taus(b->batches * k);
  for (int64_t bi = 0; bi < b->batches; ++bi) {
    C* A = values.data() + bi * m * n;
    for (int64_t j = 0; j < k; ++j) {
      const C tau = Reflector(A[j * n + j], A + (j + 1) * n + j, m - j - 1, n);
      taus[bi * k + j] = tau;
      // geqrf applies H^H = I - conj(tau) v v^H to the rest of the columns.
      ApplyReflector(A + j * n + j, n, Conj(tau), A, m, n, j, j + 1, n);
    }
  }
  return Literal::MakeTuple(ReflectorsAndTaus(a.shape(), values, taus, k));
}

// Hessenberg reduction (xGEHRD) of rows and columns [low-1, high) (1-based `low`, `high` as
// LAPACK's ilo and ihi): Q^H A Q = H with Q = H_low ... H_high-2, each reflector annihilating
// a column below its subdiagonal, applied from the right and then (as H^H) from the left; H in
// and above the subdiagonal, the reflectors' tails below it, tau [..., n-1] (0 outside the
// range), info 0.
template <typename C>
absl::StatusOr<Literal> Gehrd(const HloInstruction& instr, const Literal& a, int64_t low,
                              int64_t high) {
  auto b = Matrices(instr, a.shape());
  if (!b.ok()) return b.status();
  const int64_t n = b->n;
  if (b->m != n) return EvalError(instr, "gehrd needs square matrices");
  if (low < 1 || high > n || low > std::max<int64_t>(high, 1))
    return EvalError(instr, "gehrd needs 1 <= low <= high <= n");
  const int64_t k = std::max<int64_t>(n - 1, 0);
  std::vector<C> values = LoadWide<C>(a), taus(b->batches * k, C(0));
  for (int64_t bi = 0; bi < b->batches; ++bi) {
    C* A = values.data() + bi * n * n;
    for (int64_t j = low - 1; j + 1 < high; ++j) {
      C* v = A + (j + 1) * n + j;  // beta here after the reflector; v_0 = 1 is implicit
      const C tau = Reflector(*v, v + n, high - j - 2, n);
      taus[bi * k + j] = tau;
      if (tau == C(0)) continue;
      for (int64_t r = 0; r < high; ++r) {  // A := A H on columns [j+1, high)
        C* row = A + r * n + j + 1;
        C dot = row[0];
        for (int64_t i = 1; i + j + 1 < high; ++i) dot += row[i] * v[i * n];
        dot *= tau;
        row[0] -= dot;
        for (int64_t i = 1; i + j + 1 < high; ++i) row[i] -= dot * Conj(v[i * n]);
      }
      // A := H^H A on rows [j+1, high), columns [j+1, n).
      ApplyReflector(v, n, Conj(tau), A, high, n, j + 1, j + 1, n);
    }
  }
  std::vector<Literal> out = ReflectorsAndTaus(a.shape(), values, taus, k);
  out.push_back(Int32s(BatchDims(a.shape()), std::vector<int32_t>(b->batches, 0)));
  return Literal::MakeTuple(std::move(out));
}

// The m x n Q = H_1 ... H_k (xORGQR/xUNGQR) from geqrf's reflectors and taus.
template <typename C>
absl::StatusOr<Literal> Orgqr(const HloInstruction& instr, const Literal& a, const Literal& tau) {
  auto b = Matrices(instr, a.shape());
  if (!b.ok()) return b.status();
  const int64_t m = b->m, n = b->n;
  const int64_t k = tau.shape().rank() == 0 ? 0 : tau.shape().dimensions(tau.shape().rank() - 1);
  if (k > n || n > m) return EvalError(instr, "orgqr needs k <= n <= m");
  const std::vector<C> V = LoadWide<C>(a), taus = LoadWide<C>(tau);
  std::vector<C> q(V.size(), C(0));
  for (int64_t bi = 0; bi < b->batches; ++bi) {
    const C* Vb = V.data() + bi * m * n;
    C* Q = q.data() + bi * m * n;
    for (int64_t i = 0; i < n; ++i) Q[i * n + i] = C(1);
    for (int64_t j = k - 1; j >= 0; --j)
      ApplyReflector(Vb + j * n + j, n, taus[bi * k + j], Q, m, n, j, j, n);
  }
  Literal out(Shape(a.shape().element_type(), a.shape().dimensions()));
  StoreWide(q, out);
  return out;
}

// Eigenvalues (ascending) and eigenvectors (columns) of real symmetric (syevd) or complex
// Hermitian (heevd) matrices, read from the `lower` (or upper) triangle, by cyclic Jacobi
// rotations in double precision until the off-diagonal part is negligible. A complex pair
// (p, q) is first turned real by the phase of A[p, q] (column q times e^{-i phi}), then
// rotated as a real one. (v, w, info); w is real; info is 1 when the sweeps run out.
template <typename C>
absl::StatusOr<Literal> Syevd(const HloInstruction& instr, const Literal& a, bool lower) {
  auto b = Matrices(instr, a.shape());
  if (!b.ok()) return b.status();
  const Shape& rs = instr.shape();
  if (b->m != b->n || !rs.IsTuple() || rs.tuple_size() != 3)
    return EvalError(instr, "syevd/heevd needs square matrices and returns (v, w, info)");
  const int64_t n = b->n;
  const std::vector<C> in = LoadWide<C>(a);
  std::vector<C> vectors(in.size());
  std::vector<double> values(b->batches * n);
  std::vector<int32_t> info(b->batches, 0);
  for (int64_t bi = 0; bi < b->batches; ++bi) {
    std::vector<C> A(n * n), V(n * n, C(0));
    const C* M = in.data() + bi * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const bool stored = lower ? j <= i : j >= i;
        A[i * n + j] = i == j   ? C(RealPart(M[i * n + i]))
                       : stored ? M[i * n + j]
                                : Conj(M[j * n + i]);
      }
    for (int64_t i = 0; i < n; ++i) V[i * n + i] = C(1);
    double norm = 0;
    for (C x : A) norm += std::norm(x);
    bool converged = n < 2;
    for (int sweep = 0; sweep < 64 && !converged; ++sweep) {
      double off = 0;
      for (int64_t p = 0; p < n; ++p)
        for (int64_t q = p + 1; q < n; ++q) off += std::norm(A[p * n + q]);
      if (off <= 1e-30 * norm || off == 0) {
        converged = true;
        break;
      }
      for (int64_t p = 0; p < n; ++p)
        for (int64_t q = p + 1; q < n; ++q) {
          if (A[p * n + q] == C(0)) continue;
          double apq;
          C phase;
          SplitPhase(A[p * n + q], apq, phase);
          const double theta = (RealPart(A[q * n + q]) - RealPart(A[p * n + p])) / (2 * apq);
          const double t =
              (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
          const double c = 1 / std::sqrt(t * t + 1), s = t * c;
          // G = [[c, s], [-s conj(phase), c conj(phase)]] on (p, q): A <- G^H A G, V <- V G.
          const C gqp = -s * Conj(phase), gqq = c * Conj(phase);
          for (int64_t k = 0; k < n; ++k) {  // A <- A G (columns p, q)
            const C akp = A[k * n + p], akq = A[k * n + q];
            A[k * n + p] = c * akp + gqp * akq;
            A[k * n + q] = s * akp + gqq * akq;
          }
          for (int64_t k = 0; k < n; ++k) {  // A <- G^H A (rows p, q)
            const C apk = A[p * n + k], aqk = A[q * n + k];
            A[p * n + k] = c * apk + Conj(gqp) * aqk;
            A[q * n + k] = s * apk + Conj(gqq) * aqk;
          }
          for (int64_t k = 0; k < n; ++k) {  // V <- V G
            const C vkp = V[k * n + p], vkq = V[k * n + q];
            V[k * n + p] = c * vkp + gqp * vkq;
            V[k * n + q] = s * vkp + gqq * vkq;
          }
        }
    }
    if (!converged) info[bi] = 1;
    std::vector<int64_t> order(n);
    for (int64_t k = 0; k < n; ++k) order[k] = k;
    auto diag = [&](int64_t k) { return RealPart(A[k * n + k]); };
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return diag(x) < diag(y); });
    for (int64_t k = 0; k < n; ++k) {
      values[bi * n + k] = diag(order[k]);
      for (int64_t i = 0; i < n; ++i) vectors[bi * n * n + i * n + k] = V[i * n + order[k]];
    }
  }
  Literal out_v(Shape(a.shape().element_type(), a.shape().dimensions()));
  StoreWide(vectors, out_v);
  std::vector<int64_t> value_dims = BatchDims(a.shape());
  value_dims.push_back(n);
  Literal out_w(Shape(rs.tuple_shapes(1).element_type(), value_dims));
  StoreWide(values, out_w);
  std::vector<Literal> out;
  out.push_back(std::move(out_v));
  out.push_back(std::move(out_w));
  out.push_back(Int32s(BatchDims(a.shape()), info));
  return Literal::MakeTuple(std::move(out));
}

// gtsv: A X = B for a tridiagonal A given by its diagonals in JAX's convention (dl[i] =
// A[i, i-1] with dl[0] unused, d[i] = A[i, i], du[i] = A[i, i+1] with du[m-1] unused), B
// [..., m, nrhs], by LAPACK's Gaussian elimination with partial pivoting (rows i and i+1
// swapped where |dl| > |d|), which also leaves its factors in dl[1..], d and du as LAPACK does.
// info is the 1-based row of an exactly zero pivot (B then holds what elimination left).
template <typename C>
absl::StatusOr<Literal> Gtsv(const HloInstruction& instr, Operands ops) {
  const Shape& bs = ops[3]->shape();
  auto b = Matrices(instr, bs);
  if (!b.ok()) return b.status();
  const int64_t m = b->m, nrhs = b->n;
  for (int k = 0; k < 3; ++k)
    if (ops[k]->shape().element_type() != bs.element_type() ||
        ops[k]->shape().num_elements() != b->batches * m)
      return EvalError(instr, "gtsv's diagonals must be [..., m] of the right-hand side's type");
  std::vector<C> dl = LoadWide<C>(*ops[0]), d = LoadWide<C>(*ops[1]), du = LoadWide<C>(*ops[2]),
                 x = LoadWide<C>(*ops[3]);
  std::vector<int32_t> info(b->batches, 0);
  for (int64_t bi = 0; bi < b->batches; ++bi) {
    C* L = dl.data() + bi * m + 1;  // LAPACK's DL(1..m-1)
    C* D = d.data() + bi * m;
    C* U = du.data() + bi * m;
    C* X = x.data() + bi * m * nrhs;
    auto row = [&](int64_t i) { return X + i * nrhs; };
    for (int64_t i = 0; i + 1 < m; ++i) {
      if (PivotSize(D[i]) >= PivotSize(L[i])) {
        if (D[i] == C(0)) {  // then L[i] is zero too: a zero pivot
          info[bi] = static_cast<int32_t>(i + 1);
          break;
        }
        const C fact = L[i] / D[i];
        D[i + 1] -= fact * U[i];
        for (int64_t j = 0; j < nrhs; ++j) row(i + 1)[j] -= fact * row(i)[j];
        if (i + 2 < m) L[i] = 0;
      } else {  // swap rows i and i + 1
        const C fact = D[i] / L[i];
        D[i] = L[i];
        const C temp = D[i + 1];
        D[i + 1] = U[i] - fact * temp;
        if (i + 2 < m) {
          L[i] = U[i + 1];
          U[i + 1] = -fact * L[i];
        }
        U[i] = temp;
        for (int64_t j = 0; j < nrhs; ++j) {
          const C t = row(i)[j];
          row(i)[j] = row(i + 1)[j];
          row(i + 1)[j] = t - fact * row(i + 1)[j];
        }
      }
    }
    if (info[bi] == 0 && m > 0 && D[m - 1] == C(0)) info[bi] = static_cast<int32_t>(m);
    if (info[bi] != 0) continue;
    for (int64_t j = 0; j < nrhs; ++j) {
      for (int64_t i = m - 1; i >= 0; --i) {
        C v = row(i)[j];
        if (i + 1 < m) v -= U[i] * row(i + 1)[j];
        if (i + 2 < m) v -= L[i] * row(i + 2)[j];
        row(i)[j] = v / D[i];
      }
    }
  }
  std::vector<Literal> out;
  for (int k = 0; k < 4; ++k)
    out.emplace_back(Shape(ops[k]->shape().element_type(), ops[k]->shape().dimensions()));
  StoreWide(dl, out[0]);
  StoreWide(d, out[1]);
  StoreWide(du, out[2]);
  StoreWide(x, out[3]);
  out.push_back(Int32s(BatchDims(bs), info));
  return Literal::MakeTuple(std::move(out));
}

template <typename C>
absl::StatusOr<Literal> Dispatch(const HloInstruction& instr, Operands ops,
                                 std::string_view routine) {
  const auto flags = LapackAttributes(instr);
  if (routine == "syevd" || routine == "heevd") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Syevd<C>(instr, *ops[0], LapackFlag(flags, "uplo", 'L') == 'L');
  }
  if (routine == "gesdd") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Gesdd(instr, *ops[0], LapackFlag(flags, "mode", 'A'));
  }
  if (routine == "geev") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Geev(instr, *ops[0], LapackFlag(flags, "compute_left", 'N'),
                LapackFlag(flags, "compute_right", 'N'));
  }
  if (routine == "gehrd") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    const int64_t n = ops[0]->shape().rank() > 0 ? ops[0]->shape().dimensions().back() : 0;
    const auto low = flags.find("low"), high = flags.find("high");
    return Gehrd<C>(instr, *ops[0], low == flags.end() ? 1 : low->second,
                    high == flags.end() ? n : high->second);
  }
  if (routine == "gees") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Gees(instr, *ops[0], LapackFlag(flags, "mode", 'V'));
  }
  if (routine == "gtsv") {
    if (auto st = ExpectOperands(instr, ops, 4); !st.ok()) return st;
    return Gtsv<C>(instr, ops);
  }
  if (routine == "getrf") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Getrf<C>(instr, *ops[0]);
  }
  if (routine == "geqrf") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Geqrf<C>(instr, *ops[0]);
  }
  if (routine == "orgqr" || routine == "ungqr") {
    if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
    return Orgqr<C>(instr, *ops[0], *ops[1]);
  }
  if (routine == "potrf") {
    if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
    return Potrf<C>(instr, *ops[0], LapackFlag(flags, "uplo", 'L') == 'L');
  }
  if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
  return Trsm<C>(instr, *ops[0], *ops[1], flags);
}

}  // namespace

std::string_view LapackRoutine(std::string_view target) {
  if (target.size() <= kPrefix.size() + kSuffix.size() + 1 || !target.starts_with(kPrefix) ||
      !target.ends_with(kSuffix)) {
    return "";
  }
  const char type = target[kPrefix.size()];
  if (type != 's' && type != 'd' && type != 'c' && type != 'z') return "";
  return target.substr(kPrefix.size() + 1, target.size() - kPrefix.size() - 1 - kSuffix.size());
}

std::map<std::string, int64_t> LapackAttributes(const HloInstruction& instr) {
  std::map<std::string, int64_t> out;
  const std::string* text = instr.attrs().FindExtra("backend_config");
  if (text == nullptr) return out;
  std::string_view s = *text;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    size_t name_start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    std::string name(s.substr(name_start, i - name_start));
    while (i < s.size() && s[i] == ' ') ++i;
    if (i >= s.size() || s[i] != '=') continue;
    ++i;
    while (i < s.size() && s[i] == ' ') ++i;
    size_t value_start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '-')) ++i;
    int64_t v = 0;
    if (absl::SimpleAtoi(absl::string_view(s.data() + value_start, i - value_start), &v))
      out[name] = v;
    while (i < s.size() && s[i] != ',' && s[i] != '}') ++i;  // ": ui8"
  }
  return out;
}

char LapackFlag(const std::map<std::string, int64_t>& attrs, const std::string& name,
                char fallback) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : static_cast<char>(it->second);
}

bool IsLapackCustomCall(std::string_view target) {
  std::string_view r = LapackRoutine(target);
  const bool real = target.size() > kPrefix.size() &&
                    (target[kPrefix.size()] == 's' || target[kPrefix.size()] == 'd');
  return r == "getrf" || r == "potrf" || r == "trsm" || r == "geqrf" || r == "orgqr" ||
         r == "ungqr" || r == "geev" || r == "gtsv" || r == "gehrd" || r == "gesdd" ||
         r == "gees" || (r == "syevd" && real) || (r == "heevd" && !real);
}

absl::StatusOr<Literal> EvalLapackCustomCall(const HloInstruction& instr, Operands ops) {
  const std::string& target = instr.attrs().custom_call_target;
  std::string_view routine = LapackRoutine(target);
  if (!IsLapackCustomCall(target))
    return EvalError(instr,
                     "custom-call target '" + target + "' is not a LAPACK routine Kiln runs");
  const char type = target[kPrefix.size()];
  if (type == 'c' || type == 'z') return Dispatch<std::complex<double>>(instr, ops, routine);
  return Dispatch<double>(instr, ops, routine);
}

}  // namespace kiln::eval
