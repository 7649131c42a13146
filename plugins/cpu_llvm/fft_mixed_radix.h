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

// The vector helpers below are always inlined: no vector crosses a call, so the ABI note GCC
// gives for 32-byte vectors in the baseline build does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

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

// Whether the CPU has AVX2 and FMA: the transforms' loops are compiled for them too (the
// library is built for the baseline x86-64) and run that way where it does.
inline bool HaveAvx2() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
#else
  return false;
#endif
}

// Workspaces of up to this many values (1 MB of f32 parts) stay with their thread between
// calls; larger ones are allocated per call.
inline constexpr size_t kKeptWorkspace = size_t{1} << 17;

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

// A run of 8 values as one GCC vector (AVX2's register for f32, two for f64; SSE halves in
// the baseline build): -O2's vectorizer (GCC's very cheap cost model) left the loops over a
// run of unknown length scalar, 3x slower. Ld/St of the scalar type are plain accesses.
template <typename R>
struct Vec8Of;
template <>
struct Vec8Of<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Vec8Of<double> {
  typedef double type __attribute__((vector_size(64)));
};
template <typename R>
using Vec8 = typename Vec8Of<R>::type;

template <typename T, typename R>
[[gnu::always_inline]] inline T Ld(const R* p) {
  T v;
  __builtin_memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T, typename R>
[[gnu::always_inline]] inline void St(R* p, T v) {
  __builtin_memcpy(p, &v, sizeof(T));
}

// fn.operator()<T>(t) over t < run: 8 values at a time as a Vec8, the rest one by one.
template <typename R, typename Fn>
[[gnu::always_inline]] inline void ForRun(int64_t run, const Fn& fn) {
  int64_t t = 0;
  for (; t + 8 <= run; t += 8) fn.template operator()<Vec8<R>>(t);
  for (; t < run; ++t) fn.template operator()<R>(t);
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

  // In place on `lanes` rows; unscaled. Compiled for AVX2 and FMA too, as Radix2's stages
  // are (the library is built for the baseline x86-64): 2x on a batch of 1000-point rows.
  void Run(R* re, R* im, int lanes) const {
#if defined(__x86_64__)
    if (HaveAvx2()) return RunAvx2(re, im, lanes);
#endif
    Body(re, im, lanes);
  }

 private:
#if defined(__x86_64__)
  __attribute__((target("avx2,fma"))) void RunAvx2(R* re, R* im, int lanes) const {
    Body(re, im, lanes);
  }
#endif

  [[gnu::always_inline]] inline void Body(R* re, R* im, int lanes) const {
    // The workspace: kept by the thread for the next call up to kKeptWorkspace values (a
    // large transform's would stay allocated in every pool thread), made afresh above.
    thread_local std::vector<R> kept_re, kept_im;
    std::vector<R> own_re, own_im;
    const size_t size = static_cast<size_t>(n_ * lanes);
    std::vector<R>& work_re = size <= kKeptWorkspace ? kept_re : own_re;
    std::vector<R>& work_im = size <= kKeptWorkspace ? kept_im : own_im;
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
        else if (st.r == 3)
          OddRadix<3>(st, in_r, in_i, in_step, out_r, out_i, run, twr, twi);
        else if (st.r == 5)
          OddRadix<5>(st, in_r, in_i, in_step, out_r, out_i, run, twr, twi);
        else if (st.r == 7)
          OddRadix<7>(st, in_r, in_i, in_step, out_r, out_i, run, twr, twi);
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

  struct Stage {
    int64_t r = 0, m = 0;
    std::vector<R> tw_re, tw_im, root_re, root_im;
  };

  [[gnu::always_inline]] static void Radix2Stage(const R* ar, const R* ai, int64_t step, R* yr,
                                                 R* yi, int64_t run, R wr, R wi) {
    const R *br = ar + step, *bi = ai + step;
    R *zr = yr + run, *zi = yi + run;
    ForRun<R>(
        run, [&]<typename T>(int64_t t) __attribute__((always_inline)) {
          const T a_r = Ld<T>(ar + t), a_i = Ld<T>(ai + t), b_r = Ld<T>(br + t),
                  b_i = Ld<T>(bi + t);
          const T dr = a_r - b_r, di = a_i - b_i;
          St(yr + t, a_r + b_r);
          St(yi + t, a_i + b_i);
          St(zr + t, dr * wr - di * wi);
          St(zi + t, dr * wi + di * wr);
        });
  }

  // The 4-point DFT: its roots are +-1 and +-i (times sign), no multiplies.
  [[gnu::always_inline]] void Radix4(const R* ar, const R* ai, int64_t step, R* yr, R* yi,
                                     int64_t run, const R* tw_re, const R* tw_im) const {
    const R w1r = tw_re[0], w1i = tw_im[0], w2r = tw_re[1], w2i = tw_im[1], w3r = tw_re[2],
            w3i = tw_im[2];
    const R sg = static_cast<R>(sign_);
    ForRun<R>(
        run, [&]<typename T>(int64_t t) __attribute__((always_inline)) {
          const T a_r = Ld<T>(ar + t), a_i = Ld<T>(ai + t);
          const T b_r = Ld<T>(ar + step + t), b_i = Ld<T>(ai + step + t);
          const T c_r = Ld<T>(ar + 2 * step + t), c_i = Ld<T>(ai + 2 * step + t);
          const T d_r = Ld<T>(ar + 3 * step + t), d_i = Ld<T>(ai + 3 * step + t);
          const T s0r = a_r + c_r, s0i = a_i + c_i, d0r = a_r - c_r, d0i = a_i - c_i;
          const T s1r = b_r + d_r, s1i = b_i + d_i;
          const T d1r = -sg * (b_i - d_i), d1i = sg * (b_r - d_r);  // sign i (b - d)
          const T o1r = d0r + d1r, o1i = d0i + d1i, o2r = s0r - s1r, o2i = s0i - s1i;
          const T o3r = d0r - d1r, o3i = d0i - d1i;
          St(yr + t, s0r + s1r);
          St(yi + t, s0i + s1i);
          St(yr + run + t, o1r * w1r - o1i * w1i);
          St(yi + run + t, o1r * w1i + o1i * w1r);
          St(yr + 2 * run + t, o2r * w2r - o2i * w2i);
          St(yi + 2 * run + t, o2r * w2i + o2i * w2r);
          St(yr + 3 * run + t, o3r * w3r - o3i * w3i);
          St(yi + 3 * run + t, o3r * w3i + o3i * w3r);
        });
  }

  // An odd radix known when compiling, all r values of one t in registers: with s_j = a_j +
  // a_(r-j) and d_j = a_j - a_(r-j), outputs k and r - k are A +- sign i B, A = a_0 + sum_j
  // s_j cos(2 pi j k / r), B = sum_j d_j sin(2 pi j k / r), j and k up to (r - 1) / 2: half
  // the multiplies of the definition, and no pass over memory per output (Generic's).
  template <int kR>
  [[gnu::always_inline]] void OddRadix(const Stage& st, const R* __restrict ar,
                                       const R* __restrict ai, int64_t step, R* __restrict yr,
                                       R* __restrict yi, int64_t run, const R* tw_re,
                                       const R* tw_im) const {
    constexpr int kH = (kR - 1) / 2;
    R c[kH + 1][kH + 1], sn[kH + 1][kH + 1];  // of 2 pi j k / r, sin with sign_ applied
    for (int j = 1; j <= kH; ++j)
      for (int k = 1; k <= kH; ++k) {
        c[j][k] = st.root_re[(j * k) % kR];
        sn[j][k] = st.root_im[(j * k) % kR];
      }
    R wr[kR], wi[kR];
    for (int k = 1; k < kR; ++k) {
      wr[k] = tw_re[k - 1];
      wi[k] = tw_im[k - 1];
    }
    ForRun<R>(
        run, [&]<typename T>(int64_t t) __attribute__((always_inline)) {
          T sr[kH + 1], si[kH + 1], dr[kH + 1], di[kH + 1];
          const T a0r = Ld<T>(ar + t), a0i = Ld<T>(ai + t);
          T out0r = a0r, out0i = a0i;
          for (int j = 1; j <= kH; ++j) {
            const T xr = Ld<T>(ar + t + j * step), xi = Ld<T>(ai + t + j * step);
            const T zr = Ld<T>(ar + t + (kR - j) * step), zi = Ld<T>(ai + t + (kR - j) * step);
            sr[j] = xr + zr;
            si[j] = xi + zi;
            dr[j] = xr - zr;
            di[j] = xi - zi;
            out0r += sr[j];
            out0i += si[j];
          }
          St(yr + t, out0r);
          St(yi + t, out0i);
          for (int k = 1; k <= kH; ++k) {
            T Ar = a0r, Ai = a0i, Br = a0r * R(0), Bi = a0r * R(0);
            for (int j = 1; j <= kH; ++j) {
              Ar += sr[j] * c[j][k];
              Ai += si[j] * c[j][k];
              Br += dr[j] * sn[j][k];
              Bi += di[j] * sn[j][k];
            }
            // i B (the sign is in sn): (-Bi, Br).
            const T pr = Ar - Bi, pi = Ai + Br;  // output k
            const T qr = Ar + Bi, qi = Ai - Br;  // output r - k
            St(yr + t + k * run, pr * wr[k] - pi * wi[k]);
            St(yi + t + k * run, pr * wi[k] + pi * wr[k]);
            St(yr + t + (kR - k) * run, qr * wr[kR - k] - qi * wi[kR - k]);
            St(yi + t + (kR - k) * run, qr * wi[kR - k] + qi * wr[kR - k]);
          }
        });
  }

  // Any radix: the r-point DFT by its definition, sum_j a_j W_r^(j k), then the twiddle.
  [[gnu::always_inline]] static void Generic(const Stage& st, const R* ar, const R* ai,
                                             int64_t step, R* yr, R* yi, int64_t run,
                                             const R* tw_re, const R* tw_im) {
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

#pragma GCC diagnostic pop

}  // namespace kiln::cpu::fft_detail
