// Device selection settings: which plugins may run (and in what order), priority overrides
// and extra plugin directories, from a config file and the environment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln {

// Config file (`$KILN_CONFIG`, else `~/.config/kiln/devices.conf`), one `key = value` per
// line, `#` starts a comment:
//   platforms = cpu-llvm,interpreter   # restricts to these plugins and orders them
//   priority.interpreter = 5           # overrides a plugin's default priority
//   plugin_path = /opt/kiln/plugins:/x # extra plugin directories (colon separated)
//   isolate = all                      # or a list of plugins: probe them in a child first
//   plugin_deadline_s = 30             # how long a probed plugin may take to load, and
//                                      # an isolated one to answer any call
//   plugin_restarts = 0                # how often an isolated plugin's helper process is
//                                      # started again after it crashed, exited or hung
//   plugin_memory_mb = 0               # address-space limit of each helper (0: none)
// The environment variables KILN_PLATFORMS (like JAX_PLATFORMS), KILN_ISOLATE,
// KILN_PLUGIN_DEADLINE_S, KILN_PLUGIN_RESTARTS and KILN_PLUGIN_MEMORY_MB replace the keys.
struct DeviceConfig {
  std::vector<std::string> platforms;  // empty: every plugin, by priority
  std::string platforms_source;        // "KILN_PLATFORMS" or "<file>:<line>", for messages
  std::map<std::string, int> priorities;
  std::vector<std::string> plugin_paths;
  // Plugins loaded in a child process first (plugin_probe.h), so that one crashing, hanging
  // or exiting while it loads is rejected with what happened: names, or "all".
  std::vector<std::string> isolate;
  double plugin_deadline_s = 30;
  int plugin_restarts = 0;       // a helper stopped at a run's deadline restarts regardless
  int64_t plugin_memory_mb = 0;  // RLIMIT_AS of each helper process; 0: no limit

  // Whether `name` (a plugin name, or the <name> of its file, where `_` stands for `-`) is
  // in `list`, compared the same way.
  static bool ListHas(const std::vector<std::string>& list, std::string_view name);
  bool Isolated(std::string_view name) const {
    return ListHas(isolate, "all") || ListHas(isolate, name);
  }
};

// Parses config text; errors name `filename:line`.
absl::StatusOr<DeviceConfig> ParseDeviceConfig(std::string_view text, std::string_view filename);

// Reads the config file (a missing default file is fine; a missing $KILN_CONFIG is an
// error), then applies KILN_PLATFORMS.
absl::StatusOr<DeviceConfig> LoadDeviceConfig();

// Splits a comma list, trimming blanks and dropping empty items.
std::vector<std::string> SplitPlatformList(std::string_view list);

}  // namespace kiln
