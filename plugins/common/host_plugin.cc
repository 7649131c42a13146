// The C ABI of host-memory plugins, implemented once over a HostBackend: clients with one
// host device or several (ABI 1.8, HostBackend::DeviceCount), buffers as Literals, argument
// checking, executables whose serialized form is the HLO text (deserializing compiles again;
// backends cache), and asynchronous runs (ABI 1.7) on a queue per client.
#include "plugins/common/host_plugin.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hlo/collectives/communicator.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"
#include "plugins/common/abi_communicator.h"
#include "plugins/common/async_runs.h"
#include "plugins/common/c_api_support.h"
#include "plugins/common/host_custom_calls.h"
#include "plugins/common/length_prefixed.h"

using kiln::plugin_support::CheckArgs;
using kiln::plugin_support::Guard;
using kiln::plugin_support::MakeError;

struct KILN_Device {
  int32_t id = 0;
  std::string kind;
  KILN_Client* client = nullptr;
};

struct KILN_Client {
  std::vector<std::unique_ptr<KILN_Device>> owned;
  std::vector<KILN_Device*> devices;  // ids 0, 1, ...
  // Asynchronous runs (ABI 1.7), in submission order; destroying the client finishes them.
  kiln::plugin_support::RunQueue runs;
};

struct KILN_Executable {
  std::string hlo_text;
  std::shared_ptr<const kiln::HloModule> module;
  std::shared_ptr<kiln::plugin_support::HostProgram> program;  // shared by equal texts
  size_t num_outputs = 0;
  std::vector<kiln::Shape> output_shapes;  // the root's array leaves, depth-first
  KILN_Client* client = nullptr;           // whose queue its asynchronous runs go on
  std::vector<KILN_Device*> assignment;    // ABI 1.8: the devices it may run on; empty: any
};

struct KILN_Event {
  std::shared_ptr<kiln::plugin_support::HostEvent> event;
};

// Live buffers and their bytes, for device_memory_stats (ABI 1.5): all clients together, as
// they share the host's memory (a device backend's device arrays are counted the same way).
namespace {
struct MemoryCounters {
  std::atomic<int64_t> bytes{0}, peak{0}, buffers{0};
};
MemoryCounters& Memory() {
  static MemoryCounters* m = new MemoryCounters;
  return *m;
}
}  // namespace

// What a buffer holds, shared with the runs that use it: an asynchronous run (ABI 1.7) fills
// its outputs later, and reads its arguments after the caller may have destroyed them.
struct BufferSlot {
  BufferSlot() = default;
  BufferSlot(const BufferSlot&) = delete;
  BufferSlot& operator=(const BufferSlot&) = delete;
  ~BufferSlot() { Set({}); }
  // Replaces the contents, keeping the memory counters right.
  void Set(kiln::plugin_support::BufferArray a) {
    array = std::move(a);
    const int64_t bytes = array.host || array.device ? array.shape().byte_size() : 0;
    const int64_t now = Memory().bytes.fetch_add(bytes - counted) + bytes - counted;
    counted = bytes;
    int64_t peak = Memory().peak.load();
    while (now > peak && !Memory().peak.compare_exchange_weak(peak, now)) {
    }
  }
  // Waits until the contents are there; the error of the run that was to make them.
  absl::Status Wait() const { return ready != nullptr ? ready->Await() : absl::OkStatus(); }

  kiln::plugin_support::BufferArray array;  // empty once donated, or until `ready` ends
  std::shared_ptr<kiln::plugin_support::HostEvent> ready;  // null: the contents are there
  int64_t counted = 0;                                     // bytes in Memory() for it
};

struct KILN_Buffer {
  // A buffer of `a` on `d`, or (with `ready`) one of `shape` whose contents a run makes later.
  KILN_Buffer(kiln::plugin_support::BufferArray a, KILN_Device* d)
      : slot(std::make_shared<BufferSlot>()), shape(a.shape()), device(d) {
    Memory().buffers.fetch_add(1);
    slot->Set(std::move(a));
  }
  KILN_Buffer(kiln::Shape s, std::shared_ptr<kiln::plugin_support::HostEvent> ready, KILN_Device* d)
      : slot(std::make_shared<BufferSlot>()), shape(std::move(s)), device(d) {
    Memory().buffers.fetch_add(1);
    slot->ready = std::move(ready);
  }
  KILN_Buffer(const KILN_Buffer&) = delete;
  KILN_Buffer& operator=(const KILN_Buffer&) = delete;
  ~KILN_Buffer() { Memory().buffers.fetch_sub(1); }

  std::shared_ptr<BufferSlot> slot;
  kiln::Shape shape;
  KILN_Device* device;   // of its client
  bool donated = false;  // given up to an execute (ABI 1.3)
};

