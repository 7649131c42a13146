#include "hlo/evaluator/lapack_eig.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "hlo/evaluator/matrix_kernels.h"

namespace kiln::eval {
namespace {

using Cd = std::complex<double>;
constexpr double kEps = std::numeric_limits<double>::epsilon();

// A reflector P = I - beta v v^H with P x = alpha e1 (P Hermitian and unitary); beta 0 when
// x is already a multiple of e1.
template <typename T>
double Reflector(std::vector<T>& v) {
  double tail = 0;
  for (size_t i = 1; i < v.size(); ++i) tail += std::norm(Cd(v[i]));
  if (tail == 0) return 0;
  const double norm = std::sqrt(std::norm(Cd(v[0])) + tail);
  // alpha = -phase(x0) |x|: v0 = x0 - alpha adds magnitudes, no cancellation.
  T phase = T(1);
  if (std::abs(v[0]) != 0) phase = v[0] / T(std::abs(v[0]));
  v[0] += phase * T(norm);
  double vv = 0;
  for (const T& x : v) vv += std::norm(Cd(x));
  return 2 / vv;
}

// The n x n row-major matrix H.
template <typename T>
struct Square {
  std::vector<T>& a;
  int64_t n;
  T& operator()(int64_t i, int64_t j) { return a[i * n + j]; }

