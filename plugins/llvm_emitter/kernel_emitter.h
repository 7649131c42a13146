// Internal to the LLVM emitter: the KernelEmitter class that elemental_emitter.cc (element
// generation, CPU loop nests) and gpu_kernels.cc (GPU thread mappings, cross-thread
// reductions) implement together, and the type helpers both use. Not for other code.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "hlo/computation.h"
#include "hlo/minifloat.h"
#include "hlo/shape.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "plugins/llvm_emitter/elemental_emitter.h"
#include "plugins/llvm_emitter/gpu_layout.h"

#define KILN_EMIT_RETURN_IF_ERROR(expr) \
  do {                                  \
    absl::Status _st = (expr);          \
    if (!_st.ok()) return _st;          \
  } while (0)
#define KILN_EMIT_CONCAT_INNER(a, b) a##b
#define KILN_EMIT_CONCAT(a, b) KILN_EMIT_CONCAT_INNER(a, b)
#define KILN_EMIT_ASSIGN_OR_RETURN(lhs, expr)                                                   \
  auto KILN_EMIT_CONCAT(_so_, __LINE__) = (expr);                                               \
  if (!KILN_EMIT_CONCAT(_so_, __LINE__).ok()) return KILN_EMIT_CONCAT(_so_, __LINE__).status(); \
  lhs = std::move(*KILN_EMIT_CONCAT(_so_, __LINE__))

namespace kiln::llvm_emit::detail {

using PT = PrimitiveType;

inline bool IsSupportedType(PT t) {
  switch (t) {
    case PT::PRED:
    case PT::S8:
    case PT::S16:
    case PT::S32:
    case PT::S64:
    case PT::U8:
    case PT::U16:
    case PT::U32:
    case PT::U64:
    case PT::F16:
    case PT::BF16:
    case PT::F32:
    case PT::F64:
    case PT::C64:
    case PT::C128:
      return true;
    default:
      return IsMiniFloat(t) || IsSubByteInt(t);
  }
}

inline bool IsFloatType(PT t) {
  return t == PT::F16 || t == PT::BF16 || t == PT::F32 || t == PT::F64 || IsMiniFloat(t);
}
// The type of a complex type's real and imaginary parts.
inline PT ComplexPartType(PT t) { return t == PT::C128 ? PT::F64 : PT::F32; }
// The type a dot or reduction of result type `t` accumulates in.
inline PT AccumulationType(PT t) { return IsNarrowFloat(t) ? PT::F32 : t; }

// How values of `t` are laid out in memory.
inline llvm::Type* StorageType(PT t, llvm::LLVMContext& c) {
  switch (t) {
    case PT::PRED:
    case PT::S8:
    case PT::U8:
      return llvm::Type::getInt8Ty(c);
    case PT::S16:
    case PT::U16:
    case PT::BF16:
      return llvm::Type::getInt16Ty(c);
    case PT::S32:
    case PT::U32:
      return llvm::Type::getInt32Ty(c);
    case PT::S64:
    case PT::U64:
      return llvm::Type::getInt64Ty(c);
    case PT::F16:
      return llvm::Type::getHalfTy(c);
    case PT::F32:
      return llvm::Type::getFloatTy(c);
    case PT::F64:
      return llvm::Type::getDoubleTy(c);
    case PT::C64:  // (real, imaginary), as std::complex lays them out
      return llvm::StructType::get(c, {llvm::Type::getFloatTy(c), llvm::Type::getFloatTy(c)});
    case PT::C128:
      return llvm::StructType::get(c, {llvm::Type::getDoubleTy(c), llvm::Type::getDoubleTy(c)});
    default:
      // The minifloats and sub-byte integers: one byte each.
      return IsMiniFloat(t) || IsSubByteInt(t) ? llvm::Type::getInt8Ty(c) : nullptr;
  }
}

// How values of `t` are computed on: pred as i1, the 16- and 8-bit floats widened to float
// (each result is rounded back to its type, so results match arithmetic in that type), s4
// and u4 as i4 and s2 and u2 as i2 (LLVM wraps and saturates at their width).
inline llvm::Type* ComputeType(PT t, llvm::LLVMContext& c) {
  if (IsMiniFloat(t)) return llvm::Type::getFloatTy(c);
  if (IsSubByteInt(t)) return llvm::Type::getIntNTy(c, static_cast<unsigned>(BitWidth(t)));
  switch (t) {
    case PT::PRED:
      return llvm::Type::getInt1Ty(c);
    case PT::F16:
    case PT::BF16:
      return llvm::Type::getFloatTy(c);
    default:
      return StorageType(t, c);
  }
}

// A 16-bit float add/multiply reducer accumulates in f32 and rounds once at the end, as the
// HLO evaluator (and XLA's CPU backend after float normalization) does.
bool AccumulatesIn32(const HloInstruction& reduce);

// An index into an array: one i64 per dimension, and the row-major linear index when the
// caller already has it (saves recomputing it for elementwise chains).
struct Index {
  std::vector<llvm::Value*> multi;
  llvm::Value* linear = nullptr;
};

// How a column reduction (IsColumnReduction) accumulates: an accumulator of the result's
// dimensions then the reduced dimensions after the last kept one (`run` accumulators per
// result element, folded at the end), and which input dimensions index it.
struct ColumnLayout {
  std::vector<int64_t> acc_dims;
  std::vector<bool> in_acc;
  int64_t run = 1;
  int64_t elements = 0;
};
ColumnLayout ColumnLayoutOf(const HloInstruction& reduce);

// One column reduction being accumulated: its layout, its accumulator and its init value.
struct ColumnAccumulator {
  const HloInstruction* reduce;
  ColumnLayout layout;
  llvm::Value* acc;
  llvm::Value* init;
};

// The reductions of the kernel's cone that `accepts`, operands first.
std::vector<const HloInstruction*> ColumnReductionsOf(const KernelSpec& spec,
                                                      bool (*accepts)(const HloInstruction&));

class KernelEmitter {
 public:
  KernelEmitter(const KernelSpec& spec, llvm::Module& module)
      : spec_(spec), module_(module), ctx_(module.getContext()), b_(ctx_) {}

