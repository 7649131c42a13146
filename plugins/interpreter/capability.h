// Which HLO instructions the interpreter plugin can run: everything the evaluator covers.
#pragma once

#include <optional>
#include <string>

#include "hlo/computation.h"
#include "hlo/instruction.h"

namespace kiln::interpreter {

// Why `instr` cannot run on the interpreter (nullopt when it can). Instructions that call
// computations (while, call, fusion, reduce, ...) are only as runnable as their callees.
std::optional<std::string> UnsupportedReason(const HloInstruction& instr);

}  // namespace kiln::interpreter
