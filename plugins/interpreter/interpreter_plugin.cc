// The reference plugin: runs HLO with the hlo/ evaluator on the host. The C ABI around it
// comes from the host plugin kit (plugins/common/host_plugin.h).
#include "hlo/evaluator/support.h"
#include "plugins/common/host_plugin.h"

namespace kiln::interpreter {
namespace {

class InterpreterBackend : public plugin_support::HostBackend {
 public:
  void Capability(
      const HloModule& module,
      const std::function<void(const HloInstruction&, const std::string*)>& report) override {
    plugin_support::ReportEachInstruction(module, EvaluatorUnsupportedReason, report);
  }
  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) override {
    return std::make_unique<plugin_support::EvaluatorProgram>(std::move(module));
  }
};

absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  return std::make_unique<InterpreterBackend>();  // the host is always there
}

constexpr plugin_support::HostPluginInfo kInfo = {"interpreter", KILN_PRIORITY_INTERPRETER,
                                                  "host-interpreter", "reference HLO evaluator",
                                                  MakeBackend};

}  // namespace
}  // namespace kiln::interpreter

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::interpreter::kInfo);
}
