// Complex transforms of lengths that are not powers of two, for fft_library.cc: a self-sorting
// (Stockham) mixed-radix transform for lengths whose prime factors are small (224 = 4*4*2*7,
// 1000 = 4*2*5*5*5, 48000), on the same split layout as the power-of-two Radix2 (element k
// of row l at [k * lanes + l]). Internal to cpu-llvm's FFT library; LLVM-free.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace kiln::cpu::fft_detail {

// exp(sign 2 pi i k / n) as (cos, sin), exact at multiples of a quarter turn: cos(pi) in
// double leaves sin at 1.2e-16, and a real transform's Nyquist value, exactly real, came out
// with an imaginary part of either sign (jnp.angle then gave -pi where XLA gives pi).
template <typename R>
std::pair<R, R> UnitRoot(int64_t k, int64_t n, int sign) {
  k %= n;
  if ((4 * k) % n == 0) {
    static constexpr R kCos[4] = {1, 0, -1, 0}, kSin[4] = {0, 1, 0, -1};
    const int64_t q = 4 * k / n;
    return {kCos[q], sign * kSin[q]};
  }
  const double angle =
      sign * 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
  return {static_cast<R>(std::cos(angle)), static_cast<R>(std::sin(angle))};
}

// Radices above this are not worth a stage of r^2 multiply-adds per r outputs: such lengths
// (a large prime factor) take Bluestein's algorithm instead.
inline constexpr int64_t kMaxRadix = 31;

// The radices of n, fours first then the other primes ascending; empty when a prime factor
// exceeds kMaxRadix.
inline std::vector<int64_t> Radices(int64_t n) {
  std::vector<int64_t> r;
  for (; n % 4 == 0; n /= 4) r.push_back(4);
  for (int64_t p = 2; p <= kMaxRadix && n > 1; ++p)
    for (; n % p == 0; n /= p) r.push_back(p);
  if (n > 1) r.clear();
  return r;
}

// Stockham decimation in frequency: a stage of radix r over sub-length len = r * m reads
// x[q + s (p + j m)] for j < r and writes the r-point DFT of them, the k-th times
// exp(sign 2 pi i p k / len), to y[q + s (r p + k)] (q < s, the stride: the product of the
// earlier radices); after the last stage the values are in natural order. For p and j fixed,
// the q < s values of all lanes are one contiguous run of s * lanes reals.
template <typename R>
class MixedRadix {
 public:
  MixedRadix(int64_t n, int sign) : n_(n) {
    int64_t len = n;
    for (int64_t r : Radices(n)) {
      Stage st;
      st.r = r;
      st.m = len / r;
      // Twiddles [p][k - 1], and the r-point DFT's roots W_r^t.
      for (int64_t p = 0; p < st.m; ++p)
        for (int64_t k = 1; k < r; ++k) {
          const auto [c, s] = UnitRoot<R>(p * k, len, sign);
          st.tw_re.push_back(c);
          st.tw_im.push_back(s);
        }
      for (int64_t t = 0; t < r; ++t) {
        const auto [c, s] = UnitRoot<R>(t, r, sign);
        st.root_re.push_back(c);
        st.root_im.push_back(s);
      }
      stages_.push_back(std::move(st));
      len /= r;
    }
    sign_ = sign;
  }
  // Whether n's prime factors are all small enough.
  static bool Handles(int64_t n) { return n > 1 && !Radices(n).empty(); }
  int64_t Slot(int64_t k) const { return k; }

  // In place on `lanes` rows; unscaled.
  void Run(R* re, R* im, int lanes) const {
    thread_local std::vector<R> work_re, work_im;
    const size_t size = static_cast<size_t>(n_ * lanes);
    if (work_re.size() < size) {
      work_re.resize(size);
      work_im.resize(size);
    }
    R *xr = re, *xi = im, *yr = work_re.data(), *yi = work_im.data();
    int64_t s = 1;
    for (const Stage& st : stages_) {
      const int64_t run = s * lanes;
      for (int64_t p = 0; p < st.m; ++p) {
        const R* twr = st.tw_re.data() + p * (st.r - 1);
        const R* twi = st.tw_im.data() + p * (st.r - 1);
        const R* in_r = xr + s * p * lanes;
        const R* in_i = xi + s * p * lanes;
        R* out_r = yr + s * st.r * p * lanes;
        R* out_i = yi + s * st.r * p * lanes;
        const int64_t in_step = s * st.m * lanes;  // j -> j + 1
        if (st.r == 4)
          Radix4(in_r, in_i, in_step, out_r, out_i, run, twr, twi);
        else if (st.r == 2)
          Radix2Stage(in_r, in_i, in_step, out_r, out_i, run, twr[0], twi[0]);
        else
          Generic(st, in_r, in_i, in_step, out_r, out_i, run, twr, twi);
      }
      std::swap(xr, yr);
      std::swap(xi, yi);
      s *= st.r;
    }
    if (xr != re)
      for (size_t i = 0; i < size; ++i) {
        re[i] = xr[i];
        im[i] = xi[i];
      }
  }

