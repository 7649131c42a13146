// Discovery: load every plugin file, record rejections with reasons, apply the config.
#include "core/plugin_registry.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "core/isolation/isolated_plugin.h"
#include "core/plugin_paths.h"
#include "core/plugin_probe.h"
#include "fmt/format.h"

namespace kiln {

namespace {

// Why a plugin file may not be loaded, or "": the rule ld.so applies to secure paths. A
// file or folder others may write could have been replaced by anyone on the machine.
std::string UnsafePermissions(const std::filesystem::path& file) {
  for (const std::filesystem::path& p : {file, file.parent_path()}) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) continue;
    // A world-writable folder with the sticky bit (like /tmp) still keeps others from
    // replacing a file they do not own; the file itself must not be writable by others.
    const bool sticky_dir = p != file && (st.st_mode & S_ISVTX) != 0;
    if ((st.st_mode & S_IWOTH) != 0 && !sticky_dir)
      return fmt::format("refused: {} {} is writable by others (mode {:o}); fix it with chmod o-w",
                         p == file ? "the file" : "its folder", p.string(), st.st_mode & 07777);
  }
  return "";
}

}  // namespace

std::string_view PluginStateName(PluginEntry::State s) {
  switch (s) {
    case PluginEntry::State::kAvailable:
      return "available";
    case PluginEntry::State::kUnavailable:
      return "unavailable";
    case PluginEntry::State::kDisabled:
      return "disabled";
    case PluginEntry::State::kRejected:
      return "rejected";
  }
  return "?";
}

absl::StatusOr<PluginRegistry> PluginRegistry::Discover() {
  absl::StatusOr<DeviceConfig> config = LoadDeviceConfig();
  if (!config.ok()) return config.status();
  return Discover(*config, PluginSearchDirs(*config));
}

static IsolationOptions IsolationOptionsOf(const DeviceConfig& config) {
  IsolationOptions o;
  o.deadline = std::chrono::milliseconds(
      static_cast<int64_t>(std::min(config.plugin_deadline_s, 1e6) * 1000));
  o.restarts = config.plugin_restarts;
  o.memory_mb = config.plugin_memory_mb;
  return o;
}

PluginRegistry PluginRegistry::Discover(const DeviceConfig& config,
                                        const std::vector<std::filesystem::path>& dirs) {
  PluginRegistry r;
  r.config_ = config;
  r.dirs_ = dirs;
  const IsolationOptions isolation = IsolationOptionsOf(config);
  std::set<std::filesystem::path> seen;  // canonical files: one library reached twice loads once
  for (const std::filesystem::path& dir : dirs) {
    for (const std::filesystem::path& file : ListPluginFiles(dir)) {
      PluginEntry e;
      e.path = file.string();
      std::error_code ec;
      const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
      if (!ec && !seen.insert(canonical).second) continue;  // listed once, where first found
      std::string why = UnsafePermissions(file);
      if (why.empty() && !ec && canonical != file) why = UnsafePermissions(canonical);
      if (!why.empty()) {
        e.reason = why;
        r.entries_.push_back(std::move(e));
        continue;
      }
      // A plugin a platforms list leaves out by its file name is loaded in a child process
      // only, to learn its real name; one isolation asks for runs in a helper process for good.
      // Neither can take the host down while it loads.
      const std::string file_name = PluginNameInFileName(file);
      const bool listed_by_file =
          config.platforms.empty() || DeviceConfig::ListHas(config.platforms, file_name);
      const bool isolated = config.Isolated(file_name);
      if (!listed_by_file) {
        ProbeResult probe = ProbePlugin(file, isolation.deadline);
        if (!probe.loaded) {
          e.reason = probe.reason;
          r.entries_.push_back(std::move(e));
          continue;
        }
        if (!config.platforms.empty() && std::find(config.platforms.begin(), config.platforms.end(),
                                                   probe.name) == config.platforms.end()) {
          e.name = probe.name;
          e.state = PluginEntry::State::kDisabled;
          e.reason =
              fmt::format("not listed in platforms ({}); not loaded", config.platforms_source);
          r.entries_.push_back(std::move(e));
          continue;
        }
      }
      // Isolated: the plugin runs in a kiln-plugin-host process behind a forwarding table.
      absl::StatusOr<std::unique_ptr<Plugin>> plugin =
          isolated ? LoadIsolatedPlugin(file, isolation) : Plugin::Load(file);
      if (!plugin.ok()) {
        e.reason = std::string(plugin.status().message());
        r.entries_.push_back(std::move(e));
        continue;
      }
      e.name = (*plugin)->name();
      if (const PluginEntry* first = r.Find(e.name); first != nullptr && first->plugin != nullptr) {
        e.reason =
            fmt::format("duplicate plugin name '{}' (already loaded from {})", e.name, first->path);
        r.entries_.push_back(std::move(e));  // the duplicate's library unloads here
        continue;
      }
      e.plugin = std::move(*plugin);
      auto override_it = config.priorities.find(e.name);
      e.priority = override_it != config.priorities.end() ? override_it->second
                                                          : e.plugin->default_priority();
      bool listed = config.platforms.empty() ||
                    std::find(config.platforms.begin(), config.platforms.end(), e.name) !=
                        config.platforms.end();
      if (!e.plugin->available()) {
        e.state = PluginEntry::State::kUnavailable;
        e.reason = e.plugin->unavailable_reason();
      } else if (!listed) {
        e.state = PluginEntry::State::kDisabled;
        e.reason = fmt::format("not listed in platforms ({})", config.platforms_source);
      } else {
        e.state = PluginEntry::State::kAvailable;
      }
      r.entries_.push_back(std::move(e));
    }
  }
  for (const std::string& p : config.platforms) {
    const PluginEntry* e = r.Find(p);
    if (e == nullptr || e->plugin == nullptr) r.missing_.push_back(p);
  }
  return r;
}

