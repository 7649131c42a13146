// The one list of HLO opcodes: enum name, text name as XLA prints it, operand count
// (kVariadic when any number is allowed), and traits. Printing, parsing, arity checks and
// every opcode class below (elementwise, costly, side-effecting, collective, random,
// control flow) derive from it; passes and planners ask these classes instead of keeping
// lists of their own.
//
// Adding an opcode, the checklist:
//  1. a row here (keep the list sorted) with its traits;
//  2. its shape inference (hlo/shape_inference.cc) and, when it has attributes, their text
//     form (hlo/text/attribute_text.cc) and the verifier's checks (hlo/verifier.cc);
//  3. its semantics on the evaluator (hlo/evaluator/, one file per family), which makes it
//     run on the interpreter and lets constant folding fold it;
//  4. in codegen: the elemental emitter (plugins/llvm_emitter/elemental_emitter.cc) if it is
//     generated element by element, else nothing: cpu-llvm and gpu-nvptx then run it on the
//     evaluator and report it as such in their capability;
//  5. tests beside each piece, and a case in tests/numpy_e2e when NumPy can say what it does.
#pragma once

#include <optional>
#include <string_view>

namespace kiln {

inline constexpr int kVariadic = -1;

// Opcode traits (bit flags of the fourth column; 0: none).
enum OpcodeTrait : unsigned {
  kTraitElementwise = 1u << 0,    // result element i depends only on operand elements i
  kTraitCostly = 1u << 1,         // costly per element: transcendentals and division
  kTraitSideEffecting = 1u << 2,  // may not be removed, merged or duplicated
  kTraitCollective = 1u << 3,     // talks to other devices or hosts
  kTraitRandom = 1u << 4,         // a new value each run
  kTraitControlFlow = 1u << 5,    // runs called computations as a program (while/conditional/call)
};

#define KILN_HLO_OPCODES(X)                                                                       \
  X(kAbs, "abs", 1, kTraitElementwise)                                                            \
  X(kAdd, "add", 2, kTraitElementwise)                                                            \
  X(kAddDependency, "add-dependency", 2, 0)                                                       \
  X(kAfterAll, "after-all", kVariadic, 0)                                                         \
  X(kAllGather, "all-gather", kVariadic, kTraitCollective)                                        \
  X(kAllGatherDone, "all-gather-done", 1, kTraitSideEffecting | kTraitCollective)                 \
  X(kAllGatherStart, "all-gather-start", kVariadic, kTraitSideEffecting | kTraitCollective)       \
  X(kAllReduce, "all-reduce", kVariadic, kTraitCollective)                                        \
  X(kAllReduceDone, "all-reduce-done", 1, kTraitSideEffecting | kTraitCollective)                 \
  X(kAllReduceStart, "all-reduce-start", kVariadic, kTraitSideEffecting | kTraitCollective)       \
  X(kAllToAll, "all-to-all", kVariadic, kTraitCollective)                                         \
  X(kAnd, "and", 2, kTraitElementwise)                                                            \
  X(kAsyncDone, "async-done", 1, kTraitSideEffecting)                                             \
  X(kAsyncStart, "async-start", kVariadic, kTraitSideEffecting)                                   \
  X(kAsyncUpdate, "async-update", 1, kTraitSideEffecting)                                         \
  X(kAtan2, "atan2", 2, kTraitElementwise | kTraitCostly)                                         \
  X(kBatchNormGrad, "batch-norm-grad", 5, 0)                                                      \
  X(kBatchNormInference, "batch-norm-inference", 5, 0)                                            \
  X(kBatchNormTraining, "batch-norm-training", 3, 0)                                              \
  X(kBitcast, "bitcast", 1, 0)                                                                    \
  X(kBitcastConvert, "bitcast-convert", 1, kTraitElementwise)                                     \
  X(kBroadcast, "broadcast", 1, 0)                                                                \
  X(kCall, "call", kVariadic, kTraitControlFlow)                                                  \
  X(kCbrt, "cbrt", 1, kTraitElementwise | kTraitCostly)                                           \
  X(kCeil, "ceil", 1, kTraitElementwise)                                                          \
  X(kCholesky, "cholesky", 1, 0)                                                                  \
  X(kClamp, "clamp", 3, kTraitElementwise)                                                        \
  X(kClz, "count-leading-zeros", 1, kTraitElementwise)                                            \
  X(kCollectiveBroadcast, "collective-broadcast", kVariadic, kTraitCollective)                    \
  X(kCollectivePermute, "collective-permute", kVariadic, kTraitCollective)                        \
  X(kCollectivePermuteDone, "collective-permute-done", 1, kTraitSideEffecting | kTraitCollective) \
  X(kCollectivePermuteStart, "collective-permute-start", kVariadic,                               \
    kTraitSideEffecting | kTraitCollective)                                                       \
  X(kCompare, "compare", 2, kTraitElementwise)                                                    \
  X(kComplex, "complex", 2, kTraitElementwise)                                                    \
  X(kConcatenate, "concatenate", kVariadic, 0)                                                    \
  X(kConditional, "conditional", kVariadic, kTraitControlFlow)                                    \
  X(kConstant, "constant", 0, 0)                                                                  \
  X(kConvert, "convert", 1, kTraitElementwise)                                                    \
  X(kConvolution, "convolution", 2, 0)                                                            \
  X(kCopy, "copy", 1, kTraitElementwise)                                                          \
  X(kCopyDone, "copy-done", 1, kTraitSideEffecting)                                               \
  X(kCopyStart, "copy-start", 1, kTraitSideEffecting)                                             \
  X(kCos, "cosine", 1, kTraitElementwise | kTraitCostly)                                          \
  X(kCustomCall, "custom-call", kVariadic, kTraitSideEffecting)                                   \
  X(kDivide, "divide", 2, kTraitElementwise | kTraitCostly)                                       \
  X(kDomain, "domain", 1, 0)                                                                      \
  X(kDot, "dot", kVariadic, 0)                                                                    \
  X(kDynamicReshape, "dynamic-reshape", kVariadic, 0)                                             \
  X(kDynamicSlice, "dynamic-slice", kVariadic, 0)                                                 \
  X(kDynamicUpdateSlice, "dynamic-update-slice", kVariadic, 0)                                    \
  X(kErf, "erf", 1, kTraitElementwise | kTraitCostly)                                             \
  X(kExp, "exponential", 1, kTraitElementwise | kTraitCostly)                                     \
  X(kExpm1, "exponential-minus-one", 1, kTraitElementwise | kTraitCostly)                         \
  X(kFft, "fft", 1, 0)                                                                            \
  X(kFloor, "floor", 1, kTraitElementwise)                                                        \
  X(kFusion, "fusion", kVariadic, 0)                                                              \
  X(kGather, "gather", 2, 0)                                                                      \
  X(kGetDimensionSize, "get-dimension-size", 1, 0)                                                \
  X(kGetTupleElement, "get-tuple-element", 1, 0)                                                  \
  X(kImag, "imag", 1, kTraitElementwise)                                                          \
  X(kInfeed, "infeed", 1, kTraitSideEffecting | kTraitCollective)                                 \
  X(kIota, "iota", 0, 0)                                                                          \
  X(kIsFinite, "is-finite", 1, kTraitElementwise)                                                 \
  X(kLog, "log", 1, kTraitElementwise | kTraitCostly)                                             \
  X(kLog1p, "log-plus-one", 1, kTraitElementwise | kTraitCostly)                                  \
  X(kLogistic, "logistic", 1, kTraitElementwise | kTraitCostly)                                   \
  X(kMap, "map", kVariadic, 0)                                                                    \
  X(kMaximum, "maximum", 2, kTraitElementwise)                                                    \
  X(kMinimum, "minimum", 2, kTraitElementwise)                                                    \
  X(kMultiply, "multiply", 2, kTraitElementwise)                                                  \
  X(kNegate, "negate", 1, kTraitElementwise)                                                      \
  X(kNot, "not", 1, kTraitElementwise)                                                            \
  X(kOptimizationBarrier, "opt-barrier", 1, 0)                                                    \
  X(kOr, "or", 2, kTraitElementwise)                                                              \
  X(kOutfeed, "outfeed", 2, kTraitSideEffecting | kTraitCollective)                               \
  X(kPad, "pad", 2, 0)                                                                            \
  X(kParameter, "parameter", 0, 0)                                                                \
  X(kPartitionId, "partition-id", 0, kTraitCollective)                                            \
  X(kPopulationCount, "popcnt", 1, kTraitElementwise)                                             \
  X(kPower, "power", 2, kTraitElementwise | kTraitCostly)                                         \
  X(kRaggedAllToAll, "ragged-all-to-all", 6, kTraitCollective)                                    \
  X(kRaggedDot, "ragged-dot", 3, 0)                                                               \
  X(kReal, "real", 1, kTraitElementwise)                                                          \
  X(kRecv, "recv", 1, kTraitSideEffecting | kTraitCollective)                                     \
  X(kRecvDone, "recv-done", 1, kTraitSideEffecting | kTraitCollective)                            \
  X(kReduce, "reduce", kVariadic, 0)                                                              \
  X(kReducePrecision, "reduce-precision", 1, kTraitElementwise)                                   \
  X(kReduceScatter, "reduce-scatter", kVariadic, kTraitCollective)                                \
  X(kReduceWindow, "reduce-window", kVariadic, 0)                                                 \
  X(kRemainder, "remainder", 2, kTraitElementwise | kTraitCostly)                                 \
  X(kReplicaId, "replica-id", 0, kTraitCollective)                                                \
  X(kReshape, "reshape", 1, 0)                                                                    \
  X(kReverse, "reverse", 1, 0)                                                                    \
  X(kRng, "rng", kVariadic, kTraitSideEffecting | kTraitRandom)                                   \
  X(kRngBitGenerator, "rng-bit-generator", 1, kTraitSideEffecting | kTraitRandom)                 \
  X(kRngGetAndUpdateState, "rng-get-and-update-state", 0, kTraitSideEffecting | kTraitRandom)     \
  X(kRoundNearestAfz, "round-nearest-afz", 1, kTraitElementwise)                                  \
  X(kRoundNearestEven, "round-nearest-even", 1, kTraitElementwise)                                \
  X(kRsqrt, "rsqrt", 1, kTraitElementwise | kTraitCostly)                                         \
  X(kScaledDot, "scaled-dot", 4, 0)                                                               \
  X(kScan, "scan", kVariadic, 0)                                                                  \
  X(kScatter, "scatter", kVariadic, 0)                                                            \
  X(kSelect, "select", 3, kTraitElementwise)                                                      \
  X(kSelectAndScatter, "select-and-scatter", 3, 0)                                                \
  X(kSend, "send", 2, kTraitSideEffecting | kTraitCollective)                                     \
  X(kSendDone, "send-done", 1, kTraitSideEffecting | kTraitCollective)                            \
  X(kSetDimensionSize, "set-dimension-size", 2, 0)                                                \
  X(kShiftLeft, "shift-left", 2, kTraitElementwise)                                               \
  X(kShiftRightArithmetic, "shift-right-arithmetic", 2, kTraitElementwise)                        \
  X(kShiftRightLogical, "shift-right-logical", 2, kTraitElementwise)                              \
  X(kSign, "sign", 1, kTraitElementwise)                                                          \
  X(kSin, "sine", 1, kTraitElementwise | kTraitCostly)                                            \
  X(kSlice, "slice", 1, 0)                                                                        \
  X(kSort, "sort", kVariadic, 0)                                                                  \
  X(kSqrt, "sqrt", 1, kTraitElementwise | kTraitCostly)                                           \
  X(kStochasticConvert, "stochastic-convert", 2, kTraitElementwise)                               \
  X(kSubtract, "subtract", 2, kTraitElementwise)                                                  \
  X(kTan, "tan", 1, kTraitElementwise | kTraitCostly)                                             \
  X(kTanh, "tanh", 1, kTraitElementwise | kTraitCostly)                                           \
  X(kTopK, "topk", 1, 0)                                                                          \
  X(kTranspose, "transpose", 1, 0)                                                                \
  X(kTriangularSolve, "triangular-solve", 2, 0)                                                   \
  X(kTuple, "tuple", kVariadic, 0)                                                                \
  X(kWhile, "while", 1, kTraitControlFlow)                                                        \
  X(kXor, "xor", 2, kTraitElementwise)

enum class HloOpcode {
#define KILN_ENUM(e, n, a, t) e,
  KILN_HLO_OPCODES(KILN_ENUM)
#undef KILN_ENUM
};

std::string_view HloOpcodeString(HloOpcode op);
std::optional<HloOpcode> StringToHloOpcode(std::string_view name);
int HloOpcodeArity(HloOpcode op);  // kVariadic for variable operand counts
unsigned HloOpcodeTraits(HloOpcode op);

// The opcode classes, from the traits column.
bool IsElementwiseOpcode(HloOpcode op);
bool IsElementwiseUnary(HloOpcode op);   // elementwise with one operand
bool IsElementwiseBinary(HloOpcode op);  // elementwise with two operands
bool IsCostlyElementwiseOpcode(HloOpcode op);
// Side effects of the opcode itself (a collective with a channel also has one: see
// hlo/passes/pass_util.h's HasSideEffect, which also looks into called computations).
bool IsSideEffectingOpcode(HloOpcode op);
// Collectives and cross-host communication: out of scope for single-device execution.
bool IsCollectiveOpcode(HloOpcode op);
bool IsRandomOpcode(HloOpcode op);
bool IsControlFlowOpcode(HloOpcode op);

}  // namespace kiln
