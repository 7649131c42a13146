// An instruction's backend_config as its producer wrote it: the text form keeps it as a
// quoted string (`backend_config="{\"alpha\":1}"`) or a braced one; this gives the content
// with the quotes and escapes removed, for the passes and handlers that read it.
#pragma once

#include <string>

#include "hlo/instruction.h"

namespace kiln {

// "" when the instruction has none.
std::string BackendConfigText(const HloInstruction& instr);

}  // namespace kiln
