// Registration entry points of the op files under core/graph/ops/ (one per file).
#pragma once

#include "core/graph/op_registry.h"

namespace kiln::graph {

void RegisterArrayOps(OpRegistry& r);        // Placeholder, Const, Identity, Reshape, Transpose
void RegisterElementwiseOps(OpRegistry& r);  // Add..Minimum, Neg..Relu
void RegisterNnOps(OpRegistry& r);           // MatMul, BiasAdd, Softmax
void RegisterReductionOps(OpRegistry& r);    // Sum, Mean, Max
void RegisterHostOps(OpRegistry& r);         // Unique (host kernel)
void RegisterStateOps(OpRegistry& r);        // VariableV2, Assign*, ApplyGradientDescent
void RegisterTrainingOps(OpRegistry& r);     // *CrossEntropyWithLogits, ReluGrad, ...Grad

}  // namespace kiln::graph