namespace kiln::plugin_support {

int HostBackend::DeviceCount() const {
  const char* env = std::getenv("KILN_HOST_DEVICE_COUNT");
  if (env == nullptr) return 1;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  return end != env && *end == '\0' && n >= 1 && n <= 1024 ? static_cast<int>(n) : 1;
}

int64_t HostBackend::MemoryLimit() const {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : -1;
}

absl::StatusOr<Literal> HostProgram::RunShared(std::vector<std::shared_ptr<const Literal>> args) {
  std::vector<const Literal*> ptrs;
  for (const auto& a : args) ptrs.push_back(a.get());
  return Run(ptrs);
}

absl::StatusOr<std::vector<BufferArray>> HostProgram::RunBuffers(std::vector<BufferArray> args) {
  std::vector<std::shared_ptr<const Literal>> host;
  for (BufferArray& a : args) {
    if (a.device != nullptr) {
      Literal l(a.device->shape());
      if (absl::Status s = a.device->CopyToHost(l.untyped_data(), l.size_bytes()); !s.ok())
        return s;
      host.push_back(std::make_shared<const Literal>(std::move(l)));
    } else {
      host.push_back(std::move(a.host));  // a donated literal stays with its only owner
    }
  }
  absl::StatusOr<Literal> result = RunShared(std::move(host));
  if (!result.ok()) return result.status();
  std::vector<Literal> leaves;
  if (result->IsTuple()) {
    leaves = std::move(*result).DecomposeTuple();
  } else {
    leaves.push_back(std::move(*result));
  }
  std::vector<BufferArray> out;
  for (Literal& l : leaves) out.push_back({std::make_shared<const Literal>(std::move(l)), nullptr});
  return out;
}

absl::StatusOr<Literal> EvaluatorProgram::Run(std::span<const Literal* const> args) {
  HloEvaluator evaluator;
  return evaluator.EvaluateComputation(*module_->entry(), args);
}

void ReportEachInstruction(
    const HloModule& module,
    const std::function<std::optional<std::string>(const HloInstruction&)>& unsupported,
    const std::function<void(const HloInstruction&, const std::string* why)>& report) {
  for (const HloInstruction* instr : module.entry()->instructions()) {
    std::optional<std::string> why = unsupported(*instr);
    report(*instr, why ? &*why : nullptr);
  }
}

namespace {

// Any use of a buffer an execute consumed (ABI 1.3 donation) but its destruction.
KILN_Error* Donated(const std::string& what) {
  return MakeError(KILN_ERROR_FAILED_PRECONDITION,
                   what +
                       ": the buffer was donated to an execute (its memory may now hold an "
                       "output)");
}

// One plugin per shared object, so the kit's state is process-wide within that object.
struct State {
  const HostPluginInfo* info = nullptr;
  std::once_flag initialized;
  std::unique_ptr<HostBackend> backend;
  std::string unavailable_reason;  // empty when available
  std::vector<std::pair<std::string, std::string>> attribute_strings;
  std::vector<KILN_Attribute> attributes;
};
State& GetState() {
  static State state;
  return state;
}

// Makes the backend (once) and settles availability and the attribute table.
State& Initialized() {
  State& s = GetState();
  std::call_once(s.initialized, [&s] {
    auto backend = s.info->make_backend();
    if (backend.ok()) {
      s.backend = std::move(*backend);
      if (std::optional<std::string> why = s.backend->UnavailableReason())
        s.unavailable_reason = *why;
    } else {
      s.unavailable_reason = std::string(backend.status().message());
    }
    s.attribute_strings = {{"version", "0.1.0"},
                           {"platform", s.info->platform ? s.info->platform : "host"},
                           {"description", s.info->description},
                           // it parses hlo_text itself: no walkable module built for nothing
                           {"module_view", "none"}};
    if (s.backend != nullptr)
      for (auto& kv : s.backend->ExtraAttributes()) s.attribute_strings.push_back(std::move(kv));
    for (const auto& [k, v] : s.attribute_strings) s.attributes.push_back({k.c_str(), v.c_str()});
  });
  return s;
}

bool Available(const State& s) { return s.backend != nullptr && s.unavailable_reason.empty(); }

// Compiled programs by exact module text, so compiling a module again (frameworks create an
// executable per call site or per trace) skips parsing, verification and codegen: a hit is
// one hash and one comparison of the text. Bounded: cleared when it holds kMaxEntries.
struct CompiledText {
  std::shared_ptr<const HloModule> module;
  std::shared_ptr<HostProgram> program;
  size_t num_outputs = 0;
};
class TextCache {
 public:
  static constexpr size_t kMaxEntries = 256;
  std::optional<CompiledText> Find(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(text);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void Add(const std::string& text, CompiledText c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= kMaxEntries) entries_.clear();
    entries_.emplace(text, std::move(c));
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, CompiledText> entries_;
};
TextCache& GetTextCache() {
  static TextCache cache;
  return cache;
}

// A dtype the C ABI may hand us: the array types of hlo PrimitiveType.
bool ValidDType(int d) { return KILN_DTYPE_IS_VALID(d); }

absl::StatusOr<std::unique_ptr<HloModule>> ParseAndVerify(const char* text, size_t size) {
  if (text == nullptr) return absl::InvalidArgumentError("hlo_text is null");
  auto module = ParseHloModule(std::string_view(text, size), "<module>");
  if (!module.ok()) return module.status();
  if (absl::Status s = VerifyModule(**module); !s.ok()) return s;
  if ((*module)->entry() == nullptr)
    return absl::InvalidArgumentError("module has no entry computation");
  return module;
}

KILN_Error* Initialize(KILN_Initialize_Args* args) {
  return Guard("initialize", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Initialize_Args, unavailable_reason),
                            "initialize")) {
      return e;
    }
    State& s = Initialized();
    args->available = Available(s) ? 1 : 0;
    args->unavailable_reason = Available(s) ? nullptr : s.unavailable_reason.c_str();
    return nullptr;
  });
}

