// The extension module kiln._kiln: devices, compile, device_put, and the classes of
// bindings.h. The public API (kiln/__init__.py) wraps these with caching and paths.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>

#include "core/module_executable.h"
#include "fmt/format.h"
#include "hlo/verifier.h"
#include "plugin_api/kiln_plugin_api.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/runtime.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

// One discovered plugin, as kiln.devices() lists it.
struct DeviceInfo {
  std::string name, path, state, reason;
  int priority = 0;
  std::string api_version;
  std::vector<std::pair<std::string, std::string>> attributes;
  bool available() const { return state == "available"; }
};

std::vector<DeviceInfo> Devices() {
  std::vector<DeviceInfo> out;
  for (const PluginEntry& e : Registry().entries()) {
    DeviceInfo d;
    d.name = e.name;
    d.path = e.path;
    d.state = std::string(PluginStateName(e.state));
    d.reason = e.reason;
    d.priority = e.priority;
    if (e.plugin != nullptr) {
      d.api_version = fmt::format("{}.{}", e.plugin->api_major(), e.plugin->api_minor());
      d.attributes = e.plugin->attributes();
    }
    out.push_back(std::move(d));
  }
  return out;
}

PyExecutable Compile(const std::string& text, const std::string& filename,
                     const std::string& device, bool core_passes, const std::string& dump_to,
                     const std::string& dump_pass_re, int min_cluster_size, double timeout_s) {
  const PluginRegistry& registry = Registry();
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe;
  {
    nb::gil_scoped_release release;
    exe = [&]() -> absl::StatusOr<std::unique_ptr<ModuleExecutable>> {
      absl::StatusOr<std::unique_ptr<HloModule>> module = ParseRunnableModule(text, filename);
      if (!module.ok()) return module.status();
      ModuleCompileOptions options;
      options.device = device;
      options.core_passes.enabled = core_passes;
      options.core_passes.dump_dir = dump_to;
      options.core_passes.dump_pass_regex = dump_pass_re;
      options.partition.min_cluster_size = min_cluster_size;
      options.timeout_s = timeout_s;
      return ModuleExecutable::Compile(registry, **module, options);
    }();
  }
  return PyExecutable(ValueOrThrow(std::move(exe)));
}

}  // namespace
}  // namespace kiln::python

NB_MODULE(_kiln, m) {
  using namespace kiln;
  using namespace kiln::python;
  m.doc() = "Kiln's C++ core, bound for the `kiln` package (use `kiln`, not this module).";
  InitArrays();
  // Buffers and executables held by module globals or exception tracebacks at interpreter
  // exit are released in no particular order; nanobind's leak report would be noise.
  nb::set_leak_warnings(false);
  RegisterKilnError(m);
  m.attr("ABI_VERSION") = fmt::format("{}.{}", KILN_API_MAJOR, KILN_API_MINOR);

  nb::class_<DeviceInfo>(m, "Device", "A discovered plugin (kiln.devices()).")
      .def_ro("name", &DeviceInfo::name)
      .def_ro("path", &DeviceInfo::path)
      .def_ro("priority", &DeviceInfo::priority)
      .def_ro("state", &DeviceInfo::state, "available, unavailable, disabled or rejected")
      .def_ro("reason", &DeviceInfo::reason, "why it is not available ('' when it is)")
      .def_ro("api_version", &DeviceInfo::api_version)
      .def_prop_ro("attributes",
                   [](const DeviceInfo& d) -> nb::dict {
                     nb::dict out;
                     for (const auto& [k, v] : d.attributes) out[k.c_str()] = v;
                     return out;
                   })
      .def_prop_ro("available", [](const DeviceInfo& d) -> bool { return d.available(); })
      .def_prop_ro(
          "num_devices",
          [](const DeviceInfo& d) -> size_t {
            return d.available() ? PluginFor(d.name).device_count() : 0;
          },
          "How many devices the plugin's client has (ABI 1.8; host plugins: "
          "KILN_HOST_DEVICE_COUNT).")
      .def(
          "memory_stats",
          [](const DeviceInfo& d) -> nb::dict {
            DeviceMemoryStats m = ValueOrThrow(PluginFor(d.name).MemoryStats());
            nb::dict out;
            out["bytes_in_use"] = m.bytes_in_use;
            out["peak_bytes_in_use"] = m.peak_bytes_in_use;
            out["num_buffers"] = m.num_buffers;
            out["bytes_limit"] = m.bytes_limit;
            return out;
          },
          "What the plugin's buffers hold (ABI 1.5): bytes_in_use, peak_bytes_in_use, "
          "num_buffers, bytes_limit (-1: unknown), as JAX's Device.memory_stats().")
      .def("__repr__", [](const DeviceInfo& d) -> std::string {
        return fmt::format("<kiln.Device {} priority={} {}{}>", d.name, d.priority, d.state,
                           d.reason.empty() ? "" : ": " + d.reason);
      });

  BindBuffer(m);
  BindExecutable(m);
  BindGraph(m);
  BindCustomCalls(m);

  m.def("devices", &Devices, "Every discovered plugin, available or not, in discovery order.");
  m.def("wait_for_queued_runs", &WaitForQueuedRuns, nb::arg("timeout_s") = 60.0,
        "Waits until every run Executable.execute queued has ended (at most timeout_s); "
        "False when some had not. Registered with atexit by the kiln package.");
  m.def("compile", &Compile, nb::arg("text"), nb::arg("filename"), nb::arg("device"),
        nb::arg("core_passes"), nb::arg("dump_to"), nb::arg("dump_pass_re"),
        nb::arg("min_cluster_size"), nb::arg("timeout_s"));
  m.def(
      "device_put",
      [](nb::handle array, const std::string& device, int device_index) {
        return DevicePut(array, PluginFor(device), device_index);
      },
      nb::arg("array"), nb::arg("device") = "auto", nb::arg("device_index") = 0,
      "Copies an array to a device (device_index: which of the plugin's devices, ABI 1.8; "
      "a host plugin has KILN_HOST_DEVICE_COUNT of them); returns a kiln.Buffer.");
  m.def(
      "from_dlpack",
      [](nb::handle array, const std::string& device) {
        return FromDlpack(array, PluginFor(device));
      },
      nb::arg("array"), nb::arg("device") = "auto",
      "A kiln.Buffer sharing the bytes of a DLPack (or buffer-protocol) host array.");
}
