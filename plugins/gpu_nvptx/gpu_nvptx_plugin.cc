// The gpu-nvptx plugin: compiles HLO to PTX kernels with the shared LLVM elemental emitter
// (GPU kernel mode) and runs them through the CUDA driver, which is dlopen'ed at initialize;
// without a driver the plugin reports itself unavailable with the reason. Instructions the
// emitter cannot do run on the host HLO evaluator (reported unsupported by capability).
// Buffers live on the host in this first slice; serialized form is HLO text.
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/literal.h"
#include "hlo/module.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"
#include "kiln_plugin_api.h"
#include "plugins/common/c_api_support.h"
#include "plugins/cpu_llvm/plan.h"
#include "plugins/gpu_nvptx/gpu_executable.h"

using kiln::plugin_support::CheckArgs;
using kiln::plugin_support::Guard;
using kiln::plugin_support::MakeError;

struct KILN_Device {
  int32_t id = 0;
  std::string kind;
};

struct KILN_Client {
  KILN_Device device;
  std::vector<KILN_Device*> devices{&device};
  std::shared_ptr<kiln::gpu::CudaDriver> driver;
  std::shared_ptr<kiln::gpu::Cublas> cublas;  // null: dots are emitted as kernels
};

struct KILN_Executable {
  std::string hlo_text;
  std::unique_ptr<kiln::gpu::GpuExecutable> exe;
  size_t num_outputs = 0;
};

struct KILN_Buffer {
  kiln::Literal literal;
};

namespace {

constexpr const char* kName = "gpu-nvptx";

// The driver, loaded once by initialize; null with the reason when there is none.
struct DriverState {
  std::shared_ptr<kiln::gpu::CudaDriver> driver;
  std::string reason;
  std::shared_ptr<kiln::gpu::Cublas> cublas;  // null: dots are emitted as kernels
  std::string gemm;  // how large dots run, for the "gemm" attribute
};
const DriverState& Driver() {
  static const DriverState state = [] {
    DriverState s;
    auto d = kiln::gpu::CudaDriver::Load();
    if (d.ok()) {
      s.driver = std::shared_ptr<kiln::gpu::CudaDriver>(std::move(*d));
      // cuBLAS is optional; its handle belongs to the driver's context.
      absl::StatusOr<std::unique_ptr<kiln::gpu::Cublas>> c = absl::UnavailableError("no context");
      if (absl::Status st = s.driver->MakeCurrent(); st.ok()) c = kiln::gpu::Cublas::Load();
      else c = st;
      if (c.ok()) {
        s.cublas = std::shared_ptr<kiln::gpu::Cublas>(std::move(*c));
        s.gemm = "cuBLAS (" + s.cublas->library() + ") for large f32 dots";
      } else {
        s.gemm = "emitted kernels (" + std::string(c.status().message()) + ")";
      }
    } else {
      s.gemm = "none (no CUDA driver)";
      s.reason = std::string(d.status().message());
    }
    return s;
  }();
  return state;
}

// A dtype the C ABI may hand us: the array types of hlo PrimitiveType.
bool ValidDType(int d) { return d >= KILN_DTYPE_PRED && d <= KILN_DTYPE_C128; }

absl::StatusOr<std::unique_ptr<kiln::HloModule>> ParseAndVerify(const char* text, size_t size) {
  if (text == nullptr) return absl::InvalidArgumentError("hlo_text is null");
  auto module = kiln::ParseHloModule(std::string_view(text, size), "<module>");
  if (!module.ok()) return module.status();
  if (absl::Status s = kiln::VerifyModule(**module); !s.ok()) return s;
  if ((*module)->entry() == nullptr) return absl::InvalidArgumentError("module has no entry computation");
  return module;
}

KILN_Error* Initialize(KILN_Initialize_Args* args) {
  return Guard("initialize", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Initialize_Args, unavailable_reason),
                            "initialize")) {
      return e;
    }
    // Available when the CUDA driver loads and has a usable GPU.
    const DriverState& d = Driver();
    args->available = d.driver ? 1 : 0;
    args->unavailable_reason = d.driver ? nullptr : d.reason.c_str();
    return nullptr;
  });
}