 private:
  struct Stage {
    int64_t r = 0, m = 0;
    std::vector<R> tw_re, tw_im, root_re, root_im;
  };

  static void Radix2Stage(const R* __restrict ar, const R* __restrict ai, int64_t step,
                          R* __restrict yr, R* __restrict yi, int64_t run, R wr, R wi) {
    const R *br = ar + step, *bi = ai + step;
    R *zr = yr + run, *zi = yi + run;
    for (int64_t t = 0; t < run; ++t) {
      const R dr = ar[t] - br[t], di = ai[t] - bi[t];
      yr[t] = ar[t] + br[t];
      yi[t] = ai[t] + bi[t];
      zr[t] = dr * wr - di * wi;
      zi[t] = dr * wi + di * wr;
    }
  }

  // The 4-point DFT: its roots are +-1 and +-i (times sign), no multiplies.
  void Radix4(const R* __restrict ar, const R* __restrict ai, int64_t step, R* __restrict yr,
              R* __restrict yi, int64_t run, const R* tw_re, const R* tw_im) const {
    const R w1r = tw_re[0], w1i = tw_im[0], w2r = tw_re[1], w2i = tw_im[1], w3r = tw_re[2],
            w3i = tw_im[2];
    const R sg = static_cast<R>(sign_);
    const R *br = ar + step, *bi = ai + step, *cr = br + step, *ci = bi + step, *dr = cr + step,
            *di = ci + step;
    R *y1r = yr + run, *y1i = yi + run, *y2r = y1r + run, *y2i = y1i + run, *y3r = y2r + run,
      *y3i = y2i + run;
    for (int64_t t = 0; t < run; ++t) {
      const R s0r = ar[t] + cr[t], s0i = ai[t] + ci[t];
      const R d0r = ar[t] - cr[t], d0i = ai[t] - ci[t];
      const R s1r = br[t] + dr[t], s1i = bi[t] + di[t];
      // sign i (b - d)
      const R d1r = -sg * (bi[t] - di[t]), d1i = sg * (br[t] - dr[t]);
      yr[t] = s0r + s1r;
      yi[t] = s0i + s1i;
      const R o1r = d0r + d1r, o1i = d0i + d1i;
      const R o2r = s0r - s1r, o2i = s0i - s1i;
      const R o3r = d0r - d1r, o3i = d0i - d1i;
      y1r[t] = o1r * w1r - o1i * w1i;
      y1i[t] = o1r * w1i + o1i * w1r;
      y2r[t] = o2r * w2r - o2i * w2i;
      y2i[t] = o2r * w2i + o2i * w2r;
      y3r[t] = o3r * w3r - o3i * w3i;
      y3i[t] = o3r * w3i + o3i * w3r;
    }
  }

  // Any radix: the r-point DFT by its definition, sum_j a_j W_r^(j k), then the twiddle.
  static void Generic(const Stage& st, const R* ar, const R* ai, int64_t step, R* yr, R* yi,
                      int64_t run, const R* tw_re, const R* tw_im) {
    const int64_t r = st.r;
    for (int64_t k = 0; k < r; ++k) {
      R* __restrict outr = yr + k * run;
      R* __restrict outi = yi + k * run;
      for (int64_t t = 0; t < run; ++t) {
        outr[t] = ar[t];
        outi[t] = ai[t];
      }
      for (int64_t j = 1; j < r; ++j) {
        const R wr = st.root_re[(j * k) % r], wi = st.root_im[(j * k) % r];
        const R* __restrict br = ar + j * step;
        const R* __restrict bi = ai + j * step;
        for (int64_t t = 0; t < run; ++t) {
          outr[t] += br[t] * wr - bi[t] * wi;
          outi[t] += br[t] * wi + bi[t] * wr;
        }
      }
      if (k == 0) continue;
      const R wr = tw_re[k - 1], wi = tw_im[k - 1];
      for (int64_t t = 0; t < run; ++t) {
        const R vr = outr[t], vi = outi[t];
        outr[t] = vr * wr - vi * wi;
        outi[t] = vr * wi + vi * wr;
      }
    }
  }

  int64_t n_;
  int sign_ = -1;
  std::vector<Stage> stages_;
};

}  // namespace kiln::cpu::fft_detail
