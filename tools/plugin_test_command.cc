// `kiln plugin-test PATH.so|NAME`: a conformance and differential suite for any plugin. The
// ABI rows talk to the plugin's C table directly (args structs of other sizes, error
// objects, handles); the differential rows run random modules per opcode family on the
// plugin and on the interpreter and compare them with tools/compare.h's tolerances.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/custom_calls.h"
#include "core/module_view.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "hlo/collectives/local_communicator.h"
#include "hlo/evaluator/multi_device.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"
#include "kiln_plugin_api.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/flags.h"
#include "tools/random_inputs.h"
#include "tools/random_modules.h"

namespace kiln {
namespace {

// ---- the report ---------------------------------------------------------------------

struct Row {
  std::string name;
  int checks = 0, failed = 0, skipped = 0;
  std::vector<std::string> failures;  // the first few, in order
  std::vector<std::string> notes;     // why something was skipped, or worth knowing
  std::string skip_reason;            // set when the whole row is skipped

  void Check(bool ok, const std::string& what) {
    ++checks;
    if (!ok) {
      ++failed;
      if (failures.size() < 4) failures.push_back(what);
    }
  }
  void Fail(const std::string& what) { Check(false, what); }
  void Pass() { Check(true, ""); }
  void Note(const std::string& what) {
    if (std::find(notes.begin(), notes.end(), what) == notes.end() && notes.size() < 6)
      notes.push_back(what);
  }
  std::string Result() const {
    if (failed > 0) return "FAIL";
    if (checks == 0) return "SKIP";
    return "PASS";
  }
  std::string Reason() const {
    if (failed > 0) return fmt::format("{}", fmt::join(failures, "; "));
    if (checks == 0) return skip_reason.empty() ? "nothing to check" : skip_reason;
    return fmt::format("{}", fmt::join(notes, "; "));
  }
};

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// ---- the raw C table ---------------------------------------------------------------

// An error object the suite received: valid when it has a code in 1..16 and a message.
struct RawError {
  bool present = false;
  int code = 0;
  std::string message;
  bool Valid() const {
    return present && code > 0 && code <= KILN_ERROR_UNAUTHENTICATED && !message.empty();
  }
  std::string Describe() const {
    if (!present) return "no error";
    return fmt::format("code {} '{}'", code, message.substr(0, 160));
  }
};

// The walkable module of `text` as a 1.6 core gives it; null when the text does not parse or
// verify (the bad-input checks), which a plugin must answer with an error either way.
std::unique_ptr<ModuleView> ViewOf(std::string_view text) {
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ModuleView::FromText(text);
  return view.ok() ? std::move(*view) : nullptr;
}

struct Raw {
  const KILN_Api* api = nullptr;

  RawError Take(KILN_Error* e) const {
    RawError r;
    if (e == nullptr) return r;
    r.present = true;
    r.code = static_cast<int>(api->error_code(e));
    const char* m = api->error_message(e);
    if (m != nullptr) r.message = m;
    api->error_destroy(e);
    return r;
  }

  KILN_Client* CreateClient(RawError* err = nullptr) const {
    KILN_Client_Create_Args a{};
    a.struct_size = sizeof(a);
    RawError e = Take(api->client_create(&a));
    if (err) *err = e;
    return e.present ? nullptr : a.client;
  }
  RawError DestroyClient(KILN_Client* c) const {
    KILN_Client_Destroy_Args a{sizeof(a), c};
    return Take(api->client_destroy(&a));
  }
  KILN_Executable* Compile(KILN_Client* c, const std::string& text, RawError* err) const {
    KILN_Compile_Args a{};
    a.struct_size = sizeof(a);
    a.client = c;
    a.hlo_text = text.data();
    a.hlo_text_size = text.size();
    std::unique_ptr<ModuleView> view = ViewOf(text);
    if (view) a.module = view->get();
    *err = Take(api->compile(&a));
    return err->present ? nullptr : a.executable;
  }
  RawError DestroyExecutable(KILN_Executable* e) const {
    KILN_Executable_Destroy_Args a{sizeof(a), e};
    return Take(api->executable_destroy(&a));
  }
  KILN_Buffer* FromHost(KILN_Client* c, KILN_DType dtype, const std::vector<int64_t>& dims,
                        const void* data, size_t size, RawError* err) const {
    KILN_Buffer_FromHost_Args a{};
    a.struct_size = KILN_STRUCT_SIZE(KILN_Buffer_FromHost_Args, buffer);
    a.client = c;
    a.dtype = dtype;
    a.dims = dims.data();
    a.num_dims = dims.size();
    a.data = data;
    a.data_size = size;
    *err = Take(api->buffer_from_host(&a));
    return err->present ? nullptr : a.buffer;
  }
  RawError DestroyBuffer(KILN_Buffer* b) const {
    KILN_Buffer_Destroy_Args a{sizeof(a), b};
    return Take(api->buffer_destroy(&a));
  }
  RawError ToHost(KILN_Buffer* b, void* dst, size_t size) const {
    KILN_Buffer_ToHost_Args a{};
    a.struct_size = sizeof(a);
    a.buffer = b;
    a.dst = dst;
    a.dst_size = size;
    return Take(api->buffer_to_host(&a));
  }
  RawError Execute(KILN_Executable* exe, std::vector<KILN_Buffer*> args,
                   std::vector<KILN_Buffer*>* outs, size_t num_outputs) const {
    outs->assign(num_outputs, nullptr);
    KILN_Execute_Args a{};
    a.struct_size = sizeof(a);
    a.executable = exe;
    a.arguments = args.data();
    a.num_arguments = args.size();
    a.outputs = outs->data();
    a.num_outputs = outs->size();
    return Take(api->execute(&a));
  }
};

// A struct of type Args in a zeroed block `extra` bytes larger than the suite knows it, as a
// newer core would pass it.
template <typename Args>
class Sized {
 public:
  // mode 0: the current layout; 1: the 1.0 layout (`size10`); 2: padded by 64 zero bytes.
  Sized(int mode, size_t size10) : bytes_(sizeof(Args) + 64, 0) {
    size_t size = mode == 1 ? size10 : mode == 2 ? sizeof(Args) + 64 : sizeof(Args);
    std::memcpy(bytes_.data(), &size, sizeof(size));
  }
  Args* operator->() { return reinterpret_cast<Args*>(bytes_.data()); }
  Args* get() { return reinterpret_cast<Args*>(bytes_.data()); }

 private:
  std::vector<unsigned char> bytes_;  // operator new aligns it for any Args
};

const char* kAddModule =
    "HloModule plugin_test_add\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n"
    "  p1 = f32[4] parameter(1)\n  ROOT r = f32[4] add(f32[4] p0, f32[4] p1)\n}\n";

// ---- the suite ----------------------------------------------------------------------

struct Suite {
  Plugin* plugin = nullptr;
  Plugin* reference = nullptr;
  Raw raw;
  uint64_t seed = 1;
  int modules = 6;
  // Families whose f32 probe the plugin's capability accepts (filled by the capability row).
  std::map<std::string, bool> accepted;
  std::map<std::string, std::string> declined_why;

  // ---- abi-table
  void AbiTable(Row& row) {
    const KILN_Api* api = raw.api;
    row.Check(api->struct_size >= KILN_API_STRUCT_SIZE_1_0,
              fmt::format("struct_size {} < the 1.0 table's {}", api->struct_size,
                          KILN_API_STRUCT_SIZE_1_0));
    row.Check(api->api_major == KILN_API_MAJOR,
              fmt::format("api_major {} != {}", api->api_major, KILN_API_MAJOR));
    row.Check(api->api_minor >= 0, fmt::format("api_minor {} is negative", api->api_minor));
    if (api->api_minor >= KILN_API_MINOR) {
      row.Check(
          api->struct_size >= sizeof(KILN_Api),
          fmt::format("api_minor {} but struct_size {} < {} (the {}.{} table)", api->api_minor,
                      api->struct_size, sizeof(KILN_Api), KILN_API_MAJOR, KILN_API_MINOR));
    } else if (api->api_minor >= 2) {
      row.Check(api->struct_size >= KILN_STRUCT_SIZE(KILN_Api, buffer_host_data),
                "a 1.2 table without room for buffer_host_data");
    }
    row.Check(api->plugin_name != nullptr && api->plugin_name[0] != '\0', "no plugin name");
    row.Check(api->default_priority >= 0,
              fmt::format("negative default_priority {}", api->default_priority));
    const std::vector<const char*> missing = MissingRequiredEntries(*api);
    row.Check(missing.empty(),
              fmt::format("required entries are null: {}", fmt::join(missing, ", ")));
    std::vector<std::string> optional;
    if (KILN_API_HAS(api, attributes)) optional.push_back("attributes");
    if (KILN_API_HAS(api, capability)) optional.push_back("capability");
    if (KILN_API_HAS(api, executable_serialize)) optional.push_back("serialize");
    if (KILN_API_HAS(api, executable_deserialize)) optional.push_back("deserialize");
    if (KILN_API_HAS(api, buffer_host_data)) optional.push_back("host_data");
    if (KILN_API_HAS(api, attributes)) {
      KILN_Attributes_Args a{};
      a.struct_size = sizeof(a);
      RawError e = raw.Take(api->attributes(&a));
      row.Check(!e.present, "attributes failed: " + e.Describe());
      bool names_ok = a.num_attributes == 0 || a.attributes != nullptr;
      for (size_t i = 0; names_ok && i < a.num_attributes; ++i) {
        names_ok = a.attributes[i].name != nullptr && a.attributes[i].value != nullptr;
      }
      row.Check(names_ok, "attributes with a null array, name or value");
    }
    row.Note(fmt::format("abi {}.{}, table {} bytes, priority {}, optional: {}", api->api_major,
                         api->api_minor, api->struct_size, api->default_priority,
                         optional.empty() ? "none" : fmt::format("{}", fmt::join(optional, ","))));
  }

