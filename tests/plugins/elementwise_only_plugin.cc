// A test plugin with a narrow capability: "test-elementwise" (priority 300, above every
// shipped plugin) runs only elementwise ops plus parameter/constant/tuple plumbing, with the
// HLO evaluator, and declines everything else with a reason. Partitioning tests load it
// through KILN_PLUGIN_PATH so that auto placement must split modules and graphs.
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

class ElementwiseOnlyBackend : public plugin_support::HostBackend {
 public:
  void Capability(const HloModule& module,
                  const std::function<void(const HloInstruction&, const std::string*)>& report)
      override {
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