  // Rows r0.. of columns [c0, c1] <- P (rows r0..r0+|v|-1).
  void FromLeft(const std::vector<T>& v, double beta, int64_t r0, int64_t c0, int64_t c1) {
    for (int64_t j = c0; j <= c1; ++j) {
      T s = 0;
      for (size_t i = 0; i < v.size(); ++i) s += Conj(v[i]) * (*this)(r0 + i, j);
      s *= beta;
      for (size_t i = 0; i < v.size(); ++i) (*this)(r0 + i, j) -= v[i] * s;
    }
  }
  // Rows [r0, r1] of columns c0.. <- (columns c0..c0+|v|-1) P.
  void FromRight(const std::vector<T>& v, double beta, int64_t c0, int64_t r0, int64_t r1) {
    for (int64_t i = r0; i <= r1; ++i) {
      T s = 0;
      for (size_t j = 0; j < v.size(); ++j) s += (*this)(i, c0 + j) * v[j];
      s *= beta;
      for (size_t j = 0; j < v.size(); ++j) (*this)(i, c0 + j) -= s * Conj(v[j]);
    }
  }
};

// h := P^H h P, upper Hessenberg; with `q`, q := q P (the reflectors collected).
template <typename T>
void ToHessenberg(Square<T> h, Square<T>* q = nullptr) {
  const int64_t n = h.n;
  for (int64_t k = 0; k + 2 < n; ++k) {
    std::vector<T> v;
    for (int64_t i = k + 1; i < n; ++i) v.push_back(h(i, k));
    const double beta = Reflector(v);
    if (beta == 0) continue;
    h.FromLeft(v, beta, k + 1, k, n - 1);
    h.FromRight(v, beta, k + 1, 0, n - 1);
    if (q != nullptr) q->FromRight(v, beta, k + 1, 0, n - 1);
    for (int64_t i = k + 2; i < n; ++i) h(i, k) = 0;
  }
}

// The eigenvalues of [[a, b], [c, d]]: a real matrix's are real or a conjugate pair, the one
// with positive imaginary part first.
template <typename T>
void TwoByTwo(T a, T b, T c, T d, Cd& first, Cd& second) {
  const T p = (a - d) / T(2);
  const T disc = p * p + b * c;
  if constexpr (std::is_same_v<T, double>) {
    if (disc < 0) {
      const double im = std::sqrt(-disc);
      first = Cd(d + p, im);
      second = Cd(d + p, -im);
      return;
    }
    const double z = p + std::copysign(std::sqrt(disc), p);
    first = d + z;
    second = z != 0 ? d - b * c / z : d;
  } else {
    const T r = std::sqrt(disc);
    const T z = std::abs(p + r) >= std::abs(p - r) ? p + r : p - r;
    first = d + z;
    second = z != T(0) ? d - b * c / z : d;
  }
}

// One implicit double-shift QR step on the unreduced block [l, e] (at least 3 x 3) with the
// shifts whose sum is s and product t. Without `z` only the block is updated (eigenvalues);
// with it the whole of h (rows above the block, columns right of it: a Schur form) and z's
// columns (the Schur vectors).
template <typename T>
void FrancisStep(Square<T> h, int64_t l, int64_t e, T s, T t, Square<T>* z = nullptr) {
  const int64_t first_row = z != nullptr ? 0 : l, last_col = z != nullptr ? h.n - 1 : e;
  T x = h(l, l) * h(l, l) + h(l, l + 1) * h(l + 1, l) - s * h(l, l) + t;
  T y = h(l + 1, l) * (h(l, l) + h(l + 1, l + 1) - s);
  T w = h(l + 1, l) * h(l + 2, l + 1);
  for (int64_t k = l; k + 2 <= e; ++k) {
    std::vector<T> v = {x, y, w};
    const double beta = Reflector(v);
    if (beta != 0) {
      h.FromLeft(v, beta, k, std::max(l, k - 1), last_col);
      h.FromRight(v, beta, k, first_row, std::min(k + 3, e));
      if (z != nullptr) z->FromRight(v, beta, k, 0, h.n - 1);
    }
    x = h(k + 1, k);
    y = h(k + 2, k);
    if (k + 3 <= e) w = h(k + 3, k);
  }
  std::vector<T> v = {x, y};
  const double beta = Reflector(v);
  if (beta != 0) {
    h.FromLeft(v, beta, e - 1, e - 2, last_col);
    h.FromRight(v, beta, e - 1, first_row, e);
    if (z != nullptr) z->FromRight(v, beta, e - 1, 0, h.n - 1);
  }
}

// The double-shift QR iteration on the Hessenberg `h` (with `z`, the whole matrix and the
// Schur vectors updated: FrancisStep), calling deflated(k, size) for each 1x1 or 2x2 diagonal
// block at (k, k) as it splits off; false when it did not converge.
template <typename T>
bool DoubleShiftQr(Square<T> h, Square<T>* z, const std::function<void(int64_t, int)>& deflated) {
  const int64_t n = h.n;
  double norm = 0;
  for (const T& x : h.a) norm = std::max(norm, std::abs(x));
  int64_t e = n - 1;
  int its = 0, total = 0;
  while (e >= 0) {
    int64_t l = e;
    for (; l > 0; --l) {
      double s = std::abs(h(l - 1, l - 1)) + std::abs(h(l, l));
      if (s == 0) s = norm;
      if (std::abs(h(l, l - 1)) <= kEps * s) {
        h(l, l - 1) = 0;
        break;
      }
    }
    if (l >= e - 1) {
      deflated(l, static_cast<int>(e - l + 1));
      e = l - 1;
      its = 0;
      continue;
    }
    if (++total > 60 * n) return false;
    ++its;
    T s = h(e - 1, e - 1) + h(e, e);
    T t = h(e - 1, e - 1) * h(e, e) - h(e - 1, e) * h(e, e - 1);
    if (its % 10 == 0) {
      // An exceptional shift breaks a cycle the standard shifts can fall into.
      const T sigma = h(e, e) + T(0.75 * (std::abs(h(e, e - 1)) + std::abs(h(e - 1, e - 2))));
      s = sigma + sigma;
      t = sigma * sigma;
    }
    FrancisStep(h, l, e, s, t, z);
  }
  return true;
}

// The eigenvalues of `a` (n x n, destroyed), in the order the iteration deflates them into
// place; false when it did not converge.
template <typename T>
bool Eigenvalues(std::vector<T>& a, int64_t n, std::vector<Cd>& w) {
  Square<T> h{a, n};
  ToHessenberg(h);
  w.assign(n, Cd(0));
  return DoubleShiftQr<T>(h, nullptr, [&](int64_t k, int size) {
    if (size == 1)
      w[k] = h(k, k);
    else
      TwoByTwo(h(k, k), h(k, k + 1), h(k + 1, k), h(k + 1, k + 1), w[k], w[k + 1]);
  });
}

// The 2x2 diagonal block at (k, k) of a real Schur form made standard, as LAPACK leaves it
// (its dlanv2): a complex pair as [[a, b], [c, a]] with b c < 0, real eigenvalues as an upper
// triangle; by a rotation R = [[cs, -sn], [sn, cs]] applied as T := R^T T R to the whole
// matrix and Z := Z R.
void Standardize(Square<double> t, Square<double> z, int64_t k) {
  double a = t(k, k), b = t(k, k + 1), c = t(k + 1, k), d = t(k + 1, k + 1);
  double cs = 1, sn = 0;
  auto sign = [](double x) { return x < 0 ? -1.0 : 1.0; };
  if (c == 0) {
    // Upper triangular already.
  } else if (b == 0) {  // lower triangular: swap the two
    cs = 0;
    sn = 1;
    std::swap(a, d);
    b = -c;
    c = 0;
  } else if (a - d == 0 && sign(b) != sign(c)) {
    // Standard already.
  } else {
    const double p = 0.5 * (a - d);
    const double bc_max = std::max(std::abs(b), std::abs(c));
    const double bc_min = std::min(std::abs(b), std::abs(c)) * sign(b) * sign(c);
    const double scale = std::max(std::abs(p), bc_max);
    const double disc = p / scale * p + bc_max / scale * bc_min;  // (discriminant) / scale
    if (disc >= 4 * kEps) {  // real eigenvalues: rotate to an upper triangle
      const double root = p + std::copysign(std::sqrt(scale) * std::sqrt(disc), p);
      a = d + root;
      d = d - bc_max / root * bc_min;
      const double tau = std::hypot(c, root);
      cs = root / tau;
      sn = c / tau;
      b = b - c;
      c = 0;
    } else {  // a complex pair, or real ones nearly equal: make the diagonal equal
      const double sigma = b + c, tau = std::hypot(sigma, a - d);
      cs = std::sqrt(0.5 * (1 + std::abs(sigma) / tau));
      sn = -(p / (tau * cs)) * sign(sigma);
      const double aa = a * cs + b * sn, bb = -a * sn + b * cs;  // M R
      const double cc = c * cs + d * sn, dd = -c * sn + d * cs;
      a = aa * cs + cc * sn;  // R^T (M R)
      b = bb * cs + dd * sn;
      c = -aa * sn + cc * cs;
      d = -bb * sn + dd * cs;
      const double mid = 0.5 * (a + d);
      a = d = mid;
      if (c != 0 && b != 0 && sign(b) == sign(c)) {  // real after all: split them
        const double sb = std::sqrt(std::abs(b)), sc = std::sqrt(std::abs(c));
        const double q = std::copysign(sb * sc, c), inv = 1 / std::sqrt(std::abs(b + c));
        a = mid + q;
        d = mid - q;
        b = b - c;
        c = 0;
        const double cs1 = sb * inv, sn1 = sc * inv;
        const double next_cs = cs * cs1 - sn * sn1;
        sn = cs * sn1 + sn * cs1;
        cs = next_cs;
      } else if (c != 0 && b == 0) {
        b = -c;
        c = 0;
        const double swap = cs;
        cs = -sn;
        sn = swap;
      }
    }
  }
  const int64_t n = t.n;
  for (int64_t j = k + 2; j < n; ++j) {  // rows k, k+1 right of the block: R^T
    const double u = t(k, j), v = t(k + 1, j);
    t(k, j) = cs * u + sn * v;
    t(k + 1, j) = -sn * u + cs * v;
  }
  auto columns = [&](Square<double>& m, int64_t rows) {  // columns k, k+1: R
    for (int64_t i = 0; i < rows; ++i) {
      const double u = m(i, k), v = m(i, k + 1);
      m(i, k) = cs * u + sn * v;
      m(i, k + 1) = -sn * u + cs * v;
    }
  };
  columns(t, k);
  columns(z, n);
  t(k, k) = a;
  t(k, k + 1) = b;
  t(k + 1, k) = c;
  t(k + 1, k + 1) = d;
}

// A = Z T Z^T of the real n x n `a` (row-major, overwritten by T: quasi-triangular, 2x2
// blocks standard) with `z` (n x n) the orthogonal Z; false when the iteration did not
// converge.
bool RealSchur(std::vector<double>& a, std::vector<double>& z, int64_t n) {
  Square<double> t{a, n}, q{z, n};
  z.assign(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) q(i, i) = 1;
  ToHessenberg(t, &q);
  const bool ok = DoubleShiftQr<double>(t, &q, [&](int64_t k, int size) {
    if (size == 2) Standardize(t, q, k);
  });
  for (int64_t i = 2; i < n; ++i)  // what the bulges left below the subdiagonal: rounding
    for (int64_t j = 0; j + 1 < i; ++j) t(i, j) = 0;
  return ok;
}

// Solves M x = b in place by LU with partial pivoting; a pivot below `tiny` is replaced by it
// (M - lambda I is singular at an exact eigenvalue: inverse iteration wants the nearby solve).
void SolveNearlySingular(std::vector<Cd> m, int64_t n, std::vector<Cd>& b, double tiny) {
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::abs(m[i * n + k]) > std::abs(m[p * n + k])) p = i;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(m[k * n + j], m[p * n + j]);
      std::swap(b[k], b[p]);
    }
    if (std::abs(m[k * n + k]) < tiny) m[k * n + k] = tiny;
    for (int64_t i = k + 1; i < n; ++i) {
      const Cd f = m[i * n + k] / m[k * n + k];
      if (f == Cd(0)) continue;
      for (int64_t j = k + 1; j < n; ++j) m[i * n + j] -= f * m[k * n + j];
      b[i] -= f * b[k];
    }
  }
  for (int64_t k = n - 1; k >= 0; --k) {
    Cd s = b[k];
    for (int64_t j = k + 1; j < n; ++j) s -= m[k * n + j] * b[j];
    b[k] = s / m[k * n + k];
  }
}

