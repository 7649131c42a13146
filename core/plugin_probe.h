// Loading a plugin in a child process first, so that one which crashes, hangs or exits while
// it loads (in KILN_GetApi or initialize) is reported instead of taking the host down. The
// registry probes a plugin when isolation asks for it (KILN_ISOLATE, the config's
// `isolate`), and to learn the name of one a platforms list would leave out, which is then
// never loaded in the host.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace kiln {

struct ProbeResult {
  bool loaded = false;  // the child loaded and initialized it
  std::string name;     // its name (when loaded)
  // When not loaded: why (the load error, "crashed with signal 11 (Segmentation fault)",
  // "exited with code 3", "did not finish loading within 30 s").
  std::string reason;
};

// Forks; the child runs Plugin::Load on `path` and reports through a pipe. The child is
// killed when it has not answered within `deadline`.
ProbeResult ProbePlugin(const std::filesystem::path& path, std::chrono::milliseconds deadline);

}  // namespace kiln
