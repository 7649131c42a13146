// The deadline of the run under way on this thread. ModuleExecutable sets it around a run
// given a timeout; an isolated plugin's proxy bounds each call it forwards by what is left
// and, when the deadline passes, stops the helper process (the only way to cancel a plugin
// call that does not return) and fails the call with DEADLINE_EXCEEDED. In-process plugins
// cannot be cancelled, so a run with a timeout runs on an isolated plugin.
#pragma once

#include <chrono>
#include <optional>

namespace kiln {

using RunClock = std::chrono::steady_clock;

// Sets this thread's run deadline to `seconds` from now (none when <= 0) for its lifetime;
// an earlier deadline already set (an outer run) is kept.
class ScopedRunDeadline {
 public:
  explicit ScopedRunDeadline(double seconds);
  ~ScopedRunDeadline();
  ScopedRunDeadline(const ScopedRunDeadline&) = delete;
  ScopedRunDeadline& operator=(const ScopedRunDeadline&) = delete;

 private:
  std::optional<RunClock::time_point> saved_;
  double seconds_saved_ = 0;
};

// This thread's run deadline, if one is set, and the timeout it came from (for messages).
std::optional<RunClock::time_point> CurrentRunDeadline();
double CurrentRunTimeoutSeconds();

}  // namespace kiln