KILN_Error* Attributes(KILN_Attributes_Args* args) {
  static const KILN_Attribute kAttrs[] = {
      {"version", "0.1.0"},
      {"platform", "cuda"},
      {"description", "LLVM NVPTX elemental codegen run through the CUDA driver API"},
      {"gemm", Driver().gemm.c_str()},
  };
  return Guard("attributes", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Attributes_Args, num_attributes),
                            "attributes")) {
      return e;
    }
    args->attributes = kAttrs;
    args->num_attributes = sizeof(kAttrs) / sizeof(kAttrs[0]);
    return nullptr;
  });
}

KILN_Error* ClientCreate(KILN_Client_Create_Args* args) {
  return Guard("client_create", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Client_Create_Args, client),
                            "client_create")) {
      return e;
    }
    const DriverState& d = Driver();
    if (!d.driver) return MakeError(KILN_ERROR_UNAVAILABLE, "gpu-nvptx is unavailable: " + d.reason);
    auto client = std::make_unique<KILN_Client>();
    client->driver = d.driver;
    client->cublas = d.cublas;
    client->device.kind = "cuda:" + d.driver->device_name() + " (" + d.driver->TargetSm() + ")";
    args->client = client.release();
    return nullptr;
  });
}

KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* args) {
  return Guard("client_destroy", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Client_Destroy_Args, client),
                            "client_destroy")) {
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

// Why a while/conditional/call cannot run wholly on the GPU: the first instruction of its
// computations (nested ones included) that would run on the host evaluator; "" when none.
std::string HostStepInCalledPlans(const kiln::cpu::Plan& plan, const kiln::cpu::Step& step) {
  for (int c : step.called) {
    for (const kiln::cpu::Step& s : plan.called[c].steps) {
      if (s.kind == kiln::cpu::Disposition::kEvaluator)
        return "its computation " + plan.called[c].computation->name() + " has " +
               s.instr->name() + " with no GPU kernel (runs on the host evaluator): " + s.why;
      if (s.kind == kiln::cpu::Disposition::kControlFlow) {
        std::string why = HostStepInCalledPlans(plan, s);
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

KILN_Error* Capability(KILN_Capability_Args* args) {
  return Guard("capability", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Capability_Args, user_data),
                            "capability")) {
      return e;
    }
    if (args->report_supported == nullptr) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "report_supported is null");
    }
    auto module = ParseAndVerify(args->hlo_text, args->hlo_text_size);
    if (!module.ok()) return MakeError(module.status());
    // Supported = compiled to native code (or pure bookkeeping); the instructions the
    // executable would hand to its evaluator fallback are reported unsupported with why.
    kiln::cpu::Plan plan = kiln::cpu::MakePlan(**module, kiln::gpu::GpuPlanOptions());
    for (const kiln::cpu::Step& step : plan.steps) {
      std::string why;
      if (step.kind == kiln::cpu::Disposition::kEvaluator) {
        why = "no GPU kernel (runs on the host evaluator): " + step.why;
      } else if (step.kind == kiln::cpu::Disposition::kControlFlow) {
        why = HostStepInCalledPlans(plan, step);
      }
      if (!why.empty()) {
        if (args->report_unsupported != nullptr)
          args->report_unsupported(args->user_data, step.instr->name().c_str(), why.c_str());
      } else {
        args->report_supported(args->user_data, step.instr->name().c_str());
      }
    }
    for (const auto& [instr, d] : plan.dispositions) {
      if (d == kiln::cpu::Disposition::kInlined)
        args->report_supported(args->user_data, instr->name().c_str());
    }
    return nullptr;
  });
}