  absl::Status Emit();

 private:
  using Cache = std::map<std::pair<const HloInstruction*, std::vector<llvm::Value*>>, llvm::Value*>;

  llvm::Type* I64() { return llvm::Type::getInt64Ty(ctx_); }
  llvm::Value* C64(int64_t v) { return llvm::ConstantInt::get(I64(), v, /*isSigned=*/true); }

  // Loops and scopes.
  absl::Status EmitLoop(int64_t trip_count, const std::string& name,
                        const std::function<absl::Status(llvm::Value*)>& body) {
    return EmitLoop(C64(0), C64(trip_count), name, body);
  }
  // A loop over [lo, hi) with bounds known at run time (the partitioned outer loop). With
  // `keep`, LLVM may not unroll it (llvm.loop.unroll.disable on its latch).
  absl::Status EmitLoop(llvm::Value* lo, llvm::Value* hi, const std::string& name,
                        const std::function<absl::Status(llvm::Value*)>& body, bool keep = false);
  // A kernel whose output is a concatenation: within shared loops over the dimensions before
  // the concatenated one, one loop nest per operand over its own part of `out` (within
  // [lo, hi) of dimension 0 when not null), so that no element chooses among the operands (a
  // chain of branches per element kept the loops scalar).
  absl::Status EmitConcatenateByOperand(const HloInstruction* root, llvm::Value* out,
                                        llvm::Value* lo, llvm::Value* hi);
  void DisableUnroll(llvm::BranchInst* latch) { SetLoopHint(latch, "llvm.loop.unroll.disable"); }
  // llvm.loop.unroll.disable until the loop vectorizer has taken the loop; the vectorized loop
  // may be unrolled whole (its followup attributes do not disable it).
  void DisableUnrollBeforeVectorizing(llvm::BranchInst* latch);
  // Marks the loop closed by `latch` with one llvm.loop hint (llvm.loop.unroll.full, ...).
  void SetLoopHint(llvm::BranchInst* latch, const char* hint);
  // A float sum over `dims` in blocks of about kSumBlock elements: each block is summed from
  // -0 by `add` (vectorized into lanes) and then added to `acc`. One f32 accumulator stops
  // growing at 2^24 ones; blocks bound the error by one block's plus the chain of block sums.
  // `outer_lo`/`outer_hi` as for EmitLoopNest.
  absl::Status EmitBlockedSum(
      const std::vector<int64_t>& dims, const std::string& name, llvm::AllocaInst* acc,
      const std::function<absl::Status(const Index&, llvm::AllocaInst*)>& add,
      llvm::Value* outer_lo, llvm::Value* outer_hi);
  static constexpr int64_t kSumBlock = 4096;
  // A reduced minor dimension of this many elements is vectorized along itself (EmitReduce).
  // Longer runs are anyway: LLVM does not unroll them whole before vectorizing.
  static constexpr int64_t kMinVectorRun = 8, kMaxVectorRun = 64;
  // Whether an output loop nest over `dims` keeps its minor loop a loop (see the definition).
  bool KeepsMinorLoop(const std::vector<int64_t>& dims) const;
  // With `outer_lo`/`outer_hi`, dimension 0 runs over that range instead of [0, dims[0]).
  // With `keep_outer_loops`, every loop but the innermost stays a loop (EmitLoop's `keep`).
  absl::Status EmitLoopNest(const std::vector<int64_t>& dims, const std::string& name,
                            const std::function<absl::Status(const Index&)>& body,
                            llvm::Value* outer_lo = nullptr, llvm::Value* outer_hi = nullptr,
                            bool keep_outer_loops = false, bool keep_inner_loop = false);
  // Loops over the dimensions of `dims` (rank >= 2) before its last two, calling `matrix`
  // with their index and the rows of the trailing [rows, cols] matrix to cover: with
  // `outer_lo`/`outer_hi`, dimension 0 runs over that range, rows included for rank 2.
  absl::Status EmitOverMinorPair(
      const std::vector<int64_t>& dims, const std::string& name, llvm::Value* outer_lo,
      llvm::Value* outer_hi,
      const std::function<absl::Status(const Index&, llvm::Value*, llvm::Value*)>& matrix);
  // EmitLoopNest, appending to `latches` the back edges of its loops and of loops inside them
  // (innermost first: the nest's own close last), which an enclosing collector gets too.
  absl::Status EmitLoopNestCollectingLatches(const std::vector<int64_t>& dims,
                                             const std::string& name,
                                             const std::function<absl::Status(const Index&)>& body,
                                             std::vector<llvm::BranchInst*>& latches,
                                             llvm::Value* outer_lo = nullptr,
                                             llvm::Value* outer_hi = nullptr,
                                             bool keep_outer_loops = false);
  // emit(), appending to `latches` the back edges of the loops it closes (innermost first),
  // which an enclosing collector gets too.
  absl::Status CollectingLatches(std::vector<llvm::BranchInst*>& latches,
                                 const std::function<absl::Status()>& emit);
  // The same loops over `dims` (rank >= 2) with the last two dimensions walked in square
  // tiles of `tile`: a kernel reading an operand transposed then touches a tile's worth of
  // its cache lines instead of one line per output element (TransposedRead).
  // `tile_dim` (default: the second-to-last) is the dimension tiled with the last; the other
  // dimensions loop outside the tiles, in order.
  absl::Status EmitTiledLoopNest(const std::vector<int64_t>& dims, int64_t tile,
                                 const std::string& name,
                                 const std::function<absl::Status(const Index&)>& body,
                                 llvm::Value* outer_lo = nullptr, llvm::Value* outer_hi = nullptr,
                                 int64_t tile_dim = -1);
  // The same loops over `dims` (rank >= 2) with the last two dimensions as one loop, their
  // indices divided out of its variable.
  absl::Status EmitMergedMinorLoopNest(const std::vector<int64_t>& dims, const std::string& name,
                                       const std::function<absl::Status(const Index&)>& body,
                                       llvm::Value* outer_lo = nullptr,
                                       llvm::Value* outer_hi = nullptr);
  // Runs `arm` in a fresh block under `cond` / its negation and merges the two values.
  absl::StatusOr<llvm::Value*> EmitIfElse(
      llvm::Value* cond, const std::function<absl::StatusOr<llvm::Value*>()>& then_fn,
      const std::function<absl::StatusOr<llvm::Value*>()>& else_fn);
  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }
  llvm::AllocaInst* EntryAlloca(llvm::Type* t, const std::string& name);