double Norm2(const std::vector<Cd>& x) {
  double s = 0;
  for (const Cd& v : x) s += std::norm(v);
  return std::sqrt(s);
}

// Eigenvectors of `a` (n x n, row-major; its conjugate transpose when `left`) for eigenvalues
// `w` (conjugated when `left`), as the columns of `out` (n x n). A vector for the second of a
// real matrix's conjugate pair is the first's conjugate. Vectors of equal eigenvalues are
// kept orthogonal, so a repeated eigenvalue of a diagonalizable matrix gets its whole space.
void Eigenvectors(const std::vector<Cd>& a, int64_t n, const std::vector<Cd>& w, bool real,
                  bool left, Cd* out) {
  double norm = 0;
  for (const Cd& x : a) norm = std::max(norm, std::abs(x));
  const double tiny = std::max(norm, 1.0) * kEps;
  std::vector<std::vector<Cd>> vectors(n);
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<Cd>& x = vectors[j];
    if (real && j > 0 && w[j - 1].imag() > 0 && w[j] == std::conj(w[j - 1])) {
      x = vectors[j - 1];
      for (Cd& v : x) v = std::conj(v);
    } else {
      const Cd lambda = left ? std::conj(w[j]) : w[j];
      std::vector<Cd> m(n * n);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n; ++c)
          m[r * n + c] =
              (left ? std::conj(a[c * n + r]) : a[r * n + c]) - (r == c ? lambda : Cd(0));
      x.assign(n, Cd(0));
      for (int64_t i = 0; i < n; ++i) {  // a fixed pseudo-random start, real
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = 0.5 + static_cast<double>(seed >> 11) * 0x1.0p-53;
      }
      for (int it = 0; it < 3; ++it) {
        for (int64_t p = 0; p < j; ++p) {  // orthogonal to the vectors of equal eigenvalues
          if (std::abs(w[p] - w[j]) > 1e3 * kEps * std::max(norm, 1.0)) continue;
          Cd dot = 0;
          for (int64_t i = 0; i < n; ++i) dot += std::conj(vectors[p][i]) * x[i];
          for (int64_t i = 0; i < n; ++i) x[i] -= dot * vectors[p][i];
        }
        double s = Norm2(x);
        if (s == 0) {  // the start lay in the other vectors' span
          x[j % n] = 1;
          s = 1;
        }
        for (Cd& v : x) v /= s;
        if (it < 2) SolveNearlySingular(m, n, x, tiny);
      }
      // Unit length; the largest component (the first of equal ones) real and positive.
      int64_t big = 0;
      for (int64_t i = 1; i < n; ++i)
        if (std::abs(x[i]) > std::abs(x[big])) big = i;
      const Cd phase = x[big] != Cd(0) ? std::conj(x[big]) / std::abs(x[big]) : Cd(1);
      for (Cd& v : x) v *= phase;
      x[big] = Cd(x[big].real(), 0);
    }
    for (int64_t i = 0; i < n; ++i) out[i * n + j] = x[i];
  }
}

