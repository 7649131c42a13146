// The optimization pipeline and object emission shared by the JIT (jit.cc) and ahead-of-time
// compilation (aot/): the same passes for both, so an AOT object runs the code the JIT runs.
// Includes LLVM: only the codegen's own files include this header.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"
#include "plugins/cpu_llvm/jit.h"

namespace kiln::cpu {

// Runs the O0..O3 pipeline of `options` on `m` for `tm`; with `use_libmvec`, the vectorizers
// may call glibc's vector math functions (x86-64 only).
void OptimizeModule(llvm::Module& m, llvm::TargetMachine& tm, const JitOptions& options,
                    bool use_libmvec);

// `m` compiled to a relocatable object file for `tm`.
absl::StatusOr<std::string> EmitObjectFile(llvm::Module& m, llvm::TargetMachine& tm);

}  // namespace kiln::cpu
