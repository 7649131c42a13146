// How a GPU-form kernel (KernelTarget::kGpu) maps onto threads, decided from its HLO alone so
// the emitter and the launcher agree. LLVM-free.
//
// - kElements: one thread per output element, or per `vector_width` consecutive ones
//   (grid-stride); reduces and dots inside run
//   their loops per thread. Right for elementwise kernels and column reductions (adjacent
//   threads read adjacent columns).
// - kRows: one block per row (grid-stride over rows). The kernel holds row reductions
//   (reduce over the trailing dimensions of its input, at least kGpuMinRowColumns of them):
//   the block's threads read the row cooperatively (coalesced), combine their partial
//   results with warp shuffles and shared memory, and every thread then generates its share
//   of the row's output elements with the statistics in registers. Softmax and
//   layernorm+GELU become one kernel with one read of each row.
// - kSplitReduce: the kernel is one large reduce over trailing dimensions with few rows (a
//   reduce to a scalar is one row). Stage one (the kernel itself) has rows * parts blocks,
//   each reducing one contiguous slice of a row into a partial; stage two (the entry named
//   name + kGpuCombineSuffix) has a block per row combining the row's partials and the
//   init value. Both stages take the buffers followed by the partials buffer.
// - kSplitColumns: the kernel is one reduce over the leading dimensions of its input (a
//   column reduction, e.g. a bias gradient) with many rows per column. One thread per column
//   would leave most of the GPU idle and walk thousands of rows serially, so stage one has
//   `parts` threads per column, each reducing a contiguous range of rows into a partial
//   (adjacent threads read adjacent columns: coalesced); stage two (name +
//   kGpuCombineSuffix), one thread per column, folds its column's partials in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::llvm_emit {

// Row reductions shorter than this stay per-thread loops: a block per row would idle most
// of its threads.
constexpr int64_t kGpuMinRowColumns = 64;
// A reduce to a scalar over at least this many elements is split across blocks.
constexpr int64_t kGpuMinSplitElements = int64_t{1} << 16;
constexpr int kGpuMaxBlockThreads = 256;
constexpr char kGpuCombineSuffix[] = "_combine";

struct GpuLayout {
  enum class Kind { kElements, kRows, kSplitReduce, kSplitColumns };
  Kind kind = Kind::kElements;
  std::vector<int64_t> row_dims;  // kRows: the statistics' shape (the outputs' leading dims)
  int64_t rows = 0;               // kRows: product of row_dims; kSplitReduce: output elements
  int threads = 0;                // kRows, kSplitReduce: threads per block (whole warps)
  int64_t parts = 0;              // kSplitReduce: blocks per row; kSplitColumns: parts per column
  int64_t columns = 0;            // kSplitColumns: output elements
  // Consecutive elements a thread takes at a time (4 when no value is wider than 32 bits and
  // the sizes allow: a thread's loads of an input read at the output's index become one
  // 16-byte vector load), else 1. kElements: every output has the same size, a multiple of
  // 4. kRows: every statistic's and output's row length is a multiple of 4. kSplitReduce:
  // the row length is.
  int vector_width = 1;
  // Bytes of the partials buffer: one 8-byte slot per part of each row (or column).
  int64_t partials_bytes() const {
    return parts * std::max<int64_t>(kind == Kind::kSplitColumns ? columns : rows, 1) * 8;
  }
};

// True when `reduce` reduces exactly the trailing dimensions of its input.
bool IsTrailingReduce(const HloInstruction& reduce);
// True when `reduce` reduces exactly the leading dimensions of its input.
bool IsLeadingReduce(const HloInstruction& reduce);

// True when `reduce` is a row statistic the rows layout computes cooperatively: a reduce over
// its input's trailing dimensions of at least kGpuMinRowColumns elements per row.
bool IsGpuRowStatistic(const HloInstruction& reduce);

// The reduces of the kernel's DAG (from its outputs, not crossing its inputs) that kRows
// computes cooperatively, in post-order (operands first).
std::vector<const HloInstruction*> GpuRowStatistics(const KernelSpec& spec);

GpuLayout AnalyzeGpuKernel(const KernelSpec& spec);

}  // namespace kiln::llvm_emit
