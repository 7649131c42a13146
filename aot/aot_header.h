// The C header of an ahead-of-time artifact: a C API (NAME_run, NAME_run_simple, the shapes
// and sizes of arguments, results and temporaries as constants) and a thin C++ class that
// owns its buffers. LLVM-free.
#pragma once

#include <string>

#include "aot/aot_compiler.h"

namespace kiln::cpu::aot {

std::string MakeAotHeader(const std::string& module_name, const std::string& name,
                          const AotArtifact& artifact);

}  // namespace kiln::cpu::aot