  // Indexing.
  llvm::Value* Linear(const Index& idx, const std::vector<int64_t>& dims);
  // A reshape's operand index from its output index group by group: consecutive dimensions
  // of equal element counts map through their own linear index only, size-1 dimensions are
  // dropped or set to 0 (a dimension carried over, split or merged stays affine in the loop
  // variables, which the vectorizer needs; one linear index over the whole shape puts a
  // division per dimension in the loop). Null when the shapes have a zero dimension.
  std::optional<Index> ReshapeByGroups(const Index& idx, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& from);
  Index Delinearize(llvm::Value* linear, const std::vector<int64_t>& dims);

  // Memory and type conversions.
  llvm::Value* ToCompute(llvm::Value* stored, PT t);
  llvm::Value* ToStorage(llvm::Value* v, PT t);
  llvm::Value* RoundToType(llvm::Value* v, PT t);
  // Minifloat bits (i8) to float and a float or double to bits, rounding to nearest even
  // (minifloat_emitter.cc; the same rules as hlo/minifloat.cc).
  llvm::Value* DecodeMiniFloat(llvm::Value* bits, const MiniFloatFormat& f);
  llvm::Value* EncodeMiniFloat(llvm::Value* v, const MiniFloatFormat& f);
  llvm::Value* ConvertValue(llvm::Value* v, PT from, PT to);
  llvm::Value* ConstantScalar(const Literal& lit, int64_t linear, PT t);

