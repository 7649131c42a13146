// The cpu-llvm plugin: compiles HLO to host code with the LLVM elemental emitter and ORC JIT
// (evaluator fallback for instructions the emitter cannot do). Executables are cached by
// fingerprint in the compiler; the C ABI around it comes from the host plugin kit.
#include "absl/container/flat_hash_set.h"
#include "hlo/evaluator/custom_call_handlers.h"
#include "hlo/evaluator/support.h"
#include "hlo/opcode.h"
#include "plugins/common/host_plugin.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/scatter_rows.h"
#include "plugins/kernel_plan/kernel_fusion.h"

namespace kiln::cpu {
namespace {

class JitProgram : public plugin_support::HostProgram {
 public:
  explicit JitProgram(std::shared_ptr<const CpuExecutable> exe) : exe_(std::move(exe)) {}
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) override {
    return exe_->Run(args);
  }
  absl::StatusOr<Literal> RunShared(std::vector<std::shared_ptr<const Literal>> args) override {
    return exe_->RunShared(std::move(args));
  }
  const CpuExecutable& executable() const { return *exe_; }

 private:
  std::shared_ptr<const CpuExecutable> exe_;
};

// Whether cpu-llvm runs a step of its plan. Row scatters run natively (scatter_rows.h), on
// an evaluator step. Collectives and custom-calls with a host handler (ABI 1.5) are claimed:
// on the evaluator they only move bytes through the run's transport or call the handler, as
// they would on the interpreter, without a cluster boundary around them. An opt-barrier is
// claimed too: the compile removes it (MakeFusedPlan), and without fusion the evaluator
// forwards its operand, no computation either way.
bool Claimed(const Step& step) {
  if (step.kind != Disposition::kEvaluator) return true;
  const HloInstruction& h = *step.instr;
  const bool host_call =
      h.opcode() == HloOpcode::kCustomCall && HasCustomCallHandler(h.attrs().custom_call_target);
  return h.opcode() == HloOpcode::kOptimizationBarrier || IsRowScatter(h) ||
         ((IsCollectiveOpcode(h.opcode()) || host_call) &&
          !EvaluatorUnsupportedReason(h).has_value());
}

// The plan the compile makes (MakeFusedPlan: after its expanders and fusion), by instruction
// name: the names it leaves to the evaluator, the names its module has (inside fusions too),
// and whether an instruction the compile added went to the evaluator.
struct CompiledVerdicts {
  bool valid = false;
  absl::flat_hash_set<std::string> names, declined;
  bool added_declined = false;

  // An instruction the compile kept is judged by its own verdict; one it replaced (an
  // arg-max's variadic reduce, a complex dot), by whether everything it added runs natively.
  bool Claims(const std::string& name) const {
    if (!valid) return false;
    return names.contains(name) ? !declined.contains(name) : !added_declined;
  }
};

CompiledVerdicts JudgeCompiled(const HloModule& module) {
  CompiledVerdicts v;
  absl::StatusOr<Plan> plan = MakeFusedPlan(module, CpuPlanOptions());
  if (!plan.ok() || plan->fused_module == nullptr) return v;
  absl::flat_hash_set<std::string> original;
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* h : c->instructions()) original.insert(h->name());
  for (const HloComputation* c : plan->fused_module->computations())
    for (const HloInstruction* h : c->instructions()) v.names.insert(h->name());
  for (const Step& step : plan->steps) {
    if (Claimed(step)) continue;
    v.declined.insert(step.instr->name());
    v.added_declined = v.added_declined || !original.contains(step.instr->name());
  }
  v.valid = true;
  return v;
}

class CpuLlvmBackend : public plugin_support::HostBackend {
 public:
  explicit CpuLlvmBackend(std::unique_ptr<CpuCompiler> compiler) : compiler_(std::move(compiler)) {}

  // Supported = compiled to native code (or pure bookkeeping, or generated inside a user's
  // kernel); what the executable would hand to its evaluator fallback is unsupported, with why.
  // An instruction the evaluator would run as given is judged as the compile plans it
  // (JudgeCompiled): an arg-max's variadic reduce is two emitted reduces there.
  void Capability(
      const HloModule& module,
      const std::function<void(const HloInstruction&, const std::string*)>& report) override {
    Plan plan = MakePlan(module, CpuPlanOptions());
    bool declines = false;
    for (const Step& step : plan.steps) declines = declines || !Claimed(step);
    CompiledVerdicts compiled;
    if (declines) compiled = JudgeCompiled(module);
    for (const Step& step : plan.steps) {
      const bool claimed = Claimed(step) || compiled.Claims(step.instr->name());
      report(*step.instr, claimed ? nullptr : &step.why);
    }
    for (const auto& [instr, d] : plan.dispositions)
      if (d == Disposition::kInlined) report(*instr, nullptr);
  }

  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) override {
    return CompileWithContext(std::move(module), {});
  }
  // With --dump-to, the module after cpu-llvm's kernel-fusion pass is dumped: the program
  // the plan runs, one kernel per fusion or remaining instruction.
  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> CompileWithContext(
      std::shared_ptr<const HloModule> module, const CompileContext& context) override {
    // What neither the emitter nor the evaluator fallback runs (a custom-call or collective,
    // even nested in a fusion or call) is refused before the compile, not after it.
    if (absl::Status s = CheckEvaluatorRunsAll(*module); !s.ok()) return s;
    auto exe = compiler_->Compile(std::move(module), {context.dump_dir, context.dump_sequence});
    if (!exe.ok()) return exe.status();
    return std::make_unique<JitProgram>(std::move(*exe));
  }

  // Serialized executables hold the kernels' object code: loading one compiles nothing.
  absl::StatusOr<std::string> SerializeProgram(
      const plugin_support::HostProgram& program) override {
    const auto* jit = dynamic_cast<const JitProgram*>(&program);
    if (jit == nullptr) return std::string();
    return jit->executable().Serialize();
  }
  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> DeserializeProgram(
      std::shared_ptr<const HloModule> module, std::string_view bytes) override {
    auto exe = compiler_->Load(std::move(module), bytes);
    if (!exe.ok()) return exe.status();
    return std::make_unique<JitProgram>(std::move(*exe));
  }

 private:
  std::unique_ptr<CpuCompiler> compiler_;
};

// Available when LLVM can target this host: creating the compiler (and its JIT) checks that.
absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  auto compiler = CpuCompiler::Create();
  if (!compiler.ok()) return compiler.status();
  return std::make_unique<CpuLlvmBackend>(std::move(*compiler));
}

constexpr plugin_support::HostPluginInfo kInfo = {
    "cpu-llvm", KILN_PRIORITY_CPU, "host-cpu-llvm",
    "LLVM elemental codegen + ORC JIT for the host CPU", MakeBackend};

}  // namespace
}  // namespace kiln::cpu

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::cpu::kInfo);
}