KILN_Error* Attributes(KILN_Attributes_Args* args) {
  return Guard("attributes", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Attributes_Args, num_attributes), "attributes")) {
      return e;
    }
    const State& s = Initialized();
    args->attributes = s.attributes.data();
    args->num_attributes = s.attributes.size();
    return nullptr;
  });
}

KILN_Error* ClientCreate(KILN_Client_Create_Args* args) {
  return Guard("client_create", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Client_Create_Args, client), "client_create")) {
      return e;
    }
    const State& s = Initialized();
    if (!Available(s)) {
      return MakeError(KILN_ERROR_UNAVAILABLE,
                       std::string(s.info->name) + " is unavailable: " + s.unavailable_reason);
    }
    auto client = std::make_unique<KILN_Client>();
    std::string kind = s.backend->DeviceKind();
    if (kind.empty()) kind = s.info->device_kind;
    for (int i = 0; i < s.backend->DeviceCount(); ++i) {
      auto device = std::make_unique<KILN_Device>();
      device->id = i;
      device->kind = kind;
      device->client = client.get();
      client->devices.push_back(device.get());
      client->owned.push_back(std::move(device));
    }
    args->client = client.release();
    return nullptr;
  });
}

KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* args) {
  return Guard("client_destroy", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Client_Destroy_Args, client), "client_destroy")) {
      return e;
    }
    delete args->client;
    return nullptr;
  });
}

KILN_Error* ClientDevices(KILN_Client_Devices_Args* args) {
  return Guard("client_devices", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Client_Devices_Args, num_devices),
                            "client_devices")) {
      return e;
    }
    if (args->client == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "client is null");
    args->devices = args->client->devices.data();
    args->num_devices = args->client->devices.size();
    return nullptr;
  });
}

KILN_Error* DeviceDescription(KILN_Device_Description_Args* args) {
  return Guard("device_description", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Device_Description_Args, kind),
                            "device_description")) {
      return e;
    }
    if (args->device == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "device is null");
    args->id = args->device->id;
    args->kind = args->device->kind.c_str();
    return nullptr;
  });
}

KILN_Error* Capability(KILN_Capability_Args* args) {
  return Guard("capability", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Capability_Args, user_data), "capability")) {
      return e;
    }
    if (args->report_supported == nullptr) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "report_supported is null");
    }
    // 1.5: custom-calls with a registered host handler run on the evaluator.
    if (KILN_ARGS_HAS(args, KILN_Capability_Args, custom_calls))
      InstallCustomCallRegistry(args->custom_calls);
    auto module = ParseAndVerify(args->hlo_text, args->hlo_text_size);
    if (!module.ok()) return MakeError(module.status());
    HostBackend* backend = Initialized().backend.get();
    if (backend == nullptr)
      return MakeError(KILN_ERROR_UNAVAILABLE, Initialized().unavailable_reason);
    backend->Capability(**module, [&](const HloInstruction& instr, const std::string* why) {
      if (why == nullptr) {
        args->report_supported(args->user_data, instr.name().c_str());
      } else if (args->report_unsupported != nullptr) {
        args->report_unsupported(args->user_data, instr.name().c_str(), why->c_str());
      }
    });
    return nullptr;
  });
}

// The device of `client` a call names (`device`, or the first when null), or null when
// `device` belongs to another client.
KILN_Device* DeviceOf(KILN_Client* client, KILN_Device* device) {
  if (client == nullptr || client->devices.empty()) return nullptr;
  if (device == nullptr) return client->devices[0];
  return device->client == client ? device : nullptr;
}

