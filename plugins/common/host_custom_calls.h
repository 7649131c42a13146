// The host plugin kit's side of ABI 1.5's custom-call handlers: the caller's
// KILN_CustomCallRegistry as the evaluator's CustomCallHandlers table, installed when a
// capability query or compile brings one, so the evaluator (the interpreter, and the
// evaluator steps of cpu-llvm and gpu-nvptx) runs custom-calls with registered targets.
#pragma once

#include "kiln_plugin_api.h"

namespace kiln::plugin_support {

// Installs `registry`'s handlers (a no-op when they are installed already, or it is null).
void InstallCustomCallRegistry(const KILN_CustomCallRegistry* registry);

}  // namespace kiln::plugin_support
