#include "python/src/runtime.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "core/plugin_paths.h"
#include "python/src/errors.h"

namespace kiln::python {
namespace {

// The folder holding this extension module.
std::filesystem::path ModuleDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ModuleDir), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

}  // namespace

const PluginRegistry& Registry() {
  static std::once_flag once;
  static absl::StatusOr<PluginRegistry>* registry = nullptr;
  std::call_once(once, [] {
    absl::StatusOr<DeviceConfig> config = LoadDeviceConfig();
    if (!config.ok()) {
      registry = new absl::StatusOr<PluginRegistry>(config.status());
      return;
    }
    std::filesystem::path beside = ModuleDir() / "plugins";
    config->plugin_paths.push_back(beside.string());
    registry = new absl::StatusOr<PluginRegistry>(
        PluginRegistry::Discover(*config, PluginSearchDirs(*config)));
  });
  ThrowIfError(registry->status());
  return **registry;
}

const Plugin& PluginFor(const std::string& device) {
  if (device == "auto") {
    std::vector<const PluginEntry*> candidates = Registry().Candidates();
    if (candidates.empty()) {
      throw StatusError(absl::NotFoundError("no Kiln device is available (see kiln.devices())"));
    }
    return *candidates.front()->plugin;
  }
  return *ValueOrThrow(Registry().Get(device));
}

}  // namespace kiln::python