// An executable of `text`: compiled (and kept in the text cache), or, with `program`, the
// backend's serialized program for it loaded instead (nothing compiled).
KILN_Error* MakeExecutable(KILN_Client* client, std::string text,
                           const HostBackend::CompileContext& context, KILN_Executable** out,
                           const std::string_view* program = nullptr,
                           std::vector<KILN_Device*> assignment = {}) {
  if (client == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "client is null");
  for (KILN_Device* d : assignment) {
    if (DeviceOf(client, d) == nullptr || d == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       "the device assignment names a device that is not the client's");
  }
  std::optional<CompiledText> hit;
  if (program == nullptr) hit = GetTextCache().Find(text);
  if (hit) {
    auto exe = std::make_unique<KILN_Executable>();
    exe->module = std::move(hit->module);
    exe->program = std::move(hit->program);
    exe->num_outputs = hit->num_outputs;
    exe->output_shapes = FlattenShape(exe->module->entry()->root()->shape());
    exe->client = client;
    exe->assignment = std::move(assignment);
    exe->hlo_text = std::move(text);
    *out = exe.release();
    return nullptr;
  }
  auto module = ParseAndVerify(text.data(), text.size());
  if (!module.ok()) return MakeError(module.status());
  const State& s = Initialized();
  if (!Available(s)) return MakeError(KILN_ERROR_UNAVAILABLE, s.unavailable_reason);
  auto exe = std::make_unique<KILN_Executable>();
  exe->num_outputs = FlattenShape((*module)->entry()->root()->shape()).size();
  exe->module = std::shared_ptr<const HloModule>(std::move(*module));
  auto made = program != nullptr ? s.backend->DeserializeProgram(exe->module, *program)
                                 : s.backend->CompileWithContext(exe->module, context);
  if (!made.ok()) return MakeError(made.status());
  exe->program = std::move(*made);
  if (program == nullptr) GetTextCache().Add(text, {exe->module, exe->program, exe->num_outputs});
  exe->output_shapes = FlattenShape(exe->module->entry()->root()->shape());
  exe->client = client;
  exe->assignment = std::move(assignment);
  exe->hlo_text = std::move(text);
  *out = exe.release();
  return nullptr;
}

KILN_Error* Compile(KILN_Compile_Args* args) {
  return Guard("compile", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Compile_Args, executable), "compile")) {
      return e;
    }
    if (args->hlo_text == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "hlo_text is null");
    HostBackend::CompileContext context;
    std::vector<KILN_Device*> assignment;
    if (const KILN_CompileOptions* o = args->options) {
      if (KILN_ARGS_HAS(o, KILN_CompileOptions, num_assigned_devices) &&
          o->device_assignment != nullptr)
        assignment.assign(o->device_assignment, o->device_assignment + o->num_assigned_devices);
      if (KILN_ARGS_HAS(o, KILN_CompileOptions, core_passes) && o->core_passes != nullptr)
        context.core_passes = o->core_passes;
      if (KILN_ARGS_HAS(o, KILN_CompileOptions, dump_sequence) && o->dump_dir != nullptr) {
        context.dump_dir = o->dump_dir;
        context.dump_sequence = o->dump_sequence;
      }
      if (KILN_ARGS_HAS(o, KILN_CompileOptions, custom_calls))
        InstallCustomCallRegistry(o->custom_calls);
    }
    return MakeExecutable(args->client, std::string(args->hlo_text, args->hlo_text_size), context,
                          &args->executable, nullptr, std::move(assignment));
  });
}

KILN_Error* ExecutableInfo(KILN_Executable_Info_Args* args) {
  return Guard("executable_info", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Executable_Info_Args, num_outputs),
                            "executable_info")) {
      return e;
    }
    if (args->executable == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "executable is null");
    args->num_parameters = args->executable->module->entry()->num_parameters();
    args->num_outputs = args->executable->num_outputs;
    return nullptr;
  });
}

// A serialized executable with a program of the backend's own: this line, then the HLO
// text and the program bytes, each after its length and a newline.
constexpr std::string_view kEnvelopeMagic = "kiln host executable 1\n";

KILN_Error* ExecutableSerialize(KILN_Executable_Serialize_Args* args) {
  return Guard("executable_serialize", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Executable_Serialize_Args, user_data),
                            "executable_serialize")) {
      return e;
    }
    if (args->executable == nullptr || args->write == nullptr) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "executable or write is null");
    }
    // The HLO text alone, or the envelope with the backend's own bytes beside it.
    const std::string& text = args->executable->hlo_text;
    const State& s = Initialized();
    absl::StatusOr<std::string> program =
        s.backend ? s.backend->SerializeProgram(*args->executable->program) : std::string();
    if (!program.ok()) return MakeError(program.status());
    if (program->empty()) {
      args->write(args->user_data, text.data(), text.size());
      return nullptr;
    }
    const std::string head = absl::StrCat(std::string(kEnvelopeMagic), text.size(), "\n");
    const std::string mid = absl::StrCat(program->size(), "\n");
    args->write(args->user_data, head.data(), head.size());
    args->write(args->user_data, text.data(), text.size());
    args->write(args->user_data, mid.data(), mid.size());
    args->write(args->user_data, program->data(), program->size());
    return nullptr;
  });
}

KILN_Error* ExecutableDeserialize(KILN_Executable_Deserialize_Args* args) {
  return Guard("executable_deserialize", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Executable_Deserialize_Args, executable),
                            "executable_deserialize")) {
      return e;
    }
    if (args->bytes == nullptr && args->size != 0) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "bytes is null");
    }
    std::string_view bytes(static_cast<const char*>(args->bytes), args->size);
    if (!bytes.starts_with(kEnvelopeMagic)) {  // HLO text alone: compiled again
      return MakeExecutable(args->client, std::string(bytes), HostBackend::CompileContext(),
                            &args->executable);
    }
    bytes.remove_prefix(kEnvelopeMagic.size());
    std::string_view text, program;
    if (!TakeLengthPrefixed(bytes, &text) || !TakeLengthPrefixed(bytes, &program) || !bytes.empty())
      return MakeError(KILN_ERROR_DATA_LOSS, "the serialized executable is truncated or damaged");
    return MakeExecutable(args->client, std::string(text), HostBackend::CompileContext(),
                          &args->executable, &program);
  });
}

