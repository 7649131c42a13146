// A plugin run in a helper process: the core starts kiln-plugin-host for it (one process per
// plugin), and gets back a Plugin whose C ABI table forwards every call over a Unix socket
// (wire.h), so the rest of the core cannot tell it from a plugin loaded in process. The
// plugin itself is not changed.
//
// When the helper dies (the plugin segfaults, aborts or exits) the call under way and every
// later one fail with UNAVAILABLE naming the plugin and what happened (the signal, the exit
// code); when a call takes longer than the deadline the helper is killed and the call fails
// with DEADLINE_EXCEEDED, as when this thread's run deadline (run_deadline.h) passes. The
// host process keeps running. Data moves through the socket
// (a copy each way, up to 4 GiB per message); handles are the helper's pointers.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "core/plugin.h"

namespace kiln {

// Where kiln-plugin-host is for the plugin at `plugin`: $KILN_PLUGIN_HOST, else beside the
// plugin, else in this installation's plugins folder (the build tree's, or the installed one).
std::filesystem::path PluginHostPath(const std::filesystem::path& plugin);

struct IsolationOptions {
  std::chrono::milliseconds deadline{30000};  // bounds loading and every later call
  int restarts = 0;       // how often a lost helper is started again (at the next compile)
  int64_t memory_mb = 0;  // the helper's address-space limit (RLIMIT_AS); 0: none
};

// Starts the helper for the plugin at `path` and loads it there. At most 16 isolated plugins
// per process. A helper lost while the policy allows a restart is started again by the next
// call that needs it (compile, capability, an upload), with the plugin initialized and its
// client made again; executables and buffers of the lost one fail with UNAVAILABLE.
absl::StatusOr<std::unique_ptr<Plugin>> LoadIsolatedPlugin(const std::filesystem::path& path,
                                                           const IsolationOptions& options);

}  // namespace kiln