// A = Z T Z^H of the complex n x n `h` (row-major, overwritten by T) with `z` (n x n) the
// unitary Z; false when the QR steps did not converge.
bool ComplexSchur(std::vector<Cd>& h, std::vector<Cd>& z, int64_t n) {
  Square<Cd> t{h, n}, q{z, n};
  z.assign(n * n, Cd(0));
  for (int64_t i = 0; i < n; ++i) q(i, i) = 1;
  ToHessenberg(t, &q);
  int64_t e = n - 1;
  int its = 0, total = 0;
  while (e > 0) {
    int64_t l = e;
    for (; l > 0; --l) {
      if (std::abs(t(l, l - 1)) <= kEps * (std::abs(t(l - 1, l - 1)) + std::abs(t(l, l)))) {
        t(l, l - 1) = 0;
        break;
      }
    }
    if (l == e) {
      --e;
      its = 0;
      continue;
    }
    if (++total > 60 * n) return false;
    ++its;
    // The trailing 2x2's eigenvalue nearer its last diagonal element (Wilkinson's shift); an
    // exceptional one now and then breaks a cycle.
    const Cd a = t(e - 1, e - 1), b = t(e - 1, e), c = t(e, e - 1), d = t(e, e);
    const Cd mean = (a + d) / 2.0, root = std::sqrt((a - d) * (a - d) / 4.0 + b * c);
    Cd mu = std::abs(mean + root - d) < std::abs(mean - root - d) ? mean + root : mean - root;
    if (its % 10 == 0) mu = d + 0.75 * std::abs(c);
    Cd x = t(l, l) - mu, y = t(l + 1, l);
    for (int64_t k = l; k < e; ++k) {
      // G = [[cs, sn], [-conj(sn), cs]] with G [x; y] = [r; 0], applied as G T G^H, Z G^H.
      const double norm = std::hypot(std::abs(x), std::abs(y));
      double cs = 1;
      Cd sn = 0;
      if (norm != 0) {
        if (x == Cd(0)) {
          cs = 0;
          sn = std::conj(y) / std::abs(y);
        } else {
          cs = std::abs(x) / norm;
          sn = (x / std::abs(x)) * std::conj(y) / norm;
        }
      }
      for (int64_t j = k > l ? k - 1 : l; j < n; ++j) {
        const Cd u = t(k, j), w = t(k + 1, j);
        t(k, j) = cs * u + sn * w;
        t(k + 1, j) = -std::conj(sn) * u + cs * w;
      }
      auto right = [&](Square<Cd>& m, int64_t last) {
        for (int64_t i = 0; i <= last; ++i) {
          const Cd u = m(i, k), w = m(i, k + 1);
          m(i, k) = u * cs + w * std::conj(sn);
          m(i, k + 1) = -u * sn + w * cs;
        }
      };
      right(t, std::min(k + 2, e));
      right(q, n - 1);
      if (k + 1 < e) {
        x = t(k + 1, k);
        y = t(k + 2, k);
      }
    }
  }
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) t(i, j) = 0;
  return true;
}

}  // namespace

