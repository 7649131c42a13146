// A deliberately wrong plugin: "test-wrong" (priority 1, so auto never picks it) runs the
// HLO evaluator like the interpreter, then adds 0.5 to element 1 of every array leaf of the
// result (flips it for pred). Tests run it against the interpreter to prove that
// `kiln run --compare` and the tests built on it catch a plugin that is off in one element,
// even beside a large one (`[1e8, 1.5, 2, 3]` against `[1e8, 1, 2, 3]`).
#include "plugins/common/host_plugin.h"

namespace kiln::test_wrong {
namespace {

void Perturb(Literal& value) {
  if (value.IsTuple()) {
    for (Literal& e : value.elements()) Perturb(e);
    return;
  }
  if (value.element_count() < 2) return;
  const PrimitiveType type = value.shape().element_type();
  if (type == PrimitiveType::PRED) {
    value.SetFromDouble(1, value.GetAsInt64(1) ? 0 : 1);
  } else if (!IsComplex(type)) {
    value.SetFromDouble(1, value.GetAsDouble(1) + (IsFloating(type) ? 0.5 : 1));
  }
}

class WrongProgram : public plugin_support::HostProgram {
 public:
  explicit WrongProgram(std::shared_ptr<const HloModule> module) : exact_(std::move(module)) {}
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) override {
    absl::StatusOr<Literal> result = exact_.Run(args);
    if (result.ok()) Perturb(*result);
    return result;
  }

 private:
  plugin_support::EvaluatorProgram exact_;
};

absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  return std::make_unique<plugin_support::EveryInstructionBackend<WrongProgram>>();
}

constexpr plugin_support::HostPluginInfo kInfo = {
    "test-wrong", 1, "host-test-wrong",
    "test plugin: the evaluator's answer with element 1 of every output off by 0.5", MakeBackend};

}  // namespace
}  // namespace kiln::test_wrong

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::test_wrong::kInfo);
}