  // Element generation.
  absl::StatusOr<llvm::Value*> Element(const HloInstruction* h, const Index& idx);
  absl::StatusOr<llvm::Value*> ElementUncached(const HloInstruction* h, const Index& idx);
  absl::StatusOr<llvm::Value*> OperandElement(const HloInstruction* h, int i, const Index& idx);
  absl::StatusOr<llvm::Value*> EmitUnary(const HloInstruction* h, llvm::Value* x);
  // reduce-precision of an f32 or f64 value, on its bits as XLA defines it.
  llvm::Value* EmitReducePrecision(const HloInstruction* h, llvm::Value* x);
  absl::StatusOr<llvm::Value*> EmitBinary(HloOpcode op, const HloInstruction* h, PT t,
                                          llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitMax(PT t, llvm::Value* a, llvm::Value* b, bool is_max);
  llvm::Value* EmitPow(llvm::Value* a, llvm::Value* b);
  // Complex values (complex_emitter.cc): a {re, im} pair of floats or doubles. The unary and
  // binary ops that take or make one (CanEmitComplex lists them).
  absl::StatusOr<llvm::Value*> EmitComplexUnary(const HloInstruction* h, llvm::Value* x);
  absl::StatusOr<llvm::Value*> EmitComplexBinary(const HloInstruction* h, PT t, llvm::Value* a,
                                                 llvm::Value* b);
  llvm::Value* MakeComplex(llvm::Value* re, llvm::Value* im);
  // acc + a * b of complex values (a dot's accumulation).
  llvm::Value* ComplexMultiplyAdd(llvm::Value* acc, llvm::Value* a, llvm::Value* b);
  llvm::Value* Re(llvm::Value* z) { return b_.CreateExtractValue(z, {0}); }
  llvm::Value* Im(llvm::Value* z) { return b_.CreateExtractValue(z, {1}); }
  llvm::Value* ComplexMagnitude(llvm::Value* z);
  llvm::Value* EmitCompare(ComparisonDirection d, PT t, llvm::Value* a, llvm::Value* b);
  absl::StatusOr<llvm::Value*> EmitConstant(const HloInstruction* h, const Index& idx);
  // The element of operands [first, last) of concatenation h, offsets[k] where operand k
  // starts along its dimension.
  absl::StatusOr<llvm::Value*> EmitConcatenate(const HloInstruction* h, const Index& idx,
                                               const std::vector<int64_t>& offsets, int first,
                                               int last);
  absl::StatusOr<llvm::Value*> EmitPad(const HloInstruction* h, const Index& idx);
  // dynamic-slice and dynamic-update-slice; their start indices, clamped for a window.
  absl::StatusOr<llvm::Value*> EmitDynamicSlice(const HloInstruction* h, const Index& idx);
  absl::StatusOr<llvm::Value*> EmitGather(const HloInstruction* h, const Index& idx);
  absl::StatusOr<std::vector<llvm::Value*>> ClampedStarts(const HloInstruction* h, int first,
                                                          const std::vector<int64_t>& window);
  // With `outer_lo`/`outer_hi`, the outermost reduced dimension covers only that range.
  absl::StatusOr<llvm::Value*> EmitReduce(const HloInstruction* h, const Index& idx,
                                          llvm::Value* outer_lo = nullptr,
                                          llvm::Value* outer_hi = nullptr);
  // KernelSpec::accumulate_columns: accumulates each column reduction of the kernel into a
  // buffer the output loop reads (as an input). With `lo`/`hi` (a partitioned kernel), only
  // the rows and accumulators of that range of dimension 0.
  absl::Status EmitColumnReductions(llvm::Value* lo, llvm::Value* hi);
  // Combines each element of the reductions' input (one shape, reduced over the same
  // dimensions; rows [lo, hi) of dimension 0 when given) into each one's accumulator, after
  // setting it to its init value (the range of it, when the reductions keep dimension 0).
  // One pass over the rows: what their inputs share is generated once per element.
  absl::Status AccumulateColumns(const std::vector<ColumnAccumulator>& group, llvm::Value* lo,
                                 llvm::Value* hi);
  // `r`'s result from its accumulator: `acc` itself, or a buffer of each result element's
  // run of accumulators folded (result rows [lo, hi) when given).
  absl::StatusOr<llvm::Value*> FoldColumns(const HloInstruction* r, const ColumnLayout& layout,
                                           llvm::Value* acc, llvm::Value* init, llvm::Value* lo,
                                           llvm::Value* hi);
  // Stores into `dst` `r`'s combiner folded, from `init` in `sum`, over the `count` values
  // src[base + i * stride] in order.
  absl::Status FoldStrided(const HloInstruction* r, llvm::Value* src, llvm::Value* base,
                           int64_t stride, int64_t count, llvm::Value* init, llvm::AllocaInst* sum,
                           llvm::Value* dst);
  // KernelSpec::reduce_parts with accumulate_columns: the parts' accumulation, then (in the
  // combining call's block, left open for the output loops) their fold.
  absl::Status EmitColumnParts();
  llvm::BasicBlock* column_parts_done_ = nullptr;  // where the combining call's block ends
  // The body of a KernelSpec::reduce_parts kernel (two-stage reduction to a scalar).
  absl::Status EmitReduceParts(llvm::Value* begin, llvm::Value* end);
  // KernelSpec::update_in_place: stores the update of the one dynamic-update-slice output
  // into its window of `out`, over [begin, end) of the update's dimension 0 when given.
  absl::Status EmitUpdateInPlace(llvm::Value* out, llvm::Value* begin, llvm::Value* end);
  absl::StatusOr<llvm::Value*> EmitDot(const HloInstruction* h, const Index& idx);
  // acc + a * b in the compute type of a `t` result: an f32/f64 sum may be contracted to an
  // FMA and reassociated, so the loop around it vectorizes as a reduction.
  llvm::Value* MultiplyAdd(llvm::Value* acc, llvm::Value* a, llvm::Value* b, PT t);
  absl::StatusOr<llvm::Value*> EmitConvolution(const HloInstruction* h, const Index& idx);
  absl::StatusOr<llvm::Value*> EmitReduceWindow(const HloInstruction* h, const Index& idx);
  // The input index that window position `k` of output position `o` reads along one
  // dimension (stride, padding, window and base dilation); ANDs into *inside whether it lies
  // in the input (not on padding or a base-dilation hole).
  llvm::Value* WindowInputIndex(const WindowDimension& w, llvm::Value* o, llvm::Value* k,
                                int64_t in_size, llvm::Value** inside);
  // Applies a scalar computation (a reducer) to already generated argument values.
  absl::StatusOr<llvm::Value*> EmitScalarCall(const HloComputation* comp,
                                              std::vector<llvm::Value*> args);
  // atan2(y, x): FastAtan2F32 for f32 on the CPU, else libm / libdevice.
  llvm::Value* Atan2(llvm::Value* y, llvm::Value* x);
  llvm::Value* CallMath(const std::string& f32_name, const std::string& f64_name, PT t,
                        std::vector<llvm::Value*> args);
  llvm::Value* CallIntrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Type*> types,
                             std::vector<llvm::Value*> args);
  bool gpu() const { return spec_.target == KernelTarget::kGpu; }
  // The internal function holding a kernel's body: one noalias pointer per buffer, then
  // the two i64 of the CPU outer range; `fn_` becomes it and the inputs are bound to it.
  void StartBody(const std::string& name, size_t buffers);
  // The CPU kernel's external entry point (buffer table, two i64) calling the finished body
  // `fn_` with its n buffers; then both are verified.
  absl::Status EmitCpuEntry(size_t n);
  // GPU bodies (see gpu_layout.h). kElements: each thread generates the element of every
  // output at its global index, grid-stride.
  absl::Status EmitGpuBody();
  // kRows: a block per row; the row statistics are combined across the block first.
  absl::Status EmitGpuRowsBody();
  // kSplitReduce: stage one (a partial per block) or stage two (combine each row's).
  absl::Status EmitGpuSplitStage(bool combine);
  // kSplitColumns: stage one (a partial per part and column) or two (fold each column's).
  absl::Status EmitGpuColumnStage(bool combine);
  // A kernel entry named `name` calling the current body `fn_` with its n buffers.
  llvm::Function* EmitGpuEntry(size_t n, const std::string& name);
  absl::Status VerifyGpu(llvm::Function* kernel);
  absl::Status EmitGpu();
  // KernelSpec::sort: the comparator entry point (sort_comparator.cc).
  absl::Status EmitSortComparator();