absl::StatusOr<Literal> Geev(const HloInstruction& instr, const Literal& a, char compute_left,
                             char compute_right) {
  const Shape& s = a.shape();
  const PrimitiveType type = s.element_type();
  if (s.rank() < 2 || s.dimensions(s.rank() - 1) != s.dimensions(s.rank() - 2) ||
      !(IsFloating(type) || IsComplex(type)))
    return EvalError(instr, "geev expects a batch of square floating or complex matrices, got " +
                                s.ToString(false));
  const bool real = !IsComplex(type);
  const int64_t n = s.dimensions(s.rank() - 1);
  int64_t batches = 1;
  for (int d = 0; d < s.rank() - 2; ++d) batches *= s.dimensions(d);
  std::vector<int64_t> batch_dims(s.dimensions().begin(), s.dimensions().end() - 2);
  std::vector<int64_t> value_dims = batch_dims, vector_dims = batch_dims;
  value_dims.push_back(n);
  vector_dims.push_back(n);
  vector_dims.push_back(n);
  const PrimitiveType complex_type =
      real ? (type == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64) : type;

  const std::vector<Cd> all = LoadWide<Cd>(a);
  std::vector<Cd> values(batches * n), left(batches * n * n), right(batches * n * n);
  std::vector<int32_t> info(batches, 0);
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<Cd> m(all.begin() + b * n * n, all.begin() + (b + 1) * n * n);
    // A matrix holding NaN or infinity has no answer: info says so (JAX then gives NaNs), as
    // XLA's FFI checks before calling geev, which can loop forever on one.
    if (!std::all_of(m.begin(), m.end(), [](const Cd& x) { return std::isfinite(std::abs(x)); })) {
      info[b] = -4;
      continue;
    }
    std::vector<Cd> w;
    bool ok;
    if (real) {
      std::vector<double> r(n * n);
      for (int64_t i = 0; i < n * n; ++i) r[i] = m[i].real();
      ok = Eigenvalues(r, n, w);
    } else {
      std::vector<Cd> c = m;
      ok = Eigenvalues(c, n, w);
    }
    if (!ok) {
      info[b] = 1;
      continue;
    }
    std::copy(w.begin(), w.end(), values.begin() + b * n);
    if (compute_right == 'V') Eigenvectors(m, n, w, real, false, right.data() + b * n * n);
    if (compute_left == 'V') Eigenvectors(m, n, w, real, true, left.data() + b * n * n);
  }

  std::vector<Literal> out;
  if (real) {
    std::vector<double> wr(values.size()), wi(values.size());
    for (size_t i = 0; i < values.size(); ++i) wr[i] = values[i].real(), wi[i] = values[i].imag();
    out.emplace_back(Shape(type, value_dims));
    StoreWide(wr, out.back());
    out.emplace_back(Shape(type, value_dims));
    StoreWide(wi, out.back());
  } else {
    out.emplace_back(Shape(type, value_dims));
    StoreWide(values, out.back());
  }
  out.emplace_back(Shape(complex_type, vector_dims));
  StoreWide(left, out.back());
  out.emplace_back(Shape(complex_type, vector_dims));
  StoreWide(right, out.back());
  out.push_back(Int32s(batch_dims, info));
  return Literal::MakeTuple(std::move(out));
}

