#include "core/run_deadline.h"

#include <algorithm>

namespace kiln {
namespace {
thread_local std::optional<RunClock::time_point> deadline;
thread_local double timeout_seconds = 0;
}  // namespace

ScopedRunDeadline::ScopedRunDeadline(double seconds)
    : saved_(deadline), seconds_saved_(timeout_seconds) {
  if (!(seconds > 0)) return;
  seconds = std::min(seconds, 1e7);  // beyond any run; keeps the time point in range
  const auto mine = RunClock::now() + std::chrono::duration_cast<RunClock::duration>(
                                          std::chrono::duration<double>(seconds));
  if (!deadline || mine < *deadline) {
    deadline = mine;
    timeout_seconds = seconds;
  }
}

ScopedRunDeadline::~ScopedRunDeadline() {
  deadline = saved_;
  timeout_seconds = seconds_saved_;
}

std::optional<RunClock::time_point> CurrentRunDeadline() { return deadline; }
double CurrentRunTimeoutSeconds() { return timeout_seconds; }

}  // namespace kiln
