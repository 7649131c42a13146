// kiln-plugin-host FD PLUGIN.so: loads one plugin and serves its C ABI to the core on the
// connected Unix socket FD (wire.h), one request at a time, until the socket closes. The
// core starts it for each isolated plugin (KILN_ISOLATE, the config's `isolate`): when the
// plugin crashes, hangs or exits, this process dies or is killed, and the core reports it.
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/isolation/wire.h"
#include "core/module_view.h"
#include "kiln_plugin_api.h"

namespace kiln::isolation {
namespace {

const KILN_Api* api = nullptr;
int sock = -1;         // the socket to the core
bool serving = false;  // the plugin passed the checks of Hello

// Tokens of the core's shared-memory regions this process no longer reads, for the next
// reply's frame. A plugin may drop a lent buffer on any of its threads, hence the lock.
std::mutex released_mu;
std::vector<uint64_t> released;
void Release(uint64_t token) {
  std::lock_guard<std::mutex> lock(released_mu);
  released.push_back(token);
}

// A reply with its frame: the tokens released since the last one, then the reply.
std::string Framed(const Writer& reply) {
  Writer frame;
  {
    std::lock_guard<std::mutex> lock(released_mu);
    frame.U64(released.size());
    for (uint64_t t : released) frame.U64(t);
    released.clear();
  }
  return frame.data() + reply.data();
}

// The reply header for a plugin error (destroyed here), or for success.
Writer Reply(KILN_Error* e) {
  Writer w;
  if (e == nullptr) {
    w.U32(0).Str("");
  } else {
    const char* m = api->error_message(e);
    w.U32(static_cast<uint32_t>(api->error_code(e))).Str(m != nullptr ? m : "");
    api->error_destroy(e);
  }
  return w;
}

Writer Failure(KILN_ErrorCode code, std::string_view message) {
  Writer w;
  w.U32(static_cast<uint32_t>(code)).Str(message);
  return w;
}

// The walkable module for a plugin of ABI 1.6 or later, as the in-process core gives it.
// Whether the plugin reads it: not when its attribute "module_view" is "none" (it parses the
// text itself). Asked once, after initialize (capability and compile come later).
bool WantsModuleView() {
  static const bool wants = [] {
    if (api->api_minor < 6) return false;
    if (!KILN_API_HAS(api, attributes)) return true;
    KILN_Attributes_Args a{};
    a.struct_size = sizeof(a);
    if (KILN_Error* e = api->attributes(&a)) {
      api->error_destroy(e);
      return true;
    }
    for (size_t i = 0; a.attributes != nullptr && i < a.num_attributes; ++i) {
      const KILN_Attribute& kv = a.attributes[i];
      if (kv.name != nullptr && kv.value != nullptr && std::string_view(kv.name) == "module_view")
        return std::string_view(kv.value) != "none";
    }
    return true;
  }();
  return wants;
}

absl::StatusOr<std::unique_ptr<ModuleView>> ViewFor(std::string_view text) {
  if (!WantsModuleView()) return std::unique_ptr<ModuleView>();
  return ModuleView::FromText(text);
}

template <typename T>
T* Handle(uint64_t id) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(id));
}
uint64_t Id(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// One of the core's shared-memory regions (wire.h) mapped into this process: its first
// `size` bytes. Unmapped when deleted, and then reported released when it has a token.
struct Mapping {
  void* data = nullptr;
  size_t size = 0;
  uint64_t token = 0;
  // Maps and closes `fd`; null when it cannot (a token is then released right away).
  // Writable mappings are populated in bulk: the plugin writes all of them at once.
  static Mapping* Of(int fd, size_t size, uint64_t token, bool writable) {
    void* p = MAP_FAILED;
    if (fd >= 0 && size > 0) {
      p = mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
               MAP_SHARED | (writable ? MAP_POPULATE : 0), fd, 0);
    }
    if (fd >= 0) close(fd);
    if (p == MAP_FAILED) {
      if (token != 0) Release(token);
      return nullptr;
    }
    return new Mapping{p, size, token};
  }
  ~Mapping() {
    munmap(data, size);
    if (token != 0) Release(token);
  }
};

struct Capabilities {
  std::vector<std::string> supported;
  std::vector<std::pair<std::string, std::string>> unsupported;
};

