// Asynchronous execution in the host kit (ABI 1.7): an event for work that ends later, and
// the queue a client runs its asynchronous executions on, in the order they were submitted.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace kiln::plugin_support {

// Ends once, with a status; waiters and callbacks learn it.
class HostEvent {
 public:
  // An event that has already ended with `status`.
  static std::shared_ptr<HostEvent> Ended(absl::Status status);

  // Ends the event (only the first call counts) and runs the callbacks, on this thread.
  void Finish(absl::Status status);
  bool IsReady();
  absl::Status Await();
  // Calls `callback` once with the status when the event ends: now, if it has.
  void OnReady(std::function<void(absl::Status)> callback);

 private:
  std::mutex mu_;
  std::condition_variable ended_;
  bool ready_ = false;
  absl::Status status_;
  std::vector<std::function<void(absl::Status)>> callbacks_;
};

// One worker thread running tasks in submission order, started with the first task; the
// destructor runs what is queued, then joins it.
class RunQueue {
 public:
  RunQueue() = default;
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;
  ~RunQueue();
  void Submit(std::function<void()> task);
  // Waits until every task submitted so far has run: a run done on the caller's thread then
  // comes after them, as on one stream (a queued run may still read a buffer it donates).
  void WaitIdle();

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  bool running_ = false;  // the worker is in a task
  std::thread worker_;
};

}  // namespace kiln::plugin_support