  // ---- args-struct-sizes: one whole workflow per layout (current, 1.0, padded with zeros).
  void ArgsStructSizes(Row& row) {
    const KILN_Api* api = raw.api;
    std::vector<std::vector<float>> results(3);
    int errors = 0;
    static const char* kModes[] = {"current", "1.0", "padded"};
    for (int mode = 0; mode < 3; ++mode) {
      auto step = [&](const char* entry, KILN_Error* e) {
        RawError r = raw.Take(e);
        if (!r.present) {
          row.Pass();
          return true;
        }
        row.Check(r.Valid(), fmt::format("{} with the {} layout: an invalid error object ({})",
                                         entry, kModes[mode], r.Describe()));
        ++errors;
        row.Note(fmt::format("{} refuses the {} layout: {}", entry, kModes[mode],
                             r.message.substr(0, 80)));
        return false;
      };
      Sized<KILN_Client_Create_Args> create(mode, sizeof(KILN_Client_Create_Args));
      if (!step("client_create", api->client_create(create.get()))) continue;
      KILN_Client* client = create->client;

      Sized<KILN_Client_Devices_Args> devices(mode, sizeof(KILN_Client_Devices_Args));
      devices->client = client;
      if (step("client_devices", api->client_devices(devices.get())) && devices->num_devices > 0) {
        Sized<KILN_Device_Description_Args> desc(mode, sizeof(KILN_Device_Description_Args));
        desc->device = devices->devices[0];
        step("device_description", api->device_description(desc.get()));
      }
      std::string text = kAddModule;
      // The walkable module goes only where the layout has room for it (not in 1.0's).
      std::unique_ptr<ModuleView> view = ViewOf(text);
      if (KILN_API_HAS(api, capability)) {
        Sized<KILN_Capability_Args> cap(mode, sizeof(KILN_Capability_Args));
        int reported = 0;
        cap->client = client;
        cap->hlo_text = text.data();
        cap->hlo_text_size = text.size();
        cap->report_supported = [](void* u, const char*) { ++*static_cast<int*>(u); };
        cap->user_data = &reported;
        if (mode != 1) cap->module = view->get();
        step("capability", api->capability(cap.get()));
      }
      Sized<KILN_CompileOptions> opts(mode, KILN_STRUCT_SIZE(KILN_CompileOptions, num_threads));
      opts->optimization_level = 2;
      Sized<KILN_Compile_Args> compile(mode, sizeof(KILN_Compile_Args));
      compile->client = client;
      compile->hlo_text = text.data();
      compile->hlo_text_size = text.size();
      compile->options = opts.get();
      if (mode != 1) compile->module = view->get();
      KILN_Executable* exe = nullptr;
      if (step("compile", api->compile(compile.get()))) exe = compile->executable;
      size_t num_outputs = 1;
      if (exe != nullptr) {
        Sized<KILN_Executable_Info_Args> info(mode, sizeof(KILN_Executable_Info_Args));
        info->executable = exe;
        if (step("executable_info", api->executable_info(info.get()))) {
          row.Check(info->num_parameters == 2 && info->num_outputs == 1,
                    fmt::format("executable_info ({} layout): {} parameters, {} outputs for "
                                "an add of two f32[4]",
                                kModes[mode], info->num_parameters, info->num_outputs));
          num_outputs = info->num_outputs;
        }
      }
      const float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, -1, 8, 0};
      const int64_t dims[1] = {4};
      std::vector<KILN_Buffer*> inputs;
      for (const float* data : {a, b}) {
        Sized<KILN_Buffer_FromHost_Args> from(mode,
                                              KILN_STRUCT_SIZE(KILN_Buffer_FromHost_Args, buffer));
        from->client = client;
        from->dtype = KILN_DTYPE_F32;
        from->dims = dims;
        from->num_dims = 1;
        from->data = data;
        from->data_size = sizeof(a);
        if (step("buffer_from_host", api->buffer_from_host(from.get())))
          inputs.push_back(from->buffer);
      }
      std::vector<KILN_Buffer*> outputs(num_outputs, nullptr);
      if (exe != nullptr && inputs.size() == 2 && num_outputs == 1) {
        Sized<KILN_Execute_Args> exec(mode, sizeof(KILN_Execute_Args));
        exec->executable = exe;
        exec->arguments = inputs.data();
        exec->num_arguments = inputs.size();
        exec->outputs = outputs.data();
        exec->num_outputs = outputs.size();
        if (step("execute", api->execute(exec.get())) && outputs[0] != nullptr) {
          Sized<KILN_Buffer_Info_Args> info(mode, sizeof(KILN_Buffer_Info_Args));
          info->buffer = outputs[0];
          if (step("buffer_info", api->buffer_info(info.get()))) {
            row.Check(info->dtype == KILN_DTYPE_F32 && info->num_dims == 1 &&
                          info->dims != nullptr && info->dims[0] == 4 && info->byte_size == 16,
                      fmt::format("buffer_info ({} layout) does not say f32[4]", kModes[mode]));
          }
          std::vector<float> host(4);
          Sized<KILN_Buffer_ToHost_Args> to(mode, sizeof(KILN_Buffer_ToHost_Args));
          to->buffer = outputs[0];
          to->dst = host.data();
          to->dst_size = 16;
          if (step("buffer_to_host", api->buffer_to_host(to.get()))) results[mode] = host;
        }
      }
      for (KILN_Buffer* out : outputs) {
        if (out == nullptr) continue;
        Sized<KILN_Buffer_Destroy_Args> d(mode, sizeof(KILN_Buffer_Destroy_Args));
        d->buffer = out;
        step("buffer_destroy", api->buffer_destroy(d.get()));
      }
      for (KILN_Buffer* in : inputs) {
        Sized<KILN_Buffer_Destroy_Args> d(mode, sizeof(KILN_Buffer_Destroy_Args));
        d->buffer = in;
        step("buffer_destroy", api->buffer_destroy(d.get()));
      }
      if (exe != nullptr) {
        Sized<KILN_Executable_Destroy_Args> d(mode, sizeof(KILN_Executable_Destroy_Args));
        d->executable = exe;
        step("executable_destroy", api->executable_destroy(d.get()));
      }
      Sized<KILN_Client_Destroy_Args> d(mode, sizeof(KILN_Client_Destroy_Args));
      d->client = client;
      step("client_destroy", api->client_destroy(d.get()));
    }
    // The layouts carry the same request: where two ran, their answers agree.
    for (int mode = 1; mode < 3; ++mode) {
      if (!results[0].empty() && !results[mode].empty()) {
        row.Check(std::memcmp(results[0].data(), results[mode].data(), 16) == 0,
                  fmt::format("the {} layout computes another result than the current one",
                              kModes[mode]));
      }
    }
    if (errors == 0) row.Note("every entry works with the 1.0, current and padded layouts");
  }

