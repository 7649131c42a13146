// Plugin search directories (build tree, install tree, KILN_PLUGIN_PATH, config) and the
// libkiln_plugin_*.so naming convention.
#include "core/plugin_paths.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <system_error>

#ifndef KILN_BUILD_ROOT
#define KILN_BUILD_ROOT ""
#endif
#ifndef KILN_BUILD_PLUGIN_DIR
#define KILN_BUILD_PLUGIN_DIR ""
#endif
#ifndef KILN_INSTALL_PLUGIN_DIR
#define KILN_INSTALL_PLUGIN_DIR ""
#endif
#ifndef KILN_INSTALL_BIN_DIR
#define KILN_INSTALL_BIN_DIR ""
#endif

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "libkiln_plugin_";

void AddColonList(std::string_view list, std::vector<fs::path>& out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t colon = list.find(':', start);
    if (colon == std::string_view::npos) colon = list.size();
    std::string_view dir = list.substr(start, colon - start);
    if (!dir.empty()) out.emplace_back(std::string(dir));
    start = colon + 1;
  }
}

// True when `file` lies inside `root`.
bool IsInside(const fs::path& file, const fs::path& root) {
  std::string f = file.string(), r = root.string();
  return f.size() > r.size() && f.compare(0, r.size(), r) == 0 && f[r.size()] == '/';
}

// True when the running program, or the library holding this code (the Python extension
// module), sits inside the build tree (tests, `build/tools/kiln`, `build/python`): then it
// must use the plugins built beside it, not an older installed copy.
bool RunningFromBuildTree() {
  std::string root = KILN_BUILD_ROOT;
  if (root.empty()) return false;
  std::error_code ec;
  fs::path canonical_root = fs::weakly_canonical(root, ec);
  if (ec) return false;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && IsInside(exe, canonical_root)) return true;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&RunningFromBuildTree), &info) == 0 ||
      info.dli_fname == nullptr) {
    return false;
  }
  fs::path library = fs::weakly_canonical(info.dli_fname, ec);
  return !ec && IsInside(library, canonical_root);
}

// The install tree's plugins folder as seen from the running program when it is an installed
// `kiln` program that was moved or staged (`meson install --destdir`, an unpacked tarball):
// <its folder>/<plugins folder relative to the bin folder>, when that folder exists. Empty
// otherwise, and for other programs (Python), which use the configured folder.
fs::path RelocatedInstallPluginDir() {
  const std::string install_dir = KILN_INSTALL_PLUGIN_DIR, bin_dir = KILN_INSTALL_BIN_DIR;
  if (install_dir.empty() || bin_dir.empty()) return {};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.filename().string().rfind("kiln", 0) != 0) return {};
  fs::path relative = fs::path(install_dir).lexically_relative(bin_dir);
  if (relative.empty() || exe.parent_path() == fs::path(bin_dir)) return {};
  fs::path dir = (exe.parent_path() / relative).lexically_normal();
  return fs::is_directory(dir, ec) ? dir : fs::path();
}

// Where an installed program finds the plugins installed with it.
fs::path InstallPluginDir() {
  fs::path relocated = RelocatedInstallPluginDir();
  return relocated.empty() ? fs::path(KILN_INSTALL_PLUGIN_DIR) : relocated;
}
}  // namespace

bool IsPluginFileName(std::string_view name) {
  for (std::string_view suffix : {std::string_view(".so"), std::string_view(".dylib")}) {
    if (name.size() > kPrefix.size() + suffix.size() && name.substr(0, kPrefix.size()) == kPrefix &&
        name.substr(name.size() - suffix.size()) == suffix) {
      return true;  // a non-empty <name> between prefix and suffix
    }
  }
  return false;
}

std::string PluginNameInFileName(const fs::path& file) {
  std::string stem = file.stem().string();
  return stem.rfind(kPrefix, 0) == 0 ? stem.substr(kPrefix.size()) : stem;
}

std::vector<fs::path> PluginSearchDirs(const DeviceConfig& config) {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("KILN_PLUGIN_PATH"); env != nullptr)
    AddColonList(env, candidates);
  for (const std::string& dir : config.plugin_paths) candidates.emplace_back(dir);
  std::string build_dir = KILN_BUILD_PLUGIN_DIR;
  if (!build_dir.empty() && RunningFromBuildTree()) {
    candidates.emplace_back(build_dir);
  } else if (fs::path install_dir = InstallPluginDir(); !install_dir.empty()) {
    candidates.push_back(install_dir);
  }
  std::vector<fs::path> dirs;
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    fs::path canonical = fs::weakly_canonical(dir, ec);
    if (ec) canonical = dir;
    if (std::find(dirs.begin(), dirs.end(), canonical) == dirs.end()) dirs.push_back(canonical);
  }
  return dirs;
}

fs::path DefaultPluginDir() {
  std::string build_dir = KILN_BUILD_PLUGIN_DIR;
  if (!build_dir.empty() && RunningFromBuildTree()) return build_dir;
  return InstallPluginDir();
}

std::vector<fs::path> ListPluginFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) && !it->is_symlink(type_ec)) continue;
    if (IsPluginFileName(it->path().filename().string())) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kiln
