// A small pool of persistent worker threads with a blocking parallel-for over an index
// range, used to run the outer loop of large JIT kernels and the GEMM calls on several cores.
// It is the only pool cpu-llvm runs on: the GEMM library is called single-threaded from it.
// LLVM-free.
//
// A pool of T threads has T workers, pinned one per CPU when the process may run on at least
// T (KILN_CPU_PIN=0: not pinned); the calling thread hands the work over and waits. The range
// is cut into chunks the workers claim one at a time, so on a busy machine a descheduled
// worker leaves its share to the others. Workers spin a bounded time for the next call
// before they sleep; the caller yields while it waits, then sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kiln::cpu {

// The thread count the CPU backend uses: KILN_CPU_THREADS when it is a positive integer,
// otherwise std::thread::hardware_concurrency() (at least 1).
int DefaultThreadCount();

class ThreadPool {
 public:
  // A pool of 1 has no workers and runs everything inline on the calling thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Splits [0, n) into contiguous chunks and calls fn(begin, end) for each on the workers;
  // returns when all are done. `max_chunks` bounds the chunk count (0: a few per thread; pass
  // size() when each call has a fixed cost, as a GEMM call has). `even`: chunks cost about
  // the same, so a worker finishing far behind the others was preempted by another process
  // (pass false for uneven work such as compiling). Calls from several threads are
  // serialized; a call from inside fn runs inline. `fn` must not throw.
  //
  // On a busy machine: when workers of even calls were preempted twice within 50 ms,
  // parallel-fors run on the calling thread alone for the next 200 ms (then the pool tries
  // again): otherwise each would wait for a descheduled worker's next time slice (one
  // preempted call alone can be a shared host's noise). A `large_cost` call (nonzero: a
  // GEMM of about a millisecond or more, a sort) may still be worth the workers then: one
  // thread among the competing processes can get a smaller share of the cores than the
  // pool's (relu(x@W+b) 256x784x512 beside two busy processes: 6 ms on the caller alone, 2 ms
  // on the pool, on one machine), or the scheduler can give it a core of its own while the
  // pool waits for its preempted workers (the MLP step: 2.7 ms alone, 3-7 ms on the pool, on
  // another). So while contended, such calls of one cost (the number identifies them: a
  // GEMM's flops, a sort's length) try each way a few times, then run on the caller unless
  // the workers took clearly less time (waking them costs the calls after), and now and then
  // the other way to see whether that changed.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int max_chunks = 0,
                   bool even = true, int64_t large_cost = 0);

 private:
  struct Job;
  // Mean times of the calls of one large cost while contended, on the workers and alone.
  struct CallTimes {
    double pooled_ns = 0, alone_ns = 0;
    int64_t pooled_calls = 0, alone_calls = 0, calls = 0;
  };
  void RunOnWorkers(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int chunks,
                    bool even);
  bool PreferAlone(int64_t cost);
  void NoteTime(int64_t cost, bool alone, int64_t ns);
  void WorkerLoop();

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one ParallelFor at a time
  // The current job, published with a new generation. Workers spin on generation_, then
  // sleep on wake_cv_; a caller spins on its job's count of finished chunks, then sleeps on
  // done_cv_. (std::atomic::wait lost wake-ups here: GCC 12's libstdc++.)
  std::mutex mu_;
  std::condition_variable wake_cv_, done_cv_;
  std::shared_ptr<Job> job_;
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  // Until this steady-clock time (ns) parallel-fors run on the caller alone: set when a worker
  // was preempted, the sign of other processes competing for the cores.
  std::atomic<int64_t> contended_until_ns_{0};
  std::atomic<int64_t> last_late_ns_{INT64_MIN / 2};  // when a call last looked preempted
  std::atomic<int> caller_cpu_{-1};                   // the core the last caller ran on
  std::mutex times_mu_;
  std::unordered_map<int64_t, CallTimes> times_;  // by large cost
};

}  // namespace kiln::cpu
