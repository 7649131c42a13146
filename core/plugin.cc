// Loading one plugin through Boost.DLL and talking to it through the C ABI: table checks,
// error objects -> absl::Status, handle ownership.
#include "core/plugin.h"

#include <atomic>
#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "core/collectives/abi_collectives.h"
#include "core/custom_calls.h"
#include "core/module_view.h"
#include "fmt/format.h"
#include "kiln_plugin_api.h"

namespace kiln {

// The C ABI's dtype numbering is hlo PrimitiveType's; keep them locked together.
#define KILN_CHECK_DTYPE(e) \
  static_assert(static_cast<int>(PrimitiveType::e) == KILN_DTYPE_##e, "dtype " #e " drifted");
KILN_CHECK_DTYPE(PRED)
KILN_CHECK_DTYPE(S8)
KILN_CHECK_DTYPE(S16)
KILN_CHECK_DTYPE(S32)
KILN_CHECK_DTYPE(S64)
KILN_CHECK_DTYPE(U8)
KILN_CHECK_DTYPE(U16)
KILN_CHECK_DTYPE(U32)
KILN_CHECK_DTYPE(U64)
KILN_CHECK_DTYPE(F16)
KILN_CHECK_DTYPE(BF16)
KILN_CHECK_DTYPE(F32)
KILN_CHECK_DTYPE(F64)
KILN_CHECK_DTYPE(C64)
KILN_CHECK_DTYPE(C128)
KILN_CHECK_DTYPE(F8E4M3FN)
KILN_CHECK_DTYPE(F8E5M2)
KILN_CHECK_DTYPE(F8E4M3FNUZ)
KILN_CHECK_DTYPE(F8E5M2FNUZ)
KILN_CHECK_DTYPE(F8E4M3B11FNUZ)
KILN_CHECK_DTYPE(F8E3M4)
KILN_CHECK_DTYPE(F8E4M3)
KILN_CHECK_DTYPE(F8E8M0FNU)
KILN_CHECK_DTYPE(F4E2M1FN)
KILN_CHECK_DTYPE(S4)
KILN_CHECK_DTYPE(U4)
KILN_CHECK_DTYPE(S2)
KILN_CHECK_DTYPE(U2)
KILN_CHECK_DTYPE(S1)
KILN_CHECK_DTYPE(U1)
#undef KILN_CHECK_DTYPE
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) == KILN_ERROR_UNAUTHENTICATED);

namespace internal {

struct PluginLibrary {
  // Declared first so it is destroyed last: the client is destroyed through the table.
  std::optional<boost::dll::shared_library> library;
  const KILN_Api* api = nullptr;
  std::string name, path;
  int priority = 0, major = 0, minor = 0;
  bool available = false;
  std::string unavailable_reason;
  std::vector<std::pair<std::string, std::string>> attributes;
  KILN_Client* client = nullptr;
  std::vector<KILN_Device*> devices;  // the client's, by index
  PluginHealth health;                // empty in process: alive as long as the host

  ~PluginLibrary() {
    if (client != nullptr) {
      KILN_Client_Destroy_Args args{sizeof(args), client};
      if (KILN_Error* e = api->client_destroy(&args)) api->error_destroy(e);
    }
  }

  // Converts (and destroys) a plugin error; OK for null.
  absl::Status Take(KILN_Error* error, std::string_view what, bool prefix = true) const {
    if (error == nullptr) return absl::OkStatus();
    int code = static_cast<int>(api->error_code(error));
    const char* message = api->error_message(error);
    std::string text = message != nullptr ? message : "(no message)";
    api->error_destroy(error);
    // An error object that claims OK, or an unknown code, is still an error.
    if (code <= 0 || code > KILN_ERROR_UNAUTHENTICATED) code = KILN_ERROR_UNKNOWN;
    return absl::Status(static_cast<absl::StatusCode>(code),
                        prefix ? fmt::format("{}: {}: {}", name, what, text) : text);
  }

  absl::Status Unsupported(std::string_view entry) const {
    return absl::UnimplementedError(fmt::format("'{}' unsupported by plugin {}", entry, name));
  }
};

}  // namespace internal