namespace {

// Real gees: (T, Z, wr, wi, sdim, info), a complex pair's eigenvalue with positive imaginary
// part first.
Literal RealGees(const Literal& a, char mode, int64_t n, int64_t batches,
                 const std::vector<int64_t>& batch_dims) {
  const Shape& s = a.shape();
  std::vector<int64_t> value_dims = batch_dims;
  value_dims.push_back(n);
  const std::vector<double> all = LoadWide<double>(a);
  std::vector<double> schur(all.size()), vectors(all.size(), 0.0), wr(batches * n), wi(batches * n);
  std::vector<int32_t> info(batches, 0);
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<double> t(all.begin() + b * n * n, all.begin() + (b + 1) * n * n), z;
    if (!RealSchur(t, z, n)) info[b] = 1;
    std::copy(t.begin(), t.end(), schur.begin() + b * n * n);
    if (mode == 'V') std::copy(z.begin(), z.end(), vectors.begin() + b * n * n);
    for (int64_t i = 0; i < n; ++i) {
      wr[b * n + i] = t[i * n + i];
      if (i + 1 < n && t[(i + 1) * n + i] != 0) {  // a standard block [[a, b], [c, a]]
        const double im =
            std::sqrt(std::abs(t[i * n + i + 1])) * std::sqrt(std::abs(t[(i + 1) * n + i]));
        wr[b * n + i + 1] = t[(i + 1) * n + i + 1];
        wi[b * n + i] = im;
        wi[b * n + i + 1] = -im;
        ++i;
      }
    }
  }
  std::vector<Literal> out;
  for (const std::vector<double>* part : {&schur, &vectors}) {
    out.emplace_back(Shape(s.element_type(), s.dimensions()));
    StoreWide(*part, out.back());
  }
  for (const std::vector<double>* part : {&wr, &wi}) {
    out.emplace_back(Shape(s.element_type(), value_dims));
    StoreWide(*part, out.back());
  }
  out.push_back(Int32s(batch_dims, std::vector<int32_t>(batches, 0)));  // sdim
  out.push_back(Int32s(batch_dims, info));
  return Literal::MakeTuple(std::move(out));
}

}  // namespace

