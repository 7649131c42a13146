// STREAM-like memory bandwidth (float32, arrays much larger than the caches): copy, copy with
// non-temporal stores, triad and a read-only sum, each with 1..T threads. The best of `reps`
// runs is the achievable bandwidth that benchmarks/cpu_workloads.py divides bytes by.
// Bytes counted = bytes read + bytes written (no write-allocate traffic), as STREAM does.
// Usage: stream_bound [max_threads] [log2_elements] [reps]; one line per kernel and thread
// count: `stream kernel=copy threads=2 gbps=38.1 elements=33554432`.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__SSE__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// Runs body(begin, end) over [0, n) split into `threads` contiguous chunks of 64-float multiples.
void ParallelFor(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  std::vector<std::thread> pool;
  int64_t chunk = (n / threads + 63) / 64 * 64;
  for (int t = 0; t < threads; ++t) {
    int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    pool.emplace_back(body, b, e);
  }
  for (auto& th : pool) th.join();
}

void Copy(float* __restrict a, const float* __restrict b, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i];
}

// Streaming stores bypass the caches (no read-for-ownership of the destination line).
void CopyNonTemporal(float* __restrict a, const float* __restrict b, int64_t begin, int64_t end) {
#if defined(__SSE__)
  for (int64_t i = begin; i < end; i += 4) _mm_stream_ps(a + i, _mm_load_ps(b + i));
  _mm_sfence();
#else
  Copy(a, b, begin, end);
#endif
}

void Triad(float* __restrict a, const float* __restrict b, const float* __restrict c, int64_t begin,
           int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + 3.0f * c[i];
}

// 64 independent partial sums: vectorizes without reassociating any one sum, and gives
// several vector add chains so the add latency does not limit the read rate.
float Sum(const float* __restrict a, int64_t begin, int64_t end) {
  float acc[64] = {};
  for (int64_t i = begin; i < end; i += 64)
    for (int j = 0; j < 64; ++j) acc[j] += a[i + j];
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

struct Kernel {
  const char* name;
  int arrays_touched;  // arrays read + arrays written, for the byte count
  std::function<void(int64_t, int64_t)> body;
};

}  // namespace

int main(int argc, char** argv) {
  int max_threads = argc > 1 ? std::atoi(argv[1]) : int(std::thread::hardware_concurrency());
  int log2n = argc > 2 ? std::atoi(argv[2]) : 25;
  int reps = argc > 3 ? std::atoi(argv[3]) : 7;
  if (max_threads < 1 || log2n < 10 || log2n > 31 || reps < 1) {
    std::fprintf(stderr, "usage: stream_bound [max_threads>=1] [log2_elements 10..31] [reps>=1]\n");
    return 2;
  }
  const int64_t n = int64_t{1} << log2n;
  auto alloc = [n] {
    return std::unique_ptr<float[], decltype(&std::free)>(
        static_cast<float*>(std::aligned_alloc(64, n * sizeof(float))), &std::free);
  };
  auto a = alloc(), b = alloc(), c = alloc();
  if (!a || !b || !c) {
    std::fprintf(stderr, "stream_bound: cannot allocate 3 x %lld floats\n", (long long)n);
    return 1;
  }
  // First touch from the worker threads places pages where they will be used.
  ParallelFor(max_threads, n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  });
  volatile float sink = 0;  // keeps the sums alive; one locked add per thread per run
  std::mutex sink_mu;
  const Kernel kernels[] = {
      {"copy", 2, [&](int64_t lo, int64_t hi) { Copy(a.get(), b.get(), lo, hi); }},
      {"copy_nt", 2, [&](int64_t lo, int64_t hi) { CopyNonTemporal(a.get(), b.get(), lo, hi); }},
      {"triad", 3, [&](int64_t lo, int64_t hi) { Triad(a.get(), b.get(), c.get(), lo, hi); }},
      {"sum", 1,
       [&](int64_t lo, int64_t hi) {
         float s = Sum(b.get(), lo, hi);
         std::lock_guard<std::mutex> lock(sink_mu);
         sink = sink + s;
       }},
  };
  for (const Kernel& k : kernels) {
    for (int threads = 1; threads <= max_threads; ++threads) {
      double best_s = 1e30;
      for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        ParallelFor(threads, n, k.body);
        best_s = std::min(best_s, std::chrono::duration<double>(Clock::now() - t0).count());
      }
      double bytes = double(k.arrays_touched) * n * sizeof(float);
      std::printf("stream kernel=%s threads=%d gbps=%.2f elements=%lld\n", k.name, threads,
                  bytes / best_s / 1e9, (long long)n);
      std::fflush(stdout);
    }
  }
  return 0;
}