  // ---- error-objects: bad arguments give valid error objects.
  void ErrorObjects(Row& row) {
    const KILN_Api* api = raw.api;
    RawError err;
    KILN_Client* client = raw.CreateClient(&err);
    if (client == nullptr) {
      row.Fail("client_create failed: " + err.Describe());
      return;
    }
    auto expect_error = [&](const std::string& what, KILN_Error* e) {
      if (e == nullptr) {
        row.Fail(what + ": accepted (no error object)");
        return;
      }
      // The message and the code stay the same until error_destroy.
      const char* m1 = api->error_message(e);
      std::string first = m1 != nullptr ? m1 : "";
      KILN_ErrorCode c1 = api->error_code(e);
      const char* m2 = api->error_message(e);
      bool stable = m2 != nullptr && first == m2 && api->error_code(e) == c1;
      RawError r = raw.Take(e);
      row.Check(r.Valid() && stable, what + ": invalid error object (" + r.Describe() + ")");
    };
    const float data[4] = {1, 2, 3, 4};
    const int64_t dims4[1] = {4};
    {
      KILN_Client_Create_Args a{};
      expect_error("client_create with struct_size 0", api->client_create(&a));
    }
    {
      KILN_Client_Devices_Args a{};
      expect_error("client_devices with struct_size 0", api->client_devices(&a));
    }
    {
      KILN_Buffer_FromHost_Args a{};
      expect_error("buffer_from_host with struct_size 0", api->buffer_from_host(&a));
    }
    auto from_host = [&](KILN_DType dtype, const int64_t* dims, size_t num_dims, size_t size) {
      KILN_Buffer_FromHost_Args a{};
      a.struct_size = KILN_STRUCT_SIZE(KILN_Buffer_FromHost_Args, buffer);
      a.client = client;
      a.dtype = dtype;
      a.dims = dims;
      a.num_dims = num_dims;
      a.data = data;
      a.data_size = size;
      KILN_Error* e = api->buffer_from_host(&a);
      if (e == nullptr && a.buffer != nullptr) raw.DestroyBuffer(a.buffer);
      return e;
    };
    expect_error("buffer_from_host with data_size 15 for f32[4]",
                 from_host(KILN_DTYPE_F32, dims4, 1, 15));
    expect_error("buffer_from_host with dtype 99",
                 from_host(static_cast<KILN_DType>(99), dims4, 1, 16));
    const int64_t negative[1] = {-4};
    expect_error("buffer_from_host with dims [-4]", from_host(KILN_DTYPE_F32, negative, 1, 16));

    KILN_Buffer* buffer = raw.FromHost(client, KILN_DTYPE_F32, {4}, data, 16, &err);
    KILN_Buffer* short_buffer = raw.FromHost(client, KILN_DTYPE_F32, {3}, data, 12, &err);
    if (buffer != nullptr) {
      float dst[8];
      for (size_t size : {size_t{8}, size_t{32}}) {
        KILN_Buffer_ToHost_Args a{};
        a.struct_size = sizeof(a);
        a.buffer = buffer;
        a.dst = dst;
        a.dst_size = size;
        expect_error(fmt::format("buffer_to_host with dst_size {} for 16 bytes", size),
                     api->buffer_to_host(&a));
      }
      KILN_Buffer_ToHost_Args z{};
      expect_error("buffer_to_host with struct_size 0", api->buffer_to_host(&z));
      KILN_Buffer_Info_Args i{};
      expect_error("buffer_info with struct_size 0", api->buffer_info(&i));
    } else {
      row.Fail("buffer_from_host of f32[4] failed: " + err.Describe());
    }
    auto compile = [&](const std::string& what, std::string text) {
      KILN_Compile_Args a{};
      a.struct_size = sizeof(a);
      a.client = client;
      a.hlo_text = text.data();
      a.hlo_text_size = text.size();
      std::unique_ptr<ModuleView> view = ViewOf(text);
      if (view) a.module = view->get();
      KILN_Error* e = api->compile(&a);
      if (e == nullptr && a.executable != nullptr) raw.DestroyExecutable(a.executable);
      expect_error(what, e);
    };
    compile("compile of 'this is not HLO'", "this is not HLO");
    compile("compile of empty text", "");
    compile("compile of a module cut in half",
            std::string(kAddModule).substr(0, std::strlen(kAddModule) / 2));
    {
      KILN_Compile_Args a{};
      expect_error("compile with struct_size 0", api->compile(&a));
    }
    KILN_Executable* exe = raw.Compile(client, kAddModule, &err);
    if (exe != nullptr) {
      std::vector<KILN_Buffer*> outs;
      auto execute = [&](const std::string& what, std::vector<KILN_Buffer*> args, size_t n) {
        outs.assign(n == 0 ? 1 : n, nullptr);
        KILN_Execute_Args a{};
        a.struct_size = sizeof(a);
        a.executable = exe;
        a.arguments = args.data();
        a.num_arguments = args.size();
        a.outputs = outs.data();
        a.num_outputs = n;
        KILN_Error* e = api->execute(&a);
        if (e == nullptr) {
          for (KILN_Buffer* b : outs) {
            if (b != nullptr) raw.DestroyBuffer(b);
          }
        }
        expect_error(what, e);
      };
      if (buffer != nullptr) {
        execute("execute with 1 argument for 2 parameters", {buffer}, 1);
        execute("execute with room for 0 outputs", {buffer, buffer}, 0);
        if (short_buffer != nullptr)
          execute("execute with an f32[3] argument for f32[4]", {buffer, short_buffer}, 1);
      }
      KILN_Execute_Args z{};
      expect_error("execute with struct_size 0", api->execute(&z));
      KILN_Executable_Info_Args zi{};
      expect_error("executable_info with struct_size 0", api->executable_info(&zi));
      raw.DestroyExecutable(exe);
    } else {
      row.Fail("compile of an f32[4] add failed: " + err.Describe());
    }
    if (buffer != nullptr) raw.DestroyBuffer(buffer);
    if (short_buffer != nullptr) raw.DestroyBuffer(short_buffer);
    raw.DestroyClient(client);
  }

  // ---- handle-lifecycle
  void HandleLifecycle(Row& row) {
    const KILN_Api* api = raw.api;
    RawError err;
    for (int i = 0; i < 20; ++i) {
      KILN_Client* c = raw.CreateClient(&err);
      row.Check(c != nullptr, "client_create failed: " + err.Describe());
      if (c != nullptr) row.Check(!raw.DestroyClient(c).present, "client_destroy failed");
    }
    KILN_Client* clients[3] = {};
    for (KILN_Client*& c : clients) {
      c = raw.CreateClient(&err);
      row.Check(c != nullptr, "client_create (3 at once) failed: " + err.Describe());
      if (c == nullptr) return;
      KILN_Client_Devices_Args d{};
      d.struct_size = sizeof(d);
      d.client = c;
      RawError e = raw.Take(api->client_devices(&d));
      row.Check(!e.present && d.num_devices >= 1 && d.devices != nullptr,
                "client_devices gives no device: " + e.Describe());
      for (size_t k = 0; !e.present && k < d.num_devices && d.devices != nullptr; ++k) {
        KILN_Device_Description_Args dd{};
        dd.struct_size = sizeof(dd);
        dd.device = d.devices[k];
        RawError de = raw.Take(api->device_description(&dd));
        row.Check(!de.present && dd.kind != nullptr,
                  "device_description failed or has no kind: " + de.Describe());
      }
    }
    // Client 0 goes first: clients 1 and 2 keep working.
    row.Check(!raw.DestroyClient(clients[0]).present, "client_destroy failed");
    KILN_Client* c = clients[1];
    std::vector<KILN_Executable*> exes;
    for (int i = 0; i < 4; ++i) {
      KILN_Executable* e = raw.Compile(c, kAddModule, &err);
      row.Check(e != nullptr, "compile failed: " + err.Describe());
      if (e != nullptr) exes.push_back(e);
    }
    const size_t order[4] = {2, 0, 3, 1};
    for (size_t i : order) {
      if (i < exes.size() && i != 1) {
        row.Check(!raw.DestroyExecutable(exes[i]).present, "executable_destroy failed");
      }
    }
    KILN_Executable* exe = exes.size() > 1 ? exes[1] : nullptr;
    // Many buffers of several shapes, destroyed in a scrambled order.
    std::vector<KILN_Buffer*> buffers;
    std::vector<float> data(64, 1.5f);
    for (int i = 0; i < 300; ++i) {
      std::vector<int64_t> dims;
      if (i % 3 == 1) dims = {static_cast<int64_t>(i % 8)};
      if (i % 3 == 2) dims = {2, static_cast<int64_t>(i % 5)};
      size_t n = 1;
      for (int64_t d : dims) n *= static_cast<size_t>(d);
      KILN_Buffer* b = raw.FromHost(c, KILN_DTYPE_F32, dims, data.data(), n * 4, &err);
      if (b == nullptr) {
        row.Fail("buffer_from_host failed: " + err.Describe());
        break;
      }
      buffers.push_back(b);
    }
    row.Pass();
    for (size_t i = 0; i < buffers.size(); ++i) {
      size_t j = (i * 7919) % buffers.size();
      std::swap(buffers[i], buffers[j]);
    }
    for (KILN_Buffer* b : buffers) {
      RawError e = raw.DestroyBuffer(b);
      if (e.present) {
        row.Fail("buffer_destroy failed: " + e.Describe());
        break;
      }
    }
    row.Pass();
    // Outputs outlive their inputs and their executable.
    if (exe != nullptr) {
      const float a[4] = {1, 2, 3, 4};
      KILN_Buffer* x = raw.FromHost(c, KILN_DTYPE_F32, {4}, a, 16, &err);
      KILN_Buffer* y = raw.FromHost(c, KILN_DTYPE_F32, {4}, a, 16, &err);
      std::vector<KILN_Buffer*> outs;
      RawError e = x && y ? raw.Execute(exe, {x, y}, &outs, 1) : err;
      row.Check(!e.present && outs.size() == 1 && outs[0] != nullptr,
                "execute failed: " + e.Describe());
      if (x) raw.DestroyBuffer(x);
      if (y) raw.DestroyBuffer(y);
      row.Check(!raw.DestroyExecutable(exe).present, "executable_destroy failed");
      exe = nullptr;
      if (!e.present && !outs.empty() && outs[0] != nullptr) {
        float host[4] = {};
        RawError te = raw.ToHost(outs[0], host, 16);
        row.Check(!te.present,
                  "reading an output after its inputs and executable are gone: " + te.Describe());
        row.Check(!raw.DestroyBuffer(outs[0]).present, "buffer_destroy of an output failed");
      }
    }
    // A buffer outlives nothing it depends on: client 2 still works after client 1 goes.
    row.Check(!raw.DestroyClient(clients[1]).present, "client_destroy failed");
    KILN_Executable* late = raw.Compile(clients[2], kAddModule, &err);
    row.Check(late != nullptr,
              "compile on a client after another was destroyed: " + err.Describe());
    if (late != nullptr) raw.DestroyExecutable(late);
    row.Check(!raw.DestroyClient(clients[2]).present, "client_destroy failed");
    row.Note("20 clients, 3 at once, 4 executables and 300 buffers destroyed out of order");
  }

  // ---- capability: f32 probe modules per family; an accepted probe must compile.
  void Capability(Row& row) {
    const bool has_capability = KILN_API_HAS(raw.api, capability);
    if (!has_capability) row.Note("no capability entry: everything must compile");
    int declined = 0;
    for (const std::string& family : RandomModuleFamilies()) {
      std::string text = RandomModule(family, seed, /*f32_only=*/true);
      absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, family);
      if (!module.ok()) {
        row.Fail(fmt::format("probe {}: {}", family, std::string(module.status().message())));
        continue;
      }
      std::set<std::string> names;
      for (const HloInstruction* i : (*module)->entry()->instructions()) names.insert(i->name());
      bool all = true;
      std::string why;
      if (has_capability) {
        absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
        if (!report.ok()) {
          row.Fail(fmt::format("capability of the {} probe failed: {}", family,
                               std::string(report.status().message())));
          continue;
        }
        std::set<std::string> seen;
        bool known = true;
        for (const std::string& n : report->supported)
          known &= names.count(n) && seen.insert(n).second;
        for (const auto& [n, reason] : report->unsupported) {
          known &= names.count(n) && seen.insert(n).second;
          if (why.empty()) why = fmt::format("{}: {}", n, reason);
        }
        row.Check(known, fmt::format("capability of the {} probe reports an instruction that "
                                     "is not in the entry, or one twice",
                                     family));
        all = report->supported.size() == names.size();
        if (!all && why.empty()) why = "not reported as supported";
      }
      accepted[family] = all;
      absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
      if (all) {
        row.Check(exe.ok(),
                  fmt::format("capability accepts every instruction of the {} probe "
                              "but compile fails: {}",
                              family, exe.ok() ? "" : std::string(exe.status().message())));
      } else {
        ++declined;
        declined_why[family] = why;
        // A declined instruction fails compile cleanly (an error object) or compiles anyway.
        row.Pass();
        if (exe.ok()) row.Note(fmt::format("{} compiles although declined", family));
      }
    }
    row.Note(fmt::format("{} of {} families accepted", RandomModuleFamilies().size() - declined,
                         RandomModuleFamilies().size()));
  }

