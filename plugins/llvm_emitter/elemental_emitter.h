// The LLVM elemental emitter shared by the codegen plugins: turns a DAG of HLO instructions
// into one LLVM function `void name(void** buffers)` that computes its outputs with a loop
// nest over each output's index, generating every element by recursively generating the
// elements of its operands at the mapped index (XLA's elemental approach: no intermediate
// arrays in memory). Reduce and dot become inner accumulation loops inside the element.
// In GPU mode (KernelTarget::kGpu) the loop nest is replaced by one element per thread.
//
// LLVM types appear in this header: include it only from plugins/llvm_emitter and from the
// codegen plugins, never from code the core or hlo/ sees.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "hlo/instruction.h"

namespace llvm {
class Module;
}

namespace kiln::llvm_emit {

// One kernel: `inputs` are read from buffers[0 .. inputs.size()), `outputs` are written to
// buffers[inputs.size() ..), each as a dense row-major array of its shape. Every instruction
// reachable from an output without crossing an input is generated element by element, so it
// must satisfy CanEmitElementally. Parameters of a fused computation must be inputs.
//
// kCpu: the function is `void name(void** buffers, int64_t begin, int64_t end)`. With
// `partition_outer`, every output's outermost loop runs over [begin, end) of dimension 0
// only (all outputs must have rank >= 1 and the same dimension 0), so disjoint ranges can
// run on different threads; otherwise begin/end are ignored and the whole output is written.
// kGpu: NVPTX kernels `void name(ptr b0, ..., ptr bN)` (PTX_Kernel calling convention,
// nvvm.annotations "kernel"); how threads map onto the outputs, which entries there are
// (a split reduction adds name + kGpuCombineSuffix and a partials buffer) and how to launch
// them is AnalyzeGpuKernel's layout (gpu_layout.h). Math functions become libdevice calls
// (__nv_expf, ...) that the caller links in. partition_outer and reduce_parts are ignored.
enum class KernelTarget { kCpu, kGpu };

struct KernelSpec {
  std::string name;
  KernelTarget target = KernelTarget::kCpu;
  std::vector<const HloInstruction*> inputs;
  std::vector<const HloInstruction*> outputs;
  bool partition_outer = false;
  // kCpu, two-stage reduction to a scalar: the one output is a rank-0 reduce, and the buffer
  // table has one more buffer after the output: `reduce_parts` partial results. Calls with
  // [begin, end) inside [0, reduce_parts) reduce part p (the p-th slice of the input's
  // dimension 0) into partials[p], so parts can run on different threads; a call whose range
  // includes reduce_parts then combines the partials into the output (call it last).
  int64_t reduce_parts = 0;
  // kCpu, update in place: the one output is a dynamic-update-slice whose operand 0 is one of
  // `inputs`, and the output buffer already holds that operand's values (the runner passes
  // the operand's own buffer when nothing reads it later, else a copy). The loop nest runs
  // over the update's index space only and stores the update into the window, so a loop
  // that writes one row of a large state per iteration costs the row, not the state. With
  // partition_outer the range is over the update's dimension 0. The operand-0 input is
  // never read.
  bool update_in_place = false;
  // kCpu, column reductions: each reduce in the kernel that IsColumnReduction accepts is
  // accumulated first, row by row in memory order, into a buffer of its (small) result
  // (widened by trailing reduced dimensions, folded at the end) that the output loop reads.
  // Element by element, each result element would walk its column with a stride of the
  // whole row. The plan leaves such a kernel unpartitioned, unless its reductions keep
  // dimension 0 and the outputs read them elementwise (IsPartitionedColumnReduction). With
  // reduce_parts too, the kernel's one column reduction (PartedColumnReduction) reduces
  // dimension 0 in parts: part p accumulates its slice of dimension 0 into its own
  // accumulator in the partials buffer (PartialsShape), and the combining call folds the
  // parts' accumulators in order, then writes every output.
  bool accumulate_columns = false;
  // kCpu, a sort's comparator (CanEmitSortComparator): `inputs` are the sort's operands and
  // `outputs` is empty; the buffer table holds the operands, then one byte for the answer.
  // The entry point's range arguments are two linear indexes, a and b: it applies the
  // comparator to every operand's elements at a (its lhs parameters) and at b (its rhs
  // ones) and stores 1 when a's go first, else 0. The runner sorts with it.
  const HloInstruction* sort = nullptr;
};

// Whether `pred` holds for some instruction of the kernel's cone (its outputs and what they
// read, its inputs left out); each is visited once, and the walk stops at the first.
bool AnyInCone(const KernelSpec& spec, const std::function<bool(const HloInstruction&)>& pred);

// The column reduction of a kernel that can be reduced in parts along dimension 0: the only
// reduce of the kernel's cone that IsColumnReduction accepts, when it reduces dimension 0;
// else nullptr.
const HloInstruction* PartedColumnReduction(const KernelSpec& spec);

// The partials buffer of a reduce_parts kernel: a scalar of the output's type per part, or
// with accumulate_columns an accumulator of PartedColumnReduction's per part.
Shape PartialsShape(const KernelSpec& spec);

// A single-input f32, f64 or 32/64-bit integer reduce over at least one dimension before its
// last kept one: over
// the leading dimensions (a bias gradient, a per-channel statistic), a middle one
// (x.mean(axis=1)), or also trailing ones (a group norm's statistics). Its accumulator (the
// result, times the reduced dimensions after the last kept one) has at most
// kMaxColumnElements elements, and each accumulator takes at most kMaxColumnRows values.
bool IsColumnReduction(const HloInstruction& reduce);
inline constexpr int64_t kMaxColumnElements = 4096;  // the accumulator lives on the stack
// A column reduction that keeps its input's dimension 0 (x.mean(axis=1) of a [B, T, D] array
// to [B, D]) with an accumulator of up to kMaxPartitionedColumnElements: a kernel whose
// outputs lead with that dimension accumulates it partitioned along it, each part touching
// only its slice of the accumulator (KernelSpec::accumulate_columns with partition_outer).
bool IsPartitionedColumnReduction(const HloInstruction& reduce);
inline constexpr int64_t kMaxPartitionedColumnElements = int64_t{1} << 16;
inline constexpr int64_t kMaxColumnRows = int64_t{1} << 20;  // one f32 accumulator per column

// kCpu, one output: a reduce over the trailing dimensions of a costly f32/f64 value (exp,
// log, tanh, ...) of the output's shape that the output also reads at its own index (the sum
// of exp(x - max) in a softmax, whose output divides the same exp by it); null when there is
// none. Its loop, hoisted before each output row, stores the values into the output row,
// and the output loop loads them back instead of computing them again.
const HloInstruction* StashableRowStatistic(const KernelSpec& spec);

// True when a CPU kernel's output reads, through a transpose in its cone, an operand whose
// minor dimension is not the output's, and both trailing output dimensions span a 32 x 32
// tile: its output loops then walk the trailing dimensions tile by tile, so that the
// transposed operand is read a tile's worth of cache lines at a time.
bool TransposedRead(const KernelSpec& spec);
// The first half of that test: a CPU kernel with one array output of rank >= 2 reading an
// operand through a transpose that moves the operand's minor dimension.
bool ReadsTransposed(const KernelSpec& spec);
// A transpose whose operand's minor dimension (longer than 1) goes elsewhere: reading it in
// the output's order crosses a cache line per element.
bool MovesMinorDimension(const HloInstruction& h);

// True when the emitter can generate the elements of `instr` from the elements of its
// operands: elementwise arithmetic, math, compare, select, clamp, convert; broadcast,
// reshape, transpose, slice, dynamic-slice and dynamic-update-slice (scalar start indices),
// concatenate, pad, iota, reverse, constant; reduce and reduce-window with a
// single input and a reducer made of such scalar ops; dot and convolution (naive loops). The
// element types of the result and operands must be pred, integers up to 64 bits, the floats, or
// (CanEmitComplex's subset) c64 and c128. This is the exact list of what the codegen compiles
// natively; `why` (optional) says why not.
bool CanEmitElementally(const HloInstruction& instr, std::string* why = nullptr);

// True when `instr` takes or makes a c64 or c128 value.
bool TouchesComplex(const HloInstruction& instr);
// For such an instruction: the data movement ops, select, and the complex arithmetic the
// emitter has (add, subtract, multiply, divide, compare eq/ne, complex, real, imag, negate,
// abs, sign, exp, log, sqrt, convert to complex). Reductions, dots and convolutions of
// complex values stay on the evaluator.
bool CanEmitComplex(const HloInstruction& instr, std::string* why = nullptr);

// True when the emitter can generate `sort`'s comparator as a KernelSpec::sort entry point:
// array operands of one shape whose types it supports, and a comparator of scalar ops over
// its 2 * operands parameters with a pred result; `why` (optional) says why not.
bool CanEmitSortComparator(const HloInstruction& sort, std::string* why = nullptr);

// Adds the kernel function to `module` (whose context and data layout it uses). For kCpu the
// function takes the buffer table (`ptr`) and the outer range (two i64); for kGpu one `ptr`
// per buffer (see KernelTarget). Both return void.
absl::Status EmitKernel(const KernelSpec& spec, llvm::Module& module);

}  // namespace kiln::llvm_emit
