// The one list of HLO opcodes: enum name, text name as XLA prints it, operand count
// (kVariadic when any number is allowed). Printing, parsing and arity checks derive from it.
#pragma once

#include <optional>
#include <string_view>

namespace kiln {

inline constexpr int kVariadic = -1;

#define KILN_HLO_OPCODES(X)                                         \
  X(kAbs, "abs", 1)                                                 \
  X(kAdd, "add", 2)                                                 \
  X(kAddDependency, "add-dependency", 2)                            \
  X(kAfterAll, "after-all", kVariadic)                              \
  X(kAllGather, "all-gather", kVariadic)                            \
  X(kAllGatherDone, "all-gather-done", 1)                           \
  X(kAllGatherStart, "all-gather-start", kVariadic)                 \
  X(kAllReduce, "all-reduce", kVariadic)                            \
  X(kAllReduceDone, "all-reduce-done", 1)                           \
  X(kAllReduceStart, "all-reduce-start", kVariadic)                 \
  X(kAllToAll, "all-to-all", kVariadic)                             \
  X(kAnd, "and", 2)                                                 \
  X(kAsyncDone, "async-done", 1)                                    \
  X(kAsyncStart, "async-start", kVariadic)                          \
  X(kAsyncUpdate, "async-update", 1)                                \
  X(kAtan2, "atan2", 2)                                             \
  X(kBatchNormGrad, "batch-norm-grad", 5)                           \
  X(kBatchNormInference, "batch-norm-inference", 5)                 \
  X(kBatchNormTraining, "batch-norm-training", 3)                   \
  X(kBitcast, "bitcast", 1)                                         \
  X(kBitcastConvert, "bitcast-convert", 1)                          \
  X(kBroadcast, "broadcast", 1)                                     \
  X(kCall, "call", kVariadic)                                       \
  X(kCbrt, "cbrt", 1)                                               \
  X(kCeil, "ceil", 1)                                               \
  X(kCholesky, "cholesky", 1)                                       \
  X(kClamp, "clamp", 3)                                             \
  X(kClz, "count-leading-zeros", 1)                                 \
  X(kCollectiveBroadcast, "collective-broadcast", kVariadic)        \
  X(kCollectivePermute, "collective-permute", kVariadic)            \
  X(kCollectivePermuteDone, "collective-permute-done", 1)           \
  X(kCollectivePermuteStart, "collective-permute-start", kVariadic) \
  X(kCompare, "compare", 2)                                         \
  X(kComplex, "complex", 2)                                         \
  X(kConcatenate, "concatenate", kVariadic)                         \
  X(kConditional, "conditional", kVariadic)                         \
  X(kConstant, "constant", 0)                                       \
  X(kConvert, "convert", 1)                                         \
  X(kConvolution, "convolution", 2)                                 \
  X(kCopy, "copy", 1)                                               \
  X(kCopyDone, "copy-done", 1)                                      \
  X(kCopyStart, "copy-start", 1)                                    \
  X(kCos, "cosine", 1)                                              \
  X(kCustomCall, "custom-call", kVariadic)                          \
  X(kDivide, "divide", 2)                                           \
  X(kDomain, "domain", 1)                                           \
  X(kDot, "dot", kVariadic)                                         \
  X(kDynamicReshape, "dynamic-reshape", kVariadic)                  \
  X(kDynamicSlice, "dynamic-slice", kVariadic)                      \
  X(kDynamicUpdateSlice, "dynamic-update-slice", kVariadic)         \
  X(kErf, "erf", 1)                                                 \
  X(kExp, "exponential", 1)                                         \
  X(kExpm1, "exponential-minus-one", 1)                             \
  X(kFft, "fft", 1)                                                 \
  X(kFloor, "floor", 1)                                             \
  X(kFusion, "fusion", kVariadic)                                   \
  X(kGather, "gather", 2)                                           \
  X(kGetDimensionSize, "get-dimension-size", 1)                     \
  X(kGetTupleElement, "get-tuple-element", 1)                       \
  X(kImag, "imag", 1)                                               \
  X(kInfeed, "infeed", 1)                                           \
  X(kIota, "iota", 0)                                               \
  X(kIsFinite, "is-finite", 1)                                      \
  X(kLog, "log", 1)                                                 \
  X(kLog1p, "log-plus-one", 1)                                      \
  X(kLogistic, "logistic", 1)                                       \
  X(kMap, "map", kVariadic)                                         \
  X(kMaximum, "maximum", 2)                                         \
  X(kMinimum, "minimum", 2)                                         \
  X(kMultiply, "multiply", 2)                                       \
  X(kNegate, "negate", 1)                                           \
  X(kNot, "not", 1)                                                 \
  X(kOptimizationBarrier, "opt-barrier", 1)                         \
  X(kOr, "or", 2)                                                   \
  X(kOutfeed, "outfeed", 2)                                         \
  X(kPad, "pad", 2)                                                 \
  X(kParameter, "parameter", 0)                                     \
  X(kPartitionId, "partition-id", 0)                                \
  X(kPopulationCount, "popcnt", 1)                                  \
  X(kPower, "power", 2)                                             \
  X(kReal, "real", 1)                                               \
  X(kRecv, "recv", 1)                                               \
  X(kRecvDone, "recv-done", 1)                                      \
  X(kReduce, "reduce", kVariadic)                                   \
  X(kReducePrecision, "reduce-precision", 1)                        \
  X(kReduceScatter, "reduce-scatter", kVariadic)                    \
  X(kReduceWindow, "reduce-window", kVariadic)                      \
  X(kRemainder, "remainder", 2)                                     \
  X(kReplicaId, "replica-id", 0)                                    \
  X(kReshape, "reshape", 1)                                         \
  X(kReverse, "reverse", 1)                                         \
  X(kRng, "rng", kVariadic)                                         \
  X(kRngBitGenerator, "rng-bit-generator", 1)                       \
  X(kRngGetAndUpdateState, "rng-get-and-update-state", 0)           \
  X(kRoundNearestAfz, "round-nearest-afz", 1)                       \
  X(kRoundNearestEven, "round-nearest-even", 1)                     \
  X(kRsqrt, "rsqrt", 1)                                             \
  X(kScatter, "scatter", kVariadic)                                 \
  X(kSelect, "select", 3)                                           \
  X(kSelectAndScatter, "select-and-scatter", 3)                     \
  X(kSend, "send", 2)                                               \
  X(kSendDone, "send-done", 1)                                      \
  X(kSetDimensionSize, "set-dimension-size", 2)                     \
  X(kShiftLeft, "shift-left", 2)                                    \
  X(kShiftRightArithmetic, "shift-right-arithmetic", 2)             \
  X(kShiftRightLogical, "shift-right-logical", 2)                   \
  X(kSign, "sign", 1)                                               \
  X(kSin, "sine", 1)                                                \
  X(kSlice, "slice", 1)                                             \
  X(kSort, "sort", kVariadic)                                       \
  X(kSqrt, "sqrt", 1)                                               \
  X(kStochasticConvert, "stochastic-convert", 2)                    \
  X(kSubtract, "subtract", 2)                                       \
  X(kTan, "tan", 1)                                                 \
  X(kTanh, "tanh", 1)                                               \
  X(kTopK, "topk", 1)                                               \
  X(kTranspose, "transpose", 1)                                     \
  X(kTriangularSolve, "triangular-solve", 2)                        \
  X(kTuple, "tuple", kVariadic)                                     \
  X(kWhile, "while", 1)                                             \
  X(kXor, "xor", 2)

enum class HloOpcode {
#define KILN_ENUM(e, n, a) e,
  KILN_HLO_OPCODES(KILN_ENUM)
#undef KILN_ENUM
};

std::string_view HloOpcodeString(HloOpcode op);
std::optional<HloOpcode> StringToHloOpcode(std::string_view name);
int HloOpcodeArity(HloOpcode op);  // kVariadic for variable operand counts

// Ops that apply elementwise (result element i depends only on operand elements i).
bool IsElementwiseOpcode(HloOpcode op);
bool IsElementwiseUnary(HloOpcode op);
bool IsElementwiseBinary(HloOpcode op);
// Collectives and cross-host communication: out of scope for single-device execution.
bool IsCollectiveOpcode(HloOpcode op);

}  // namespace kiln