KILN_Error* MakeExecutable(KILN_Client* client, std::string text, KILN_Executable** out) {
  if (client == nullptr || client->driver == nullptr)
    return MakeError(KILN_ERROR_INVALID_ARGUMENT, "client is null");
  auto module = ParseAndVerify(text.data(), text.size());
  if (!module.ok()) return MakeError(module.status());
  auto exe = std::make_unique<KILN_Executable>();
  exe->num_outputs = kiln::FlattenShape((*module)->entry()->root()->shape()).size();
  auto compiled = kiln::gpu::GpuExecutable::Create(
      std::shared_ptr<const kiln::HloModule>(std::move(*module)), client->driver, client->cublas);
  if (!compiled.ok()) return MakeError(compiled.status());
  exe->exe = std::move(*compiled);
  exe->hlo_text = std::move(text);
  *out = exe.release();
  return nullptr;
}

KILN_Error* Compile(KILN_Compile_Args* args) {
  return Guard("compile", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Compile_Args, executable), "compile")) {
      return e;
    }
    if (args->hlo_text == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "hlo_text is null");
    return MakeExecutable(args->client, std::string(args->hlo_text, args->hlo_text_size), &args->executable);
  });
}

KILN_Error* ExecutableInfo(KILN_Executable_Info_Args* args) {
  return Guard("executable_info", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Executable_Info_Args, num_outputs),
                            "executable_info")) {
      return e;
    }
    if (args->executable == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "executable is null");
    args->num_parameters = args->executable->exe->module().entry()->num_parameters();
    args->num_outputs = args->executable->num_outputs;
    return nullptr;
  });
}

KILN_Error* ExecutableSerialize(KILN_Executable_Serialize_Args* args) {
  return Guard("executable_serialize", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Executable_Serialize_Args, user_data),
                            "executable_serialize")) {
      return e;
    }
    if (args->executable == nullptr || args->write == nullptr) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "executable or write is null");
    }
    const std::string& text = args->executable->hlo_text;
    args->write(args->user_data, text.data(), text.size());
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
    std::string text(static_cast<const char*>(args->bytes), args->size);
    return MakeExecutable(args->client, std::move(text), &args->executable);
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

KILN_Error* Execute(KILN_Execute_Args* args) {
  return Guard("execute", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Execute_Args, num_outputs), "execute")) {
      return e;
    }
    if (args->executable == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "executable is null");
    const kiln::HloComputation& entry = *args->executable->exe->module().entry();
    if (args->num_arguments != static_cast<size_t>(entry.num_parameters())) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       "expected " + std::to_string(entry.num_parameters()) + " arguments, got " +
                           std::to_string(args->num_arguments));
    }
    if (args->num_outputs != args->executable->num_outputs || args->outputs == nullptr) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       "expected room for " + std::to_string(args->executable->num_outputs) +
                           " outputs, got " + std::to_string(args->num_outputs));
    }
    std::vector<const kiln::Literal*> operands;
    for (size_t i = 0; i < args->num_arguments; ++i) {
      KILN_Buffer* b = args->arguments[i];
      const kiln::HloInstruction* param = entry.parameter(static_cast<int>(i));
      if (b == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "argument " + std::to_string(i) + " is null");
      if (param == nullptr || !b->literal.shape().Compatible(param->shape())) {
        return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                         "argument " + std::to_string(i) + " has shape " +
                             b->literal.shape().ToString(false) + ", parameter '" +
                             (param ? param->name() : std::string("?")) + "' expects " +
                             (param ? param->shape().ToString(false) : std::string("?")));
      }
      operands.push_back(&b->literal);
    }
    auto result = args->executable->exe->Run(std::span<const kiln::Literal* const>(operands));
    if (!result.ok()) return MakeError(result.status());
    std::vector<kiln::Literal> leaves;
    if (result->IsTuple()) {
      leaves = std::move(*result).DecomposeTuple();
    } else {
      leaves.push_back(std::move(*result));
    }
    if (leaves.size() != args->num_outputs) {
      return MakeError(KILN_ERROR_INTERNAL, "gpu-nvptx returned " + std::to_string(leaves.size()) +
                                                " leaves, expected " + std::to_string(args->num_outputs));
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      args->outputs[i] = new KILN_Buffer{std::move(leaves[i])};
    }
    return nullptr;
  });
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
    if (args->num_dims > 0 && args->dims == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "dims is null");
    std::vector<int64_t> dims(args->dims, args->dims + args->num_dims);
    for (int64_t d : dims) {
      if (d < 0) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "negative dimension");
    }
    kiln::Shape shape(static_cast<kiln::PrimitiveType>(args->dtype), dims);
    if (static_cast<size_t>(shape.byte_size()) != args->data_size) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       "data_size " + std::to_string(args->data_size) + " does not match " +
                           shape.ToString(false) + " (" + std::to_string(shape.byte_size()) + " bytes)");
    }
    if (args->data == nullptr && args->data_size != 0) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "data is null");
    auto buffer = std::make_unique<KILN_Buffer>(KILN_Buffer{kiln::Literal(shape)});
    if (args->data_size != 0) std::memcpy(buffer->literal.untyped_data(), args->data, args->data_size);
    args->buffer = buffer.release();
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
    const kiln::Literal& lit = args->buffer->literal;
    if (args->dst_size != static_cast<size_t>(lit.size_bytes())) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, "dst_size " + std::to_string(args->dst_size) +
                                                        " does not match the buffer's " +
                                                        std::to_string(lit.size_bytes()) + " bytes");
    }
    if (args->dst_size != 0) std::memcpy(args->dst, lit.untyped_data(), args->dst_size);
    return nullptr;
  });
}

KILN_Error* BufferInfo(KILN_Buffer_Info_Args* args) {
  return Guard("buffer_info", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_Info_Args, byte_size),
                            "buffer_info")) {
      return e;
    }
    if (args->buffer == nullptr) return MakeError(KILN_ERROR_INVALID_ARGUMENT, "buffer is null");
    const kiln::Shape& shape = args->buffer->literal.shape();
    args->dtype = static_cast<KILN_DType>(shape.element_type());
    args->dims = shape.dimensions().data();
    args->num_dims = shape.dimensions().size();
    args->byte_size = static_cast<size_t>(args->buffer->literal.size_bytes());
    return nullptr;
  });
}

KILN_Error* BufferDestroy(KILN_Buffer_Destroy_Args* args) {
  return Guard("buffer_destroy", [&]() -> KILN_Error* {
    if (auto* e = CheckArgs(args, KILN_STRUCT_SIZE(KILN_Buffer_Destroy_Args, buffer),
                            "buffer_destroy")) {
      return e;
    }
    delete args->buffer;
    return nullptr;
  });
}

KILN_Api MakeApi() {
  KILN_Api api{};
  api.struct_size = sizeof(KILN_Api);
  api.api_major = KILN_API_MAJOR;
  api.api_minor = KILN_API_MINOR;
  api.plugin_name = kName;
  api.default_priority = KILN_PRIORITY_GPU;
  api.error_destroy = kiln::plugin_support::DestroyError;
  api.error_message = kiln::plugin_support::ErrorMessage;
  api.error_code = kiln::plugin_support::ErrorCode;
  api.initialize = Initialize;
  api.attributes = Attributes;
  api.client_create = ClientCreate;
  api.client_destroy = ClientDestroy;
  api.client_devices = ClientDevices;
  api.device_description = DeviceDescription;
  api.capability = Capability;
  api.compile = Compile;
  api.executable_info = ExecutableInfo;
  api.executable_serialize = ExecutableSerialize;
  api.executable_deserialize = ExecutableDeserialize;
  api.executable_destroy = ExecutableDestroy;
  api.execute = Execute;
  api.buffer_from_host = BufferFromHost;
  api.buffer_to_host = BufferToHost;
  api.buffer_info = BufferInfo;
  api.buffer_destroy = BufferDestroy;
  return api;
}

}  // namespace

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  static const KILN_Api api = MakeApi();
  return &api;
}
