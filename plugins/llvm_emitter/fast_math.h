// Vectorizable f32 math for the CPU target: exp, expm1, log, log1p, tanh, erf, logistic and
// atan2 as plain LLVM IR (range reduction + polynomial, selects for the special cases), so the
// loop vectorizer turns them into straight-line vector code instead of scalar libm calls. Each
// takes and returns f32 scalar values built with `b`. Max errors against double precision, measured
// by cpu_llvm_fast_math_test over dense sweeps: see plugins/cpu_llvm/README.md.
// LLVM types appear here: include only from plugins/llvm_emitter.
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace kiln::llvm_emit {

llvm::Value* FastExpF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastLogF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastLog1pF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastExpm1F32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastTanhF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastErfF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastLogisticF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* FastAtan2F32(llvm::IRBuilder<>& b, llvm::Value* y, llvm::Value* x);

}  // namespace kiln::llvm_emit
