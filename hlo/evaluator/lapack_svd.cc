// One-sided Jacobi SVD (see lapack_svd.h).
#include "hlo/evaluator/lapack_svd.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <vector>

#include "hlo/evaluator/matrix_kernels.h"

namespace kiln::eval {
namespace {

// A tall r x c matrix (r >= c), row-major: its SVD as columns u[:, j] (r x c, unit or zero
// where sigma is 0), sigma (descending) and V (c x c, row-major; A = U S V^H). A complex pair
// of columns (p, q) with w_p^H w_q = |g| e^{i phi} is rotated as a real one after column q is
// turned by e^{-i phi}. False when 64 sweeps did not make every pair of columns orthogonal to
// working precision.
template <typename C>
bool TallSvd(std::vector<C> w, int64_t r, int64_t c, std::vector<C>& u, std::vector<double>& sigma,
             std::vector<C>& v) {
  std::vector<C> V(c * c, C(0));
  for (int64_t i = 0; i < c; ++i) V[i * c + i] = C(1);
  bool converged = c < 2;
  for (int sweep = 0; sweep < 64 && !converged; ++sweep) {
    converged = true;
    for (int64_t p = 0; p < c; ++p)
      for (int64_t q = p + 1; q < c; ++q) {
        double alpha = 0, beta = 0;
        C gamma(0);
        for (int64_t i = 0; i < r; ++i) {
          alpha += std::norm(w[i * c + p]);
          beta += std::norm(w[i * c + q]);
          gamma += Conj(w[i * c + p]) * w[i * c + q];
        }
        if (gamma == C(0) || std::abs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) continue;
        converged = false;
        double g;
        C phase;
        SplitPhase(gamma, g, phase);
        const double zeta = (beta - alpha) / (2 * g);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double cs = 1 / std::sqrt(1 + t * t), sn = cs * t;
        const C turn = Conj(phase);
        for (int64_t i = 0; i < r; ++i) {
          const C a = w[i * c + p], b = turn * w[i * c + q];
          w[i * c + p] = cs * a - sn * b;
          w[i * c + q] = sn * a + cs * b;
        }
        for (int64_t i = 0; i < c; ++i) {
          const C a = V[i * c + p], b = turn * V[i * c + q];
          V[i * c + p] = cs * a - sn * b;
          V[i * c + q] = sn * a + cs * b;
        }
      }
  }
  std::vector<double> norm(c, 0.0);
  for (int64_t j = 0; j < c; ++j) {
    for (int64_t i = 0; i < r; ++i) norm[j] += std::norm(w[i * c + j]);
    norm[j] = std::sqrt(norm[j]);
  }
  std::vector<int64_t> order(c);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return norm[x] > norm[y]; });
  u.assign(r * c, C(0));
  sigma.assign(c, 0.0);
  v.assign(c * c, C(0));
  const double tiny = norm.empty() ? 0 : norm[order[0]] * 1e-300;
  for (int64_t k = 0; k < c; ++k) {
    const int64_t j = order[k];
    sigma[k] = norm[j];
    for (int64_t i = 0; i < c; ++i) v[i * c + k] = V[i * c + j];
    if (norm[j] > tiny)
      for (int64_t i = 0; i < r; ++i) u[i * c + k] = w[i * c + j] / norm[j];
  }
  return converged;
}

// Columns `have`..`want`-1 of the r x want matrix q (row-major; columns before `have` are
// orthonormal or zero) made an orthonormal completion: zero columns and the new ones are
// filled from the unit vectors, each orthogonalized twice against the columns kept so far.
template <typename C>
void Complete(std::vector<C>& q, int64_t r, int64_t want) {
  int64_t next_unit = 0;
  for (int64_t k = 0; k < want; ++k) {
    double n2 = 0;
    for (int64_t i = 0; i < r; ++i) n2 += std::norm(q[i * want + k]);
    if (n2 > 0.5) continue;  // a unit column of A's
    for (; next_unit < r; ++next_unit) {
      std::vector<C> x(r, C(0));
      x[next_unit] = C(1);
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t j = 0; j < want; ++j) {
          if (j == k) continue;
          C d(0);
          double nj = 0;
          for (int64_t i = 0; i < r; ++i) {
            d += Conj(q[i * want + j]) * x[i];
            nj += std::norm(q[i * want + j]);
          }
          if (nj < 0.5) continue;  // not filled yet
          for (int64_t i = 0; i < r; ++i) x[i] -= d * q[i * want + j];
        }
      double nx = 0;
      for (C e : x) nx += std::norm(e);
      if (nx < 1e-6) continue;  // (nearly) in the span already
      nx = std::sqrt(nx);
      for (int64_t i = 0; i < r; ++i) q[i * want + k] = x[i] / nx;
      ++next_unit;
      break;
    }
  }
}

