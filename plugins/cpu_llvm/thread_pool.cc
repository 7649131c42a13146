// The CPU backend's worker threads and its parallel-for.
#include "plugins/cpu_llvm/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "plugins/cpu_llvm/flush_denormals.h"

namespace kiln::cpu {
namespace {

// Chunks per thread when the caller sets no bound: enough that a descheduled worker leaves
// little for the others to wait on, few enough that claiming stays cheap.
constexpr int kChunksPerThread = 4;
// How long a worker looks for the next call, and a caller for its chunks to finish, before
// sleeping: long enough to cover the gap between two kernels, short enough not to take a
// busy machine's cores from other processes.
constexpr auto kSpin = std::chrono::microseconds(100);
// Signs that another process took a time slice from the pool: a worker that finished this
// much later than the first one (and later by at least half the call's time, the chunks
// costing about the same), or a caller that saw the last chunk done this much late.
constexpr int64_t kLateNs = 500'000;
// After two such signs (a late call starting within this long of the last late one's end),
// parallel-fors run on the calling thread alone for kContendedForNs. One alone is not enough: on a
// shared host one preempted time slice came now and then with no process competing, and the 200 ms
// on one thread that followed were a whole benchmark of short calls (relu(x@W+b) 256x784x512: 1.85
// ms against 0.95).
constexpr int64_t kSecondSignWithinNs = 50'000'000;
constexpr int64_t kContendedForNs = 200'000'000;
// While contended, one large call in this many runs the way that has been slower, and each
// call's time moves the mean of its way by this weight. Costs past kMaxCosts start afresh.
constexpr int64_t kRetryEvery = 16;
// The workers are woken only when their calls took at most this share of the caller's:
// waking them moves the other processes' threads onto the caller's core, which slows the
// calls that follow (the MLP step beside two busy processes: 2.9 ms when large calls ran on
// the caller alone, 3-7 ms when they took turns at about the same time per call).
constexpr double kPooledGain = 0.8;
// Calls of each way before the faster is chosen.
constexpr int64_t kFirstTries = 3;
constexpr double kTimeWeight = 0.25;
constexpr size_t kMaxCosts = 256;

// True on workers: a nested call runs inline.
thread_local bool in_pool = false;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins up to kSpin until done() is true; returns done(). Between checks it yields: the
// caller and a worker may share a core, and a spinner that kept it would hold up the other.
template <typename Done>
bool SpinUntil(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done()) {
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() > until) return done();
  }
  return true;
}

