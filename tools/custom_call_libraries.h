// `kiln run --custom-calls LIB.so`: loads a library of host custom-call handlers and lets it
// register them (its exported `KILN_RegisterCustomCalls(KILN_RegisterCustomCall_Fn*)`).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace kiln {

// Loads `path` for the rest of the process and calls its KILN_RegisterCustomCalls with the
// core's registration function. A file that does not load or lacks the symbol is an error
// naming it.
absl::Status LoadCustomCallLibrary(const std::string& path);

}  // namespace kiln
