// Host handlers for custom-call targets (the idea of XLA's FFI): a user registers a C
// function for a target name, and every plugin built against ABI 1.5 is offered the
// handlers (KILN_CustomCallRegistry in its capability and compile arguments). A plugin that
// can call back into the host runs such custom-calls itself; the partitioner sends them to
// one that can when the chosen plugin cannot.
#pragma once

#include <string>

#include "kiln_plugin_api.h"

namespace kiln {

// Registers (or replaces) the handler for `target`, for the rest of the process. Plugins see
// it from their next capability query and compile on; a compiled executable keeps the
// handler it resolved.
void RegisterCustomCall(const std::string& target, KILN_CustomCallHandler* handler,
                        void* user_data);

// The process's registry as the C ABI hands it to plugins; lives as long as the process.
const KILN_CustomCallRegistry* CustomCallRegistry();

}  // namespace kiln

extern "C" {
// The same for C callers and for libraries loaded with `kiln run --custom-calls LIB.so`,
// whose exported `KILN_RegisterCustomCalls(KILN_RegisterCustomCall_Fn*)` is called with it.
void KILN_RegisterCustomCall(const char* target, KILN_CustomCallHandler* handler, void* user_data);
}