// Pins the calling thread to the index-th CPU it may run on, when there are at least `count`
// of them and KILN_CPU_PIN is not 0. Linux left two threads that wake each other on one core
// of an otherwise idle two-core machine for the whole run (a GEMM split in two ran at
// one-thread speed in about half of the processes); pinned workers cannot share a core.
void PinToCpu(int index, int count) {
  if (const char* env = std::getenv("KILN_CPU_PIN"); env != nullptr && std::string(env) == "0")
    return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < count) return;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || seen++ != index) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof(one), &one);
    return;
  }
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
  int64_t start_ns;
  std::atomic<int> next{0};
  std::atomic<int> done{0};
  // When the first and the last worker that ran chunks finished them.
  std::atomic<int64_t> first_finish_ns{INT64_MAX}, last_finish_ns{0};

  // Runs unclaimed chunks until none is left; true when this thread finished the last one.
  // A thread notes when it finished before it counts its last chunk done, so the caller,
  // which reads the times once all chunks are done, always sees them.
  bool RunChunks() {
    int c = next.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks) return false;
    for (;;) {
      (*fn)(n * c / chunks, n * (c + 1) / chunks);
      const int following = next.fetch_add(1, std::memory_order_relaxed);
      if (following >= chunks) {
        NoteFinish(Now());
        return done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks;
      }
      done.fetch_add(1, std::memory_order_acq_rel);
      c = following;
    }
  }

  void NoteFinish(int64_t t) {
    for (int64_t v = first_finish_ns.load();
         t < v && !first_finish_ns.compare_exchange_weak(v, t);) {
    }
    for (int64_t v = last_finish_ns.load(); t > v && !last_finish_ns.compare_exchange_weak(v, t);) {
    }
  }
};

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  if (threads_ == 1) return;  // runs inline
  for (int i = 0; i < threads_; ++i) {
    workers_.emplace_back([this, i] {
      PinToCpu(i, threads_);
      WorkerLoop();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::WorkerLoop() {
  in_pool = true;
  ScopedFlushDenormals flush;  // workers run only cpu-llvm's kernels and GEMMs
  uint64_t seen = 0;
  for (;;) {
    const auto called = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    // A worker on the core the caller last ran on sleeps at once: spinning there would halve
    // the speed of the caller's own work between parallel-fors.
    const bool beside_caller = sched_getcpu() == caller_cpu_.load(std::memory_order_relaxed);
    if (beside_caller ? !called() : !SpinUntil(called)) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_cv_.wait(lock, called);
    }
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      seen = generation_.load(std::memory_order_acquire);
      job = job_;
    }
    if (job != nullptr && job->RunChunks()) {
      // The caller may be asleep waiting for this last chunk. Locking orders the notify
      // after its check of `done`.
      { std::lock_guard<std::mutex> lock(mu_); }
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int max_chunks, bool even, int64_t large_cost) {
  if (n <= 0) return;
  const int limit = max_chunks > 0 ? max_chunks : threads_ * kChunksPerThread;
  const int chunks = static_cast<int>(std::min<int64_t>(n, limit));
  if (threads_ <= 1 || chunks <= 1 || in_pool) {
    fn(0, n);
    return;
  }
  // On a machine where other processes preempt the workers, every parallel-for would wait
  // for a descheduled one (a few ms each); for a while, one thread does the whole range,
  // and a large call whichever way has been faster.
  if (Now() >= contended_until_ns_.load(std::memory_order_relaxed)) {
    RunOnWorkers(n, fn, chunks, even);
  } else if (large_cost == 0) {
    fn(0, n);
  } else {
    const bool alone = PreferAlone(large_cost);
    const int64_t start = Now();
    if (alone)
      fn(0, n);
    else
      RunOnWorkers(n, fn, chunks, even);
    NoteTime(large_cost, alone, Now() - start);
  }
}

bool ThreadPool::PreferAlone(int64_t cost) {
  std::lock_guard<std::mutex> lock(times_mu_);
  if (times_.size() > kMaxCosts) times_.clear();
  CallTimes& t = times_[cost];
  // Each way a few times first (one time can be one unlucky time slice), then the faster.
  if (t.pooled_calls < kFirstTries || t.alone_calls < kFirstTries)
    return t.alone_calls < t.pooled_calls;
  const bool alone = t.pooled_ns > kPooledGain * t.alone_ns;
  return ++t.calls % kRetryEvery == 0 ? !alone : alone;
}

void ThreadPool::NoteTime(int64_t cost, bool alone, int64_t ns) {
  std::lock_guard<std::mutex> lock(times_mu_);
  CallTimes& times = times_[cost];
  ++(alone ? times.alone_calls : times.pooled_calls);
  double& mean = alone ? times.alone_ns : times.pooled_ns;
  const double t = static_cast<double>(std::max<int64_t>(ns, 1));
  mean = mean == 0 ? t : mean + (t - mean) * kTimeWeight;
}

void ThreadPool::RunOnWorkers(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                              int chunks, bool even) {
  std::lock_guard<std::mutex> call(call_mu_);
  caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->chunks = chunks;
  job->start_ns = Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_cv_.notify_all();
  // The caller only waits: running chunks too, it would share a core with a pinned worker,
  // and either could be descheduled holding the last chunk.
  const auto all_done = [&] { return job->done.load(std::memory_order_acquire) == chunks; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, all_done);
  }
  const int64_t first = job->first_finish_ns.load(), last = job->last_finish_ns.load();
  const bool worker_late =
      even && last - first > kLateNs && 2 * (last - first) > last - job->start_ns;
  const int64_t now = Now();
  if (worker_late || now - last > kLateNs) {
    // The second sign: this call started soon after the last late one ended.
    const int64_t previous = last_late_ns_.exchange(now, std::memory_order_relaxed);
    if (job->start_ns - previous <= kSecondSignWithinNs)
      contended_until_ns_.store(now + kContendedForNs, std::memory_order_relaxed);
  }
  // Where the caller goes on from (it may have moved while it waited).
  caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  job_.reset();
}

}  // namespace kiln::cpu