Writer Serve(Op op, Reader& in) {
  switch (op) {
    case Op::kInitialize: {
      KILN_Initialize_Args a{};
      a.struct_size = sizeof(a);
      KILN_Error* e = api->initialize(&a);
      Writer w = Reply(e);
      if (e == nullptr)
        w.U32(a.available).Str(a.unavailable_reason != nullptr ? a.unavailable_reason : "");
      return w;
    }
    case Op::kAttributes: {
      if (api->attributes == nullptr) {  // optional: none, so the core still adds its own
        Writer w = Reply(nullptr);
        w.U64(0);
        return w;
      }
      KILN_Attributes_Args a{};
      a.struct_size = sizeof(a);
      KILN_Error* e = api->attributes(&a);
      Writer w = Reply(e);
      if (e != nullptr) return w;
      w.U64(a.attributes != nullptr ? a.num_attributes : 0);
      for (size_t i = 0; a.attributes != nullptr && i < a.num_attributes; ++i) {
        w.Str(a.attributes[i].name ? a.attributes[i].name : "")
            .Str(a.attributes[i].value ? a.attributes[i].value : "");
      }
      return w;
    }
    case Op::kClientCreate: {
      KILN_Client_Create_Args a{};
      a.struct_size = sizeof(a);
      KILN_Error* e = api->client_create(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.U64(Id(a.client));
      return w;
    }
    case Op::kClientDestroy: {
      KILN_Client_Destroy_Args a{};
      a.struct_size = sizeof(a);
      a.client = Handle<KILN_Client>(in.U64());
      return Reply(api->client_destroy(&a));
    }
    case Op::kClientDevices: {
      KILN_Client_Devices_Args a{};
      a.struct_size = sizeof(a);
      a.client = Handle<KILN_Client>(in.U64());
      KILN_Error* e = api->client_devices(&a);
      Writer w = Reply(e);
      if (e != nullptr) return w;
      w.U64(a.devices != nullptr ? a.num_devices : 0);
      for (size_t i = 0; a.devices != nullptr && i < a.num_devices; ++i) w.U64(Id(a.devices[i]));
      return w;
    }
    case Op::kDeviceDescription: {
      KILN_Device_Description_Args a{};
      a.struct_size = sizeof(a);
      a.device = Handle<KILN_Device>(in.U64());
      KILN_Error* e = api->device_description(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.U32(static_cast<uint32_t>(a.id)).Str(a.kind != nullptr ? a.kind : "?");
      return w;
    }
    case Op::kCapability: {
      if (api->capability == nullptr) return Failure(KILN_ERROR_UNIMPLEMENTED, "no capability");
      KILN_Capability_Args a{};
      a.struct_size = sizeof(a);
      a.client = Handle<KILN_Client>(in.U64());
      std::string_view text = in.Bytes();
      a.hlo_text = text.data();
      a.hlo_text_size = text.size();
      absl::StatusOr<std::unique_ptr<ModuleView>> view = ViewFor(text);
      if (!view.ok())
        return Failure(KILN_ERROR_INVALID_ARGUMENT, std::string(view.status().message()));
      if (*view) a.module = (*view)->get();
      Capabilities c;
      a.user_data = &c;
      a.report_supported = [](void* u, const char* name) {
        static_cast<Capabilities*>(u)->supported.emplace_back(name != nullptr ? name : "");
      };
      a.report_unsupported = [](void* u, const char* name, const char* reason) {
        static_cast<Capabilities*>(u)->unsupported.emplace_back(name != nullptr ? name : "",
                                                                reason != nullptr ? reason : "");
      };
      KILN_Error* e = api->capability(&a);
      Writer w = Reply(e);
      if (e != nullptr) return w;
      w.U64(c.supported.size());
      for (const std::string& s : c.supported) w.Str(s);
      w.U64(c.unsupported.size());
      for (const auto& [name, reason] : c.unsupported) w.Str(name).Str(reason);
      return w;
    }
    case Op::kCompile: {
      KILN_Compile_Args a{};
      a.struct_size = sizeof(a);
      a.client = Handle<KILN_Client>(in.U64());
      std::string_view text = in.Bytes();
      a.hlo_text = text.data();
      a.hlo_text_size = text.size();
      KILN_CompileOptions o{};
      o.struct_size = sizeof(o);
      const bool has_options = in.U8() != 0;
      o.optimization_level = static_cast<int32_t>(in.U32());
      o.num_threads = static_cast<int32_t>(in.U32());
      std::string passes = in.Str(), dump_dir = in.Str();
      o.dump_sequence = static_cast<int32_t>(in.U32());
      o.core_passes = passes.empty() ? nullptr : passes.c_str();
      o.dump_dir = dump_dir.empty() ? nullptr : dump_dir.c_str();
      std::vector<KILN_Device*> assignment(in.U64());  // ABI 1.8's device assignment
      for (KILN_Device*& d : assignment) d = Handle<KILN_Device>(in.U64());
      if (!in.ok()) return Failure(KILN_ERROR_INTERNAL, "malformed compile request");
      if (!assignment.empty()) {
        o.device_assignment = assignment.data();
        o.num_assigned_devices = assignment.size();
      }
      a.options = has_options ? &o : nullptr;
      absl::StatusOr<std::unique_ptr<ModuleView>> view = ViewFor(text);
      if (!view.ok())
        return Failure(KILN_ERROR_INVALID_ARGUMENT, std::string(view.status().message()));
      if (*view) a.module = (*view)->get();
      KILN_Error* e = api->compile(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.U64(Id(a.executable));
      return w;
    }
    case Op::kExecutableInfo: {
      KILN_Executable_Info_Args a{};
      a.struct_size = sizeof(a);
      a.executable = Handle<KILN_Executable>(in.U64());
      KILN_Error* e = api->executable_info(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.U64(a.num_parameters).U64(a.num_outputs);
      return w;
    }
    case Op::kExecutableDestroy: {
      KILN_Executable_Destroy_Args a{};
      a.struct_size = sizeof(a);
      a.executable = Handle<KILN_Executable>(in.U64());
      return Reply(api->executable_destroy(&a));
    }
    case Op::kExecute: {
      KILN_Execute_Args a{};
      a.struct_size = sizeof(a);
      a.executable = Handle<KILN_Executable>(in.U64());
      a.device = Handle<KILN_Device>(in.U64());
      std::vector<KILN_Buffer*> args(in.U64());
      for (KILN_Buffer*& b : args) b = Handle<KILN_Buffer>(in.U64());
      std::vector<uint8_t> donated(in.U8() != 0 ? args.size() : 0);  // ABI 1.3's flags
      for (uint8_t& d : donated) d = in.U8();
      std::vector<KILN_Buffer*> outputs(in.U64(), nullptr);
      if (!in.ok()) return Failure(KILN_ERROR_INTERNAL, "malformed execute request");
      if (!donated.empty() && api->api_minor >= 3) a.donated = donated.data();
      a.arguments = args.data();
      a.num_arguments = args.size();
      a.outputs = outputs.data();
      a.num_outputs = outputs.size();
      KILN_Error* e = api->execute(&a);
      Writer w = Reply(e);
      if (e != nullptr) return w;
      // Each output with its info: the core asks for it next, and a round trip costs more.
      for (KILN_Buffer* b : outputs) {
        w.U64(Id(b));
        KILN_Buffer_Info_Args info{};
        info.struct_size = sizeof(info);
        info.buffer = b;
        if (KILN_Error* ie = api->buffer_info(&info)) {
          api->error_destroy(ie);
          w.U8(0);
          continue;
        }
        w.U8(1).U32(static_cast<uint32_t>(info.dtype)).U64(info.num_dims);
        for (size_t i = 0; i < info.num_dims; ++i) w.I64(info.dims[i]);
        w.U64(info.byte_size);
      }
      return w;
    }
    case Op::kBufferFromHost: {
      KILN_Buffer_FromHost_Args a{};
      a.struct_size = KILN_STRUCT_SIZE(KILN_Buffer_FromHost_Args, buffer);  // copies the data
      a.client = Handle<KILN_Client>(in.U64());
      a.device = Handle<KILN_Device>(in.U64());
      a.dtype = static_cast<KILN_DType>(in.U32());
      std::vector<int64_t> dims(in.U64());
      for (int64_t& d : dims) d = in.I64();
      const bool shared = in.U8() != 0;
      std::string_view data;
      Mapping* mapping = nullptr;
      if (shared) {  // the bytes are in the core's region, sent after the message
        const size_t size = in.U64();
        const uint64_t token = in.U64();
        mapping = Mapping::Of(ReceiveFd(sock), size, token, false);
        if (mapping == nullptr)
          return Failure(KILN_ERROR_INTERNAL, "buffer_from_host: cannot map the shared memory");
        data = std::string_view(static_cast<const char*>(mapping->data), size);
      } else {
        data = in.Bytes();
      }
      if (!in.ok()) {
        delete mapping;
        return Failure(KILN_ERROR_INTERNAL, "malformed buffer_from_host request");
      }
      a.dims = dims.data();
      a.num_dims = dims.size();
      a.data = data.data();
      a.data_size = data.size();
      // A 1.2 plugin may keep reading the mapping (zero copy); it unmaps through on_done.
      const bool lend = mapping != nullptr && api->api_minor >= 2;
      if (lend) {
        a.struct_size = sizeof(a);
        a.on_done = [](void* m) { delete static_cast<Mapping*>(m); };
        a.on_done_arg = mapping;
      }
      KILN_Error* e = api->buffer_from_host(&a);
      if (mapping != nullptr && (!lend || e != nullptr)) delete mapping;
      Writer w = Reply(e);
      if (e == nullptr) w.U64(Id(a.buffer));
      return w;
    }
    case Op::kBufferToHost: {
      KILN_Buffer_ToHost_Args a{};
      a.struct_size = sizeof(a);
      a.buffer = Handle<KILN_Buffer>(in.U64());
      const size_t size = in.U64();
      if (in.U8() != 0) {  // into the core's region, sent after the message
        Mapping* m = Mapping::Of(ReceiveFd(sock), size, 0, true);
        if (m == nullptr)
          return Failure(KILN_ERROR_RESOURCE_EXHAUSTED, "buffer_to_host: cannot map shared memory");
        a.dst = m->data;
        a.dst_size = size;
        KILN_Error* e = api->buffer_to_host(&a);
        delete m;  // before the reply: the core reads the region once it has it
        return Reply(e);
      }
      std::string bytes(size, '\0');
      a.dst = bytes.data();
      a.dst_size = bytes.size();
      KILN_Error* e = api->buffer_to_host(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.Bytes(bytes.data(), bytes.size());
      return w;
    }
    case Op::kBufferInfo: {
      KILN_Buffer_Info_Args a{};
      a.struct_size = sizeof(a);
      a.buffer = Handle<KILN_Buffer>(in.U64());
      KILN_Error* e = api->buffer_info(&a);
      Writer w = Reply(e);
      if (e != nullptr) return w;
      w.U32(static_cast<uint32_t>(a.dtype)).U64(a.num_dims);
      for (size_t i = 0; i < a.num_dims; ++i) w.I64(a.dims[i]);
      w.U64(a.byte_size);
      return w;
    }
    case Op::kCopyToDevice: {
      if (!KILN_API_HAS(api, buffer_copy_to_device))
        return Failure(KILN_ERROR_UNIMPLEMENTED, "no buffer_copy_to_device");
      KILN_Buffer_CopyToDevice_Args a{};
      a.struct_size = sizeof(a);
      a.buffer = Handle<KILN_Buffer>(in.U64());
      a.device = Handle<KILN_Device>(in.U64());
      KILN_Error* e = api->buffer_copy_to_device(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.U64(Id(a.copy));
      return w;
    }
    case Op::kMemoryStats: {
      if (!KILN_API_HAS(api, device_memory_stats))
        return Failure(KILN_ERROR_UNIMPLEMENTED, "no device_memory_stats");
      KILN_Device_MemoryStats_Args a{};
      a.struct_size = sizeof(a);
      a.client = Handle<KILN_Client>(in.U64());
      a.device = Handle<KILN_Device>(in.U64());
      KILN_Error* e = api->device_memory_stats(&a);
      Writer w = Reply(e);
      if (e == nullptr)
        w.I64(a.bytes_in_use).I64(a.peak_bytes_in_use).I64(a.num_buffers).I64(a.bytes_limit);
      return w;
    }
    case Op::kBufferDestroy: {
      KILN_Buffer_Destroy_Args a{};
      a.struct_size = sizeof(a);
      a.buffer = Handle<KILN_Buffer>(in.U64());
      return Reply(api->buffer_destroy(&a));
    }
    case Op::kReleased:
      return Reply(nullptr);
  }
  return Failure(KILN_ERROR_INTERNAL, "unknown request");
}

// The first message: the plugin's identity, or why it cannot be served.
Writer Hello(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return Failure(KILN_ERROR_FAILED_PRECONDITION, dlerror());
  auto* get_api = reinterpret_cast<KILN_GetApi_Fn*>(dlsym(lib, KILN_GET_API_SYMBOL));
  if (get_api == nullptr)
    return Failure(KILN_ERROR_FAILED_PRECONDITION,
                   std::string("missing entry symbol ") + KILN_GET_API_SYMBOL);
  api = get_api();
  if (api == nullptr)
    return Failure(KILN_ERROR_FAILED_PRECONDITION, "KILN_GetApi returned a null table");
  // The same checks, in the same words, as the core's for a plugin loaded in process.
  constexpr size_t kHeader = KILN_STRUCT_SIZE(KILN_Api, default_priority);
  if (api->struct_size < kHeader)
    return Failure(KILN_ERROR_FAILED_PRECONDITION,
                   "table struct_size " + std::to_string(api->struct_size) +
                       " is too small to be a KILN_Api (needs >= " + std::to_string(kHeader) + ")");
  if (api->api_major != KILN_API_MAJOR)
    return Failure(KILN_ERROR_FAILED_PRECONDITION,
                   "ABI major version " + std::to_string(api->api_major) +
                       " does not match the core's " + std::to_string(KILN_API_MAJOR) +
                       " (rebuild the plugin against kiln_plugin_api.h " +
                       std::to_string(KILN_API_MAJOR) + ".x)");
  if (api->struct_size < KILN_API_STRUCT_SIZE_1_0)
    return Failure(KILN_ERROR_FAILED_PRECONDITION,
                   "table struct_size " + std::to_string(api->struct_size) +
                       " is smaller than ABI 1.0's " + std::to_string(KILN_API_STRUCT_SIZE_1_0));
  if (api->plugin_name == nullptr || api->plugin_name[0] == '\0')
    return Failure(KILN_ERROR_FAILED_PRECONDITION, "plugin has no name");
  const std::pair<const void*, const char*> required[] = {
      {reinterpret_cast<const void*>(api->error_destroy), "error_destroy"},
      {reinterpret_cast<const void*>(api->error_message), "error_message"},
      {reinterpret_cast<const void*>(api->error_code), "error_code"},
      {reinterpret_cast<const void*>(api->initialize), "initialize"},
      {reinterpret_cast<const void*>(api->client_create), "client_create"},
      {reinterpret_cast<const void*>(api->client_destroy), "client_destroy"},
      {reinterpret_cast<const void*>(api->client_devices), "client_devices"},
      {reinterpret_cast<const void*>(api->device_description), "device_description"},
      {reinterpret_cast<const void*>(api->compile), "compile"},
      {reinterpret_cast<const void*>(api->executable_info), "executable_info"},
      {reinterpret_cast<const void*>(api->executable_destroy), "executable_destroy"},
      {reinterpret_cast<const void*>(api->execute), "execute"},
      {reinterpret_cast<const void*>(api->buffer_from_host), "buffer_from_host"},
      {reinterpret_cast<const void*>(api->buffer_to_host), "buffer_to_host"},
      {reinterpret_cast<const void*>(api->buffer_info), "buffer_info"},
      {reinterpret_cast<const void*>(api->buffer_destroy), "buffer_destroy"},
  };
  for (const auto& [entry, name] : required) {
    if (entry == nullptr)
      return Failure(
          KILN_ERROR_FAILED_PRECONDITION,
          std::string("plugin '") + api->plugin_name + "': required entry '" + name + "' is null");
  }
  serving = true;
  Writer w;
  w.U32(0).Str("").Str(api->plugin_name).U32(static_cast<uint32_t>(api->default_priority));
  w.U32(static_cast<uint32_t>(api->api_minor));
  w.U8((KILN_API_HAS(api, device_memory_stats) ? kHasMemoryStats : 0) |
       (KILN_API_HAS(api, buffer_copy_to_device) ? kHasCopyToDevice : 0));
  return w;
}

}  // namespace
}  // namespace kiln::isolation

int main(int argc, char** argv) {
  using namespace kiln::isolation;
  if (argc != 3) {
    std::fprintf(stderr, "usage: kiln-plugin-host FD PLUGIN.so (started by the Kiln core)\n");
    return 2;
  }
  const int fd = std::atoi(argv[1]);
  sock = fd;
  if (!SendMessage(fd, Framed(Hello(argv[2]))) || !serving) return 1;
  std::string body;
  for (;;) {
    uint32_t n = 0;
    SpinForInput(fd, kSpin);                                   // then a blocking read
    if (!ReadExactly(fd, &n, 4) || n > kMaxMessage) return 0;  // the core closed the socket
    body.resize(n);
    if (!ReadExactly(fd, body.data(), n)) return 0;
    Reader in(body);
    const Op op = static_cast<Op>(in.U8());
    Writer reply = Serve(op, in);
    if (IsOneWay(op)) continue;  // the core does not wait for these
    if (!SendMessage(fd, Framed(reply))) return 0;
  }
}
