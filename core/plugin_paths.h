// Where plugins are looked for, and which files count as plugins.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_config.h"

namespace kiln {

// Naming convention: a plugin is a file `libkiln_plugin_<name>.so` (`.dylib` on macOS) in a
// search directory. Other files are ignored, so plugins can share a directory with
// their own helper libraries. The <name> in the file name is a convention only; the
// plugin's real name is the one in its KILN_Api table.
bool IsPluginFileName(std::string_view file_name);
// The <name> of `libkiln_plugin_<name>.so` (its `_` stand for `-`, see DeviceConfig::ListHas).
std::string PluginNameInFileName(const std::filesystem::path& file);

// Search order (first found wins when two plugins share a name):
//   1. every directory in $KILN_PLUGIN_PATH (colon separated),
//   2. `plugin_path` directories from the config file,
//   3. the build tree's plugins dir when the running program lives in the build tree,
//      otherwise the installed plugins dir (<prefix>/<libdir>/kiln/plugins; for an installed
//      `kiln` program moved or staged with its tree, that folder beside it, found from the
//      program's own path, e.g. <bin>/../lib/<triplet>/kiln/plugins).
// Directories that do not exist are skipped.
std::vector<std::filesystem::path> PluginSearchDirs(const DeviceConfig& config);

// The plugins folder of this installation: the build tree's when the running program lives
// in the build tree, else the installed one (empty when neither is known).
std::filesystem::path DefaultPluginDir();

// Plugin files directly inside `dir`, sorted by name (so discovery is deterministic).
std::vector<std::filesystem::path> ListPluginFiles(const std::filesystem::path& dir);

}  // namespace kiln
