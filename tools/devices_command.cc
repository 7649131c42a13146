// `kiln devices`: every discovered plugin with priority, state and reason.
#include <iostream>

#include "core/plugin_registry.h"
#include "fmt/format.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace kiln {

int DevicesCommand(const std::vector<std::string>& args) {
  FlagSpec spec;
  spec.switches = {"help"};
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, spec);
  if (!flags.ok()) return ReportError("devices", std::string(flags.status().message()), kExitUsage);
  if (!flags->positional.empty()) {
    return ReportError("devices",
                       fmt::format("unexpected argument '{}' (kiln devices takes none; see kiln "
                                   "devices --help)",
                                   flags->positional[0]),
                       kExitUsage);
  }
  if (flags->Has("help")) {
    std::cout << "usage: kiln devices\n"
                 "Lists discovered plugins, their priority, availability and rejection reasons.\n"
                 "Plugins are libkiln_plugin_*.so files in $KILN_PLUGIN_PATH (colon separated),\n"
                 "the config's plugin_path, and the build or install plugins directory.\n"
                 "Config: $KILN_CONFIG or ~/.config/kiln/devices.conf; KILN_PLATFORMS=a,b\n"
                 "restricts and orders the plugins used.\n";
    return kExitOk;
  }
  absl::StatusOr<PluginRegistry> registry = PluginRegistry::Discover();
  if (!registry.ok()) return ReportError("devices", std::string(registry.status().message()));

  std::cout << "search path:\n";
  if (registry->search_dirs().empty()) std::cout << "  (no plugin directory exists)\n";
  for (const auto& dir : registry->search_dirs()) std::cout << "  " << dir.string() << "\n";
  if (!registry->config().platforms.empty()) {
    std::string list;
    for (const std::string& p : registry->config().platforms) list += (list.empty() ? "" : ",") + p;
    std::cout << fmt::format("platforms: {} (from {})\n", list,
                             registry->config().platforms_source);
  }
  std::cout << fmt::format("{:<20} {:>8}  {:<12} {}\n", "NAME", "PRIORITY", "STATE", "DETAILS");
  for (const PluginEntry& e : registry->entries()) {
    std::string details;
    if (e.state == PluginEntry::State::kAvailable) {
      absl::StatusOr<std::vector<DeviceDescription>> devices = e.plugin->Devices();
      if (devices.ok()) {
        for (const DeviceDescription& d : *devices) {
          details += fmt::format("{}{}:{}", details.empty() ? "" : ", ", d.id, d.kind);
        }
        details = fmt::format("devices [{}] abi {}.{}", details, e.plugin->api_major(),
                              e.plugin->api_minor());
      } else {
        details = std::string(devices.status().message());
      }
      for (const auto& [k, v] : e.plugin->attributes()) {
        if (k == "version") details += fmt::format(" version {}", v);
        if (k == "gemm") details += fmt::format(" gemm: {}", v);  // gpu-nvptx: cuBLAS or why not
        if (k == "collectives") details += fmt::format(" collectives: {}", v);  // NCCL or why not
        if (k == "isolated") details += fmt::format(" isolated ({})", v);
      }
    } else {
      details = e.reason;
    }
    // One table row per plugin: whatever a plugin put in a name or reason stays on it.
    for (char& c : details) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    std::cout << fmt::format("{:<20} {:>8}  {:<12} {}\n", e.name.empty() ? "-" : e.name,
                             e.plugin ? fmt::format("{}", e.priority) : std::string("-"),
                             PluginStateName(e.state), details);
    std::cout << fmt::format("{:<20} {:>8}  {:<12} {}\n", "", "", "", e.path);
  }
  for (const std::string& p : registry->missing_platforms()) {
    std::cout << fmt::format("{:<20} {:>8}  {:<12} {}\n", p, "-", "missing",
                             fmt::format("listed in platforms ({}) but no such plugin was found",
                                         registry->config().platforms_source));
  }
  std::vector<const PluginEntry*> order = registry->Candidates();
  std::string list;
  for (const PluginEntry* e : order) list += (list.empty() ? "" : ", ") + e->name;
  std::cout << "auto order: " << (list.empty() ? "(none available)" : list) << "\n";
  return kExitOk;
}

}  // namespace kiln
