// What the evaluator runs: single-device, host-only semantics (see support.h).
#include "hlo/evaluator/support.h"

#include "hlo/evaluator/custom_call_handlers.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/lapack_custom_calls.h"
#include "hlo/opcode.h"

namespace kiln {
namespace {

std::optional<std::string> Reason(const HloInstruction& instr, int depth);

std::optional<std::string> ComputationReason(const HloComputation& c, int depth) {
  // Modules are DAGs of computations, but a malformed one could recurse: bound the walk.
  if (depth > 64) return std::string("nests computations deeper than 64");
  for (const HloInstruction* i : c.instructions()) {
    if (auto why = Reason(*i, depth)) {
      // The path names the first levels only: a reason 64 levels deep stays one short line.
      if (depth > 2) return why;
      return "calls '" + c.name() + "' whose '" + i->name() + "' " + *why;
    }
  }
  return std::nullopt;
}

std::optional<std::string> Reason(const HloInstruction& instr, int depth) {
  HloOpcode op = instr.opcode();
  if (op == HloOpcode::kCustomCall && !eval::IsLapackCustomCall(instr.attrs().custom_call_target) &&
      !IsAnnotationCustomCall(instr.attrs().custom_call_target) &&
      !HasCustomCallHandler(instr.attrs().custom_call_target)) {
    return "is a custom-call ('" + instr.attrs().custom_call_target +
           "'), which needs a target-specific implementation or a registered host handler "
           "(kiln run --custom-calls LIB.so)";
  }
  // Wrappers of a called computation run it synchronously; the shorthands of a single
  // instruction are left to the async-to-sync pass.
  if (IsAsyncShorthand(instr)) {
    return "is '" + std::string(HloOpcodeString(op)) + "' wrapping '" +
           std::string(HloOpcodeString(*instr.attrs().async_wrapped_opcode)) +
           "', an asynchronous shorthand the evaluator does not run (the core's async-to-sync "
           "pass rewrites it)";
  }
  if (IsCollectiveOpcode(op) && !eval::IsEvaluatorCollective(op)) {
    return "is '" + std::string(HloOpcodeString(op)) +
           "', a host-transfer or ragged collective op the evaluator does not run";
  }
  for (const HloComputation* callee : instr.called_computations()) {
    if (callee == nullptr) continue;
    if (auto why = ComputationReason(*callee, depth + 1)) return why;
  }
  return std::nullopt;
}

}  // namespace

bool IsAnnotationCustomCall(std::string_view target) {
  return target == "Sharding" || target == "xla.sdy.FuncResultSharding" ||
         target == "AwsNeuronTransferWithStaticRing";
}

bool IsAsyncShorthand(const HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  const std::optional<HloOpcode>& wrapped = instr.attrs().async_wrapped_opcode;
  return (op == HloOpcode::kAsyncStart || op == HloOpcode::kAsyncUpdate ||
          op == HloOpcode::kAsyncDone) &&
         wrapped && *wrapped != HloOpcode::kCall && *wrapped != HloOpcode::kFusion;
}

std::optional<std::string> EvaluatorUnsupportedReason(const HloInstruction& instr) {
  return Reason(instr, 0);
}

absl::Status CheckEvaluatorRunsAll(const HloModule& module) {
  for (const HloInstruction* instr : module.entry()->instructions()) {
    if (std::optional<std::string> why = EvaluatorUnsupportedReason(*instr)) {
      return absl::UnimplementedError("instruction '" + instr->name() + "' " + *why);
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln
