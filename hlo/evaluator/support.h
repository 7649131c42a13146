// Which HLO instructions the evaluator can run: the interpreter plugin's capability, and what
// any plugin with an evaluator fallback checks before compiling (a custom-call nested in a
// fusion is refused at once, not after a long compile).
#pragma once

#include <optional>
#include <string>

#include "hlo/computation.h"
#include "hlo/instruction.h"

namespace kiln {

// Why `instr` cannot run on the evaluator (nullopt when it can). Instructions that call
// computations (while, call, fusion, reduce, ...) are only as runnable as their callees.
std::optional<std::string> EvaluatorUnsupportedReason(const HloInstruction& instr);

}  // namespace kiln
