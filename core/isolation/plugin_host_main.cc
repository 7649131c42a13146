// kiln-plugin-host FD PLUGIN.so: loads one plugin and serves its C ABI to the core on the
// connected Unix socket FD (wire.h), one request at a time, until the socket closes. The
// core starts it for each isolated plugin (KILN_ISOLATE, the config's `isolate`): when the
// plugin crashes, hangs or exits, this process dies or is killed, and the core reports it.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/isolation/wire.h"
#include "kiln_plugin_api.h"

namespace kiln::isolation {
namespace {

const KILN_Api* api = nullptr;
bool serving = false;  // the plugin passed the checks of Hello

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

template <typename T>
T* Handle(uint64_t id) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(id));
}
uint64_t Id(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

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
      if (api->attributes == nullptr) return Failure(KILN_ERROR_UNIMPLEMENTED, "no attributes");
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
      a.options = has_options ? &o : nullptr;
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
      std::vector<KILN_Buffer*> outputs(in.U64(), nullptr);
      if (!in.ok()) return Failure(KILN_ERROR_INTERNAL, "malformed execute request");
      a.arguments = args.data();
      a.num_arguments = args.size();
      a.outputs = outputs.data();
      a.num_outputs = outputs.size();
      KILN_Error* e = api->execute(&a);
      Writer w = Reply(e);
      if (e != nullptr) return w;
      for (KILN_Buffer* b : outputs) w.U64(Id(b));
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
      std::string_view data = in.Bytes();
      if (!in.ok()) return Failure(KILN_ERROR_INTERNAL, "malformed buffer_from_host request");
      a.dims = dims.data();
      a.num_dims = dims.size();
      a.data = data.data();
      a.data_size = data.size();
      KILN_Error* e = api->buffer_from_host(&a);
      Writer w = Reply(e);
      if (e == nullptr) w.U64(Id(a.buffer));
      return w;
    }
    case Op::kBufferToHost: {
      KILN_Buffer_ToHost_Args a{};
      a.struct_size = sizeof(a);
      a.buffer = Handle<KILN_Buffer>(in.U64());
      std::string bytes(in.U64(), '\0');
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
    case Op::kBufferDestroy: {
      KILN_Buffer_Destroy_Args a{};
      a.struct_size = sizeof(a);
      a.buffer = Handle<KILN_Buffer>(in.U64());
      return Reply(api->buffer_destroy(&a));
    }
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
  if (api->struct_size < KILN_API_STRUCT_SIZE_1_0 || api->api_major != KILN_API_MAJOR ||
      api->plugin_name == nullptr)
    return Failure(KILN_ERROR_FAILED_PRECONDITION,
                   "table too small, of another ABI major version, or without a name");
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
      return Failure(KILN_ERROR_FAILED_PRECONDITION,
                     std::string("required entry '") + name + "' is null");
  }
  serving = true;
  Writer w;
  w.U32(0).Str("").Str(api->plugin_name).U32(static_cast<uint32_t>(api->default_priority));
  w.U32(static_cast<uint32_t>(api->api_minor));
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
  if (!SendMessage(fd, Hello(argv[2]).data()) || !serving) return 1;
  std::string body;
  for (;;) {
    uint32_t n = 0;
    if (!ReadExactly(fd, &n, 4) || n > kMaxMessage) return 0;  // the core closed the socket
    body.resize(n);
    if (!ReadExactly(fd, body.data(), n)) return 0;
    Reader in(body);
    const Op op = static_cast<Op>(in.U8());
    if (!SendMessage(fd, Serve(op, in).data())) return 0;
  }
}
