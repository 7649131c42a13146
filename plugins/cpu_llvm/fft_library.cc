#include "plugins/cpu_llvm/fft_library.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace kiln::cpu {
namespace {

bool PowerOfTwo(int64_t n) { return n >= 2 && (n & (n - 1)) == 0; }

// One butterfly stage's blocks: (a, b) <- (a + w b, a - w b) for k < half. Restrict
// pointers and fixed blocks of 8 let -O2's vectorizer take the loop.
template <typename R>
void Butterflies(R* __restrict ar, R* __restrict ai, R* __restrict br, R* __restrict bi,
                 const R* __restrict wr, const R* __restrict wi, int64_t half) {
  auto one = [&](int64_t k) {
    const R xr = br[k] * wr[k] - bi[k] * wi[k];
    const R xi = br[k] * wi[k] + bi[k] * wr[k];
    br[k] = ar[k] - xr;
    bi[k] = ai[k] - xi;
    ar[k] += xr;
    ai[k] += xi;
  };
  int64_t k = 0;
  for (; k + 8 <= half; k += 8)
    for (int j = 0; j < 8; ++j) one(k + j);
  for (; k < half; ++k) one(k);
}

// A complex transform of one power-of-two length and direction (sign -1 forward, +1
// inverse), unscaled, in place on split rows.
template <typename R>
class Radix2 {
 public:
  Radix2(int64_t n, int sign) : n_(n), reverse_(n), wr_(n), wi_(n) {
    for (int64_t i = 0, j = 0; i < n; ++i) {
      reverse_[i] = j;
      int64_t bit = n >> 1;
      for (; bit > 0 && (j & bit); bit >>= 1) j ^= bit;
      j |= bit;
    }
    // The stage of half-length h keeps exp(sign 2 pi i k / 2h), k < h, at offset h - 1.
    for (int64_t h = 1; h < n; h <<= 1)
      for (int64_t k = 0; k < h; ++k) {
        const double angle =
            sign * std::numbers::pi * static_cast<double>(k) / static_cast<double>(h);
        wr_[h - 1 + k] = static_cast<R>(std::cos(angle));
        wi_[h - 1 + k] = static_cast<R>(std::sin(angle));
      }
  }
  int64_t size() const { return n_; }
  void Run(R* re, R* im) const {
    for (int64_t i = 0; i < n_; ++i) {
      const int64_t j = reverse_[i];
      if (i < j) {
        std::swap(re[i], re[j]);
        std::swap(im[i], im[j]);
      }
    }
    for (int64_t h = 1; h < n_; h <<= 1)
      for (int64_t i = 0; i < n_; i += 2 * h)
        Butterflies(re + i, im + i, re + i + h, im + i + h, wr_.data() + h - 1, wi_.data() + h - 1,
                    h);
  }

 private:
  int64_t n_;
  std::vector<int64_t> reverse_;
  std::vector<R> wr_, wi_;
};

// Splits rows [begin, end) of `rows` across `pool`.
template <typename Fn>
void ForRows(ThreadPool* pool, int64_t rows, int64_t row_work, const Fn& fn) {
  if (pool != nullptr && pool->size() > 1 && rows > 1 && rows * row_work >= (int64_t{1} << 16))
    pool->ParallelFor(rows, [&](int64_t begin, int64_t end) { fn(begin, end); });
  else
    fn(0, rows);
}

template <typename R>
void Complex(const std::complex<R>* in, std::complex<R>* out, int64_t rows, int64_t n, bool inverse,
             ThreadPool* pool) {
  const Radix2<R> t(n, inverse ? 1 : -1);
  const R scale = inverse ? static_cast<R>(1.0 / static_cast<double>(n)) : R(1);
  ForRows(pool, rows, n, [&](int64_t begin, int64_t end) {
    std::vector<R> re(n), im(n);
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t k = 0; k < n; ++k) {
        re[k] = in[r * n + k].real();
        im[k] = in[r * n + k].imag();
      }
      t.Run(re.data(), im.data());
      for (int64_t k = 0; k < n; ++k)
        out[r * n + k] = std::complex<R>(re[k] * scale, im[k] * scale);
    }
  });
}