  // Cross-thread reduction (GPU). Every thread of the block must reach these calls
  // (uniform control flow): they shuffle and synchronize.
  llvm::Value* Sreg(llvm::Intrinsic::ID id);  // a PTX special register (ctaid.x, ...) as i64
  llvm::Value* ThreadIdx();
  // Vector groups (GpuLayout::vector_width): accesses of buffer[first] for every `first`
  // are width-aligned; the w indices first .. first+w-1 of `dims`; the inputs read at a
  // group's indices are loaded first; a rows kernel's group of columns c0 .. c0+w-1 of row
  // `row` (linear index of c0: `first`).
  void MarkVectorAligned(const std::vector<llvm::Value*>& firsts, int width);
  std::vector<Index> Group(llvm::Value* first, const std::vector<int64_t>& dims, int w);
  absl::Status LoadGroup(const std::vector<int64_t>& dims, const std::vector<Index>& group);
  std::vector<Index> RowGroup(const Index& row, llvm::Value* c0, llvm::Value* first,
                              const std::vector<int64_t>& cols, int w);
  llvm::Value* Shuffle(llvm::Value* v, int lane_mask);  // butterfly exchange within the warp
  // The reducer of `h` applied to a and b; 16-bit float add/multiply stays in f32 (rounded
  // once by FinishReduce), as EmitReduce does.
  absl::StatusOr<llvm::Value*> CombineReduced(const HloInstruction* h, llvm::Value* a,
                                              llvm::Value* b);
  llvm::Value* FinishReduce(const HloInstruction* h, llvm::Value* v);
  // Folds `v` into the running partial (acc, valid): the first value replaces it.
  absl::Status Accumulate(const HloInstruction* h, llvm::AllocaInst* acc, llvm::AllocaInst* valid,
                          llvm::Value* v);
  // Combines every thread's (v, valid) partial: each thread gets the block's result and
  // whether any thread had a value. Lanes combine in lane order (lower lane first).
  absl::StatusOr<std::pair<llvm::Value*, llvm::Value*>> BlockCombine(const HloInstruction* h,
                                                                     llvm::Value* v,
                                                                     llvm::Value* valid);
  absl::StatusOr<std::pair<llvm::Value*, llvm::Value*>> WarpCombine(const HloInstruction* h,
                                                                    llvm::Value* v,
                                                                    llvm::Value* valid);
  // A loop over [lo, hi) in steps of `step` (threads striding over a row).
  absl::Status EmitStridedLoop(llvm::Value* lo, llvm::Value* hi, llvm::Value* step,
                               const std::string& name,
                               const std::function<absl::Status(llvm::Value*)>& body);
  GpuLayout layout_;
  llvm::GlobalVariable* smem_values_ = nullptr;  // [32 x i64] in shared memory, per kernel
  llvm::GlobalVariable* smem_valid_ = nullptr;   // [32 x i32]