  // ---- buffer-roundtrip: every dtype, rank 0, zero-size arrays.
  void BufferRoundtrip(Row& row) {
    RawError err;
    KILN_Client* client = raw.CreateClient(&err);
    if (client == nullptr) {
      row.Fail("client_create failed: " + err.Describe());
      return;
    }
    const std::vector<std::vector<int64_t>> shapes = {{},        {0},       {7},
                                                      {2, 3, 4}, {3, 0, 2}, {1, 1, 1, 1, 5}};
    int count = 0;
    for (int t = KILN_DTYPE_PRED; t <= KILN_DTYPE_C128; ++t) {
      for (const auto& dims : shapes) {
        Shape shape(static_cast<PrimitiveType>(t), dims);
        Literal value = MakeRandomLiteral(shape, seed + static_cast<uint64_t>(t * 31 + count));
        const size_t size = static_cast<size_t>(value.size_bytes());
        KILN_Buffer* b = raw.FromHost(client, static_cast<KILN_DType>(t), dims,
                                      value.untyped_data(), size, &err);
        const std::string what = shape.ToString(false);
        ++count;
        if (b == nullptr) {
          row.Fail(fmt::format("buffer_from_host of {}: {}", what, err.Describe()));
          continue;
        }
        KILN_Buffer_Info_Args info{};
        info.struct_size = sizeof(info);
        info.buffer = b;
        RawError ie = raw.Take(raw.api->buffer_info(&info));
        bool dims_ok = !ie.present && info.num_dims == dims.size() &&
                       (dims.empty() ||
                        (info.dims != nullptr && std::equal(dims.begin(), dims.end(), info.dims)));
        row.Check(dims_ok && static_cast<int>(info.dtype) == t && info.byte_size == size,
                  fmt::format("buffer_info of {} says dtype {} dims {} bytes {} ({})", what,
                              static_cast<int>(info.dtype), info.num_dims, info.byte_size,
                              ie.Describe()));
        std::vector<unsigned char> back(size + 1, 0xAB);
        RawError te = raw.ToHost(b, back.data(), size);
        row.Check(!te.present && std::memcmp(back.data(), value.untyped_data(), size) == 0 &&
                      back[size] == 0xAB,
                  fmt::format("buffer_to_host of {} does not give back the bytes ({})", what,
                              te.Describe()));
        if (KILN_API_HAS(raw.api, buffer_host_data)) {
          KILN_Buffer_HostData_Args h{};
          h.struct_size = sizeof(h);
          h.buffer = b;
          RawError he = raw.Take(raw.api->buffer_host_data(&h));
          row.Check(!he.present && (h.data == nullptr || size == 0 ||
                                    std::memcmp(h.data, value.untyped_data(), size) == 0),
                    fmt::format("buffer_host_data of {} points at other bytes", what));
        }
        row.Check(!raw.DestroyBuffer(b).present, "buffer_destroy failed");
      }
    }
    // ABI 1.2: a plugin that declares 1.2 calls on_done exactly once, by the time the buffer
    // is destroyed (right away when it copied), and never on an error return.
    if (raw.api->api_minor >= 2) {
      struct Count {
        int calls = 0;
      } count;
      std::vector<float> data(24, 0.25f);
      const int64_t dims[3] = {2, 3, 4};
      KILN_Buffer_FromHost_Args a{};
      a.struct_size = sizeof(a);
      a.client = client;
      a.dtype = KILN_DTYPE_F32;
      a.dims = dims;
      a.num_dims = 3;
      a.data = data.data();
      a.data_size = data.size() * sizeof(float);
      a.on_done = [](void* c) { ++static_cast<Count*>(c)->calls; };
      a.on_done_arg = &count;
      RawError e = raw.Take(raw.api->buffer_from_host(&a));
      if (e.present) {
        row.Check(count.calls == 0, "on_done called although buffer_from_host failed");
      } else {
        row.Check(count.calls <= 1, "on_done called more than once by buffer_from_host");
        row.Check(!raw.DestroyBuffer(a.buffer).present, "buffer_destroy failed");
        row.Check(count.calls == 1,
                  fmt::format("abi 1.{} but on_done was called {} times by the time the buffer "
                              "was destroyed (a 1.2 plugin calls it exactly once)",
                              raw.api->api_minor, count.calls));
      }
    }
    raw.DestroyClient(client);
    row.Note(fmt::format("{} dtypes x {} shapes (rank 0, zero-size included)", KILN_DTYPE_C128 + 1,
                         shapes.size()));
  }