#define KILN_REQUIRE_ENTRY(lib, entry) \
  if (!KILN_API_HAS((lib).api, entry)) return (lib).Unsupported(#entry)

namespace {

using internal::PluginLibrary;

absl::Status Reject(std::string reason) { return absl::FailedPreconditionError(std::move(reason)); }

// Validates the table and brings the plugin up (initialize, attributes, client).
absl::Status Init(PluginLibrary& lib, const KILN_Api* api) {
  if (api == nullptr) return Reject("KILN_GetApi returned a null table");
  constexpr size_t kHeader = KILN_STRUCT_SIZE(KILN_Api, default_priority);
  if (api->struct_size < kHeader) {
    return Reject(fmt::format("table struct_size {} is too small to be a KILN_Api (needs >= {})",
                              api->struct_size, kHeader));
  }
  if (api->api_major != KILN_API_MAJOR) {
    return Reject(
        fmt::format("ABI major version {} does not match the core's {} (rebuild the "
                    "plugin against kiln_plugin_api.h {}.x)",
                    api->api_major, KILN_API_MAJOR, KILN_API_MAJOR));
  }
  if (api->struct_size < KILN_API_STRUCT_SIZE_1_0) {
    return Reject(fmt::format("table struct_size {} is smaller than ABI {}.0's {}",
                              api->struct_size, KILN_API_MAJOR, KILN_API_STRUCT_SIZE_1_0));
  }
  if (api->plugin_name == nullptr || api->plugin_name[0] == '\0') {
    return Reject("plugin has no name");
  }
  std::string name(api->plugin_name, strnlen(api->plugin_name, 65));
  if (name.size() > 64) return Reject("plugin name longer than 64 characters");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    // The name is shown C-escaped: its bytes may be control characters or not UTF-8.
    if (!ok) {
      return Reject(fmt::format("plugin name '{}' has characters other than [A-Za-z0-9._-]",
                                absl::CHexEscape(name)));
    }
  }
  lib.api = api;
  lib.name = name;
  lib.priority = api->default_priority;
  lib.major = api->api_major;
  lib.minor = api->api_minor;

  if (std::vector<const char*> missing = MissingRequiredEntries(*api); !missing.empty())
    return Reject(fmt::format("plugin '{}': required entry '{}' is null", name, missing[0]));

  KILN_Initialize_Args init{};
  init.struct_size = sizeof(init);
  if (absl::Status s = lib.Take(api->initialize(&init), "initialize", false); !s.ok()) {
    return Reject(
        fmt::format("plugin '{}': initialize failed: {}", name, std::string(s.message())));
  }
  lib.available = init.available != 0;
  if (!lib.available) {
    lib.unavailable_reason =
        init.unavailable_reason != nullptr ? init.unavailable_reason : "(no reason given)";
  }

  if (KILN_API_HAS(api, attributes)) {
    KILN_Attributes_Args attrs{};
    attrs.struct_size = sizeof(attrs);
    if (lib.Take(api->attributes(&attrs), "attributes").ok() && attrs.attributes != nullptr) {
      for (size_t i = 0; i < attrs.num_attributes && i < 256; ++i) {
        const KILN_Attribute& a = attrs.attributes[i];
        if (a.name != nullptr && a.value != nullptr) lib.attributes.emplace_back(a.name, a.value);
      }
    }
  }

  if (lib.available) {
    KILN_Client_Create_Args create{};
    create.struct_size = sizeof(create);
    if (absl::Status s = lib.Take(api->client_create(&create), "client_create", false); !s.ok()) {
      return Reject(
          fmt::format("plugin '{}': client_create failed: {}", name, std::string(s.message())));
    }
    if (create.client == nullptr) return Reject("client_create returned no client");
    lib.client = create.client;
    KILN_Client_Devices_Args devices{};
    devices.struct_size = sizeof(devices);
    devices.client = lib.client;
    if (lib.Take(api->client_devices(&devices), "client_devices").ok() &&
        devices.devices != nullptr)
      lib.devices.assign(devices.devices, devices.devices + devices.num_devices);
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<const char*> MissingRequiredEntries(const KILN_Api& api) {
  const std::pair<const char*, bool> required[] = {
      {"error_destroy", api.error_destroy != nullptr},
      {"error_message", api.error_message != nullptr},
      {"error_code", api.error_code != nullptr},
      {"initialize", api.initialize != nullptr},
      {"client_create", api.client_create != nullptr},
      {"client_destroy", api.client_destroy != nullptr},
      {"client_devices", api.client_devices != nullptr},
      {"device_description", api.device_description != nullptr},
      {"compile", api.compile != nullptr},
      {"executable_info", api.executable_info != nullptr},
      {"executable_destroy", api.executable_destroy != nullptr},
      {"execute", api.execute != nullptr},
      {"buffer_from_host", api.buffer_from_host != nullptr},
      {"buffer_to_host", api.buffer_to_host != nullptr},
      {"buffer_info", api.buffer_info != nullptr},
      {"buffer_destroy", api.buffer_destroy != nullptr},
  };
  std::vector<const char*> missing;
  for (const auto& [entry, present] : required)
    if (!present) missing.push_back(entry);
  return missing;
}

// ---- Plugin -------------------------------------------------------------------------

static absl::StatusOr<DeviceBuffer> Upload(const std::shared_ptr<PluginLibrary>& lib_,
                                           const Shape& shape, const void* data,
                                           void (*on_done)(void*) = nullptr,
                                           void* on_done_arg = nullptr, int device = -1);

// Where a call without a device of its own goes (ABI 1.8): in a run on several devices in
// this process, the device whose collectives this thread runs, when the plugin has that
// many devices; otherwise the first. Null for the first (every plugin's default).
static KILN_Device* DefaultDevice(const PluginLibrary& lib) {
  if (lib.minor < 8) return nullptr;
  const Communicator* c = CurrentCommunicator();
  if (c == nullptr || c->device_id() <= 0 ||
      static_cast<size_t>(c->device_id()) >= lib.devices.size())
    return nullptr;
  return lib.devices[c->device_id()];
}

// Device `index` of the plugin's client, checked; null for index 0 (the default everywhere).
static absl::StatusOr<KILN_Device*> DeviceAt(const PluginLibrary& lib, int index) {
  if (index == 0) return nullptr;
  if (index < 0 || static_cast<size_t>(index) >= lib.devices.size() || lib.minor < 8) {
    return absl::InvalidArgumentError(fmt::format("{}: no device {} (it has {}{})", lib.name, index,
                                                  lib.devices.size(),
                                                  lib.minor < 8 ? ", ABI before 1.8" : ""));
  }
  return lib.devices[index];
}

Plugin::Plugin(std::shared_ptr<internal::PluginLibrary> lib) : lib_(std::move(lib)) {}
Plugin::~Plugin() = default;

absl::StatusOr<std::unique_ptr<Plugin>> Plugin::Load(const std::filesystem::path& path) {
  auto lib = std::make_shared<PluginLibrary>();
  lib->path = path.string();
  const KILN_Api* api = nullptr;
  try {
    // RTLD_NOW: an unresolved symbol shows up here, as a rejection, not as a crash later.
    lib->library.emplace(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (!lib->library->has(KILN_GET_API_SYMBOL)) {
      return Reject(fmt::format("missing entry symbol {}", KILN_GET_API_SYMBOL));
    }
    KILN_GetApi_Fn& get_api = lib->library->get<KILN_GetApi_Fn>(KILN_GET_API_SYMBOL);
    api = get_api();
  } catch (const std::exception& e) {
    return Reject(fmt::format("cannot load: {}", e.what()));
  }
  if (absl::Status s = Init(*lib, api); !s.ok()) return s;
  return std::unique_ptr<Plugin>(new Plugin(std::move(lib)));
}

absl::StatusOr<std::unique_ptr<Plugin>> Plugin::FromApi(const KILN_Api* api, std::string origin,
                                                        PluginHealth health) {
  auto lib = std::make_shared<PluginLibrary>();
  lib->path = std::move(origin);
  lib->health = std::move(health);
  if (absl::Status s = Init(*lib, api); !s.ok()) return s;
  return std::unique_ptr<Plugin>(new Plugin(std::move(lib)));
}

const std::string& Plugin::name() const { return lib_->name; }
const std::string& Plugin::path() const { return lib_->path; }
int Plugin::default_priority() const { return lib_->priority; }
int Plugin::api_major() const { return lib_->major; }
int Plugin::api_minor() const { return lib_->minor; }
bool Plugin::available() const { return lib_->available; }
bool Plugin::alive() const { return lib_->health.alive == nullptr || lib_->health.alive(); }
bool Plugin::isolated() const { return lib_->health.generation != nullptr; }
uint64_t Plugin::generation() const {
  return lib_->health.generation == nullptr ? 0 : lib_->health.generation();
}
const std::string& Plugin::unavailable_reason() const { return lib_->unavailable_reason; }
const std::vector<std::pair<std::string, std::string>>& Plugin::attributes() const {
  return lib_->attributes;
}

// The plugin's attribute `name` is "none" (the conventions in KILN_Attributes_Args).
static bool SaysNone(const internal::PluginLibrary& lib, std::string_view name) {
  for (const auto& [key, value] : lib.attributes) {
    if (key == name) return value == "none";
  }
  return false;
}

bool Plugin::wants_module_as_written() const { return SaysNone(*lib_, "core_passes"); }

static absl::Status CheckAvailable(const PluginLibrary& lib) {
  if (lib.available) return absl::OkStatus();
  return absl::UnavailableError(
      fmt::format("plugin {} is unavailable: {}", lib.name, lib.unavailable_reason));
}

absl::StatusOr<DeviceMemoryStats> Plugin::MemoryStats() const {
  if (absl::Status s = CheckAvailable(*lib_); !s.ok()) return s;
  KILN_REQUIRE_ENTRY(*lib_, device_memory_stats);
  KILN_Device_MemoryStats_Args args{};
  args.struct_size = sizeof(args);
  args.client = lib_->client;
  if (absl::Status s = lib_->Take(lib_->api->device_memory_stats(&args), "device_memory_stats");
      !s.ok())
    return s;
  return DeviceMemoryStats{args.bytes_in_use, args.peak_bytes_in_use, args.num_buffers,
                           args.bytes_limit};
}

absl::StatusOr<std::vector<DeviceDescription>> Plugin::Devices() const {
  if (absl::Status s = CheckAvailable(*lib_); !s.ok()) return s;
  KILN_Client_Devices_Args args{};
  args.struct_size = sizeof(args);
  args.client = lib_->client;
  if (absl::Status s = lib_->Take(lib_->api->client_devices(&args), "client_devices"); !s.ok()) {
    return s;
  }
  std::vector<DeviceDescription> out;
  for (size_t i = 0; i < args.num_devices && args.devices != nullptr; ++i) {
    KILN_Device_Description_Args d{};
    d.struct_size = sizeof(d);
    d.device = args.devices[i];
    if (absl::Status s = lib_->Take(lib_->api->device_description(&d), "device_description");
        !s.ok()) {
      return s;
    }
    out.push_back({d.id, d.kind != nullptr ? d.kind : "?"});
  }
  return out;
}

// ABI 1.7's asynchronous execution: all five event entries, or none is used.
static bool HasEvents(const internal::PluginLibrary& lib) {
  return lib.minor >= 7 && KILN_API_HAS(lib.api, event_is_ready) &&
         KILN_API_HAS(lib.api, event_await) && KILN_API_HAS(lib.api, event_on_ready) &&
         KILN_API_HAS(lib.api, event_destroy) && KILN_API_HAS(lib.api, buffer_ready_event);
}

// The walkable module for a plugin of ABI 1.6 or later (null for older ones, which do not
// read it); text that does not parse or verify fails here, located, for every plugin alike.
static absl::StatusOr<std::unique_ptr<ModuleView>> ViewFor(const internal::PluginLibrary& lib,
                                                           std::string_view hlo_text) {
  // An isolated plugin's helper builds its own (a view does not cross processes); a plugin
  // that parses the text itself says "module_view" = "none".
  if (lib.minor < 6 || lib.health.alive || SaysNone(lib, "module_view"))
    return std::unique_ptr<ModuleView>();
  return ModuleView::FromText(hlo_text);
}

bool Plugin::has_events() const { return HasEvents(*lib_); }

absl::StatusOr<CapabilityReport> Plugin::Capability(std::string_view hlo_text) const {
  if (absl::Status s = CheckAvailable(*lib_); !s.ok()) return s;
  KILN_REQUIRE_ENTRY(*lib_, capability);
  CapabilityReport report;
  KILN_Capability_Args args{};
  args.struct_size = sizeof(args);
  args.client = lib_->client;
  args.hlo_text = hlo_text.data();
  args.hlo_text_size = hlo_text.size();
  args.user_data = &report;
  if (lib_->minor >= 5) args.custom_calls = CustomCallRegistry();
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ViewFor(*lib_, hlo_text);
  if (!view.ok()) return view.status();
  if (*view) args.module = (*view)->get();
  // Callbacks run inside the plugin's call: they must not throw across it.
  args.report_supported = [](void* user, const char* name) {
    try {
      static_cast<CapabilityReport*>(user)->supported.emplace_back(name != nullptr ? name : "");
    } catch (...) {
    }
  };
  args.report_unsupported = [](void* user, const char* name, const char* reason) {
    try {
      static_cast<CapabilityReport*>(user)->unsupported.emplace_back(
          name != nullptr ? name : "", reason != nullptr ? reason : "");
    } catch (...) {
    }
  };
  if (absl::Status s = lib_->Take(lib_->api->capability(&args), "capability"); !s.ok()) return s;
  return report;
}

absl::StatusOr<std::unique_ptr<Executable>> Plugin::Compile(const HloModule& module,
                                                            const CompileOptions& options) const {
  return CompileText(module.ToString(), options);
}

static absl::StatusOr<std::unique_ptr<Executable>> WrapExecutable(
    const std::shared_ptr<PluginLibrary>& lib, KILN_Executable* exe) {
  if (exe == nullptr)
    return absl::InternalError(fmt::format("{}: returned no executable", lib->name));
  KILN_Executable_Info_Args info{};
  info.struct_size = sizeof(info);
  info.executable = exe;
  if (absl::Status s = lib->Take(lib->api->executable_info(&info), "executable_info"); !s.ok()) {
    KILN_Executable_Destroy_Args d{sizeof(d), exe};
    if (KILN_Error* e = lib->api->executable_destroy(&d)) lib->api->error_destroy(e);
    return s;
  }
  return std::make_unique<Executable>(lib, exe, info.num_parameters, info.num_outputs);
}

absl::StatusOr<std::unique_ptr<Executable>> Plugin::CompileText(
    std::string_view hlo_text, const CompileOptions& options) const {
  if (absl::Status s = CheckAvailable(*lib_); !s.ok()) return s;
  KILN_CompileOptions opts{};
  opts.struct_size = sizeof(opts);
  opts.optimization_level = options.optimization_level;
  opts.num_threads = options.num_threads;
  opts.core_passes = options.core_passes.c_str();
  opts.dump_dir = options.dump_dir.c_str();
  opts.dump_sequence = options.dump_sequence;
  if (lib_->minor >= 5) opts.custom_calls = CustomCallRegistry();
  std::vector<KILN_Device*> assignment;
  for (int d : options.device_assignment) {
    if (d < 0 || static_cast<size_t>(d) >= lib_->devices.size() || lib_->minor < 8)
      return absl::InvalidArgumentError(fmt::format(
          "{}: the device assignment names device {}, which it does not have", lib_->name, d));
    assignment.push_back(lib_->devices[d]);
  }
  if (!assignment.empty()) {
    opts.device_assignment = assignment.data();
    opts.num_assigned_devices = assignment.size();
  }
  KILN_Compile_Args args{};
  args.struct_size = sizeof(args);
  args.client = lib_->client;
  args.hlo_text = hlo_text.data();
  args.hlo_text_size = hlo_text.size();
  args.options = &opts;
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ViewFor(*lib_, hlo_text);
  if (!view.ok()) return view.status();
  if (*view) args.module = (*view)->get();
  if (absl::Status s = lib_->Take(lib_->api->compile(&args), "compile"); !s.ok()) return s;
  return WrapExecutable(lib_, args.executable);
}

absl::StatusOr<std::unique_ptr<Executable>> Plugin::Deserialize(std::string_view bytes) const {
  if (absl::Status s = CheckAvailable(*lib_); !s.ok()) return s;
  KILN_REQUIRE_ENTRY(*lib_, executable_deserialize);
  KILN_Executable_Deserialize_Args args{};
  args.struct_size = sizeof(args);
  args.client = lib_->client;
  args.bytes = bytes.data();
  args.size = bytes.size();
  if (absl::Status s =
          lib_->Take(lib_->api->executable_deserialize(&args), "executable_deserialize");
      !s.ok()) {
    return s;
  }
  return WrapExecutable(lib_, args.executable);
}

absl::StatusOr<DeviceBuffer> Plugin::ToDevice(const Literal& literal) const {
  return Upload(lib_, literal.shape(), literal.untyped_data());
}

absl::StatusOr<DeviceBuffer> Plugin::ToDeviceAt(const Literal& literal, int device) const {
  return Upload(lib_, literal.shape(), literal.untyped_data(), nullptr, nullptr, device);
}

absl::StatusOr<DeviceBuffer> Plugin::ToDeviceAt(const Shape& shape, const void* data,
                                                int device) const {
  return Upload(lib_, shape, data, nullptr, nullptr, device);
}

size_t Plugin::device_count() const { return lib_->devices.size(); }

absl::StatusOr<DeviceBuffer> Plugin::ToDevice(const Shape& shape, const void* data) const {
  return Upload(lib_, shape, data);
}

absl::StatusOr<DeviceBuffer> Plugin::ToDeviceShared(const Shape& shape, const void* data,
                                                    void (*on_done)(void*), void* arg) const {
  return Upload(lib_, shape, data, on_done, arg);
}

// Copies (or, with on_done, may share) `data` into a new plugin buffer.
static absl::StatusOr<DeviceBuffer> Upload(const std::shared_ptr<PluginLibrary>& lib_,
                                           const Shape& shape, const void* data,
                                           void (*on_done)(void*), void* on_done_arg, int device) {
  if (absl::Status s = CheckAvailable(*lib_); !s.ok()) return s;
  absl::StatusOr<KILN_Device*> target =
      device < 0 ? absl::StatusOr<KILN_Device*>(DefaultDevice(*lib_)) : DeviceAt(*lib_, device);
  if (!target.ok()) return target.status();
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        fmt::format("only arrays cross to a device, not {}", shape.ToString(false)));
  }
  KILN_Buffer_FromHost_Args args{};
  args.struct_size = sizeof(args);
  args.client = lib_->client;
  args.device = *target;
  args.dtype = static_cast<KILN_DType>(shape.element_type());
  args.dims = shape.dimensions().data();
  args.num_dims = shape.dimensions().size();
  args.data = data;
  args.data_size = static_cast<size_t>(shape.byte_size());
  // Before 1.2 a plugin always copies and never calls on_done: then the core calls it.
  const bool plugin_calls_on_done = on_done != nullptr && lib_->minor >= 2;
  if (plugin_calls_on_done) {
    args.on_done = on_done;
    args.on_done_arg = on_done_arg;
  }
  if (absl::Status s = lib_->Take(lib_->api->buffer_from_host(&args), "buffer_from_host");
      !s.ok()) {
    return s;
  }
  if (on_done != nullptr && !plugin_calls_on_done) on_done(on_done_arg);
  if (args.buffer == nullptr)
    return absl::InternalError(fmt::format("{}: buffer_from_host returned no buffer", lib_->name));
  return DeviceBuffer(lib_, args.buffer);
}

// ---- DeviceBuffer ---------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::shared_ptr<PluginLibrary> lib, KILN_Buffer* buffer)
    : lib_(std::move(lib)), buffer_(buffer) {}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : lib_(std::move(other.lib_)),
      buffer_(std::exchange(other.buffer_, nullptr)),
      donated_(std::exchange(other.donated_, false)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    lib_ = std::move(other.lib_);
    buffer_ = std::exchange(other.buffer_, nullptr);
    donated_ = std::exchange(other.donated_, false);
  }
  return *this;
}

absl::Status DeviceBuffer::CheckNotDonated(std::string_view what) const {
  if (!donated_) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "{}: {}: the buffer was donated to an execute (its memory may now hold an output)",
      lib_ != nullptr ? lib_->name : std::string("kiln"), what));
}
DeviceBuffer::~DeviceBuffer() { Release(); }

absl::StatusOr<int> DeviceBuffer::device_index() const {
  if (absl::Status s = CheckNotDonated("buffer_info"); !s.ok()) return s;
  if (lib_->minor < 8) return 0;
  KILN_Buffer_Info_Args args{};
  args.struct_size = sizeof(args);
  args.buffer = buffer_;
  if (absl::Status s = lib_->Take(lib_->api->buffer_info(&args), "buffer_info"); !s.ok()) return s;
  for (size_t i = 0; i < lib_->devices.size(); ++i) {
    if (lib_->devices[i] == args.device) return static_cast<int>(i);
  }
  if (args.device == nullptr) return 0;
  return absl::InternalError(
      fmt::format("{}: buffer_info names a device not among the client's", lib_->name));
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::CopyToDevice(int device) const {
  if (absl::Status s = CheckNotDonated("buffer_copy_to_device"); !s.ok()) return s;
  KILN_REQUIRE_ENTRY(*lib_, buffer_copy_to_device);
  absl::StatusOr<KILN_Device*> target = DeviceAt(*lib_, device);
  if (!target.ok()) return target.status();
  KILN_Buffer_CopyToDevice_Args args{};
  args.struct_size = sizeof(args);
  args.buffer = buffer_;
  args.device = *target != nullptr ? *target : lib_->devices.at(0);
  if (absl::Status s = lib_->Take(lib_->api->buffer_copy_to_device(&args), "buffer_copy_to_device");
      !s.ok()) {
    return s;
  }
  if (args.copy == nullptr)
    return absl::InternalError(fmt::format("{}: buffer_copy_to_device gave no copy", lib_->name));
  return DeviceBuffer(lib_, args.copy);
}

absl::StatusOr<std::unique_ptr<Event>> DeviceBuffer::ReadyEvent() const {
  if (absl::Status s = CheckNotDonated("buffer_ready_event"); !s.ok()) return s;
  if (!HasEvents(*lib_)) return std::unique_ptr<Event>();
  KILN_Buffer_ReadyEvent_Args args{};
  args.struct_size = sizeof(args);
  args.buffer = buffer_;
  if (absl::Status s = lib_->Take(lib_->api->buffer_ready_event(&args), "buffer_ready_event");
      !s.ok()) {
    return s;
  }
  if (args.event == nullptr)
    return absl::InternalError(fmt::format("{}: buffer_ready_event gave no event", lib_->name));
  return std::make_unique<Event>(lib_, args.event);
}

Event::Event(std::shared_ptr<PluginLibrary> lib, KILN_Event* event)
    : lib_(std::move(lib)), event_(event) {}

Event::~Event() {
  KILN_Event_Destroy_Args args{};
  args.struct_size = sizeof(args);
  args.event = event_;
  if (KILN_Error* e = lib_->api->event_destroy(&args)) lib_->api->error_destroy(e);
}

absl::StatusOr<bool> Event::IsReady() const {
  KILN_Event_IsReady_Args args{};
  args.struct_size = sizeof(args);
  args.event = event_;
  if (absl::Status s = lib_->Take(lib_->api->event_is_ready(&args), "event_is_ready"); !s.ok())
    return s;
  return args.ready != 0;
}

absl::Status Event::Await() const {
  KILN_Event_Await_Args args{};
  args.struct_size = sizeof(args);
  args.event = event_;
  return lib_->Take(lib_->api->event_await(&args), "run");
}

// Callbacks registered with event_on_ready, by a number the plugin gets back: a plugin that
// calls one twice (or after refusing it) finds no entry, and is counted, instead of making
// the core use freed memory.
struct OnReadyCallbacks {
  struct Pending {
    std::shared_ptr<PluginLibrary> lib;
    std::function<void(absl::Status)> callback;
  };
  std::mutex mu;
  uint64_t next = 1;
  absl::flat_hash_map<uint64_t, Pending> pending;
  std::atomic<uint64_t> unexpected{0};
};
static OnReadyCallbacks& Callbacks() {
  static auto* callbacks = new OnReadyCallbacks;  // never destroyed: plugins may call late
  return *callbacks;
}

uint64_t Event::UnexpectedCallbacks() { return Callbacks().unexpected.load(); }

absl::Status Event::OnReady(std::function<void(absl::Status)> callback) const {
  OnReadyCallbacks& all = Callbacks();
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(all.mu);
    id = all.next++;
    all.pending.emplace(id, OnReadyCallbacks::Pending{lib_, std::move(callback)});
  }
  KILN_Event_OnReady_Args args{};
  args.struct_size = sizeof(args);
  args.event = event_;
  args.arg = reinterpret_cast<void*>(static_cast<uintptr_t>(id));
  args.callback = [](KILN_Error* error, void* arg) {
    OnReadyCallbacks& all = Callbacks();
    std::optional<OnReadyCallbacks::Pending> p;
    {
      std::lock_guard<std::mutex> lock(all.mu);
      auto it = all.pending.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(arg)));
      if (it != all.pending.end()) {
        p = std::move(it->second);
        all.pending.erase(it);
      }
    }
    if (!p) {  // called twice, or after refusing: the error object cannot be given back
      all.unexpected.fetch_add(1);
      return;
    }
    absl::Status s = p->lib->Take(error, "run");  // destroys the error
    try {
      p->callback(std::move(s));
    } catch (...) {  // nothing may cross back into the plugin
    }
  };
  absl::Status s = lib_->Take(lib_->api->event_on_ready(&args), "event_on_ready");
  if (!s.ok()) {  // a failed registration never calls back
    std::lock_guard<std::mutex> lock(all.mu);
    all.pending.erase(id);
  }
  return s;
}
void DeviceBuffer::Release() {
  if (buffer_ != nullptr && lib_ != nullptr) {
    KILN_Buffer_Destroy_Args args{sizeof(args), buffer_};
    if (KILN_Error* e = lib_->api->buffer_destroy(&args)) lib_->api->error_destroy(e);
    buffer_ = nullptr;
  }
}

absl::StatusOr<Shape> DeviceBuffer::shape() const {
  if (absl::Status s = CheckNotDonated("buffer_info"); !s.ok()) return s;
  KILN_Buffer_Info_Args args{};
  args.struct_size = sizeof(args);
  args.buffer = buffer_;
  if (absl::Status s = lib_->Take(lib_->api->buffer_info(&args), "buffer_info"); !s.ok()) return s;
  int d = static_cast<int>(args.dtype);
  if (!KILN_DTYPE_IS_VALID(d)) {
    return absl::InternalError(
        fmt::format("{}: buffer_info returned unknown dtype {}", lib_->name, d));
  }
  if (args.num_dims > 0 && args.dims == nullptr) {
    return absl::InternalError(fmt::format("{}: buffer_info returned null dims", lib_->name));
  }
  std::vector<int64_t> dims(args.dims, args.dims + args.num_dims);
  Shape shape(static_cast<PrimitiveType>(d), dims);
  if (static_cast<size_t>(shape.byte_size()) != args.byte_size) {
    return absl::InternalError(fmt::format("{}: buffer_info byte_size {} does not match {}",
                                           lib_->name, args.byte_size, shape.ToString(false)));
  }
  return shape;
}

const void* DeviceBuffer::HostData() const {
  if (donated_ || !KILN_API_HAS(lib_->api, buffer_host_data)) return nullptr;
  KILN_Buffer_HostData_Args args{};
  args.struct_size = sizeof(args);
  args.buffer = buffer_;
  if (KILN_Error* e = lib_->api->buffer_host_data(&args)) {
    lib_->api->error_destroy(e);
    return nullptr;
  }
  return args.data;
}