absl::StatusOr<Literal> Gees(const HloInstruction& instr, const Literal& a, char mode) {
  const Shape& s = a.shape();
  const PrimitiveType type = s.element_type();
  if (s.rank() < 2 || s.dimensions(s.rank() - 1) != s.dimensions(s.rank() - 2) ||
      !(IsComplex(type) || IsFloating(type)))
    return EvalError(instr, "gees expects a batch of square floating or complex matrices, got " +
                                s.ToString(false));
  const int64_t n = s.dimensions(s.rank() - 1);
  int64_t batches = 1;
  for (int d = 0; d < s.rank() - 2; ++d) batches *= s.dimensions(d);
  std::vector<int64_t> batch_dims(s.dimensions().begin(), s.dimensions().end() - 2);
  if (!IsComplex(type)) return RealGees(a, mode, n, batches, batch_dims);
  std::vector<int64_t> value_dims = batch_dims;
  value_dims.push_back(n);
  const std::vector<Cd> all = LoadWide<Cd>(a);
  std::vector<Cd> schur(all.size()), vectors(all.size(), Cd(0)), values(batches * n);
  std::vector<int32_t> info(batches, 0);
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<Cd> h(all.begin() + b * n * n, all.begin() + (b + 1) * n * n), z;
    if (!ComplexSchur(h, z, n)) info[b] = 1;
    std::copy(h.begin(), h.end(), schur.begin() + b * n * n);
    if (mode == 'V') std::copy(z.begin(), z.end(), vectors.begin() + b * n * n);
    for (int64_t i = 0; i < n; ++i) values[b * n + i] = h[i * n + i];
  }
  std::vector<Literal> out;
  out.emplace_back(Shape(type, s.dimensions()));
  StoreWide(schur, out.back());
  out.emplace_back(Shape(type, s.dimensions()));
  StoreWide(vectors, out.back());
  out.emplace_back(Shape(type, value_dims));
  StoreWide(values, out.back());
  out.push_back(Int32s(batch_dims, std::vector<int32_t>(batches, 0)));  // sdim
  out.push_back(Int32s(batch_dims, info));
  return Literal::MakeTuple(std::move(out));
}

}  // namespace kiln::eval
