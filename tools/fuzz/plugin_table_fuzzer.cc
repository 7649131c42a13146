// Fuzz target for the plugin loader's table checks: builds a KILN_Api table from the input (its
// struct_size, ABI version, priority, name bytes, which entries are null and which point at stub
// functions, and what those stubs answer) and wraps it with Plugin::FromApi, the check and
// bring-up path Plugin::Load runs on the table a plugin's KILN_GetApi returns. The table is a
// heap block of exactly struct_size bytes, so AddressSanitizer catches a read of a field the
// table does not have.
//
// The loader must reject a bad table with a FailedPrecondition error in printable text, and
// accept exactly the tables a model of the rules below accepts; an accepted plugin must answer
// its name, attributes and device queries without crashing, and release every error object and
// client it was given. A violation aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/plugin.h"
#include "kiln_plugin_api.h"

namespace {

// Reads the fuzz input front to back; past its end every read is zero.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(Byte()) << (8 * i);
    return v;
  }
  bool Bit() { return (Byte() & 1) != 0; }
  // Up to `max` raw bytes (any value, NULs included).
  std::string Bytes(size_t max) {
    size_t want = Byte() % (max + 1);
    size_t n = std::min(want, size_ - pos_);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

// What the stub entries answer, and what they handed out.
struct Scenario {
  std::deque<std::string> strings;  // owns every string given to the core
  bool init_fails = false, available = true, reason_null = false;
  const char* unavailable_reason = nullptr;
  bool attributes_fail = false, attributes_null = false;
  std::vector<KILN_Attribute> attributes;
  bool create_fails = false, create_null = false;
  bool devices_fail = false, devices_null = false;
  std::vector<KILN_Device*> devices;
  size_t description_fails_at = SIZE_MAX;  // index of the device whose description fails
  std::vector<const char*> kinds;          // per device; may be null
  std::vector<std::pair<const char*, const char*>> capability_reports;  // name, reason (or null)
  bool capability_fails = false;
  uint8_t error_code = 0;            // code of the stubs' errors; 0..31 (0 and > 16 are bogus)
  const char* error_text = nullptr;  // their message; may be null
  int live_errors = 0, live_clients = 0;
};
Scenario* scenario = nullptr;

struct FakeError {
  int code;
  const char* text;
};
struct FakeClient {
  int marker = 0x6b696c6e;
};

// Printable text (what the core may pass on in its messages; plugin text is printable here
// so that any other byte in a message came from the core).
const char* Text(Input& in, size_t max) {
  std::string s = in.Bytes(max);
  for (char& c : s) c = static_cast<char>(' ' + static_cast<uint8_t>(c) % 95);
  return scenario->strings.emplace_back(std::move(s)).c_str();
}
// NUL-terminated, other bytes arbitrary (control characters, high bytes).
const char* RawString(Input& in, size_t max) {
  return scenario->strings.emplace_back(in.Bytes(max)).c_str();
}
const char* MaybeRaw(Input& in, size_t max) {
  return in.Byte() % 8 == 0 ? nullptr : RawString(in, max);
}

KILN_Error* MakeError() {
  ++scenario->live_errors;
  return reinterpret_cast<KILN_Error*>(new FakeError{scenario->error_code, scenario->error_text});
}

// ---- Stub entries ---------------------------------------------------------------------
void ErrorDestroy(KILN_Error* e) {
  --scenario->live_errors;
  delete reinterpret_cast<FakeError*>(e);
}
const char* ErrorMessage(const KILN_Error* e) {
  return reinterpret_cast<const FakeError*>(e)->text;
}
KILN_ErrorCode ErrorCode(const KILN_Error* e) {
  return static_cast<KILN_ErrorCode>(reinterpret_cast<const FakeError*>(e)->code);
}
KILN_Error* Initialize(KILN_Initialize_Args* args) {
  if (scenario->init_fails) return MakeError();
  args->available = scenario->available ? 1 : 0;
  args->unavailable_reason = scenario->unavailable_reason;
  return nullptr;
}
KILN_Error* Attributes(KILN_Attributes_Args* args) {
  if (scenario->attributes_fail) return MakeError();
  args->attributes = scenario->attributes_null ? nullptr : scenario->attributes.data();
  args->num_attributes = scenario->attributes.size();
  return nullptr;
}
KILN_Error* ClientCreate(KILN_Client_Create_Args* args) {
  if (scenario->create_fails) return MakeError();
  if (!scenario->create_null) {
    ++scenario->live_clients;
    args->client = reinterpret_cast<KILN_Client*>(new FakeClient);
  }
  return nullptr;
}
KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* args) {
  FakeClient* client = reinterpret_cast<FakeClient*>(args->client);
  if (client == nullptr || client->marker != 0x6b696c6e) std::abort();  // not ours
  --scenario->live_clients;
  delete client;
  return nullptr;
}
KILN_Error* ClientDevices(KILN_Client_Devices_Args* args) {
  if (args->client == nullptr) std::abort();  // only called on a created client
  if (scenario->devices_fail) return MakeError();
  args->devices = scenario->devices_null ? nullptr : scenario->devices.data();
  args->num_devices = scenario->devices.size();
  return nullptr;
}
KILN_Error* DeviceDescription(KILN_Device_Description_Args* args) {
  size_t index = reinterpret_cast<uintptr_t>(args->device) / 16 - 1;
  if (index >= scenario->devices.size()) std::abort();  // not one of the devices given out
  if (index == scenario->description_fails_at) return MakeError();
  args->id = static_cast<int32_t>(index);
  args->kind = scenario->kinds[index];
  return nullptr;
}
KILN_Error* Capability(KILN_Capability_Args* args) {
  if (scenario->capability_fails) return MakeError();
  for (const auto& [name, reason] : scenario->capability_reports) {
    if (reason == nullptr) {
      args->report_supported(args->user_data, name);
    } else {
      args->report_unsupported(args->user_data, name, reason);
    }
  }
  return nullptr;
}
// Entries the queries below never call: present, and abort if called.
template <typename Args>
KILN_Error* NeverCalled(Args*) {
  std::abort();
}

