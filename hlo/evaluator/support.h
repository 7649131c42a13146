// Which HLO instructions the evaluator can run: the interpreter plugin's capability, and what
// any plugin with an evaluator fallback checks before compiling (a custom-call nested in a
// fusion is refused at once, not after a long compile).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "hlo/computation.h"
#include "hlo/instruction.h"
#include "hlo/module.h"

namespace kiln {

// Why `instr` cannot run on the evaluator (nullopt when it can). Instructions that call
// computations (while, call, fusion, reduce, ...) are only as runnable as their callees.
std::optional<std::string> EvaluatorUnsupportedReason(const HloInstruction& instr);

// An async start, update or done that wraps one instruction other than a call or fusion
// (`slice-start`, `all-to-all-start`...): the evaluator runs only wrappers of a computation.
bool IsAsyncShorthand(const HloInstruction& instr);

// Custom-calls that only annotate their one operand, whose value passes through unchanged:
// JAX's `Sharding` and Shardy's `xla.sdy.FuncResultSharding` (sharding constraints, which
// only the SPMD partitioner reads) and
// AWS Neuron's `AwsNeuronTransferWithStaticRing` (a placement hint torch-xla writes on
// weights).
bool IsAnnotationCustomCall(std::string_view target);

// Unimplemented naming the first entry instruction the evaluator cannot run (a custom-call
// or collective, also nested in a fusion or call), else OK: what a plugin whose fallback is
// the evaluator checks before a long compile.
absl::Status CheckEvaluatorRunsAll(const HloModule& module);

}  // namespace kiln
