// The kit for plugins whose buffers live in host memory (interpreter, cpu-llvm, and
// gpu-nvptx, which moves them to the device per run): a plugin
// supplies a HostBackend (capability + compile) and gets the whole C ABI from
// host_plugin.cc — clients, devices, host buffers, argument checks, executables serialized
// as HLO text. Private to plugins; the core never includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "kiln_plugin_api.h"

namespace kiln::plugin_support {

// An array a backend keeps in its own device memory between executions. Backends without
// memory of their own never make one: their buffers are host literals.
class DeviceArray {
 public:
  virtual ~DeviceArray() = default;
  virtual const Shape& shape() const = 0;
  virtual absl::Status CopyToHost(void* dst, size_t bytes) const = 0;
};

// A plugin buffer's contents: a host literal or a device array.
struct BufferArray {
  std::shared_ptr<const Literal> host;
  std::shared_ptr<DeviceArray> device;
  const Shape& shape() const { return device ? device->shape() : host->shape(); }
};

// A compiled module, run on host literals (one per entry parameter); returns the root value.
class HostProgram {
 public:
  virtual ~HostProgram() = default;
  virtual absl::StatusOr<Literal> Run(std::span<const Literal* const> args) = 0;
  // The same on literals it holds a share of: one nothing else holds (a donated argument,
  // ABI 1.3) may be updated in place or returned without a copy. The default calls Run.
  virtual absl::StatusOr<Literal> RunShared(std::vector<std::shared_ptr<const Literal>> args);
  // Runs on plugin buffers and returns the root's array leaves, depth-first. The default
  // runs RunShared on host literals (a device array argument is copied to the host first); a
  // device backend overrides it to keep values on the device.
  virtual absl::StatusOr<std::vector<BufferArray>> RunBuffers(std::vector<BufferArray> args);
};

class HostBackend {
 public:
  virtual ~HostBackend() = default;
  // Calls `report(instr, why)` for every entry instruction: `why` is null when the plugin
  // runs it, otherwise the reason it does not.
  virtual void Capability(
      const HloModule& module,
      const std::function<void(const HloInstruction&, const std::string* why)>& report) = 0;
  // `module` is parsed and verified; the program may keep it.
  virtual absl::StatusOr<std::unique_ptr<HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) = 0;
  // The same with the compile options of the C ABI that a backend with passes of its own
  // uses (where to dump them); the default ignores them.
  struct CompileContext {
    std::string core_passes;  // what the core ran, comma-separated
    std::string dump_dir;     // "" = no dumps
    int dump_sequence = 0;
  };
  virtual absl::StatusOr<std::unique_ptr<HostProgram>> CompileWithContext(
      std::shared_ptr<const HloModule> module, const CompileContext& context) {
    (void)context;
    return Compile(std::move(module));
  }
  // A program's own serialized form (cpu-llvm: its object code), or "" when it has none:
  // the serialized executable then holds only the HLO text, compiled again when loaded.
  virtual absl::StatusOr<std::string> SerializeProgram(const HostProgram& program) {
    (void)program;
    return std::string();
  }
  // The program SerializeProgram wrote, for `module` (parsed from the text saved beside it);
  // an error says why the bytes cannot be used (another build, another CPU, damaged).
  virtual absl::StatusOr<std::unique_ptr<HostProgram>> DeserializeProgram(
      std::shared_ptr<const HloModule> module, std::string_view bytes) {
    (void)module, (void)bytes;
    return absl::UnimplementedError("this plugin does not load compiled programs");
  }
  // Why programs cannot run now (a device backend without a device), or nullopt. The plugin
  // then reports itself unavailable with the reason; capability queries still work.
  virtual std::optional<std::string> UnavailableReason() const { return std::nullopt; }
  // The device's memory in bytes for device_memory_stats' bytes_limit (ABI 1.5); the
  // default is the host's physical memory.
  virtual int64_t MemoryLimit() const;
  // Whether programs may run on a thread other than the caller's (ABI 1.7's asynchronous
  // runs, on a queue's worker thread); a backend bound to the caller's thread says false
  // and runs every execute before returning.
  virtual bool RunsOnAnyThread() const { return true; }
  // How many devices each client has (ABI 1.8): the environment's KILN_HOST_DEVICE_COUNT
  // (default 1, as XLA's --xla_force_host_platform_device_count), for testing runs on
  // several devices in one process; a backend with real devices says how many it drives.
  virtual int DeviceCount() const;
  // The kind its clients' device reports; empty: HostPluginInfo::device_kind.
  virtual std::string DeviceKind() const { return ""; }
  // Attributes after version, platform and description (e.g. gpu-nvptx's "gemm").
  virtual std::vector<std::pair<std::string, std::string>> ExtraAttributes() const { return {}; }
  // A copy of `value` in the backend's device memory for a new buffer, or nullptr to keep
  // buffers on the host (the default).
  virtual absl::StatusOr<std::shared_ptr<DeviceArray>> ToDevice(const Literal& value) {
    (void)value;
    return std::shared_ptr<DeviceArray>();
  }
};

// Runs the module's entry computation on the HLO evaluator (the interpreter plugin, and test
// plugins that differ from it only in what they accept).
class EvaluatorProgram : public HostProgram {
 public:
  explicit EvaluatorProgram(std::shared_ptr<const HloModule> module) : module_(std::move(module)) {}
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) override;

 private:
  std::shared_ptr<const HloModule> module_;
};

// HostBackend::Capability for a backend that decides per instruction: reports every entry
// instruction with `unsupported(instr)`'s reason, or as runnable when it returns nullopt.
void ReportEachInstruction(
    const HloModule& module,
    const std::function<std::optional<std::string>(const HloInstruction&)>& unsupported,
    const std::function<void(const HloInstruction&, const std::string* why)>& report);

// A backend that claims every instruction and runs modules with program type P (made from
// the module): test plugins that differ from the interpreter only in how they run.
template <typename P>
class EveryInstructionBackend : public HostBackend {
 public:
  void Capability(
      const HloModule& module,
      const std::function<void(const HloInstruction&, const std::string*)>& report) override {
    ReportEachInstruction(
        module, [](const HloInstruction&) { return std::optional<std::string>(); }, report);
  }
  absl::StatusOr<std::unique_ptr<HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) override {
    return std::make_unique<P>(std::move(module));
  }
};

struct HostPluginInfo {
  const char* name;
  int32_t default_priority;
  const char* device_kind;  // e.g. "host-cpu-llvm"
  const char* description;
  // Called once, at initialize. An error makes the plugin report itself unavailable with
  // the error's message as the reason.
  absl::StatusOr<std::unique_ptr<HostBackend>> (*make_backend)();
  const char* platform = "host";  // the "platform" attribute
};

// The C ABI table of a host plugin; `info` must outlive the process (a static constant).
const KILN_Api* HostPluginApi(const HostPluginInfo& info);

}  // namespace kiln::plugin_support
