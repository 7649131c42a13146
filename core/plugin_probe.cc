// Probing a plugin in a forked child: load, report, exit.
#include "core/plugin_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/plugin.h"
#include "fmt/format.h"

namespace kiln {

namespace {

// The child: "ok <name>" or "rejected <reason>" on `fd`, then _exit (no destructors of the
// parent's state run in the child).
[[noreturn]] void RunChild(const std::filesystem::path& path, int fd) {
  std::string message;
  try {
    absl::StatusOr<std::unique_ptr<Plugin>> plugin = Plugin::Load(path);
    message = plugin.ok() ? "ok " + (*plugin)->name()
                          : "rejected " + std::string(plugin.status().message());
  } catch (const std::exception& e) {
    message = fmt::format("rejected exception while loading: {}", e.what());
  }
  for (size_t done = 0; done < message.size();) {
    ssize_t n = write(fd, message.data() + done, message.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  _exit(0);
}

int64_t MillisLeft(std::chrono::steady_clock::time_point until) {
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                  until - std::chrono::steady_clock::now())
                                  .count());
}

}  // namespace

ProbeResult ProbePlugin(const std::filesystem::path& path, std::chrono::milliseconds deadline) {
  ProbeResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.reason = fmt::format("cannot probe: pipe: {}", std::strerror(errno));
    return result;
  }
  std::fflush(nullptr);  // or the child's exit (a plugin may call exit) writes it again
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    result.reason = fmt::format("cannot probe: fork: {}", std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    RunChild(path, fds[1]);
  }
  close(fds[1]);
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::string message;
  bool timed_out = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(MillisLeft(until)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      break;
    }
    char buf[512];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its end: it answered, or died
    message.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    result.reason = fmt::format(
        "did not finish loading within {} s (hung in KILN_GetApi or initialize; probed in a "
        "child process, which was killed)",
        deadline.count() / 1000.0);
  } else if (WIFSIGNALED(status)) {
    result.reason = fmt::format("crashed while loading: signal {} ({}) in a child process",
                                WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (message.rfind("ok ", 0) == 0) {
    result.loaded = true;
    result.name = message.substr(3);
  } else if (message.rfind("rejected ", 0) == 0) {
    result.reason = message.substr(9);
  } else {
    result.reason = fmt::format("exited with code {} while loading (in a child process)",
                                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return result;
}

}  // namespace kiln