template <typename C>
absl::StatusOr<Literal> GesddOf(const HloInstruction& instr, const Literal& a, char mode) {
  const Shape& s = a.shape();
  const Shape& rs = instr.shape();
  if (!rs.IsTuple() || rs.tuple_size() != 5)
    return EvalError(instr, "gesdd returns (a, s, u, vt, info)");
  const int64_t m = s.dimensions(s.rank() - 2), n = s.dimensions(s.rank() - 1);
  const int64_t k = std::min(m, n);
  const bool full = mode == 'A';
  const int64_t ucols = full ? m : k, vtrows = full ? n : k;
  std::vector<int64_t> batch(s.dimensions().begin(), s.dimensions().end() - 2);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  auto dims = [&](std::vector<int64_t> tail) {
    std::vector<int64_t> d = batch;
    d.insert(d.end(), tail.begin(), tail.end());
    return d;
  };
  const Shape& us = rs.tuple_shapes(2);
  const Shape& vs = rs.tuple_shapes(3);
  if (rs.tuple_shapes(1).dimensions() != dims({k}) ||
      (mode != 'N' &&
       (us.dimensions() != dims({m, ucols}) || vs.dimensions() != dims({vtrows, n}))))
    return EvalError(instr, "gesdd result shapes do not match the operand and mode");
  const std::vector<C> in = LoadWide<C>(a);
  std::vector<double> sv(batches * k);
  std::vector<C> uv, vtv;
  if (mode != 'N') {
    uv.assign(batches * m * ucols, C(0));
    vtv.assign(batches * vtrows * n, C(0));
  }
  std::vector<int32_t> info(batches, 0);
  for (int64_t b = 0; b < batches; ++b) {
    // Tall: A itself; wide: A^H = U' S V'^H, so u = V' and vt = U'^H.
    const bool wide = m < n;
    const int64_t r = wide ? n : m, c = k;
    std::vector<C> t(r * c);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const C x = in[b * m * n + i * n + j];
        if (wide)
          t[j * c + i] = Conj(x);
        else
          t[i * c + j] = x;
      }
    std::vector<C> U, V;
    std::vector<double> sigma;
    if (!TallSvd(std::move(t), r, c, U, sigma, V)) info[b] = 1;
    std::copy(sigma.begin(), sigma.end(), sv.begin() + b * k);
    if (mode == 'N') continue;
    // The tall side's vectors, completed to `want` columns: r x want.
    const int64_t want = wide ? vtrows : ucols;
    std::vector<C> Q(r * want, C(0));
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) Q[i * want + j] = U[i * c + j];
    Complete(Q, r, want);
    C* ub = uv.data() + b * m * ucols;
    C* vb = vtv.data() + b * vtrows * n;
    if (!wide) {
      std::copy(Q.begin(), Q.end(), ub);  // u: m x ucols
      for (int64_t i = 0; i < k; ++i)     // vt = V^H: k x n (n = k)
        for (int64_t j = 0; j < n; ++j) vb[i * n + j] = Conj(V[j * c + i]);
    } else {
      for (int64_t i = 0; i < m; ++i)  // u = V': m x m (m = k)
        for (int64_t j = 0; j < m; ++j) ub[i * m + j] = V[i * c + j];
      for (int64_t i = 0; i < vtrows; ++i)  // vt = Q^H: vtrows x n
        for (int64_t j = 0; j < n; ++j) vb[i * n + j] = Conj(Q[j * want + i]);
    }
  }
  std::vector<Literal> out;
  out.emplace_back(Shape(s.element_type(), s.dimensions()));  // A is overwritten: zeros
  out.emplace_back(Shape(rs.tuple_shapes(1).element_type(), dims({k})));
  StoreWide(sv, out.back());
  out.emplace_back(Shape(us.element_type(), us.dimensions()));
  if (mode != 'N') StoreWide(uv, out.back());
  out.emplace_back(Shape(vs.element_type(), vs.dimensions()));
  if (mode != 'N') StoreWide(vtv, out.back());
  out.push_back(Int32s(batch, info));
  return Literal::MakeTuple(std::move(out));
}

}  // namespace

absl::StatusOr<Literal> Gesdd(const HloInstruction& instr, const Literal& a, char mode) {
  const Shape& s = a.shape();
  if (s.rank() < 2 || !(IsFloating(s.element_type()) || IsComplex(s.element_type())))
    return EvalError(instr,
                     "gesdd expects a batch of real or complex matrices, got " + s.ToString(false));
  if (mode != 'A' && mode != 'S' && mode != 'N')
    return EvalError(instr, std::string("gesdd mode '") + mode + "' is not A, S or N");
  if (IsComplex(s.element_type())) return GesddOf<std::complex<double>>(instr, a, mode);
  return GesddOf<double>(instr, a, mode);
}

}  // namespace kiln::eval
