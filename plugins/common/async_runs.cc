#include "plugins/common/async_runs.h"

#include <utility>

namespace kiln::plugin_support {

std::shared_ptr<HostEvent> HostEvent::Ended(absl::Status status) {
  auto event = std::make_shared<HostEvent>();
  event->Finish(std::move(status));
  return event;
}

void HostEvent::Finish(absl::Status status) {
  std::vector<std::function<void(absl::Status)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready_) return;
    ready_ = true;
    status_ = std::move(status);
    callbacks.swap(callbacks_);
  }
  ended_.notify_all();
  // Outside the lock: a callback may ask this event again.
  for (auto& callback : callbacks) callback(status_);
}

bool HostEvent::IsReady() {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

absl::Status HostEvent::Await() {
  std::unique_lock<std::mutex> lock(mu_);
  ended_.wait(lock, [this] { return ready_; });
  return status_;
}

void HostEvent::OnReady(std::function<void(absl::Status)> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(status_);
}

RunQueue::~RunQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void RunQueue::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.push_back(std::move(task));
  if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
  changed_.notify_all();  // the worker, not only a WaitIdle
}

void RunQueue::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  // A task that runs a program synchronously (a custom-call handler calling back) would
  // wait for itself.
  if (worker_.joinable() && std::this_thread::get_id() == worker_.get_id()) return;
  changed_.wait(lock, [this] { return tasks_.empty() && !running_; });
}

void RunQueue::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      running_ = false;
      changed_.notify_all();  // WaitIdle
      changed_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything queued has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = true;
    }
    task();
  }
}

}  // namespace kiln::plugin_support