  const KernelSpec& spec_;
  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  absl::flat_hash_map<const HloInstruction*, llvm::Value*> input_ptrs_;
  absl::flat_hash_map<const HloInstruction*, llvm::Value*> bound_scalars_;  // reducer params
  absl::flat_hash_map<const HloInstruction*, llvm::GlobalVariable*> constant_globals_;
  std::vector<Cache> scopes_;
  // The loops being emitted, outermost first: where a loop-invariant reduce or dot can be
  // hoisted to (see HoistedElement).
  struct LoopFrame {
    llvm::Value* iv;
    llvm::Instruction* entry_br;  // the branch into the loop's header from its preheader
    size_t scope_depth;           // scopes_.size() when the loop started
    // Holds a loop of kLongInnerLoop or more iterations (a reduce's, a dot's): kept a loop.
    bool holds_long_loop = false;
  };
  // An enclosing loop holding a loop this long stays a loop (MarkLongInnerLoop): O3 unrolled
  // the 9 outputs of an argmax down 255 rows into 9 vector loops (4171 instructions, 162 ms).
  static constexpr int64_t kLongInnerLoop = 128;
  void MarkLongInnerLoop(int64_t trip_count) {
    if (trip_count >= kLongInnerLoop && !loops_.empty()) loops_.back().holds_long_loop = true;
  }
  std::vector<LoopFrame> loops_;
  // When set, EmitLoop appends each loop's back edge here (innermost loops first).
  std::vector<llvm::BranchInst*>* latch_sink_ = nullptr;
  int conditional_depth_ = 0;  // > 0 inside an EmitIfElse arm: nothing is hoisted from there
  // A reduce or dot whose index values are outer loop variables (a row statistic under a
  // broadcast) generated once before the first loop it does not depend on, instead of once
  // per element of the inner loops; nullptr when it cannot be hoisted.
  absl::StatusOr<llvm::Value*> HoistedElement(const HloInstruction* h, const Index& idx);
  // The innermost open loop (its place in loops_) whose variable index value `v` uses: v
  // itself, or integer arithmetic and casts of loop variables, constants and arguments (a
  // merged output loop's index divided back into dimensions); -1 for none, kNotInvariant for
  // anything else (a load, a value of an inner computation).
  static constexpr int kNotInvariant = -2;
  int IndexLoop(llvm::Value* v, int depth = 0) const;
  // `v` (IndexLoop not kNotInvariant) computed again at the builder's insertion point.
  llvm::Value* RecomputeIndex(llvm::Value* v);

  // A row statistic over a costly value that the output reads again at its own index (the
  // sum of exp(x - max) in a softmax, whose output divides the same exp by it): the
  // statistic's loop, hoisted before each row, also stores the values into the output row,
  // and the output loop loads them back instead of computing them twice.
  struct Stash {
    const HloInstruction* reduce = nullptr;  // null: none in this kernel
    llvm::Value* out = nullptr;              // the output buffer (the value's shape)
    bool storing = false;  // inside the hoisted emission of `reduce`: store each value
    bool hoisted = false;  // `reduce` was hoisted for the current output element
    const Index* output_index = nullptr;  // the output loop's index while its body is emitted
  };
  Stash stash_;
};

}  // namespace kiln::llvm_emit::detail
