// A small pool of persistent worker threads with a blocking parallel-for over an index
// range, used to run the outer loop of large JIT kernels on several cores. LLVM-free.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
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

  // Splits [0, n) into at most size() contiguous chunks and calls fn(begin, end) for each,
  // one chunk on the calling thread; returns when all are done. Calls from several threads
  // are serialized (the pool runs one parallel-for at a time). `fn` must not throw.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int id);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one ParallelFor at a time
  std::mutex mu_;       // guards everything below
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
};

}  // namespace kiln::cpu
