// A small pool of persistent worker threads with a blocking parallel-for over an index
// range, used to run the outer loop of large JIT kernels and the GEMM calls on several cores.
// It is the only pool cpu-llvm runs on: the GEMM library is called single-threaded from it.
// LLVM-free.
//
// Robust on a busy machine: the range is cut into chunks that the calling thread and the
// workers claim one at a time, so the caller never waits for a worker that has not started
// (it runs the chunks itself); it waits only for chunks a worker is running. Workers spin a
// bounded time for the next call before they sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::cpu {

// The thread count the CPU backend uses: KILN_CPU_THREADS when it is a positive integer,
// otherwise std::thread::hardware_concurrency() (at least 1).
int DefaultThreadCount();

class ThreadPool {
 public:
  // `threads` counts the calling thread: a pool of 1 has no workers and runs inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Splits [0, n) into contiguous chunks and calls fn(begin, end) for each, on the calling
  // thread and the workers; returns when all are done. `max_chunks` bounds the chunk count
  // (0: a few per thread; pass size() when each call has a fixed cost, as a GEMM call has).
  // Calls from several threads are serialized; a call from inside fn runs inline. `fn` must
  // not throw.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int max_chunks = 0);

 private:
  struct Job;
  void WorkerLoop();

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one ParallelFor at a time
  // The current job, published with a new generation; workers sleep on generation_.
  std::mutex job_mu_;
  std::shared_ptr<Job> job_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace kiln::cpu