  // ---- differential: random modules of one family on the plugin and the interpreter.
  void Differential(Row& row, const std::string& family, size_t family_index) {
    std::map<std::string, int> declined;
    for (int i = 0; i < modules; ++i) {
      uint64_t module_seed = seed * 1000003 + family_index * 1000 + static_cast<uint64_t>(i);
      std::string text = RandomModule(family, module_seed);
      std::string where = fmt::format("{} seed {}", family, module_seed);
      absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, where);
      absl::Status verified = module.ok() ? VerifyModule(**module) : module.status();
      if (!verified.ok()) {
        row.Fail(fmt::format("{}: the generated module is invalid: {}", where,
                             std::string(verified.message())));
        continue;
      }
      if (KILN_API_HAS(raw.api, capability)) {
        absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
        if (!report.ok()) {
          row.Fail(fmt::format("{}: capability failed: {}", where,
                               std::string(report.status().message())));
          continue;
        }
        if (!report->unsupported.empty() ||
            report->supported.size() != (*module)->entry()->instructions().size()) {
          ++row.skipped;
          std::string what = report->unsupported.empty()
                                 ? std::string("an instruction")
                                 : fmt::format("{} ({})", report->unsupported[0].first,
                                               report->unsupported[0].second.substr(0, 60));
          ++declined[what];
          continue;
        }
      }
      std::vector<Literal> args;
      const HloComputation& entry = *(*module)->entry();
      for (int p = 0; p < entry.num_parameters(); ++p) {
        args.push_back(MakeRandomLiteral(entry.parameter(p)->shape(),
                                         module_seed * 131 + static_cast<uint64_t>(p)));
      }
      absl::StatusOr<std::unique_ptr<Executable>> ref_exe = reference->CompileText(text);
      absl::StatusOr<std::vector<Literal>> expected =
          ref_exe.ok() ? (*ref_exe)->Execute(args) : ref_exe.status();
      if (!expected.ok()) {
        row.Fail(fmt::format("{}: the interpreter cannot run it: {}", where,
                             std::string(expected.status().message())));
        continue;
      }
      absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
      if (!exe.ok()) {
        row.Fail(fmt::format("{}: capability accepts it but compile fails: {}", where,
                             std::string(exe.status().message())));
        continue;
      }
      absl::StatusOr<std::vector<Literal>> actual = (*exe)->Execute(args);
      if (!actual.ok()) {
        row.Fail(
            fmt::format("{}: execute failed: {}", where, std::string(actual.status().message())));
        continue;
      }
      if (actual->size() != expected->size()) {
        row.Fail(fmt::format("{}: {} outputs, the interpreter has {}", where, actual->size(),
                             expected->size()));
        continue;
      }
      bool ok = true;
      std::string detail;
      for (size_t k = 0; k < actual->size() && ok; ++k) {
        Comparison c = CompareLiterals((*actual)[k], (*expected)[k]);
        if (!c.ok) {
          ok = false;
          detail = fmt::format("output {}: {}", k, c.detail);
        }
      }
      row.Check(ok, fmt::format("{}: differs from the interpreter: {}", where, detail));
    }
    if (row.checks == 0 && row.failed == 0) {
      std::string why;
      for (const auto& [what, n] : declined)
        why += fmt::format("{}{}", why.empty() ? "" : ", ", what);
      row.skip_reason = fmt::format("capability declines all {} modules: {}", modules, why);
    } else if (!declined.empty()) {
      row.Note(fmt::format("{} declined: {}", row.skipped, declined.begin()->first));
    }
  }

  // ---- threads: one executable from 16 threads at once equals the single-threaded runs.
  void Threads(Row& row) {
    const std::vector<std::string> candidates = {
        "HloModule plugin_test_threads\n\nENTRY main {\n  p0 = f32[32,32] parameter(0)\n"
        "  p1 = f32[32,32] parameter(1)\n  d = f32[32,32] dot(f32[32,32] p0, f32[32,32] p1), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  ROOT r = f32[32,32] add(f32[32,32] d, f32[32,32] p0)\n}\n",
        "HloModule plugin_test_threads\n\nENTRY main {\n  p0 = f32[64,64] parameter(0)\n"
        "  p1 = f32[64,64] parameter(1)\n  m = f32[64,64] multiply(f32[64,64] p0, f32[64,64] p1)\n"
        "  t = f32[64,64] tanh(f32[64,64] p0)\n  ROOT r = f32[64,64] add(f32[64,64] m, f32[64,64] "
        "t)\n}\n"};
    std::string text;
    for (const std::string& c : candidates) {
      absl::StatusOr<CapabilityReport> report = plugin->Capability(c);
      if (!report.ok() || report->unsupported.empty()) {
        if (!report.ok() && report.status().code() != absl::StatusCode::kUnimplemented) continue;
        if (report.ok() && report->supported.size() < 4) continue;
        text = c;
        break;
      }
    }
    if (text.empty()) {
      row.skip_reason = "capability declines both the dot and the elementwise module";
      return;
    }
    absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
    if (!exe.ok()) {
      row.Fail("compile failed: " + std::string(exe.status().message()));
      return;
    }
    constexpr int kThreads = 16, kRounds = 4;
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, "threads");
    if (!module.ok()) {
      row.Fail(std::string(module.status().message()));
      return;
    }
    const Shape& shape = (*module)->entry()->parameter(0)->shape();
    std::vector<std::vector<Literal>> inputs(kThreads);
    std::vector<Literal> expected;
    for (int t = 0; t < kThreads; ++t) {
      inputs[t].push_back(MakeRandomLiteral(shape, seed * 7 + static_cast<uint64_t>(2 * t)));
      inputs[t].push_back(MakeRandomLiteral(shape, seed * 7 + static_cast<uint64_t>(2 * t + 1)));
      absl::StatusOr<std::vector<Literal>> out = (*exe)->Execute(inputs[t]);
      if (!out.ok() || out->size() != 1) {
        row.Fail("single-threaded execute failed: " + (out.ok()
                                                           ? std::string("wrong output count")
                                                           : std::string(out.status().message())));
        return;
      }
      expected.push_back(std::move((*out)[0]));
    }
    std::vector<std::string> problems(kThreads);
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int r = 0; r < kRounds && problems[t].empty(); ++r) {
          absl::StatusOr<std::vector<Literal>> out = (*exe)->Execute(inputs[t]);
          if (!out.ok()) {
            problems[t] = std::string(out.status().message());
          } else if (out->size() != 1 || (*out)[0].size_bytes() != expected[t].size_bytes() ||
                     std::memcmp((*out)[0].untyped_data(), expected[t].untyped_data(),
                                 expected[t].size_bytes()) != 0) {
            problems[t] = fmt::format("round {} differs from the single-threaded result", r);
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      row.Check(problems[t].empty(), fmt::format("thread {}: {}", t, problems[t]));
    }
    row.Note(fmt::format(
        "{} threads x {} runs of {}", kThreads, kRounds,
        text.find("dot(") != std::string::npos ? "a dot + add" : "an elementwise module"));
  }

  // ---- donation (ABI 1.3): a run with a donated argument gives what the same run without
  // donation gives, and leaves the argument it was not given untouched.
  // `text` compiled for a row, or null: the row then SKIPs (the capability declines `what`)
  // or FAILs (the compile failed).
  std::unique_ptr<Executable> CompileForRow(Row& row, const std::string& text,
                                            const std::string& what) {
    absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
    if (report.ok() && !report->unsupported.empty()) {
      row.skip_reason = fmt::format("capability declines {} ({}: {})", what,
                                    report->unsupported[0].first, report->unsupported[0].second);
      return nullptr;
    }
    absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
    if (!exe.ok()) {
      row.Fail("compile failed: " + std::string(exe.status().message()));
      return nullptr;
    }
    return std::move(*exe);
  }

  void Donation(Row& row) {
    if (plugin->api_minor() < 3) {
      row.skip_reason =
          fmt::format("the plugin declares ABI 1.{}: no donation", plugin->api_minor());
      return;
    }
    const std::string text =
        "HloModule plugin_test_donation\n\nENTRY main {\n  p0 = f32[64,64] parameter(0)\n"
        "  p1 = f32[64,64] parameter(1)\n  ROOT r = f32[64,64] add(f32[64,64] p0, f32[64,64] "
        "p1)\n}\n";
    std::unique_ptr<Executable> exe = CompileForRow(row, text, "the add module");
    if (exe == nullptr) return;
    const Shape shape(PrimitiveType::F32, {64, 64});
    const Literal a = MakeRandomLiteral(shape, seed * 11), b = MakeRandomLiteral(shape, seed * 13);
    std::vector<Literal> results;
    for (const bool donate : {false, true}) {
      absl::StatusOr<DeviceBuffer> da = plugin->ToDevice(a), db = plugin->ToDevice(b);
      if (!da.ok() || !db.ok()) {
        row.Fail("buffer_from_host failed");
        return;
      }
      const DeviceBuffer* args[] = {&*da, &*db};
      const bool flags[] = {donate, false};
      absl::StatusOr<std::vector<DeviceBuffer>> out =
          exe->ExecuteBuffers(args, std::span<const bool>(flags, 2));
      if (!out.ok() || out->size() != 1) {
        row.Fail(
            fmt::format("execute{} failed: {}", donate ? " with argument 0 donated" : "",
                        out.ok() ? "wrong output count" : std::string(out.status().message())));
        return;
      }
      absl::StatusOr<Literal> got = (*out)[0].ToLiteral();
      absl::StatusOr<Literal> kept = db->ToLiteral();
      row.Check(got.ok(), "the output cannot be read back");
      row.Check(kept.ok() && kept->size_bytes() == b.size_bytes() &&
                    std::memcmp(kept->untyped_data(), b.untyped_data(), b.size_bytes()) == 0,
                "the argument that was not donated changed");
      if (!got.ok()) return;
      results.push_back(std::move(*got));
    }
    row.Check(std::memcmp(results[0].untyped_data(), results[1].untyped_data(),
                          results[0].size_bytes()) == 0,
              "the run with argument 0 donated differs from the run without");
    row.Note("f32[64,64] add, argument 0 donated");
  }

  // ---- custom-calls (ABI 1.5): a host handler this process registers, called by a plugin
  // that claims the custom-call; its answer and a failing handler's error must come through.
  static int32_t AxpyHandler(void*, const KILN_HostArray* in, size_t num_in, KILN_HostArray* out,
                             size_t num_out, const char*, char* error, size_t error_size) {
    if (num_in != 2 || num_out != 1 || in[0].dtype != KILN_DTYPE_F32 ||
        in[0].byte_size != out[0].byte_size || in[1].byte_size != out[0].byte_size) {
      std::snprintf(error, error_size, "plugin-test axpy: wrong operands");
      return 1;
    }
    const float* a = static_cast<const float*>(in[0].data);
    const float* b = static_cast<const float*>(in[1].data);
    float* r = static_cast<float*>(out[0].data);
    for (size_t i = 0; i < out[0].byte_size / sizeof(float); ++i) r[i] = 2 * a[i] + b[i];
    return 0;
  }
  static int32_t FailingHandler(void*, const KILN_HostArray*, size_t, KILN_HostArray*, size_t,
                                const char*, char* error, size_t error_size) {
    std::snprintf(error, error_size, "plugin-test: this handler always fails");
    return 5;
  }
  void CustomCalls(Row& row) {
    if (plugin->api_minor() < 5) {
      row.skip_reason =
          fmt::format("the plugin declares ABI 1.{}: no host custom-calls", plugin->api_minor());
      return;
    }
    RegisterCustomCall("kiln.plugin_test.axpy", AxpyHandler, nullptr);
    RegisterCustomCall("kiln.plugin_test.fail", FailingHandler, nullptr);
    const std::string text =
        "HloModule plugin_test_custom_calls\n\nENTRY main {\n  p0 = f32[16,8] parameter(0)\n"
        "  p1 = f32[16,8] parameter(1)\n  c = f32[16,8] custom-call(p0, p1), "
        "custom_call_target=\"kiln.plugin_test.axpy\"\n  ROOT r = f32[16,8] multiply(c, p0)\n}\n";
    absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
    if (!report.ok()) {
      row.Fail("capability failed: " + std::string(report.status().message()));
      return;
    }
    if (!report->unsupported.empty()) {
      row.skip_reason = fmt::format("capability declines the host custom-call ({}: {})",
                                    report->unsupported[0].first, report->unsupported[0].second);
      return;
    }
    absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
    if (!exe.ok()) {
      row.Fail("it claims the custom-call but compile fails: " +
               std::string(exe.status().message()));
      return;
    }
    const Shape shape(PrimitiveType::F32, {16, 8});
    const Literal a = MakeRandomLiteral(shape, seed * 17), b = MakeRandomLiteral(shape, seed * 19);
    absl::StatusOr<std::vector<Literal>> got = (*exe)->Execute(std::vector<Literal>{a, b});
    if (!got.ok() || got->size() != 1) {
      row.Fail("execute failed: " + (got.ok() ? std::string("wrong output count")
                                              : std::string(got.status().message())));
      return;
    }
    const float* x = a.data<float>().data();
    const float* y = b.data<float>().data();
    const float* r = (*got)[0].data<float>().data();
    int wrong = 0;
    for (int64_t i = 0; i < shape.num_elements(); ++i)
      wrong += std::fabs(r[i] - (2 * x[i] + y[i]) * x[i]) > 1e-5f * (1 + std::fabs(r[i]));
    row.Check(wrong == 0, fmt::format("{} of 128 elements differ from (2a + b) * a", wrong));
    // A handler that fails: the execute fails with its reason, the process goes on.
    std::string failing = text;
    failing.replace(failing.find("kiln.plugin_test.axpy"), 21, "kiln.plugin_test.fail");
    absl::StatusOr<std::unique_ptr<Executable>> bad = plugin->CompileText(failing);
    if (bad.ok()) {
      absl::StatusOr<std::vector<Literal>> out = (*bad)->Execute(std::vector<Literal>{a, b});
      row.Check(!out.ok() &&
                    std::string(out.status().message()).find("always fails") != std::string::npos,
                out.ok() ? std::string("a failing handler's run succeeded")
                         : "the failing handler's reason is lost: " +
                               std::string(out.status().message()));
    } else {
      row.Fail("compile of the failing handler's module: " + std::string(bad.status().message()));
    }
    row.Note("f32[16,8] axpy handler, then a handler that fails");
  }

  // ---- memory-stats (ABI 1.5): device_memory_stats counts a new buffer's bytes and forgets
  // them when it is destroyed.
  void MemoryStats(Row& row) {
    if (!KILN_API_HAS(raw.api, device_memory_stats)) {
      row.skip_reason = "the plugin has no device_memory_stats (optional, ABI 1.5)";
      return;
    }
    absl::StatusOr<DeviceMemoryStats> before = plugin->MemoryStats();
    if (!before.ok()) {
      row.Fail("device_memory_stats failed: " + std::string(before.status().message()));
      return;
    }
    const Shape shape(PrimitiveType::F32, {256, 256});  // 256 KiB
    const int64_t bytes = shape.byte_size();
    std::optional<absl::StatusOr<DeviceBuffer>> buffer;
    buffer.emplace(plugin->ToDevice(MakeRandomLiteral(shape, seed)));
    if (!buffer->ok()) {
      row.Fail("buffer_from_host failed");
      return;
    }
    absl::StatusOr<DeviceMemoryStats> during = plugin->MemoryStats();
    buffer.reset();
    absl::StatusOr<DeviceMemoryStats> after = plugin->MemoryStats();
    if (!during.ok() || !after.ok()) {
      row.Fail("device_memory_stats failed");
      return;
    }
    // Other threads of this process may hold buffers too: the checks allow for more, not less.
    row.Check(during->bytes_in_use - before->bytes_in_use >= bytes,
              fmt::format("a {}-byte buffer raised bytes_in_use by {}", bytes,
                          during->bytes_in_use - before->bytes_in_use));
    row.Check(during->num_buffers > before->num_buffers, "num_buffers did not count the buffer");
    row.Check(during->peak_bytes_in_use >= during->bytes_in_use, "peak below bytes_in_use");
    row.Check(after->bytes_in_use <= during->bytes_in_use - bytes,
              "destroying the buffer did not lower bytes_in_use");
    row.Check(before->bytes_limit == -1 || before->bytes_limit >= bytes,
              fmt::format("bytes_limit {}", before->bytes_limit));
    row.Note(fmt::format("{} bytes in use with a 256 KiB buffer, limit {}", during->bytes_in_use,
                         before->bytes_limit));
  }

  // ---- collectives (ABI 1.4): a module of every collective kind on 4 devices, one thread
  // each, through the core's in-process transport, equals the evaluator's answer for each
  // device (a plugin that ignores the transport sees groups of 4 on one device and fails).
  void Collectives(Row& row) {
    if (plugin->api_minor() < 4) {
      row.skip_reason =
          fmt::format("the plugin declares ABI 1.{}: no collectives", plugin->api_minor());
      return;
    }
    const std::string text = R"(HloModule plugin_test_collectives
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main (a: f32[4,8]) -> (f32[4,8], f32[16,8], f32[4,8], f32[4,8], u32[]) {
  %a = f32[4,8] parameter(0)
  %e = f32[4,8] exponential(%a)
  %ar = f32[4,8] all-reduce(%e), replica_groups={}, to_apply=%sum
  %ag = f32[16,8] all-gather(%a), replica_groups={{0,1,2,3}}, dimensions={0}
  %a2a = f32[4,8] all-to-all(%a), replica_groups={}, dimensions={1}
  %cp = f32[4,8] collective-permute(%a), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %id = u32[] replica-id()
  ROOT %t = (f32[4,8], f32[16,8], f32[4,8], f32[4,8], u32[]) tuple(%ar, %ag, %a2a, %cp, %id)
}
)";
    absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
    if (report.ok() && !report->unsupported.empty()) {
      row.skip_reason = fmt::format("capability declines collectives ({}: {})",
                                    report->unsupported[0].first, report->unsupported[0].second);
      return;
    }
    absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
    if (!exe.ok() || !module.ok()) {
      row.Fail("compile failed: " +
               std::string((exe.ok() ? module.status() : exe.status()).message()));
      return;
    }
    constexpr int kDevices = 4;
    const DeviceGrid grid{kDevices, 1};
    std::vector<std::vector<Literal>> args(kDevices);
    for (int d = 0; d < kDevices; ++d)
      args[d].push_back(MakeRandomLiteral(Shape(PrimitiveType::F32, {4, 8}), seed * 17 + d));
    absl::StatusOr<std::vector<Literal>> want = EvaluateOnDevices(**module, grid, args);
    if (!want.ok()) {
      row.Fail("the evaluator failed: " + std::string(want.status().message()));
      return;
    }
    std::vector<std::vector<Literal>> got(kDevices);
    absl::Status ran = RunOnLocalDevices(
        grid,
        [&](int d) -> absl::Status {
          absl::StatusOr<std::vector<Literal>> out = (*exe)->Execute(args[d]);
          if (!out.ok()) return out.status();
          got[d] = std::move(*out);
          return absl::OkStatus();
        },
        /*timeout_s=*/60);
    if (!ran.ok()) {
      row.Fail("the run on 4 devices failed: " + std::string(ran.message()));
      return;
    }
    for (int d = 0; d < kDevices; ++d) {
      Literal whole = (*want)[d];
      const std::vector<Literal> leaves = std::move(whole).DecomposeTuple();
      if (got[d].size() != leaves.size()) {
        row.Fail(
            fmt::format("device {}: {} outputs, expected {}", d, got[d].size(), leaves.size()));
        return;
      }
      for (size_t i = 0; i < leaves.size(); ++i) {
        Comparison c = CompareLiterals(got[d][i], leaves[i]);
        row.Check(c.ok, fmt::format("device {} output {} differs from the evaluator's: {}", d, i,
                                    c.detail));
      }
    }
    row.Note("all-reduce, all-gather, all-to-all, collective-permute, replica-id on 4 devices");
  }

  // ---- allocation-failure: a result of 2^62 bytes is an error, not a crash.
  // ---- devices (ABI 1.8): with several devices per client, buffers and runs stay on the
  // device they are put on, a run refuses an argument on another device, and copies move
  // the bytes between devices unchanged.
  void Devices(Row& row) {
    const size_t n = plugin->device_count();
    if (n < 2) {
      row.skip_reason = fmt::format(
          "the client has {} device{} (a host plugin has KILN_HOST_DEVICE_COUNT of them)", n,
          n == 1 ? "" : "s");
      return;
    }
    if (plugin->api_minor() < 8) {
      row.Fail(fmt::format("{} devices, but ABI 1.{}: buffers cannot say where they are", n,
                           plugin->api_minor()));
      return;
    }
    const std::string text =
        "HloModule plugin_test_devices\n\nENTRY main {\n  p0 = f32[16] parameter(0)\n"
        "  p1 = f32[16] parameter(1)\n  ROOT r = f32[16] add(f32[16] p0, f32[16] p1)\n}\n";
    std::unique_ptr<Executable> exe = CompileForRow(row, text, "the add module");
    if (exe == nullptr) return;
    const Shape shape(PrimitiveType::F32, {16});
    const Literal a = MakeRandomLiteral(shape, seed * 19), b = MakeRandomLiteral(shape, seed * 23);
    const int last = static_cast<int>(n) - 1;
    absl::StatusOr<DeviceBuffer> da = plugin->ToDeviceAt(a, last), db = plugin->ToDeviceAt(b, last);
    absl::StatusOr<DeviceBuffer> b0 = plugin->ToDeviceAt(b, 0);
    if (!da.ok() || !db.ok() || !b0.ok()) {
      row.Fail("buffer_from_host on device " + std::to_string(last) + " failed");
      return;
    }
    absl::StatusOr<int> where = da->device_index();
    row.Check(where.ok() && *where == last,
              fmt::format("a buffer put on device {} says device {}", last,
                          where.ok() ? std::to_string(*where) : "?"));
    const DeviceBuffer* on_last[] = {&*da, &*db};
    absl::StatusOr<std::vector<DeviceBuffer>> out = exe->ExecuteBuffers(on_last);
    if (!out.ok() || out->size() != 1) {
      row.Fail("a run on device " + std::to_string(last) + " failed: " +
               (out.ok() ? "wrong output count" : std::string(out.status().message())));
      return;
    }
    where = (*out)[0].device_index();
    row.Check(where.ok() && *where == last,
              fmt::format("the output of a run on device {} is on device {}", last,
                          where.ok() ? std::to_string(*where) : "?"));
    absl::StatusOr<Literal> got = (*out)[0].ToLiteral();
    bool right = got.ok();
    for (int64_t i = 0; right && i < 16; ++i)
      right = got->data<float>()[i] == a.data<float>()[i] + b.data<float>()[i];
    row.Check(right, "the run on device " + std::to_string(last) + " computes a wrong sum");
    const DeviceBuffer* mixed[] = {&*da, &*b0};
    absl::StatusOr<std::vector<DeviceBuffer>> refused = exe->ExecuteBuffers(mixed);
    row.Check(!refused.ok() && refused.status().code() == absl::StatusCode::kInvalidArgument,
              "a run with arguments on two devices did not fail with INVALID_ARGUMENT");
    absl::StatusOr<DeviceBuffer> moved = da->CopyToDevice(0);
    if (!moved.ok()) {
      row.Fail("buffer_copy_to_device failed: " + std::string(moved.status().message()));
      return;
    }
    where = moved->device_index();
    absl::StatusOr<Literal> back = moved->ToLiteral();
    row.Check(where.ok() && *where == 0 && back.ok() &&
                  std::memcmp(back->untyped_data(), a.untyped_data(), a.size_bytes()) == 0,
              "a copy to device 0 is elsewhere or has other bytes");
    const DeviceBuffer* on_first[] = {&*moved, &*b0};
    row.Check(exe->ExecuteBuffers(on_first).ok(), "a run on device 0 after a copy failed");
    // An executable compiled for the last device alone refuses a run on device 0.
    CompileOptions assigned;
    assigned.device_assignment = {last};
    absl::StatusOr<std::unique_ptr<Executable>> only_last = plugin->CompileText(text, assigned);
    if (!only_last.ok()) {
      row.Fail("compile with a device assignment failed: " +
               std::string(only_last.status().message()));
      return;
    }
    row.Check((*only_last)->ExecuteBuffers(on_last).ok(), "a run on the assigned device failed");
    absl::StatusOr<std::vector<DeviceBuffer>> outside = (*only_last)->ExecuteBuffers(on_first);
    row.Check(!outside.ok() && outside.status().code() == absl::StatusCode::kInvalidArgument,
              "an executable assigned to device " + std::to_string(last) +
                  " ran on device 0 without an INVALID_ARGUMENT error");
    row.Note(
        fmt::format("{} devices; runs on device {}, a copy to device 0, an assignment", n, last));
  }

  // ---- async (ABI 1.7): a chain of asynchronous runs, each given the previous one's output
  // before it is ready (and the previous input destroyed at once), equals the same chain run
  // synchronously; events end once; a run that fails fails its event and its outputs'.
  void Async(Row& row) {
    if (!plugin->has_events()) {
      row.skip_reason =
          plugin->api_minor() < 7
              ? fmt::format("the plugin declares ABI 1.{}: no events", plugin->api_minor())
              : std::string("the plugin has no event entries (optional, ABI 1.7)");
      return;
    }
    const std::string text =
        "HloModule plugin_test_async\n\nENTRY main {\n  p = f32[128,128] parameter(0)\n"
        "  c = f32[] constant(0.5)\n  h = f32[128,128] broadcast(f32[] c), dimensions={}\n"
        "  t = f32[128,128] tanh(f32[128,128] p)\n"
        "  m = f32[128,128] multiply(f32[128,128] t, f32[128,128] h)\n"
        "  ROOT r = f32[128,128] add(f32[128,128] m, f32[128,128] p)\n}\n";
    std::unique_ptr<Executable> exe = CompileForRow(row, text, "the chain's module");
    if (exe == nullptr) return;
    const Literal x = MakeRandomLiteral(Shape(PrimitiveType::F32, {128, 128}), seed * 17);
    constexpr int kRuns = 8;
    // The reference: the same chain, each run waited for.
    absl::StatusOr<DeviceBuffer> first = plugin->ToDevice(x);
    if (!first.ok()) {
      row.Fail("buffer_from_host failed");
      return;
    }
    std::optional<DeviceBuffer> now(std::move(*first));
    for (int k = 0; k < kRuns; ++k) {
      const DeviceBuffer* args[] = {&*now};
      absl::StatusOr<std::vector<DeviceBuffer>> out = exe->ExecuteBuffers(args);
      if (!out.ok() || out->size() != 1) {
        row.Fail("a synchronous run failed");
        return;
      }
      now.emplace(std::move((*out)[0]));
    }
    absl::StatusOr<Literal> want = now->ToLiteral();
    // The chain, queued at once.
    first = plugin->ToDevice(x);
    if (!first.ok() || !want.ok()) {
      row.Fail("buffer_from_host or buffer_to_host failed");
      return;
    }
    now.emplace(std::move(*first));
    std::vector<std::unique_ptr<Event>> done;
    int queued = 0;
    for (int k = 0; k < kRuns; ++k) {
      const DeviceBuffer* args[] = {&*now};
      absl::StatusOr<Executable::AsyncRun> run = exe->ExecuteBuffersAsync(args);
      if (!run.ok() || run->outputs.size() != 1) {
        row.Fail("asynchronous execute " + std::to_string(k) + " failed: " +
                 (run.ok() ? "wrong output count" : std::string(run.status().message())));
        return;
      }
      now.emplace(std::move(run->outputs[0]));  // destroys the previous input right away
      queued += run->done != nullptr;
      if (run->done != nullptr) done.push_back(std::move(run->done));
    }
    // A callback on the last run: called exactly once (maybe on another thread).
    auto calls = std::make_shared<std::atomic<int>>(0);
    const uint64_t unexpected_before = Event::UnexpectedCallbacks();
    if (!done.empty()) {
      absl::Status on = done.back()->OnReady([calls](absl::Status s) { calls->fetch_add(1); });
      row.Check(on.ok(), "event_on_ready failed: " + std::string(on.message()));
    }
    absl::StatusOr<std::unique_ptr<Event>> ready = now->ReadyEvent();
    row.Check(ready.ok(), "buffer_ready_event failed");
    if (ready.ok() && *ready != nullptr) {
      absl::Status s = (*ready)->Await();
      row.Check(s.ok(), "the last output's ready event failed: " + std::string(s.message()));
    }
    for (const auto& d : done) {
      absl::Status s = d->Await();
      row.Check(s.ok(), "a run's event failed: " + std::string(s.message()));
      absl::StatusOr<bool> is = d->IsReady();
      row.Check(is.ok() && *is, "event_is_ready says no after event_await returned");
    }
    absl::StatusOr<Literal> got = now->ToLiteral();
    row.Check(
        got.ok() && got->size_bytes() == want->size_bytes() &&
            std::memcmp(got->untyped_data(), want->untyped_data(), want->size_bytes()) == 0,
        fmt::format("{} chained asynchronous runs differ from the same runs waited for", kRuns));
    for (int waited = 0; !done.empty() && calls->load() == 0 && waited < 1000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // room for a second call
    if (!done.empty()) {
      row.Check(calls->load() == 1 && Event::UnexpectedCallbacks() == unexpected_before,
                fmt::format("the on_ready callback ran {} times, not once",
                            calls->load() + Event::UnexpectedCallbacks() - unexpected_before));
    }
    // A run done to its end after a queued one that reads what it donates comes after it.
    absl::StatusOr<DeviceBuffer> shared = plugin->ToDevice(x), fresh = plugin->ToDevice(x);
    if (shared.ok() && fresh.ok()) {
      const DeviceBuffer* args[] = {&*shared};
      absl::StatusOr<Executable::AsyncRun> queued_run = exe->ExecuteBuffersAsync(args);
      const bool donate[] = {true};
      absl::StatusOr<std::vector<DeviceBuffer>> donating =
          exe->ExecuteBuffers(args, std::span<const bool>(donate, 1));
      const DeviceBuffer* reference_args[] = {&*fresh};
      absl::StatusOr<std::vector<DeviceBuffer>> one_step = exe->ExecuteBuffers(reference_args);
      if (queued_run.ok() && donating.ok() && one_step.ok()) {
        absl::StatusOr<Literal> a = queued_run->outputs[0].ToLiteral();
        absl::StatusOr<Literal> b = (*one_step)[0].ToLiteral();
        row.Check(a.ok() && b.ok() &&
                      std::memcmp(a->untyped_data(), b->untyped_data(), b->size_bytes()) == 0,
                  "a queued run read a buffer that a later run, done at once, donated");
      } else {
        row.Fail("a queued run followed by a donating one failed");
      }
    }
    std::string failure = AsyncFailure(row);
    row.Note(fmt::format("{} runs chained, {} queued; {}", kRuns, queued, failure));
  }

  // A run that fails asynchronously (a result too big for memory): its event and its
  // output's ready event must fail. Says what was tried.
  std::string AsyncFailure(Row& row) {
    const std::string text =
        "HloModule plugin_test_async_huge\n\nENTRY main {\n  c = f32[] constant(1)\n"
        "  ROOT b = f32[1073741824,1073741824] broadcast(f32[] c), dimensions={}\n}\n";
    absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
    if (!report.ok() || !report->unsupported.empty()) return "the failing run is declined";
    absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
    if (!exe.ok()) return "the failing run is refused at compile";
    absl::StatusOr<Executable::AsyncRun> run = (*exe)->ExecuteBuffersAsync({});
    if (!run.ok()) return "the failing run fails at execute";
    if (run->done == nullptr) {
      row.Fail("a 2^62-byte result executed without an error");
      return "";
    }
    absl::Status s = run->done->Await();
    row.Check(!s.ok(), "the event of a run with a 2^62-byte result ended well");
    absl::StatusOr<std::unique_ptr<Event>> ready = run->outputs[0].ReadyEvent();
    row.Check(ready.ok() && *ready != nullptr && !(*ready)->Await().ok(),
              "the output of a failed run has a ready event that ends well");
    return "a failing run fails its event: " + std::string(s.message()).substr(0, 60);
  }

  void AllocationFailure(Row& row) {
    const std::string text =
        "HloModule plugin_test_huge\n\nENTRY main {\n  c = f32[] constant(1)\n"
        "  ROOT b = f32[1073741824,1073741824] broadcast(f32[] c), dimensions={}\n}\n";
    absl::StatusOr<CapabilityReport> report = plugin->Capability(text);
    if (report.ok() && !report->unsupported.empty()) {
      row.skip_reason = fmt::format("capability declines the broadcast module ({}: {})",
                                    report->unsupported[0].first, report->unsupported[0].second);
      return;
    }
    if (report.ok() && report->supported.size() < 2) {
      row.skip_reason = "capability does not accept the broadcast module";
      return;
    }
    auto acceptable = [](const absl::Status& s) {
      return s.code() == absl::StatusCode::kResourceExhausted ||
             s.code() == absl::StatusCode::kOutOfRange;
    };
    absl::StatusOr<std::unique_ptr<Executable>> exe = plugin->CompileText(text);
    if (!exe.ok()) {
      row.Check(acceptable(exe.status()),
                fmt::format("compile fails with {} rather than RESOURCE_EXHAUSTED: {}",
                            absl::StatusCodeToString(exe.status().code()),
                            std::string(exe.status().message()).substr(0, 160)));
      row.Note("refused at compile: " + std::string(exe.status().message()).substr(0, 100));
      return;
    }
    absl::StatusOr<std::vector<Literal>> out = (*exe)->Execute({});
    if (out.ok()) {
      row.Fail("a 2^62-byte result executed without an error");
      return;
    }
    row.Check(acceptable(out.status()),
              fmt::format("execute fails with {} rather than RESOURCE_EXHAUSTED: {}",
                          absl::StatusCodeToString(out.status().code()),
                          std::string(out.status().message()).substr(0, 160)));
    row.Note("refused at execute: " + std::string(out.status().message()).substr(0, 100));
  }
};