KILN_Error* ExecutableDestroy(KILN_Executable_Destroy_Args* args) {
  return Guard("executable_destroy", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Executable_Destroy_Args, executable),
                            "executable_destroy")) {
      return e;
    }
    delete args->executable;
    return nullptr;
  });
}

// A run of `program` on the arguments' slots, to call now or on the client's queue: it waits
// for arguments an earlier asynchronous run makes, and takes the arrays of donated ones.
using RunFn = std::function<absl::StatusOr<std::vector<BufferArray>>()>;
RunFn MakeRun(std::shared_ptr<HostProgram> program, std::vector<std::shared_ptr<BufferSlot>> slots,
              std::vector<uint8_t> give, size_t num_outputs) {
  return [program = std::move(program), slots = std::move(slots), give = std::move(give),
          num_outputs]() -> absl::StatusOr<std::vector<BufferArray>> {
    std::vector<BufferArray> operands;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (absl::Status s = slots[i]->Wait(); !s.ok()) {
        return absl::Status(s.code(), "argument " + std::to_string(i) +
                                          " was never made: " + std::string(s.message()));
      }
      operands.push_back(slots[i]->array);
    }
    // Donated buffers give their arrays to the run: a literal nothing else holds may then be
    // updated in place or returned without a copy. Not one that reads the caller's memory
    // (a zero-copy import): that memory is only lent.
    std::vector<std::shared_ptr<const Literal>> lent;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!give[i]) continue;
      const BufferArray& a = slots[i]->array;
      if (a.host != nullptr && a.host->adopted()) lent.push_back(a.host);
      slots[i]->Set(BufferArray());
    }
    auto leaves = program->RunBuffers(std::move(operands));
    if (!leaves.ok()) return leaves.status();
    if (leaves->size() != num_outputs) {
      return absl::InternalError("program returned " + std::to_string(leaves->size()) +
                                 " leaves, expected " + std::to_string(num_outputs));
    }
    return leaves;
  };
}

// What an exception escaping `f` means, as a status (a queued run has no Guard around it).
absl::Status CatchExceptions(const std::function<absl::Status()>& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory");
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  } catch (...) {
    return absl::InternalError("unknown exception");
  }
}