bool Printable(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= ' ' && c <= '~'; });
}

[[noreturn]] void Fail(const char* what, absl::string_view detail = {}) {
  std::fprintf(stderr, "plugin_table_fuzzer: %s %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

// Writes `value` into the table at `offset` when the table is that large.
template <typename T>
void Put(std::vector<uint8_t>& plan, size_t offset, const T& value) {
  if (offset + sizeof(T) <= plan.size()) std::memcpy(plan.data() + offset, &value, sizeof(T));
}

void Run(Input& in) {
  Scenario& sc = *scenario;
  // The table's size: the sizes that matter to the checks, or anything up to four tables.
  constexpr size_t kHeader = KILN_STRUCT_SIZE(KILN_Api, default_priority);
  constexpr size_t k10 = KILN_API_STRUCT_SIZE_1_0;
  const size_t sizes[] = {0,
                          sizeof(size_t),
                          kHeader - 1,
                          kHeader,
                          k10 - 1,
                          k10,
                          k10 + 4,
                          sizeof(KILN_Api),
                          sizeof(KILN_Api),
                          sizeof(KILN_Api),
                          sizeof(KILN_Api) - sizeof(void*),
                          sizeof(KILN_Api) + 64};
  uint8_t size_pick = in.Byte();
  size_t struct_size =
      size_pick < 240 ? sizes[size_pick % std::size(sizes)] : in.U32() % (4 * sizeof(KILN_Api) + 1);
  // Only struct_size itself is read before the size is checked: a table has at least that.
  std::vector<uint8_t> plan(std::max(struct_size, sizeof(size_t)), 0);
  Put(plan, offsetof(KILN_Api, struct_size), struct_size);
  const int32_t majors[] = {KILN_API_MAJOR, KILN_API_MAJOR, KILN_API_MAJOR, 0, 2, -1};
  uint8_t major_pick = in.Byte();
  int32_t major =
      major_pick < 250 ? majors[major_pick % std::size(majors)] : static_cast<int32_t>(in.U32());
  int32_t minor = in.Byte() < 250 ? in.Byte() % 4 : static_cast<int32_t>(in.U32());
  int32_t priority = static_cast<int32_t>(in.U32());
  Put(plan, offsetof(KILN_Api, api_major), major);
  Put(plan, offsetof(KILN_Api, api_minor), minor);
  Put(plan, offsetof(KILN_Api, default_priority), priority);

  // The name: null, a valid one, arbitrary NUL-terminated bytes, or a block of 65 or more
  // bytes with no NUL at all (the loader reads at most 65).
  const char* name = nullptr;
  std::string unterminated;
  switch (in.Byte() % 6) {
    case 0:
      break;
    case 1:
    case 2: {
      std::string s = in.Bytes(70);
      for (char& c : s) {
        static const char kOk[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
        c = kOk[static_cast<uint8_t>(c) % (sizeof(kOk) - 1)];
      }
      name = sc.strings.emplace_back(std::move(s)).c_str();
      break;
    }
    case 3:
    case 4:
      name = RawString(in, 80);
      break;
    case 5: {
      unterminated = in.Bytes(30);
      unterminated.resize(65 + unterminated.size(), 'x');
      for (char& c : unterminated) c = c == '\0' ? 'z' : c;
      break;
    }
  }
  // The heap block holds exactly the name's bytes (no NUL when unterminated).
  char* name_block = nullptr;
  if (!unterminated.empty()) {
    name_block = static_cast<char*>(std::malloc(unterminated.size()));
    std::memcpy(name_block, unterminated.data(), unterminated.size());
    name = name_block;
  }
  Put(plan, offsetof(KILN_Api, plugin_name), name);

  // Entries: each set (most of the time) or null.
  uint32_t nulls = in.Byte() < 192 ? 0 : in.U32();
  int bit = 0;
  bool required_missing = false;
  auto entry = [&](size_t offset, auto* fn, bool required) {
    bool null = (nulls >> (bit++ % 32)) & 1;
    if (null && required && offset + sizeof(fn) <= struct_size) required_missing = true;
    if (!null) Put(plan, offset, fn);
  };
#define KILN_FUZZ_ENTRY(field, fn, required) \
  entry(offsetof(KILN_Api, field), static_cast<decltype(KILN_Api::field)>(fn), required)
  KILN_FUZZ_ENTRY(error_destroy, ErrorDestroy, true);
  KILN_FUZZ_ENTRY(error_message, ErrorMessage, true);
  KILN_FUZZ_ENTRY(error_code, ErrorCode, true);
  KILN_FUZZ_ENTRY(initialize, Initialize, true);
  KILN_FUZZ_ENTRY(attributes, Attributes, false);
  KILN_FUZZ_ENTRY(client_create, ClientCreate, true);
  KILN_FUZZ_ENTRY(client_destroy, ClientDestroy, true);
  KILN_FUZZ_ENTRY(client_devices, ClientDevices, true);
  KILN_FUZZ_ENTRY(device_description, DeviceDescription, true);
  KILN_FUZZ_ENTRY(capability, Capability, false);
  KILN_FUZZ_ENTRY(compile, NeverCalled<KILN_Compile_Args>, true);
  KILN_FUZZ_ENTRY(executable_info, NeverCalled<KILN_Executable_Info_Args>, true);
  KILN_FUZZ_ENTRY(executable_serialize, NeverCalled<KILN_Executable_Serialize_Args>, false);
  KILN_FUZZ_ENTRY(executable_deserialize, NeverCalled<KILN_Executable_Deserialize_Args>, false);
  KILN_FUZZ_ENTRY(executable_destroy, NeverCalled<KILN_Executable_Destroy_Args>, true);
  KILN_FUZZ_ENTRY(execute, NeverCalled<KILN_Execute_Args>, true);
  KILN_FUZZ_ENTRY(buffer_from_host, NeverCalled<KILN_Buffer_FromHost_Args>, true);
  KILN_FUZZ_ENTRY(buffer_to_host, NeverCalled<KILN_Buffer_ToHost_Args>, true);
  KILN_FUZZ_ENTRY(buffer_info, NeverCalled<KILN_Buffer_Info_Args>, true);
  KILN_FUZZ_ENTRY(buffer_destroy, NeverCalled<KILN_Buffer_Destroy_Args>, true);
  KILN_FUZZ_ENTRY(buffer_host_data, NeverCalled<KILN_Buffer_HostData_Args>, false);
#undef KILN_FUZZ_ENTRY
  // A later minor's table is longer: its tail is whatever the plugin put there.
  for (size_t i = sizeof(KILN_Api); i < plan.size(); ++i) plan[i] = in.Byte();

  // What the stubs answer.
  sc.error_code = in.Byte() % 32;
  sc.error_text = in.Bit() ? nullptr : Text(in, 40);
  sc.init_fails = in.Byte() % 8 == 0;
  sc.available = in.Byte() % 4 != 0;
  sc.unavailable_reason = sc.available ? nullptr : MaybeRaw(in, 40);
  sc.attributes_fail = in.Byte() % 8 == 0;
  sc.attributes_null = in.Byte() % 16 == 0;
  size_t num_attributes = in.Byte();
  if (num_attributes >= 200) num_attributes += in.Byte();  // beyond the loader's cap of 256
  for (size_t i = 0; i < num_attributes; ++i) {
    const char* attr_name = in.Byte() % 8 == 0 ? "core_passes" : MaybeRaw(in, 20);
    sc.attributes.push_back({attr_name, in.Byte() % 4 == 0 ? "none" : MaybeRaw(in, 20)});
  }
  sc.create_fails = in.Byte() % 8 == 0;
  sc.create_null = in.Byte() % 16 == 0;
  sc.devices_fail = in.Byte() % 8 == 0;
  sc.devices_null = in.Byte() % 16 == 0;
  size_t num_devices = in.Byte() % 40;
  for (size_t i = 0; i < num_devices; ++i) {
    sc.devices.push_back(reinterpret_cast<KILN_Device*>(16 * (i + 1)));
    sc.kinds.push_back(MaybeRaw(in, 30));
  }
  if (num_devices > 0 && !sc.devices_null && in.Byte() % 8 == 0)
    sc.description_fails_at = in.Byte() % num_devices;
  sc.capability_fails = in.Byte() % 8 == 0;
  for (size_t i = 0, n = in.Byte() % 20; i < n; ++i) {
    const char* instruction = MaybeRaw(in, 20);
    sc.capability_reports.push_back({instruction, in.Bit() ? nullptr : MaybeRaw(in, 20)});
  }

  // The table itself: a heap block of exactly struct_size bytes.
  auto* table = static_cast<uint8_t*>(std::malloc(plan.size()));
  std::memcpy(table, plan.data(), plan.size());
  const auto* api = reinterpret_cast<const KILN_Api*>(table);

  // The rules, independently of the loader: the table is accepted when it is a 1.x table at
  // least as large as 1.0's, with a name of 1..64 of [A-Za-z0-9._-], every required entry set,
  // and initialize (and, when available, client_create) succeeds with a client.
  bool name_ok = false;
  if (name != nullptr) {
    size_t n = strnlen(name, 65);
    name_ok = n >= 1 && n <= 64 && std::all_of(name, name + n, [](char c) {
                return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
              });
  }
  bool table_ok = struct_size >= k10 && major == KILN_API_MAJOR && name_ok && !required_missing;
  bool expect_accept =
      table_ok && !sc.init_fails && (!sc.available || (!sc.create_fails && !sc.create_null));

  {
    kiln::PluginHealth health;  // in process, or as an isolated plugin's proxy reports
    if (in.Bit()) {
      health.alive = [] { return true; };
      health.generation = [] { return uint64_t{0}; };
    }
    absl::StatusOr<std::unique_ptr<kiln::Plugin>> plugin =
        kiln::Plugin::FromApi(api, "fuzz-table", std::move(health));
    if (!plugin.ok()) {
      const absl::Status& s = plugin.status();
      if (expect_accept) Fail("rejected a valid table:", s.message());
      if (s.code() != absl::StatusCode::kFailedPrecondition) Fail("rejection code:", s.ToString());
      if (s.message().empty() || !Printable(s.message()))
        Fail("rejection message is empty or not printable:", s.message());
    } else {
      if (!expect_accept) Fail("accepted a table the rules reject; name:", (*plugin)->name());
      const kiln::Plugin& p = **plugin;
      if (p.name() != std::string_view(name) || !Printable(p.name())) Fail("name:", p.name());
      if (p.api_major() != major || p.api_minor() != minor || p.default_priority() != priority)
        Fail("version or priority differs from the table's");
      if (p.available() != sc.available) Fail("availability differs");
      if (!p.alive()) Fail("an in-process plugin is not alive");
      if (p.attributes().size() > 256) Fail("more than 256 attributes kept");
      (void)p.wants_module_as_written();
      absl::StatusOr<std::vector<kiln::DeviceDescription>> devices = p.Devices();
      if (!p.available()) {
        if (devices.ok()) Fail("an unavailable plugin listed devices");
      } else if (sc.devices_fail || sc.description_fails_at != SIZE_MAX) {
        if (devices.ok()) Fail("a device query that failed returned devices");
        if (sc.error_text != nullptr &&
            devices.status().message().find(sc.error_text) == absl::string_view::npos) {
          Fail("the plugin's error text is lost:", devices.status().message());
        }
      } else {
        if (!devices.ok()) Fail("device query failed:", devices.status().message());
        if (devices->size() != (sc.devices_null ? 0 : num_devices)) Fail("device count");
        for (const kiln::DeviceDescription& d : *devices) (void)d.kind.size();
      }
      absl::StatusOr<kiln::CapabilityReport> report = p.Capability("HloModule m\n");
      bool has_capability = struct_size >= offsetof(KILN_Api, capability) + sizeof(void*) &&
                            api->capability != nullptr;
      if (report.ok() && (!has_capability || !p.available() || sc.capability_fails))
        Fail("capability answered without the entry");
      if (report.ok() &&
          report->supported.size() + report->unsupported.size() != sc.capability_reports.size())
        Fail("capability lost reports");
      if (!report.ok() && report.status().code() == absl::StatusCode::kOk) Fail("status");
    }
  }
  // The plugin is gone: every error object and client it was handed must be released.
  if (sc.live_errors != 0) Fail("error objects leaked or destroyed twice");
  if (sc.live_clients != 0) Fail("client not destroyed exactly once");
  std::free(table);
  std::free(name_block);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  Scenario sc;
  scenario = &sc;
  Input in(data, size);
  Run(in);
  scenario = nullptr;
  return 0;
}
