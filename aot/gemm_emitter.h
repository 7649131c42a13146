// The GEMM steps of an ahead-of-time artifact (dots the plan computes as GEMMs): a loop nest
// emitted into the object (the default: nothing to link), or calls to OpenBLAS's cblas_*gemm
// or oneDNN's dnnl_sgemm. Includes LLVM: only aot/ includes this header.
#pragma once

#include <string>

#include "aot/aot_compiler.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::cpu::aot {

// At the builder's insertion point: C = op(A) op(B) for each of g.batch entries, the arrays
// dense and row-major at a, b and c. The builder continues after the batch loop. With
// `parallel_table` (three pointer slots), an emitted GEMM's column strips run through
// kiln_aot_parallel_for (the --parallel runtime).
void EmitGemmBatch(llvm::IRBuilder<>& builder, llvm::Module& module, AotGemm kind,
                   const std::string& prefix, const kernel_plan::GemmShape& g, llvm::Value* a,
                   llvm::Value* b, llvm::Value* c, llvm::Value* parallel_table = nullptr);

}  // namespace kiln::cpu::aot