KILN_Error* Execute(KILN_Execute_Args* args) {
  return Guard("execute", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Execute_Args, num_outputs), "execute")) {
      return e;
    }
    if (args->executable == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "executable is null");
    KILN_Device* device = DeviceOf(args->executable->client, args->device);
    if (device == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "device is not one of the client's");
    const std::vector<KILN_Device*>& assigned = args->executable->assignment;
    if (!assigned.empty() && std::find(assigned.begin(), assigned.end(), device) == assigned.end())
      return MakeError(
          KILN_ERROR_INVALID_ARGUMENT,
          "device " + std::to_string(device->id) + " is not in the executable's device assignment");
    const HloComputation& entry = *args->executable->module->entry();
    if (args->num_arguments != static_cast<size_t>(entry.num_parameters())) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       "expected " + std::to_string(entry.num_parameters()) + " arguments, got " +
                           std::to_string(args->num_arguments));
    }
    if (args->num_outputs != args->executable->num_outputs ||
        (args->outputs == nullptr && args->num_outputs > 0)) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       "expected room for " + std::to_string(args->executable->num_outputs) +
                           " outputs, got " + std::to_string(args->num_outputs));
    }
    const uint8_t* donated =
        args->struct_size >= KILN_STRUCT_SIZE(KILN_Execute_Args, donated) ? args->donated : nullptr;
    const bool knows_async = args->struct_size >= KILN_STRUCT_SIZE(KILN_Execute_Args, done);
    if (knows_async) args->done = nullptr;
    std::vector<std::shared_ptr<BufferSlot>> slots;
    std::vector<uint8_t> give(args->num_arguments, 0);
    for (size_t i = 0; i < args->num_arguments; ++i) {
      KILN_Buffer* b = args->arguments[i];
      const HloInstruction* param = entry.parameter(static_cast<int>(i));
      if (b == nullptr)
        return MakeError(KILN_ERROR_INVALID_ARGUMENT, "argument " + std::to_string(i) + " is null");
      if (b->donated) return Donated("execute: argument " + std::to_string(i));
      if (b->device != device) {
        return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                         "argument " + std::to_string(i) + " is on device " +
                             std::to_string(b->device->id) + ", the run on device " +
                             std::to_string(device->id) + " (copy it with buffer_copy_to_device)");
      }
      for (size_t j = 0; donated != nullptr && donated[i] && j < args->num_arguments; ++j) {
        if (j != i && args->arguments[j] == b)
          return MakeError(KILN_ERROR_INVALID_ARGUMENT, "argument " + std::to_string(i) +
                                                            " is donated and also passed as "
                                                            "argument " +
                                                            std::to_string(j));
      }
      if (param == nullptr || !b->shape.Compatible(param->shape())) {
        return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                         "argument " + std::to_string(i) + " has shape " +
                             b->shape.ToString(false) + ", parameter '" +
                             (param ? param->name() : std::string("?")) + "' expects " +
                             (param ? param->shape().ToString(false) : std::string("?")));
      }
      slots.push_back(b->slot);
      give[i] = donated != nullptr && donated[i];
    }
    for (size_t i = 0; i < args->num_arguments; ++i) {
      if (give[i]) args->arguments[i]->donated = true;
    }
    // A run on several devices: collectives go through the caller's transport (ABI 1.4).
    const KILN_Collectives* transport =
        args->struct_size >= KILN_STRUCT_SIZE(KILN_Execute_Args, collectives) ? args->collectives
                                                                              : nullptr;
    RunFn run =
        MakeRun(args->executable->program, std::move(slots), std::move(give), args->num_outputs);
    // Asynchronous (ABI 1.7) when asked and possible: not with a transport, which the caller
    // lends only for the call, nor on a backend bound to the caller's thread.
    const bool async = knows_async && args->asynchronous != 0 && transport == nullptr &&
                       Initialized().backend->RunsOnAnyThread();
    if (!async) {
      // After the runs already queued on this client, which may read what this one donates.
      args->executable->client->runs.WaitIdle();
      std::optional<AbiCommunicator> communicator;
      if (transport != nullptr) communicator.emplace(*transport);
      ScopedCommunicator scope(communicator ? &*communicator : nullptr);
      auto leaves = run();
      if (!leaves.ok()) return MakeError(leaves.status());
      for (size_t i = 0; i < leaves->size(); ++i)
        args->outputs[i] = new KILN_Buffer(std::move((*leaves)[i]), device);
      return nullptr;
    }
    auto ended = std::make_shared<HostEvent>();
    std::vector<std::shared_ptr<BufferSlot>> outputs;
    for (size_t i = 0; i < args->num_outputs; ++i) {
      args->outputs[i] = new KILN_Buffer(args->executable->output_shapes[i], ended, device);
      outputs.push_back(args->outputs[i]->slot);
    }
    args->done = new KILN_Event{ended};
    args->executable->client->runs.Submit([run = std::move(run), outputs, ended] {
      absl::Status status = CatchExceptions([&] {
        absl::StatusOr<std::vector<BufferArray>> leaves = run();
        if (!leaves.ok()) return leaves.status();
        for (size_t i = 0; i < outputs.size(); ++i) outputs[i]->Set(std::move((*leaves)[i]));
        return absl::OkStatus();
      });
      ended->Finish(std::move(status));
    });
    return nullptr;
  });
}

// The caller's memory lent to a buffer (buffer_from_host with on_done): released by calling
// on_done when the last literal reading it dies.
struct CallerMemory {
  CallerMemory(void (*done)(void*), void* arg) : on_done(done), on_done_arg(arg) {}
  ~CallerMemory() {
    if (on_done != nullptr) on_done(on_done_arg);
  }
  void (*on_done)(void*);
  void* on_done_arg;
};

// A copy of `size` bytes at `data` as a literal of `shape`. Large copies go to memory advised
// for transparent huge pages (as NumPy does for its arrays): faulting fresh 4 KiB pages in
// costs more than copying their bytes (about 3x on the 2-vCPU machine of
// benchmarks/README.md), 2 MiB ones a fraction of it.
Literal CopyToLiteral(const Shape& shape, const void* data, size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (size >= 2 * kHuge) {
    const size_t bytes = (size + kHuge - 1) / kHuge * kHuge;
    if (void* p = std::aligned_alloc(kHuge, bytes)) {
      madvise(p, bytes, MADV_HUGEPAGE);  // advice: without THP the pages are small
      std::memcpy(p, data, size);
      return Literal::Adopt(shape, p, std::shared_ptr<void>(p, std::free));
    }
  }
  Literal copy = Literal::Uninitialized(shape);
  if (size != 0) std::memcpy(copy.untyped_data(), data, size);
  return copy;
}

