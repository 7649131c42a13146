// Parsing the device config file and applying KILN_PLATFORMS.
#include "core/device_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace kiln {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string> SplitPlatformList(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = Trim(list.substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

// The isolation settings that are numbers: `key` (a config key) takes `value`; errors
// name `where` (a file:line or an environment variable).
static absl::Status SetIsolationNumber(DeviceConfig& config, std::string_view key,
                                       std::string_view value, std::string_view where) {
  double v = 0;
  const bool number = absl::SimpleAtod(std::string(value), &v) && std::isfinite(v);
  if (key == "plugin_deadline_s") {
    if (!number || !(v > 0))
      return absl::InvalidArgumentError(fmt::format(
          "{}: plugin_deadline_s needs a positive number of seconds, got '{}'", where, value));
    config.plugin_deadline_s = v;
  } else if (key == "plugin_restarts") {
    if (!number || v < 0 || v != std::floor(v) || v > 1e6)
      return absl::InvalidArgumentError(
          fmt::format("{}: plugin_restarts needs a whole number >= 0, got '{}'", where, value));
    config.plugin_restarts = static_cast<int>(v);
  } else {
    if (!number || v < 0 || v != std::floor(v) || v > 1e9)
      return absl::InvalidArgumentError(
          fmt::format("{}: plugin_memory_mb needs a whole number of MiB (0: no limit), got '{}'",
                      where, value));
    config.plugin_memory_mb = static_cast<int64_t>(v);
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceConfig> ParseDeviceConfig(std::string_view text, std::string_view filename) {
  DeviceConfig config;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    std::string where = fmt::format("{}:{}", filename, line_no);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(
          fmt::format("{}: expected 'key = value', got '{}'", where, line));
    }
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    if (key == "platforms") {
      config.platforms = SplitPlatformList(value);
      config.platforms_source = where;
    } else if (key.substr(0, 9) == "priority.") {
      std::string name(key.substr(9));
      int priority = 0;
      if (name.empty() || !absl::SimpleAtoi(std::string(value), &priority)) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: '{}' needs a plugin name and an integer value, got '{}'", where, key, value));
      }
      config.priorities[name] = priority;
    } else if (key == "isolate") {
      config.isolate = SplitPlatformList(value);
    } else if (key == "plugin_deadline_s" || key == "plugin_restarts" ||
               key == "plugin_memory_mb") {
      if (absl::Status st = SetIsolationNumber(config, key, value, where); !st.ok()) return st;
    } else if (key == "plugin_path") {
      size_t start = 0;
      while (start <= value.size()) {
        size_t colon = value.find(':', start);
        if (colon == std::string_view::npos) colon = value.size();
        std::string_view dir = Trim(value.substr(start, colon - start));
        if (!dir.empty()) config.plugin_paths.emplace_back(dir);
        start = colon + 1;
      }
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "{}: unknown key '{}' (known: platforms, priority.<plugin>, plugin_path, isolate, "
          "plugin_deadline_s, plugin_restarts, plugin_memory_mb)",
          where, key));
    }
  }
  return config;
}

absl::StatusOr<DeviceConfig> LoadDeviceConfig() {
  std::string path;
  bool explicit_path = false;
  if (const char* env = std::getenv("KILN_CONFIG"); env != nullptr && env[0] != '\0') {
    path = env;
    explicit_path = true;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    path = std::string(home) + "/.config/kiln/devices.conf";
  }
  DeviceConfig config;
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      absl::StatusOr<DeviceConfig> parsed = ParseDeviceConfig(text.str(), path);
      if (!parsed.ok()) return parsed.status();
      config = std::move(*parsed);
    } else if (explicit_path) {
      return absl::NotFoundError(fmt::format("KILN_CONFIG names '{}', which cannot be read", path));
    }
  }
  if (const char* env = std::getenv("KILN_PLATFORMS"); env != nullptr && env[0] != '\0') {
    config.platforms = SplitPlatformList(env);
    config.platforms_source = "KILN_PLATFORMS";
  }
  if (const char* env = std::getenv("KILN_ISOLATE"); env != nullptr && env[0] != '\0')
    config.isolate = SplitPlatformList(env);
  for (auto [var, key] : {std::pair{"KILN_PLUGIN_DEADLINE_S", "plugin_deadline_s"},
                          std::pair{"KILN_PLUGIN_RESTARTS", "plugin_restarts"},
                          std::pair{"KILN_PLUGIN_MEMORY_MB", "plugin_memory_mb"}}) {
    if (const char* env = std::getenv(var); env != nullptr && env[0] != '\0') {
      if (absl::Status st = SetIsolationNumber(config, key, env, var); !st.ok()) return st;
    }
  }
  return config;
}

bool DeviceConfig::ListHas(const std::vector<std::string>& list, std::string_view name) {
  auto same = [&](std::string_view item) {
    if (item.size() != name.size()) return false;
    for (size_t i = 0; i < item.size(); ++i) {
      const char a = item[i] == '_' ? '-' : item[i], b = name[i] == '_' ? '-' : name[i];
      if (a != b) return false;
    }
    return true;
  };
  return std::any_of(list.begin(), list.end(), same);
}

}  // namespace kiln
