// A test plugin with a narrow capability: "test-elementwise" (priority 300, above every
// shipped plugin) runs only elementwise ops plus parameter/constant/tuple plumbing, with the
// HLO evaluator, and declines everything else with a reason. Partitioning tests load it
// through KILN_PLUGIN_PATH so that auto placement must split modules and graphs. Its buffers
// are "device arrays" in memory of its own (a stand-in for a device), so those tests also
// run the host plugin kit's device-buffer paths (buffer_from_host/to_host/info, execute).
#include <cstring>
#include <optional>
#include <string>

#include "hlo/opcode.h"
#include "plugins/common/host_plugin.h"

namespace kiln::test_elementwise {
namespace {

std::optional<std::string> UnsupportedReason(const HloInstruction& instr) {
  HloOpcode op = instr.opcode();
  if (IsElementwiseOpcode(op) || op == HloOpcode::kParameter || op == HloOpcode::kConstant ||
      op == HloOpcode::kTuple || op == HloOpcode::kGetTupleElement) {
    return std::nullopt;
  }
  return "is '" + std::string(HloOpcodeString(op)) + "', not an elementwise op";
}

// A copy of a buffer held apart from any literal the kit sees.
class StandInDeviceArray : public plugin_support::DeviceArray {
 public:
  explicit StandInDeviceArray(Literal value) : value_(std::move(value)) {}
  const Shape& shape() const override { return value_.shape(); }
  absl::Status CopyToHost(void* dst, size_t bytes) const override {
    if (bytes != static_cast<size_t>(value_.size_bytes()))
      return absl::InvalidArgumentError("test-elementwise: copy of the wrong size");
    std::memcpy(dst, value_.untyped_data(), bytes);
    return absl::OkStatus();
  }

 private:
  Literal value_;
};

class ElementwiseOnlyBackend : public plugin_support::HostBackend {
 public:
  absl::StatusOr<std::shared_ptr<plugin_support::DeviceArray>> ToDevice(
      const Literal& value) override {
    return std::make_shared<StandInDeviceArray>(value);
  }
  void Capability(
      const HloModule& module,
      const std::function<void(const HloInstruction&, const std::string*)>& report) override {
    plugin_support::ReportEachInstruction(module, UnsupportedReason, report);
  }
  // Refuses what it declared unsupported, so a wrong placement fails loudly in tests.
  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) override {
    for (const HloInstruction* instr : module->entry()->instructions()) {
      if (std::optional<std::string> why = UnsupportedReason(*instr)) {
        return absl::UnimplementedError("instruction '" + instr->name() + "' " + *why);
      }
    }
    return std::make_unique<plugin_support::EvaluatorProgram>(std::move(module));
  }
};

absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  return std::make_unique<ElementwiseOnlyBackend>();
}

constexpr plugin_support::HostPluginInfo kInfo = {
    "test-elementwise", 300, "host-test-elementwise",
    "test plugin: elementwise ops only, on the HLO evaluator", MakeBackend};

}  // namespace
}  // namespace kiln::test_elementwise

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::test_elementwise::kInfo);
}
