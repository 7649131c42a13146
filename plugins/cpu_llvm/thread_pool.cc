// The CPU backend's worker threads and its parallel-for.
#include "plugins/cpu_llvm/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace kiln::cpu {
namespace {

// Chunks per thread when the caller sets no bound: enough that a descheduled worker leaves
// little for the others to wait on, few enough that claiming stays cheap.
constexpr int kChunksPerThread = 4;
// How long a worker looks for the next call, and a caller for its last chunks, before
// sleeping: long enough to cover the gap between two kernels, short enough not to take a
// busy machine's cores from other processes.
constexpr auto kSpin = std::chrono::microseconds(50);

// True on workers, and on a caller inside ParallelFor: a nested call runs inline.
thread_local bool in_pool = false;

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins up to kSpin while `value` still reads `old`; returns the last value read.
template <typename T>
T SpinWhileEqual(const std::atomic<T>& value, T old) {
  T v = value.load(std::memory_order_acquire);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (v == old) {
    for (int i = 0; i < 64 && v == old; ++i) {
      Pause();
      v = value.load(std::memory_order_acquire);
    }
    if (v == old && std::chrono::steady_clock::now() > until) break;
  }
  return v;
}

}  // namespace

int DefaultThreadCount() {
  if (const char* env = std::getenv("KILN_CPU_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return static_cast<int>(std::min(v, 1024L));
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// One ParallelFor call. Shared with the workers so that one waking late finds the chunks all
// claimed and never calls `fn`, which lives on the caller's stack, after the call returned.
struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n;
  int chunks;
  std::atomic<int> next{0};
  std::atomic<int> done{0};

  void RunChunks() {
    for (int c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      (*fn)(n * c / chunks, n * (c + 1) / chunks);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done.notify_all();
    }
  }
};

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::WorkerLoop() {
  in_pool = true;
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = SpinWhileEqual(generation_, seen);
    if (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    if (stop_.load()) return;
    seen = g;
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(job_mu_);
      job = job_;
    }
    if (job != nullptr) job->RunChunks();
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int max_chunks) {
  if (n <= 0) return;
  const int limit = max_chunks > 0 ? max_chunks : threads_ * kChunksPerThread;
  const int chunks = static_cast<int>(std::min<int64_t>(n, limit));
  if (threads_ <= 1 || chunks <= 1 || in_pool) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->chunks = chunks;
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    job_ = job;
  }
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  in_pool = true;
  job->RunChunks();
  in_pool = false;
  // Only chunks a worker has claimed are left: wait for those.
  int d = job->done.load(std::memory_order_acquire);
  while (d < chunks) {
    if (SpinWhileEqual(job->done, d) == d) job->done.wait(d, std::memory_order_acquire);
    d = job->done.load(std::memory_order_acquire);
  }
  std::lock_guard<std::mutex> lock(job_mu_);
  job_.reset();
}

}  // namespace kiln::cpu