// n reals as n/2 complex values z[k] = x[2k] + i x[2k+1]; with Z = FFT(z), the spectrum is
// X[k] = E[k] + W^k O[k], E = (Z[k] + conj Z[m-k]) / 2, O = -i (Z[k] - conj Z[m-k]) / 2,
// W = exp(-2 pi i / n), for k <= m = n/2.
template <typename R>
void Real(const R* in, std::complex<R>* out, int64_t rows, int64_t n, ThreadPool* pool) {
  const int64_t m = n / 2;
  const Radix2<R> t(m, -1);
  std::vector<R> wr(m + 1), wi(m + 1);
  for (int64_t k = 0; k <= m; ++k) {
    const double angle = -2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    wr[k] = static_cast<R>(std::cos(angle));
    wi[k] = static_cast<R>(std::sin(angle));
  }
  ForRows(pool, rows, n, [&](int64_t begin, int64_t end) {
    std::vector<R> re(m), im(m);
    for (int64_t r = begin; r < end; ++r) {
      const R* x = in + r * n;
      for (int64_t k = 0; k < m; ++k) {
        re[k] = x[2 * k];
        im[k] = x[2 * k + 1];
      }
      t.Run(re.data(), im.data());
      std::complex<R>* y = out + r * (m + 1);
      for (int64_t k = 0; k <= m; ++k) {
        const int64_t a = k % m, b = (m - k) % m;
        const R er = (re[a] + re[b]) / 2, ei = (im[a] - im[b]) / 2;
        const R orr = (im[a] + im[b]) / 2, oi = -(re[a] - re[b]) / 2;
        y[k] = std::complex<R>(er + wr[k] * orr - wi[k] * oi, ei + wr[k] * oi + wi[k] * orr);
      }
    }
  });
}

// The half spectrum (n/2 + 1 values) extended by Hermitian symmetry, inverted, real parts.
template <typename R>
void InverseReal(const std::complex<R>* in, R* out, int64_t rows, int64_t n, ThreadPool* pool) {
  const int64_t half = n / 2 + 1;
  const Radix2<R> t(n, 1);
  const R scale = static_cast<R>(1.0 / static_cast<double>(n));
  ForRows(pool, rows, n, [&](int64_t begin, int64_t end) {
    std::vector<R> re(n), im(n);
    for (int64_t r = begin; r < end; ++r) {
      const std::complex<R>* x = in + r * half;
      for (int64_t k = 0; k < n; ++k) {
        const std::complex<R> v = k < half ? x[k] : std::conj(x[n - k]);
        re[k] = v.real();
        im[k] = v.imag();
      }
      t.Run(re.data(), im.data());
      for (int64_t k = 0; k < n; ++k) out[r * n + k] = re[k] * scale;
    }
  });
}

template <typename R>
void Run(FftType type, const Literal& in, Literal& out, int64_t n, ThreadPool* pool) {
  using C = std::complex<R>;
  const int64_t rows = out.element_count() / (type == FftType::kRfft ? n / 2 + 1 : n);
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft:
      return Complex<R>(in.data<C>().data(), out.data<C>().data(), rows, n, type == FftType::kIfft,
                        pool);
    case FftType::kRfft:
      return Real<R>(in.data<R>().data(), out.data<C>().data(), rows, n, pool);
    case FftType::kIrfft:
      return InverseReal<R>(in.data<C>().data(), out.data<R>().data(), rows, n, pool);
  }
}

}  // namespace

bool IsFftLibraryCall(const HloInstruction& h) {
  if (h.opcode() != HloOpcode::kFft || h.operand_count() != 1 || h.attrs().fft_length.size() != 1)
    return false;
  const int64_t n = h.attrs().fft_length[0];
  const Shape& in = h.operand(0)->shape();
  const Shape& out = h.shape();
  if (!PowerOfTwo(n) || n > (int64_t{1} << 26) || !in.IsArray() || !out.IsArray() ||
      in.rank() < 1 || in.rank() != out.rank() || in.num_elements() == 0 || in.is_dynamic())
    return false;
  const PrimitiveType ti = in.element_type(), to = out.element_type();
  const bool single = ti == PrimitiveType::F32 || ti == PrimitiveType::C64;
  const PrimitiveType real = single ? PrimitiveType::F32 : PrimitiveType::F64;
  const PrimitiveType complex = single ? PrimitiveType::C64 : PrimitiveType::C128;
  int64_t in_last = n, out_last = n;
  switch (h.attrs().fft_type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (ti != complex || to != complex) return false;
      break;
    case FftType::kRfft:
      if (ti != real || to != complex) return false;
      out_last = n / 2 + 1;
      break;
    case FftType::kIrfft:
      if (ti != complex || to != real) return false;
      in_last = n / 2 + 1;
      break;
  }
  if (ti != PrimitiveType::F32 && ti != PrimitiveType::C64 && ti != PrimitiveType::F64 &&
      ti != PrimitiveType::C128)
    return false;
  const int last = in.rank() - 1;
  for (int d = 0; d < last; ++d)
    if (in.dimensions(d) != out.dimensions(d)) return false;
  return in.dimensions(last) == in_last && out.dimensions(last) == out_last;
}

void RunFftLibrary(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool) {
  const int64_t n = h.attrs().fft_length[0];
  const PrimitiveType t = in.shape().element_type();
  if (t == PrimitiveType::F32 || t == PrimitiveType::C64)
    Run<float>(h.attrs().fft_type, in, out, n, pool);
  else
    Run<double>(h.attrs().fft_type, in, out, n, pool);
}

}  // namespace kiln::cpu
