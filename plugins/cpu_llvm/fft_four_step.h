// One long row's complex transform by the four-step algorithm, for fft_library.cc: the n
// values seen as an [n1, n2] matrix (x[j1 n2 + j2]), n2 transforms of length n1 down its
// columns, each result times exp(sign 2 pi i k1 j2 / n), then n1 transforms of length n2 along
// its rows, written transposed (X[k1 + n1 k2]). Both passes take kLanes columns or rows at a
// time, so every butterfly is a whole vector across them, a block stays in cache, and the
// blocks spread over the pool. One row transformed whole (mixed radix) ran its first stages on
// scalars and the rest over the full length: a c64[32768] transform took 0.37 ms on one
// thread. Internal to cpu-llvm's FFT library; LLVM-free.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "plugins/cpu_llvm/fft_mixed_radix.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu::fft_detail {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // as in fft_mixed_radix.h: vectors never cross a call

// v[l][t] -> v[t][l]: eight vectors of eight values transposed (unpack, then pairs, then
// halves, as an AVX 8x8 transpose does).
template <typename V>
[[gnu::always_inline]] inline void Transpose8(V* v) {
  V t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(v[i], v[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(v[i], v[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + 2 * j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * j + 1] =
          __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int i = 0; i < 4; ++i) {
    v[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    v[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// A row of n complex values to split parts and back (times `scale`), 8 values at a time.
template <typename R>
[[gnu::always_inline]] inline void SplitBody(const R* in, R* re, R* im, int64_t n) {
  using V = Vec8<R>;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const V a = Ld<V>(in + 2 * k), b = Ld<V>(in + 2 * k + 8);
    St(re + k, __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14));
    St(im + k, __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15));
  }
  for (; k < n; ++k) {
    re[k] = in[2 * k];
    im[k] = in[2 * k + 1];
  }
}
template <typename R>
[[gnu::always_inline]] inline void JoinBody(const R* re, const R* im, R scale, R* out, int64_t n) {
  using V = Vec8<R>;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const V r = Ld<V>(re + k) * scale, i = Ld<V>(im + k) * scale;
    St(out + 2 * k, __builtin_shufflevector(r, i, 0, 8, 1, 9, 2, 10, 3, 11));
    St(out + 2 * k + 8, __builtin_shufflevector(r, i, 4, 12, 5, 13, 6, 14, 7, 15));
  }
  for (; k < n; ++k) {
    out[2 * k] = re[k] * scale;
    out[2 * k + 1] = im[k] * scale;
  }
}
#if defined(__x86_64__)
template <typename R>
__attribute__((target("avx2,fma"))) void SplitAvx2(const R* in, R* re, R* im, int64_t n) {
  SplitBody(in, re, im, n);
}
template <typename R>
__attribute__((target("avx2,fma"))) void JoinAvx2(const R* re, const R* im, R scale, R* out,
                                                  int64_t n) {
  JoinBody(re, im, scale, out, n);
}
#endif
// `in` holds n (re, im) pairs.
template <typename R>
void Split(const R* in, R* re, R* im, int64_t n) {
#if defined(__x86_64__)
  if (HaveAvx2()) return SplitAvx2(in, re, im, n);
#endif
  SplitBody(in, re, im, n);
}
template <typename R>
void Join(const R* re, const R* im, R scale, R* out, int64_t n) {
#if defined(__x86_64__)
  if (HaveAvx2()) return JoinAvx2(re, im, scale, out, n);
#endif
  JoinBody(re, im, scale, out, n);
}

// Rows this long and longer take the four-step transform.
inline constexpr int64_t kFourStepMin = int64_t{1} << 12;

// n1 for a four-step transform of length n: the largest divisor of n at most sqrt(n) with n1
// and n / n1 both multiples of `lanes` (so that the blocks are whole); 0 when n is shorter
// than kFourStepMin or has no such divisor (a large prime factor: Bluestein's algorithm).
inline int64_t FourStepSplit(int64_t n, int lanes) {
  if (n < kFourStepMin) return 0;
  for (int64_t d = static_cast<int64_t>(std::sqrt(static_cast<double>(n))); d >= 2 * lanes; --d)
    if (n % d == 0 && d % lanes == 0 && (n / d) % lanes == 0) return d;
  return 0;
}

// `Sub` is a transform of one length on kLanes rows at once: Sub(n, sign, false) (false: no
// four-step transform of its own, the blocks being many rows), Slot(k, lanes)
// (where element k goes before Run) and Run(re, im, lanes), unscaled, in place, element k of
// row l at [k * lanes + l] afterwards.
template <typename R, typename Sub, int kLanes>
class FourStep {
 public:
  FourStep(int64_t n, int sign)
      : n1_(FourStepSplit(n, kLanes)),
        n2_(n / n1_),
        columns_(std::make_unique<Sub>(n1_, sign, false)),
        rows_(std::make_unique<Sub>(n2_, sign, false)),
        tw_re_(n),
        tw_im_(n) {
    for (int64_t k1 = 0; k1 < n1_; ++k1)
      for (int64_t j2 = 0; j2 < n2_; ++j2) {
        const auto [c, s] = UnitRoot<R>(k1 * j2, n, sign);
        tw_re_[k1 * n2_ + j2] = c;
        tw_im_[k1 * n2_ + j2] = s;
      }
  }

  // In place on one row of split parts; unscaled. `pool` may be null.
  void Run(R* re, R* im, ThreadPool* pool) const {
    const int64_t n = n1_ * n2_;
    // The transposed result goes to a workspace (the second pass's blocks read values the
    // others write over), kept by the thread as MixedRadix's is.
    thread_local std::vector<R> kept_re, kept_im;
    std::vector<R> own_re, own_im;
    const bool keep = static_cast<size_t>(n) <= kKeptWorkspace;
    std::vector<R>& out_re = keep ? kept_re : own_re;
    std::vector<R>& out_im = keep ? kept_im : own_im;
    if (out_re.size() < static_cast<size_t>(n)) {
      out_re.resize(n);
      out_im.resize(n);
    }
    R* yr = out_re.data();
    R* yi = out_im.data();
    ForGroups(pool, n2_ / kLanes, n1_, [&](int64_t g, R* br, R* bi) {
      if (HaveAvx2())
        ColumnsAvx2(g, re, im, br, bi);
      else
        Columns(g, re, im, br, bi);
    });
    ForGroups(pool, n1_ / kLanes, n2_, [&](int64_t g, R* br, R* bi) {
      if (HaveAvx2())
        RowsAvx2(g, re, im, yr, yi, br, bi);
      else
        Rows(g, re, im, yr, yi, br, bi);
    });
    std::copy(yr, yr + n, re);
    std::copy(yi, yi + n, im);
  }

 private:
  static_assert(kLanes == 8, "the passes move blocks of 8 values as one Vec8");
  using V = Vec8<R>;

  // fn(group, block_re, block_im) for group < groups, blocks of `len` values of kLanes rows,
  // across the pool when the transform is long enough to pay for waking it.
  template <typename Fn>
  static void ForGroups(ThreadPool* pool, int64_t groups, int64_t len, const Fn& fn) {
    auto run = [&](int64_t begin, int64_t end) {
      std::vector<R> br(len * kLanes), bi(len * kLanes);
      for (int64_t g = begin; g < end; ++g) fn(g, br.data(), bi.data());
    };
    if (pool != nullptr && pool->size() > 1 && groups * len * kLanes >= kFourStepPoolMin)
      pool->ParallelFor(groups, run);
    else
      run(0, groups);
  }

  // Columns j2 = g kLanes + l: transformed, times the twiddles, back where they were.
  [[gnu::always_inline]] inline void Columns(int64_t g, R* re, R* im, R* br, R* bi) const {
    const int64_t j2 = g * kLanes;
    for (int64_t j1 = 0; j1 < n1_; ++j1) {
      const int64_t to = columns_->Slot(j1, kLanes) * kLanes, from = j1 * n2_ + j2;
      St(br + to, Ld<V>(re + from));
      St(bi + to, Ld<V>(im + from));
    }
    columns_->Run(br, bi, kLanes);
    for (int64_t k1 = 0; k1 < n1_; ++k1) {
      const int64_t at = k1 * n2_ + j2;
      const V xr = Ld<V>(br + k1 * kLanes), xi = Ld<V>(bi + k1 * kLanes);
      const V wr = Ld<V>(tw_re_.data() + at), wi = Ld<V>(tw_im_.data() + at);
      St(re + at, xr * wr - xi * wi);
      St(im + at, xr * wi + xi * wr);
    }
  }

  // Rows k1 = g kLanes + l: transformed, value k2 of row k1 to y[k1 + n1 k2]. The block is
  // read 8 x 8 values at a time, transposed in registers.
  [[gnu::always_inline]] inline void Rows(int64_t g, const R* re, const R* im, R* yr, R* yi, R* br,
                                          R* bi) const {
    const int64_t k1 = g * kLanes;
    for (const auto& [x, b] : {std::pair<const R*, R*>{re, br}, {im, bi}}) {
      for (int64_t j2 = 0; j2 < n2_; j2 += kLanes) {
        V v[kLanes];
        for (int l = 0; l < kLanes; ++l) v[l] = Ld<V>(x + (k1 + l) * n2_ + j2);
        Transpose8(v);
        for (int t = 0; t < kLanes; ++t) St(b + rows_->Slot(j2 + t, kLanes) * kLanes, v[t]);
      }
    }
    rows_->Run(br, bi, kLanes);
    for (int64_t k2 = 0; k2 < n2_; ++k2) {
      St(yr + k1 + n1_ * k2, Ld<V>(br + k2 * kLanes));
      St(yi + k1 + n1_ * k2, Ld<V>(bi + k2 * kLanes));
    }
  }

#if defined(__x86_64__)
  // The passes compiled for AVX2 and FMA too, as Radix2's and MixedRadix's stages are.
  __attribute__((target("avx2,fma"))) void ColumnsAvx2(int64_t g, R* re, R* im, R* br,
                                                       R* bi) const {
    Columns(g, re, im, br, bi);
  }
  __attribute__((target("avx2,fma"))) void RowsAvx2(int64_t g, const R* re, const R* im, R* yr,
                                                    R* yi, R* br, R* bi) const {
    Rows(g, re, im, yr, yi, br, bi);
  }
#else
  void ColumnsAvx2(int64_t g, R* re, R* im, R* br, R* bi) const { Columns(g, re, im, br, bi); }
  void RowsAvx2(int64_t g, const R* re, const R* im, R* yr, R* yi, R* br, R* bi) const {
    Rows(g, re, im, yr, yi, br, bi);
  }
#endif

  // Transforms of at least this many values split across the pool (c64[32768]: 0.12 ms on one
  // thread, the same on two, waking the workers costing what the second one saves).
  static constexpr int64_t kFourStepPoolMin = int64_t{1} << 16;

  int64_t n1_, n2_;
  std::unique_ptr<Sub> columns_, rows_;
  std::vector<R> tw_re_, tw_im_;  // exp(sign 2 pi i k1 j2 / n) at [k1 n2 + j2]
};

#pragma GCC diagnostic pop

}  // namespace kiln::cpu::fft_detail
