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

// The vector width the vectorizers should prefer for a CPU with `features`: the
// KILN_CPU_VECTOR_WIDTH environment variable when it is 128, 256 or 512; otherwise 512 where
// the features include AVX-512 (LLVM's own default there is 256, to spare the clock; the
// polynomial math of softmax or a GELU ran 15-20% faster at 512 on Ice Lake), else empty
// (LLVM's default).
std::string PreferredVectorWidth(const std::string& features);

// Marks every defined function of `m` for `cpu` and `features` (the attributes the backend
// and the vectorizers read), preferring `vector_width` (PreferredVectorWidth's; empty: LLVM's
// default).
void SetTargetAttributes(llvm::Module& m, const std::string& cpu, const std::string& features,
                         const std::string& vector_width);

// `m` compiled to a relocatable object file for `tm`.
absl::StatusOr<std::string> EmitObjectFile(llvm::Module& m, llvm::TargetMachine& tm);

}  // namespace kiln::cpu
