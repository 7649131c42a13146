// A plugin run in a helper process: the core starts kiln-plugin-host for it (one process per
// plugin), and gets back a Plugin whose C ABI table forwards every call over a Unix socket
// (wire.h), so the rest of the core cannot tell it from a plugin loaded in process. The
// plugin itself is not changed.
//
// When the helper dies (the plugin segfaults, aborts or exits) the call under way and every
// later one fail with UNAVAILABLE naming the plugin and what happened (the signal, the exit
// code); when a call takes longer than the deadline the helper is killed and the call fails
// with DEADLINE_EXCEEDED. The host process keeps running. Data moves through the socket
// (a copy each way, up to 4 GiB per message); handles are the helper's pointers.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "core/plugin.h"

namespace kiln {

// Where kiln-plugin-host is for the plugin at `plugin`: $KILN_PLUGIN_HOST, else beside the
// plugin, else in this installation's plugins folder (the build tree's, or the installed one).
std::filesystem::path PluginHostPath(const std::filesystem::path& plugin);

// Starts the helper for the plugin at `path` and loads it there. `deadline` bounds loading
// and every later call. At most 16 isolated plugins per process.
absl::StatusOr<std::unique_ptr<Plugin>> LoadIsolatedPlugin(const std::filesystem::path& path,
                                                           std::chrono::milliseconds deadline);

}  // namespace kiln