absl::StatusOr<Literal> DeviceBuffer::ToLiteral() const {
  absl::StatusOr<Shape> shape = this->shape();
  if (!shape.ok()) return shape.status();
  Literal literal = Literal::Uninitialized(*shape);  // written whole below
  if (absl::Status s = CopyToHost(literal.untyped_data(), literal.size_bytes()); !s.ok()) return s;
  return literal;
}

absl::Status DeviceBuffer::CopyToHost(void* dst, int64_t size) const {
  if (absl::Status s = CheckNotDonated("buffer_to_host"); !s.ok()) return s;
  KILN_Buffer_ToHost_Args args{};
  args.struct_size = sizeof(args);
  args.buffer = buffer_;
  args.dst = dst;
  args.dst_size = static_cast<size_t>(size);
  return lib_->Take(lib_->api->buffer_to_host(&args), "buffer_to_host");
}

// ---- Executable -----------------------------------------------------------------------

Executable::Executable(std::shared_ptr<PluginLibrary> lib, KILN_Executable* exe,
                       size_t num_parameters, size_t num_outputs)
    : lib_(std::move(lib)), exe_(exe), num_parameters_(num_parameters), num_outputs_(num_outputs) {}

Executable::~Executable() {
  KILN_Executable_Destroy_Args args{sizeof(args), exe_};
  if (KILN_Error* e = lib_->api->executable_destroy(&args)) lib_->api->error_destroy(e);
}

