// A name-free description of what a kernel computes, so identical kernels (the same fusion
// repeated layer after layer, under other instruction names) are compiled once. LLVM-free.
#pragma once

#include <string>

#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::cpu {

// Equal strings mean the emitter generates the same function for both specs (up to its
// name): the DAG from the outputs down to the inputs with opcodes, shapes and layouts, typed
// attributes, constant bytes, operand wiring, and the reducers it calls, recursively.
// Instruction names and untyped attributes (metadata, ...) are left out.
std::string KernelSignature(const llvm_emit::KernelSpec& spec);

}  // namespace kiln::cpu
