#include "hlo/collectives/local_communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hlo/collectives/reduction.h"

namespace kiln {

double CollectiveTimeoutSeconds() {
  const char* env = std::getenv("KILN_COLLECTIVE_TIMEOUT_S");
  if (env != nullptr) {
    char* end = nullptr;
    double s = std::strtod(env, &end);
    if (end != env && s > 0) return s;
  }
  return 300;
}

// One meeting of a group: every member leaves a pointer to its input, reads the others'
// once all are there, and waits until all have read before its input may go away.
struct Meeting {
  std::vector<const void*> inputs;
  int arrived = 0;
  int done = 0;
};

struct LocalRendezvous::State {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<std::vector<int>, uint64_t>, std::shared_ptr<Meeting>> meetings;
  absl::Status aborted;
  double timeout_s;
};

namespace {

class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalRendezvous::State> state, DeviceGrid grid, int device)
      : state_(std::move(state)), grid_(grid), device_(device) {}
  int device_id() const override { return device_; }
  DeviceGrid grid() const override { return grid_; }

  absl::Status AllGather(std::span<const int> group, const void* in, void* out,
                         size_t bytes) override {
    return Meet(group, in, "all-gather", [&](std::span<const void* const> inputs, size_t) {
      for (size_t i = 0; i < inputs.size(); ++i)
        std::memcpy(static_cast<char*>(out) + i * bytes, inputs[i], bytes);
    });
  }

  absl::StatusOr<bool> AllReduce(std::span<const int> group, PrimitiveType type, ReductionKind kind,
                                 const void* in, void* out, size_t count) override {
    const size_t bytes = count * ByteSizeOf(type);
    // Every member decides alike (same type and kind), so a refusal happens everywhere.
    if (!ReduceInto(type, kind, out, out, 0).ok()) return false;
    absl::Status reduce_error;
    absl::Status met =
        Meet(group, in, "all-reduce", [&](std::span<const void* const> inputs, size_t) {
          // In group order on every member: the same bits everywhere.
          std::vector<char> acc(static_cast<const char*>(inputs[0]),
                                static_cast<const char*>(inputs[0]) + bytes);
          for (size_t i = 1; i < inputs.size() && reduce_error.ok(); ++i)
            reduce_error = ReduceInto(type, kind, acc.data(), inputs[i], count);
          if (bytes) std::memcpy(out, acc.data(), bytes);
        });
    if (!met.ok()) return met;
    if (!reduce_error.ok()) return reduce_error;
    return true;
  }

  absl::Status AllToAll(std::span<const int> group, const void* in, void* out,
                        size_t chunk_bytes) override {
    return Meet(group, in, "all-to-all", [&](std::span<const void* const> inputs, size_t me) {
      for (size_t j = 0; j < inputs.size(); ++j)
        std::memcpy(static_cast<char*>(out) + j * chunk_bytes,
                    static_cast<const char*>(inputs[j]) + me * chunk_bytes, chunk_bytes);
    });
  }

  absl::StatusOr<bool> Permute(std::span<const int> group,
                               std::span<const std::pair<int, int>> pairs, const void* in,
                               void* out, size_t bytes) override {
    bool received = false;
    absl::Status met =
        Meet(group, in, "collective-permute", [&](std::span<const void* const> inputs, size_t) {
          for (const auto& [source, target] : pairs) {
            if (target != device_) continue;
            auto at = std::find(group.begin(), group.end(), source);
            if (at == group.end()) continue;
            std::memcpy(out, inputs[at - group.begin()], bytes);
            received = true;
          }
        });
    if (!met.ok()) return met;
    return received;
  }

 private:
  // `consume(inputs, my_index)` runs once every member of `group` has arrived.
  absl::Status Meet(std::span<const int> group, const void* in, const char* what,
                    const std::function<void(std::span<const void* const>, size_t)>& consume) {
    std::vector<int> key(group.begin(), group.end());
    auto mine = std::find(key.begin(), key.end(), device_);
    if (mine == key.end())
      return absl::InternalError(absl::StrCat("device ", device_, " is not in its own group"));
    const size_t me = mine - key.begin(), n = key.size();
    const uint64_t seq = sequence_[key]++;
    State& s = *state_;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(s.timeout_s));
    std::unique_lock<std::mutex> lock(s.mu);
    std::shared_ptr<Meeting>& slot = s.meetings[{key, seq}];
    if (!slot) {
      slot = std::make_shared<Meeting>();
      slot->inputs.resize(n);
    }
    std::shared_ptr<Meeting> m = slot;
    m->inputs[me] = in;
    ++m->arrived;
    s.cv.notify_all();
    auto wait = [&](auto ready) -> absl::Status {
      if (!s.cv.wait_until(lock, deadline, [&] { return ready() || !s.aborted.ok(); })) {
        s.aborted = absl::DeadlineExceededError(absl::StrCat(
            what, " on devices {", absl::StrJoin(key, ","), "}: device ", device_, " waited ",
            s.timeout_s, " s for the others (KILN_COLLECTIVE_TIMEOUT_S); a device ",
            "of the run stopped or took another path"));
        s.cv.notify_all();
      }
      return s.aborted;
    };
    if (absl::Status st = wait([&] { return m->arrived == static_cast<int>(n); }); !st.ok())
      return st;
    lock.unlock();
    consume(m->inputs, me);
    lock.lock();
    if (++m->done == static_cast<int>(n)) s.meetings.erase({key, seq});
    s.cv.notify_all();
    return wait([&] { return m->done == static_cast<int>(n); });
  }

  using State = LocalRendezvous::State;
  std::shared_ptr<State> state_;
  DeviceGrid grid_;
  int device_;
  std::map<std::vector<int>, uint64_t> sequence_;  // meetings so far, per group
};

}  // namespace

LocalRendezvous::LocalRendezvous(DeviceGrid grid, double timeout_s)
    : state_(std::make_shared<State>()), grid_(grid) {
  state_->timeout_s = timeout_s;
}
LocalRendezvous::~LocalRendezvous() = default;

std::unique_ptr<Communicator> LocalRendezvous::ForDevice(int d) {
  return std::make_unique<LocalCommunicator>(state_, grid_, d);
}

void LocalRendezvous::Abort(absl::Status why) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->aborted.ok()) state_->aborted = std::move(why);
  state_->cv.notify_all();
}

absl::Status RunOnLocalDevices(DeviceGrid grid, const std::function<absl::Status(int)>& fn,
                               double timeout_s) {
  const int n = grid.num_devices();
  LocalRendezvous rendezvous(grid, timeout_s);
  std::vector<absl::Status> results(n);
  std::vector<std::thread> threads;
  for (int d = 0; d < n; ++d) {
    threads.emplace_back([&, d] {
      std::unique_ptr<Communicator> c = rendezvous.ForDevice(d);
      ScopedCommunicator scope(c.get());
      results[d] = fn(d);
      if (!results[d].ok())
        rendezvous.Abort(absl::Status(
            results[d].code(),
            absl::StrCat("device ", d, " of the run failed: ", std::string(results[d].message()))));
    });
  }
  for (std::thread& t : threads) t.join();
  // A device's own failure comes before the failures it caused in the others.
  for (int d = 0; d < n; ++d)
    if (!results[d].ok() && !absl::StrContains(results[d].message(), "of the run failed: "))
      return absl::Status(results[d].code(),
                          absl::StrCat("device ", d, ": ", std::string(results[d].message())));
  for (int d = 0; d < n; ++d)
    if (!results[d].ok()) return results[d];
  return absl::OkStatus();
}

}  // namespace kiln