absl::StatusOr<std::vector<DeviceBuffer>> Executable::ExecuteBuffers(
    std::span<const DeviceBuffer* const> args, std::span<const bool> donate) const {
  absl::StatusOr<AsyncRun> run = Run(args, donate, /*asynchronous=*/false);
  if (!run.ok()) return run.status();
  return std::move(run->outputs);
}

absl::StatusOr<Executable::AsyncRun> Executable::ExecuteBuffersAsync(
    std::span<const DeviceBuffer* const> args, std::span<const bool> donate) const {
  return Run(args, donate, HasEvents(*lib_));
}

absl::StatusOr<Executable::AsyncRun> Executable::Run(std::span<const DeviceBuffer* const> args,
                                                     std::span<const bool> donate,
                                                     bool asynchronous) const {
  if (args.size() != num_parameters_) {
    return absl::InvalidArgumentError(fmt::format("{}: executable takes {} arguments, got {}",
                                                  lib_->name, num_parameters_, args.size()));
  }
  if (!donate.empty() && donate.size() != args.size()) {
    return absl::InvalidArgumentError(fmt::format("{}: {} donation flags for {} arguments",
                                                  lib_->name, donate.size(), args.size()));
  }
  std::vector<KILN_Buffer*> handles;
  std::vector<uint8_t> donated(args.size(), 0);
  bool any_donated = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr)
      return absl::InvalidArgumentError(fmt::format("{}: argument {} is null", lib_->name, i));
    if (absl::Status s = args[i]->CheckNotDonated(fmt::format("execute: argument {}", i)); !s.ok())
      return s;
    handles.push_back(args[i]->handle());
    donated[i] = !donate.empty() && donate[i];
    any_donated |= donated[i] != 0;
  }
  for (size_t i = 0; any_donated && i < args.size(); ++i)
    for (size_t j = 0; j < args.size(); ++j)
      if (i != j && donated[i] && handles[i] == handles[j])
        return absl::InvalidArgumentError(fmt::format(
            "{}: argument {} is donated and also passed as argument {}", lib_->name, i, j));
  std::vector<KILN_Buffer*> outputs(num_outputs_, nullptr);
  KILN_Execute_Args exec{};
  exec.struct_size = sizeof(exec);
  exec.executable = exe_;
  // The run goes where its arguments are (ABI 1.8); without arguments, to the default.
  exec.device = DefaultDevice(*lib_);
  if (!args.empty() && lib_->minor >= 8) {
    absl::StatusOr<int> where = args[0]->device_index();
    if (!where.ok()) return where.status();
    exec.device = *where == 0 ? nullptr : lib_->devices[*where];
  }
  exec.arguments = handles.data();
  exec.num_arguments = handles.size();
  exec.outputs = outputs.data();
  exec.num_outputs = outputs.size();
  if (any_donated && lib_->minor >= 3) exec.donated = donated.data();
  exec.asynchronous = asynchronous ? 1 : 0;
  // A run on several devices hands the plugin the transport for its collectives.
  std::optional<AbiCollectives> transport;
  if (Communicator* c = CurrentCommunicator(); c != nullptr && c->grid().num_devices() > 1) {
    if (lib_->minor < 4)
      return absl::FailedPreconditionError(
          fmt::format("{}: the plugin speaks ABI 1.{}; a run on {} devices needs 1.4 (collectives)",
                      lib_->name, lib_->minor, c->grid().num_devices()));
    transport.emplace(*c);
    exec.collectives = transport->table();
  }
  // Consumed whether the call succeeds or not (the plugin may have written into them).
  for (size_t i = 0; i < args.size(); ++i)
    if (donated[i]) args[i]->donated_ = true;
  if (absl::Status s = lib_->Take(lib_->api->execute(&exec), "execute"); !s.ok()) return s;
  AsyncRun result;
  if (exec.done != nullptr) result.done = std::make_unique<Event>(lib_, exec.done);
  result.outputs.reserve(outputs.size());
  for (KILN_Buffer* b : outputs) result.outputs.emplace_back(lib_, b);
  for (const DeviceBuffer& b : result.outputs) {
    if (b.handle() == nullptr)
      return absl::InternalError(fmt::format("{}: execute left an output empty", lib_->name));
  }
  return result;
}