constexpr const char* kHelp =
    "usage: kiln plugin-test PATH.so|NAME [--json] [--seed N] [--modules N]\n"
    "Conformance and differential suite for one plugin, built or installed: loads it (a\n"
    "path, or a name from the plugin search path), checks its C ABI (table and versions,\n"
    "args structs of the 1.0 layout and padded ones, error objects, handle lifecycles,\n"
    "capability against compile, buffer round trips for every dtype), runs random modules\n"
    "of every opcode family on it and on the interpreter and compares them (tools/compare\n"
    "tolerances), runs one executable from 16 threads, runs with a donated argument (ABI\n"
    "1.3), chains asynchronous runs (1.7), runs on a second device (1.8), and asks for a\n"
    "result too big for memory. Each area is "
    "one row: PASS, FAIL or SKIP\n"
    "with a reason and counts. The row name\n"
    "is printed before the area runs, so a plugin that crashes shows where.\n"
    "  --json       a machine-readable report on stdout (progress goes to stderr)\n"
    "  --seed N     seed of the random modules and inputs (default 1)\n"
    "  --modules N  random modules per opcode family (default 6)\n"
    "Exit status: 0 all rows PASS or SKIP, 3 some row FAILs, 1 the plugin cannot be loaded,\n"
    "2 usage error.\n";

}  // namespace

