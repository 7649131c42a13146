// The set of discovered plugins: which loaded, which were rejected and why, their
// effective priorities, and choosing one for a module (by name or "auto").
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device_config.h"
#include "core/plugin.h"

namespace kiln {

struct PluginEntry {
  enum class State {
    kAvailable,    // loaded, initialized, has a client
    kUnavailable,  // loaded, but nothing to run on (e.g. no GPU); reason says why
    kDisabled,     // loaded, but excluded by `platforms` / KILN_PLATFORMS
    kRejected,     // not usable: load failure, ABI mismatch, failed initialize, duplicate
  };
  State state = State::kRejected;
  std::string name;  // empty when rejected before the name was known
  std::string path;
  int priority = 0;  // effective (config override applied)
  std::string reason;
  std::shared_ptr<Plugin> plugin;  // null when rejected
};

std::string_view PluginStateName(PluginEntry::State s);

class PluginRegistry {
 public:
  // Loads the config (see device_config.h) and every plugin in PluginSearchDirs().
  static absl::StatusOr<PluginRegistry> Discover();
  // Loads the plugins in `dirs` with `config`'s platforms and priorities.
  static PluginRegistry Discover(const DeviceConfig& config,
                                 const std::vector<std::filesystem::path>& dirs);

  const std::vector<PluginEntry>& entries() const { return entries_; }
  const std::vector<std::filesystem::path>& search_dirs() const { return dirs_; }
  const DeviceConfig& config() const { return config_; }
  // Names in `platforms` that no loaded plugin has.
  const std::vector<std::string>& missing_platforms() const { return missing_; }

  // Available plugins in selection order: the `platforms` order when set, else by
  // descending priority (ties by name).
  std::vector<const PluginEntry*> Candidates() const;
  // The entry named `name`, whatever its state; null when none.
  const PluginEntry* Find(std::string_view name) const;
  // A usable plugin by name, or an error that says why it is not usable.
  absl::StatusOr<Plugin*> Get(std::string_view name) const;
  // `device` is a plugin name or "auto". Auto takes the first candidate whose capability
  // query accepts every instruction of the entry computation of `hlo_text`.
  absl::StatusOr<Plugin*> Select(std::string_view device, std::string_view hlo_text) const;
  // `plugin` itself when it runs isolated, else the same plugin loaded once more in a helper
  // process (isolated_plugin.h) with the config's isolation settings: what a run with a
  // timeout needs, since only a helper process can be stopped mid-call.
  absl::StatusOr<Plugin*> Isolated(Plugin* plugin) const;

 private:
  struct IsolatedTwins {
    std::mutex mu;
    std::map<const Plugin*, std::unique_ptr<Plugin>> twins;
  };
  DeviceConfig config_;
  std::vector<std::filesystem::path> dirs_;
  std::vector<PluginEntry> entries_;
  std::vector<std::string> missing_;
  std::shared_ptr<IsolatedTwins> isolated_ = std::make_shared<IsolatedTwins>();
};

}  // namespace kiln