absl::StatusOr<std::vector<Literal>> Executable::Execute(std::span<const Literal> args) const {
  std::vector<DeviceBuffer> on_device;
  on_device.reserve(args.size());
  for (const Literal& a : args) {
    absl::StatusOr<DeviceBuffer> b = Upload(lib_, a.shape(), a.untyped_data());
    if (!b.ok()) return b.status();
    on_device.push_back(std::move(*b));
  }
  std::vector<const DeviceBuffer*> ptrs;
  for (const DeviceBuffer& b : on_device) ptrs.push_back(&b);
  // The uploads are this call's own: donated, so the plugin may update them in place.
  std::unique_ptr<bool[]> donate(new bool[ptrs.size()]);
  std::fill_n(donate.get(), ptrs.size(), true);
  absl::StatusOr<std::vector<DeviceBuffer>> outs =
      ExecuteBuffers(ptrs, std::span<const bool>(donate.get(), ptrs.size()));
  if (!outs.ok()) return outs.status();
  std::vector<Literal> result;
  for (const DeviceBuffer& b : *outs) {
    absl::StatusOr<Literal> l = b.ToLiteral();
    if (!l.ok()) return l.status();
    result.push_back(std::move(*l));
  }
  return result;
}

absl::StatusOr<std::string> Executable::Serialize() const {
  KILN_REQUIRE_ENTRY(*lib_, executable_serialize);
  struct Sink {
    std::string bytes;
    bool failed = false;
  } sink;
  KILN_Executable_Serialize_Args args{};
  args.struct_size = sizeof(args);
  args.executable = exe_;
  args.user_data = &sink;
  args.write = [](void* user, const void* bytes, size_t size) {
    auto* s = static_cast<Sink*>(user);
    try {
      s->bytes.append(static_cast<const char*>(bytes), size);
    } catch (...) {
      s->failed = true;
    }
  };
  if (absl::Status s = lib_->Take(lib_->api->executable_serialize(&args), "executable_serialize");
      !s.ok()) {
    return s;
  }
  if (sink.failed) return absl::ResourceExhaustedError("out of memory while serializing");
  return std::move(sink.bytes);
}

}  // namespace kiln
