// The reference plugin: runs HLO with the hlo/ evaluator on the host. The C ABI around it
// comes from the host plugin kit (plugins/common/host_plugin.h).
#include "hlo/evaluator/evaluator.h"
#include "plugins/common/host_plugin.h"
#include "plugins/interpreter/capability.h"

namespace kiln::interpreter {
namespace {

class EvaluatorProgram : public plugin_support::HostProgram {
 public:
  explicit EvaluatorProgram(std::shared_ptr<const HloModule> module) : module_(std::move(module)) {}
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) override {
    HloEvaluator evaluator;
    return evaluator.EvaluateComputation(*module_->entry(), args);
  }

 private:
  std::shared_ptr<const HloModule> module_;
};

class InterpreterBackend : public plugin_support::HostBackend {
 public:
  void Capability(const HloModule& module,
                  const std::function<void(const HloInstruction&, const std::string*)>& report)
      override {
    for (const HloInstruction* instr : module.entry()->instructions()) {
      std::optional<std::string> why = UnsupportedReason(*instr);
      report(*instr, why ? &*why : nullptr);
    }
  }
  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) override {
    return std::make_unique<EvaluatorProgram>(std::move(module));
  }
};

absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  return std::make_unique<InterpreterBackend>();  // the host is always there
}

constexpr plugin_support::HostPluginInfo kInfo = {
    "interpreter", KILN_PRIORITY_INTERPRETER, "host-interpreter", "reference HLO evaluator",
    MakeBackend};

}  // namespace
}  // namespace kiln::interpreter

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::interpreter::kInfo);
}