const PluginEntry* PluginRegistry::Find(std::string_view name) const {
  for (const PluginEntry& e : entries_) {
    if (e.plugin != nullptr && e.name == name) return &e;
  }
  return nullptr;
}

std::vector<const PluginEntry*> PluginRegistry::Candidates() const {
  std::vector<const PluginEntry*> out;
  if (!config_.platforms.empty()) {
    for (const std::string& p : config_.platforms) {
      const PluginEntry* e = Find(p);
      if (e != nullptr && e->state == PluginEntry::State::kAvailable && e->plugin->alive() &&
          std::find(out.begin(), out.end(), e) == out.end()) {
        out.push_back(e);
      }
    }
    return out;
  }
  for (const PluginEntry& e : entries_) {
    if (e.state == PluginEntry::State::kAvailable && e.plugin->alive()) out.push_back(&e);
  }
  std::stable_sort(out.begin(), out.end(), [](const PluginEntry* a, const PluginEntry* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->name < b->name;
  });
  return out;
}

absl::StatusOr<Plugin*> PluginRegistry::Get(std::string_view name) const {
  const PluginEntry* e = Find(name);
  if (e == nullptr) {  // a plugin left out unloaded is still known by name
    for (const PluginEntry& x : entries_) {
      if (x.name == name && x.state == PluginEntry::State::kDisabled)
        return absl::FailedPreconditionError(
            fmt::format("plugin '{}' is disabled: {}", name, x.reason));
    }
  }
  if (e == nullptr) {
    std::string known;
    for (const PluginEntry& x : entries_) {
      if (x.plugin == nullptr) continue;
      if (!known.empty()) known += ", ";
      known += x.name;
    }
    return absl::NotFoundError(fmt::format("no plugin named '{}' (found: {}; see `kiln devices`)",
                                           name, known.empty() ? "none" : known));
  }
  switch (e->state) {
    case PluginEntry::State::kAvailable:
      return e->plugin.get();
    case PluginEntry::State::kUnavailable:
      return absl::UnavailableError(fmt::format("plugin '{}' is unavailable: {}", name, e->reason));
    case PluginEntry::State::kDisabled:
      return absl::FailedPreconditionError(
          fmt::format("plugin '{}' is disabled: {}", name, e->reason));
    case PluginEntry::State::kRejected:
      break;
  }
  return absl::FailedPreconditionError(
      fmt::format("plugin '{}' was rejected: {}", name, e->reason));
}

absl::StatusOr<Plugin*> PluginRegistry::Select(std::string_view device,
                                               std::string_view hlo_text) const {
  if (device != "auto") return Get(device);
  std::vector<const PluginEntry*> candidates = Candidates();
  if (candidates.empty()) {
    return absl::NotFoundError(
        fmt::format("no available plugin (searched {} director{}; see `kiln devices`)",
                    dirs_.size(), dirs_.size() == 1 ? "y" : "ies"));
  }
  std::string why_not;
  for (const PluginEntry* e : candidates) {
    absl::StatusOr<CapabilityReport> report = e->plugin->Capability(hlo_text);
    if (!report.ok()) {
      // No capability entry means the plugin claims everything.
      if (report.status().code() == absl::StatusCode::kUnimplemented) return e->plugin.get();
      why_not += fmt::format("; {}: {}", e->name, std::string(report.status().message()));
      continue;
    }
    if (report->unsupported.empty()) return e->plugin.get();
    const auto& [instr, reason] = report->unsupported.front();
    why_not += fmt::format("; {}: '{}' {}", e->name, instr, reason);
  }
  return absl::FailedPreconditionError(
      fmt::format("no available plugin can run the whole module{}", why_not));
}

absl::StatusOr<Plugin*> PluginRegistry::Isolated(Plugin* plugin) const {
  if (plugin->isolated()) return plugin;
  std::lock_guard<std::mutex> lock(isolated_->mu);
  std::unique_ptr<Plugin>& twin = isolated_->twins[plugin];
  if (twin == nullptr) {
    absl::StatusOr<std::unique_ptr<Plugin>> loaded =
        LoadIsolatedPlugin(plugin->path(), IsolationOptionsOf(config_));
    if (!loaded.ok())
      return absl::Status(loaded.status().code(),
                          fmt::format("running plugin '{}' isolated: {}", plugin->name(),
                                      std::string(loaded.status().message())));
    twin = std::move(*loaded);
  }
  return twin.get();
}

}  // namespace kiln
