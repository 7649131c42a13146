// Registration entry points of the op files under core/graph/ops/ (one per file).
#pragma once

#include "core/graph/op_registry.h"

namespace kiln::graph {

void RegisterArrayOps(OpRegistry& r);        // Placeholder, Const, Identity, Reshape, ... Squeeze
void RegisterSliceOps(OpRegistry& r);        // Slice, StridedSlice, Pad, ConcatV2, Tile
void RegisterIndexOps(OpRegistry& r);        // Gather, GatherV2, OneHot
void RegisterElementwiseOps(OpRegistry& r);  // Add..Pow, comparisons, Select, Cast, Neg..Relu
void RegisterNnOps(OpRegistry& r);           // MatMul, BatchMatMul, BiasAdd, Softmax, Gelu
void RegisterConvOps(OpRegistry& r);         // Conv2D, MaxPool, AvgPool
void RegisterReductionOps(OpRegistry& r);    // Sum, Mean, Max, Min, Prod, ArgMax, ArgMin
void RegisterHostOps(OpRegistry& r);         // Unique, Where, NonZero (host kernels)
void RegisterStateOps(OpRegistry& r);        // VariableV2, Assign*, ApplyGradientDescent
void RegisterTrainingOps(OpRegistry& r);     // *CrossEntropyWithLogits, ReluGrad, ...Grad

}  // namespace kiln::graph