KILN_Error* BufferFromHost(KILN_Buffer_FromHost_Args* args) {
  return Guard("buffer_from_host", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_FromHost_Args, buffer),
                            "buffer_from_host")) {
      return e;
    }
    if (!ValidDType(args->dtype)) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(args->dtype));
    }
    KILN_Device* target = DeviceOf(args->client, args->device);
    if (target == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "client is null or device not one of its");
    if (args->num_dims > 0 && args->dims == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "dims is null");
    std::vector<int64_t> dims(args->dims, args->dims + args->num_dims);
    for (int64_t d : dims) {
      if (d < 0) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "negative dimension");
    }
    Shape shape(static_cast<PrimitiveType>(args->dtype), dims);
    if (static_cast<size_t>(shape.byte_size()) != args->data_size) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "data_size " + std::to_string(args->data_size) +
                                                        " does not match " + shape.ToString(false) +
                                                        " (" + std::to_string(shape.byte_size()) +
                                                        " bytes)");
    }
    if (args->data == nullptr && args->data_size != 0)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "data is null");
    // The caller's 1.2 on_done: called once the data is no longer read.
    void (*on_done)(void*) = nullptr;
    void* on_done_arg = nullptr;
    if (args->struct_size >= KILN_STRUCT_SIZE(KILN_Buffer_FromHost_Args, on_done_arg)) {
      on_done = args->on_done;
      on_done_arg = args->on_done_arg;
    }
    HostBackend* backend = Initialized().backend.get();
    // With on_done the literal reads the caller's memory (zero copy) until its last user is
    // gone; a device backend copies it, after which it is released.
    std::shared_ptr<CallerMemory> lent =
        on_done ? std::make_shared<CallerMemory>(on_done, on_done_arg) : nullptr;
    Literal value = [&] {
      if (lent) return Literal::Adopt(shape, const_cast<void*>(args->data), lent);
      return CopyToLiteral(shape, args->data, args->data_size);
    }();
    // A device backend keeps the buffer in its memory; otherwise it stays here.
    absl::StatusOr<std::shared_ptr<DeviceArray>> device =
        backend ? backend->ToDevice(value) : std::shared_ptr<DeviceArray>();
    if (!device.ok()) {
      if (lent) lent->on_done = nullptr;  // on error the caller keeps its memory
      return MakeError(device.status());
    }
    BufferArray contents;
    if (*device != nullptr)
      contents.device = std::move(*device);
    else
      contents.host = std::make_shared<const Literal>(std::move(value));
    args->buffer = new KILN_Buffer(std::move(contents), target);
    return nullptr;
  });
}

KILN_Error* BufferToHost(KILN_Buffer_ToHost_Args* args) {
  return Guard("buffer_to_host", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_ToHost_Args, dst_size),
                            "buffer_to_host")) {
      return e;
    }
    if (args->buffer == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "buffer is null");
    if (args->buffer->donated) return Donated("buffer_to_host");
    const size_t bytes = static_cast<size_t>(args->buffer->shape.byte_size());
    if (args->dst_size != bytes) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "dst_size " + std::to_string(args->dst_size) +
                                                        " does not match the buffer's " +
                                                        std::to_string(bytes) + " bytes");
    }
    if (args->dst_size == 0) return nullptr;
    if (absl::Status s = args->buffer->slot->Wait(); !s.ok()) return MakeError(s);
    const BufferArray& a = args->buffer->slot->array;
    if (a.device != nullptr) {
      if (absl::Status s = a.device->CopyToHost(args->dst, args->dst_size); !s.ok())
        return MakeError(s);
      return nullptr;
    }
    std::memcpy(args->dst, a.host->untyped_data(), args->dst_size);
    return nullptr;
  });
}

KILN_Error* BufferInfo(KILN_Buffer_Info_Args* args) {
  return Guard("buffer_info", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_Info_Args, byte_size), "buffer_info")) {
      return e;
    }
    if (args->buffer == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "buffer is null");
    if (args->buffer->donated) return Donated("buffer_info");
    const Shape& shape = args->buffer->shape;  // known before an asynchronous run ends
    if (KILN_ARGS_HAS(args, KILN_Buffer_Info_Args, device)) args->device = args->buffer->device;
    args->dtype = static_cast<KILN_DType>(shape.element_type());
    args->dims = shape.dimensions().data();
    args->num_dims = shape.dimensions().size();
    args->byte_size = static_cast<size_t>(shape.byte_size());
    return nullptr;
  });
}

KILN_Error* BufferHostData(KILN_Buffer_HostData_Args* args) {
  return Guard("buffer_host_data", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_HostData_Args, data),
                            "buffer_host_data")) {
      return e;
    }
    if (args->buffer == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "buffer is null");
    if (args->buffer->donated) return Donated("buffer_host_data");
    if (absl::Status s = args->buffer->slot->Wait(); !s.ok()) return MakeError(s);
    const BufferArray& a = args->buffer->slot->array;
    args->data = a.device != nullptr ? nullptr : a.host->untyped_data();
    return nullptr;
  });
}

KILN_Error* DeviceMemoryStats(KILN_Device_MemoryStats_Args* args) {
  return Guard("device_memory_stats", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Device_MemoryStats_Args, bytes_limit),
                            "device_memory_stats")) {
      return e;
    }
    args->bytes_in_use = Memory().bytes.load();
    args->peak_bytes_in_use = Memory().peak.load();
    args->num_buffers = Memory().buffers.load();
    HostBackend* backend = Initialized().backend.get();
    args->bytes_limit = backend != nullptr ? backend->MemoryLimit() : -1;
    return nullptr;
  });
}