int PluginTestCommand(const std::vector<std::string>& args) {
  FlagSpec spec;
  spec.with_value = {"seed", "modules"};
  spec.switches = {"help", "json"};
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, spec);
  if (!flags.ok())
    return ReportError("plugin-test", std::string(flags.status().message()), kExitUsage);
  if (flags->Has("help")) {
    std::cout << kHelp;
    return kExitOk;
  }
  if (flags->positional.size() != 1) {
    std::cerr << kHelp;
    return kExitUsage;
  }
  Suite suite;
  try {
    suite.seed = std::stoull(flags->Get("seed", "1"));
    suite.modules = std::stoi(flags->Get("modules", "6"));
  } catch (const std::exception&) {
    return ReportError("plugin-test", "--seed and --modules take numbers", kExitUsage);
  }
  if (suite.modules < 0) return ReportError("plugin-test", "--modules must be >= 0", kExitUsage);
  const bool json = flags->Has("json");
  const std::string target = flags->positional[0];

  absl::StatusOr<PluginRegistry> registry = PluginRegistry::Discover();
  if (!registry.ok()) return ReportError("plugin-test", std::string(registry.status().message()));
  std::unique_ptr<Plugin> owned;
  std::string path;
  const bool is_path = target.find('/') != std::string::npos ||
                       target.find(".so") != std::string::npos || std::filesystem::exists(target);
  if (is_path) {
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(target, ec);
    for (const PluginEntry& e : registry->entries()) {
      if (e.plugin && std::filesystem::weakly_canonical(e.path, ec) == canonical)
        suite.plugin = e.plugin.get();
    }
    if (suite.plugin == nullptr) {
      absl::StatusOr<std::unique_ptr<Plugin>> loaded = Plugin::Load(target);
      if (!loaded.ok())
        return ReportError("plugin-test",
                           fmt::format("{}: {}", target, std::string(loaded.status().message())));
      owned = std::move(*loaded);
      suite.plugin = owned.get();
    }
  } else {
    const PluginEntry* e = registry->Find(target);
    if (e == nullptr || e->plugin == nullptr) {
      return ReportError("plugin-test",
                         e == nullptr
                             ? fmt::format("no plugin named '{}' (see kiln devices)", target)
                             : fmt::format("plugin '{}' is rejected: {}", target, e->reason));
    }
    suite.plugin = e->plugin.get();
  }
  path = suite.plugin->path();
  // The raw table: the same library, opened again (it is already loaded, so no new copy).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto* get_api =
      handle ? reinterpret_cast<KILN_GetApi_Fn*>(dlsym(handle, KILN_GET_API_SYMBOL)) : nullptr;
  suite.raw.api = get_api ? get_api() : nullptr;
  if (suite.raw.api == nullptr)
    return ReportError("plugin-test", fmt::format("{}: cannot reopen the plugin's table", path));
  absl::StatusOr<Plugin*> reference = registry->Get("interpreter");

  std::vector<Row> rows;
  std::ostream& progress = json ? std::cerr : std::cout;
  if (json) {
    progress << fmt::format("plugin-test: {} ({})\n", suite.plugin->name(), path);
  } else {
    progress << fmt::format("plugin {} ({}) abi {}.{} priority {}\n", suite.plugin->name(), path,
                            suite.plugin->api_major(), suite.plugin->api_minor(),
                            suite.plugin->default_priority());
    progress << fmt::format("{:<28} {:<6} {:>6} {:>6} {:>7}  {}\n", "AREA", "RESULT", "CHECKS",
                            "FAILED", "SKIPPED", "DETAILS");
  }
  auto run = [&](const std::string& name, const std::function<void(Row&)>& body,
                 const std::string& skip_reason = "") {
    Row row;
    row.name = name;
    if (json) {
      progress << "plugin-test: running " << name << std::endl;
    } else {
      progress << fmt::format("{:<28} ", name) << std::flush;
    }
    if (!skip_reason.empty()) {
      row.skip_reason = skip_reason;
    } else {
      try {
        body(row);
      } catch (const std::exception& e) {
        row.Fail(std::string("exception: ") + e.what());
      }
    }
    if (!json) {
      progress << fmt::format("{:<6} {:>6} {:>6} {:>7}  {}\n", row.Result(), row.checks, row.failed,
                              row.skipped, row.Reason())
               << std::flush;
    }
    rows.push_back(std::move(row));
  };

  const std::string unavailable =
      suite.plugin->available() ? "" : "plugin unavailable: " + suite.plugin->unavailable_reason();
  std::string no_reference = unavailable;
  if (no_reference.empty() && !reference.ok()) {
    no_reference = "no reference: " + std::string(reference.status().message());
  }
  if (reference.ok()) suite.reference = *reference;

  run("abi-table", [&](Row& r) { suite.AbiTable(r); });
  run(
      "args-struct-sizes", [&](Row& r) { suite.ArgsStructSizes(r); }, unavailable);
  run(
      "error-objects", [&](Row& r) { suite.ErrorObjects(r); }, unavailable);
  run(
      "handle-lifecycle", [&](Row& r) { suite.HandleLifecycle(r); }, unavailable);
  run(
      "capability", [&](Row& r) { suite.Capability(r); }, unavailable);
  run(
      "buffer-roundtrip", [&](Row& r) { suite.BufferRoundtrip(r); }, unavailable);
  const std::vector<std::string>& families = RandomModuleFamilies();
  for (size_t i = 0; i < families.size(); ++i) {
    run(
        "differential/" + families[i], [&](Row& r) { suite.Differential(r, families[i], i); },
        no_reference);
  }
  run(
      "threads", [&](Row& r) { suite.Threads(r); }, unavailable);
  run(
      "donation", [&](Row& r) { suite.Donation(r); }, unavailable);
  run(
      "collectives", [&](Row& r) { suite.Collectives(r); }, unavailable);
  run(
      "custom-calls", [&](Row& r) { suite.CustomCalls(r); }, unavailable);
  run(
      "memory-stats", [&](Row& r) { suite.MemoryStats(r); }, unavailable);
  run(
      "async", [&](Row& r) { suite.Async(r); }, unavailable);
  run(
      "devices", [&](Row& r) { suite.Devices(r); }, unavailable);
  run(
      "allocation-failure", [&](Row& r) { suite.AllocationFailure(r); }, unavailable);

  int failed = 0, passed = 0, skipped = 0;
  for (const Row& r : rows) {
    std::string result = r.Result();
    (result == "FAIL" ? failed : result == "PASS" ? passed : skipped) += 1;
  }
  const std::string overall = failed > 0 ? "FAIL" : "PASS";
  if (json) {
    std::string out = "{\n";
    out += fmt::format(
        "  \"plugin\": {{\"name\": {}, \"path\": {}, \"api_major\": {}, \"api_minor\": {}, "
        "\"priority\": {}, \"available\": {}, \"unavailable_reason\": {}}},\n",
        JsonString(suite.plugin->name()), JsonString(path), suite.plugin->api_major(),
        suite.plugin->api_minor(), suite.plugin->default_priority(),
        suite.plugin->available() ? "true" : "false",
        JsonString(suite.plugin->unavailable_reason()));
    out +=
        fmt::format("  \"seed\": {}, \"modules\": {},\n  \"rows\": [\n", suite.seed, suite.modules);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::vector<std::string> failures;
      for (const std::string& f : r.failures) failures.push_back(JsonString(f));
      out += fmt::format(
          "    {{\"name\": {}, \"result\": \"{}\", \"reason\": {}, \"checks\": {}, \"failed\": {}, "
          "\"skipped\": {}, \"failures\": [{}]}}{}\n",
          JsonString(r.name), r.Result(), JsonString(r.Reason()), r.checks, r.failed, r.skipped,
          fmt::join(failures, ", "), i + 1 < rows.size() ? "," : "");
    }
    out += fmt::format(
        "  ],\n  \"passed\": {}, \"failed\": {}, \"skipped\": {}, \"result\": \"{}\"\n}}\n", passed,
        failed, skipped, overall);
    std::cout << out;
  } else {
    std::cout << fmt::format("{}: {} passed, {} failed, {} skipped\n", overall, passed, failed,
                             skipped);
  }
  // The handle stays open: the plugin's library must outlive every Plugin using it.
  return failed > 0 ? kExitMismatch : kExitOk;
}

}  // namespace kiln