KILN_Error* BufferDestroy(KILN_Buffer_Destroy_Args* args) {
  return Guard("buffer_destroy", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_Destroy_Args, buffer), "buffer_destroy")) {
      return e;
    }
    delete args->buffer;
    return nullptr;
  });
}

KILN_Error* BufferCopyToDevice(KILN_Buffer_CopyToDevice_Args* args) {
  return Guard("buffer_copy_to_device", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_CopyToDevice_Args, copy),
                            "buffer_copy_to_device")) {
      return e;
    }
    if (args->buffer == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "buffer is null");
    if (args->buffer->donated) return Donated("buffer_copy_to_device");
    KILN_Device* device = DeviceOf(args->buffer->device->client, args->device);
    if (args->device == nullptr || device == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "device is not one of the buffer's client's");
    if (absl::Status s = args->buffer->slot->Wait(); !s.ok()) return MakeError(s);
    // The host's devices share its memory: the copy shares the (immutable) array. A donation
    // of either then finds it shared and does not write over it.
    args->copy = new KILN_Buffer(args->buffer->slot->array, device);
    return nullptr;
  });
}

// ---- Events (ABI 1.7) ----------------------------------------------------------------

KILN_Error* EventIsReady(KILN_Event_IsReady_Args* args) {
  return Guard("event_is_ready", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Event_IsReady_Args, ready), "event_is_ready")) {
      return e;
    }
    if (args->event == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "event is null");
    args->ready = args->event->event->IsReady() ? 1 : 0;
    return nullptr;
  });
}

KILN_Error* EventAwait(KILN_Event_Await_Args* args) {
  return Guard("event_await", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Event_Await_Args, event), "event_await"))
      return e;
    if (args->event == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "event is null");
    absl::Status s = args->event->event->Await();
    return s.ok() ? nullptr : MakeError(s);
  });
}

KILN_Error* EventOnReady(KILN_Event_OnReady_Args* args) {
  return Guard("event_on_ready", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Event_OnReady_Args, arg), "event_on_ready")) {
      return e;
    }
    if (args->event == nullptr || args->callback == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "event or callback is null");
    args->event->event->OnReady([callback = args->callback, arg = args->arg](absl::Status s) {
      callback(s.ok() ? nullptr : MakeError(s), arg);
    });
    return nullptr;
  });
}

KILN_Error* EventDestroy(KILN_Event_Destroy_Args* args) {
  return Guard("event_destroy", [&]() -> KILN_Error* {
    if (auto* e =
            CheckArgs(args, KILN_STRUCT_SIZE(KILN_Event_Destroy_Args, event), "event_destroy")) {
      return e;
    }
    delete args->event;
    return nullptr;
  });
}

KILN_Error* BufferReadyEvent(KILN_Buffer_ReadyEvent_Args* args) {
  return Guard("buffer_ready_event", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_ReadyEvent_Args, event),
                            "buffer_ready_event")) {
      return e;
    }
    if (args->buffer == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "buffer is null");
    if (args->buffer->donated) return Donated("buffer_ready_event");
    std::shared_ptr<HostEvent> ready = args->buffer->slot->ready;
    args->event = new KILN_Event{ready != nullptr ? ready : HostEvent::Ended(absl::OkStatus())};
    return nullptr;
  });
}

}  // namespace

const KILN_Api* HostPluginApi(const HostPluginInfo& info) {
  static const KILN_Api api = [&] {
    GetState().info = &info;
    KILN_Api a{};
    a.struct_size = sizeof(KILN_Api);
    a.api_major = KILN_API_MAJOR;
    a.api_minor = KILN_API_MINOR;
    a.plugin_name = info.name;
    a.default_priority = info.default_priority;
    a.error_destroy = DestroyError;
    a.error_message = ErrorMessage;
    a.error_code = ErrorCode;
    a.initialize = Initialize;
    a.attributes = Attributes;
    a.client_create = ClientCreate;
    a.client_destroy = ClientDestroy;
    a.client_devices = ClientDevices;
    a.device_description = DeviceDescription;
    a.capability = Capability;
    a.compile = Compile;
    a.executable_info = ExecutableInfo;
    a.executable_serialize = ExecutableSerialize;
    a.executable_deserialize = ExecutableDeserialize;
    a.executable_destroy = ExecutableDestroy;
    a.execute = Execute;
    a.buffer_from_host = BufferFromHost;
    a.buffer_to_host = BufferToHost;
    a.buffer_info = BufferInfo;
    a.buffer_destroy = BufferDestroy;
    a.buffer_host_data = BufferHostData;
    a.device_memory_stats = DeviceMemoryStats;
    a.event_is_ready = EventIsReady;
    a.event_await = EventAwait;
    a.event_on_ready = EventOnReady;
    a.event_destroy = EventDestroy;
    a.buffer_ready_event = BufferReadyEvent;
    a.buffer_copy_to_device = BufferCopyToDevice;
    return a;
  }();
  return &api;
}

}  // namespace kiln::plugin_support
