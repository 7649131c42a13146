#include "plugins/llvm_emitter/gpu_layout.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_set.h"

namespace kiln::llvm_emit {

bool IsTrailingReduce(const HloInstruction& reduce) {
  if (reduce.opcode() != HloOpcode::kReduce || reduce.operand_count() != 2) return false;
  std::vector<int64_t> dims = reduce.dimensions();
  std::sort(dims.begin(), dims.end());
  const int64_t rank = reduce.operand(0)->shape().rank();
  const int64_t kept = rank - static_cast<int64_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != kept + static_cast<int64_t>(i)) return false;
  return true;
}

bool IsLeadingReduce(const HloInstruction& reduce) {
  if (reduce.opcode() != HloOpcode::kReduce || reduce.operand_count() != 2) return false;
  std::vector<int64_t> dims = reduce.dimensions();
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<int64_t>(i)) return false;
  return !dims.empty();
}

namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < dims.size(); ++i) p *= dims[i];
  return p;
}

// Elements of each row a trailing reduce combines.
int64_t RowColumns(const HloInstruction& reduce) {
  return Product(reduce.operand(0)->shape().dimensions(), reduce.shape().rank());
}

int WarpRoundedThreads(int64_t columns) {
  int64_t t = std::min<int64_t>(kGpuMaxBlockThreads, (columns + 31) / 32 * 32);
  return static_cast<int>(std::max<int64_t>(t, 32));
}

// Elements per 16-byte vector access of 32-bit values (GpuLayout::vector_width).
constexpr int kVectorWidth = 4;

// True when no input or output of the kernel is wider than 32 bits (4 of them fit a 16-byte
// vector access).
bool NarrowTypes(const KernelSpec& spec) {
  auto narrow = [](const Shape& s) { return s.IsArray() && ByteSizeOf(s.element_type()) <= 4; };
  for (const HloInstruction* o : spec.outputs)
    if (!narrow(o->shape())) return false;
  for (const HloInstruction* i : spec.inputs)
    if (!narrow(i->shape())) return false;
  return true;
}

// 4 when the kElements form can give each thread 4 consecutive elements of every output
// (see GpuLayout::vector_width), else 1.
int ElementsVectorWidth(const KernelSpec& spec) {
  const int64_t n = spec.outputs.empty() ? 0 : spec.outputs[0]->shape().num_elements();
  if (n % kVectorWidth != 0 || n < kVectorWidth * kGpuMaxBlockThreads) return 1;
  for (const HloInstruction* o : spec.outputs)
    if (o->shape().num_elements() != n) return 1;
  return NarrowTypes(spec) ? kVectorWidth : 1;
}

}  // namespace

bool IsGpuRowStatistic(const HloInstruction& reduce) {
  return IsTrailingReduce(reduce) && RowColumns(reduce) >= kGpuMinRowColumns;
}

std::vector<const HloInstruction*> GpuRowStatistics(const KernelSpec& spec) {
  absl::flat_hash_set<const HloInstruction*> stop(spec.inputs.begin(), spec.inputs.end());
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stats;
  std::function<void(const HloInstruction*)> visit = [&](const HloInstruction* h) {
    if (stop.contains(h) || !seen.insert(h).second) return;
    for (const HloInstruction* o : h->operands()) visit(o);
    if (IsGpuRowStatistic(*h)) stats.push_back(h);
  };
  for (const HloInstruction* o : spec.outputs) visit(o);
  return stats;
}

GpuLayout AnalyzeGpuKernel(const KernelSpec& spec) {
  GpuLayout layout;
  if (spec.outputs.size() == 1) {
    const HloInstruction* r = spec.outputs[0];
    bool is_input = std::find(spec.inputs.begin(), spec.inputs.end(), r) != spec.inputs.end();
    if (!is_input && IsTrailingReduce(*r) && r->shape().IsArray() &&
        r->operand(0)->shape().num_elements() >= kGpuMinSplitElements) {
      // Few long rows (a scalar is one row): a block per row would leave the GPU idle.
      // Split each row into parts of at least 8 elements per thread, up to about 2048
      // blocks in all (1024 blocks of 256 threads fill any current GPU).
      const int64_t rows = r->shape().num_elements();
      const int64_t columns = RowColumns(*r);
      const int64_t parts =
          std::min<int64_t>(columns / (int64_t{kGpuMaxBlockThreads} * 8),
                            std::max<int64_t>(2048 / std::max<int64_t>(rows, 1), 1));
      if (rows > 0 && (parts >= 2 || rows == 1)) {
        layout.kind = GpuLayout::Kind::kSplitReduce;
        layout.threads = kGpuMaxBlockThreads;
        layout.rows = rows;
        layout.parts = std::clamp<int64_t>(parts, 1, 1024);
        layout.vector_width = columns % kVectorWidth == 0 && NarrowTypes(spec) ? kVectorWidth : 1;
        return layout;
      }
    }
  }
  if (spec.outputs.size() == 1) {
    const HloInstruction* r = spec.outputs[0];
    bool is_input = std::find(spec.inputs.begin(), spec.inputs.end(), r) != spec.inputs.end();
    if (!is_input && IsLeadingReduce(*r) && r->shape().IsArray() && r->shape().rank() > 0) {
      const int64_t columns = r->shape().num_elements();
      const int64_t rows = r->operand(0)->shape().num_elements() / std::max<int64_t>(columns, 1);
      // Enough threads in flight (2^17) with at least 32 rows each; a part per 32 rows at most.
      const int64_t parts =
          std::min<int64_t>({rows / 32, (int64_t{1} << 17) / std::max<int64_t>(columns, 1), 1024});
      if (columns > 0 && parts >= 2) {
        layout.kind = GpuLayout::Kind::kSplitColumns;
        layout.parts = parts;
        layout.columns = columns;
        return layout;
      }
    }
  }
  std::vector<const HloInstruction*> stats = GpuRowStatistics(spec);
  if (stats.empty()) {
    layout.vector_width = ElementsVectorWidth(spec);
    return layout;
  }
  const std::vector<int64_t>& row_dims = stats[0]->shape().dimensions();
  int64_t columns = 0;
  for (const HloInstruction* s : stats) {
    if (s->shape().dimensions() != row_dims) return layout;
    columns = std::max(columns, RowColumns(*s));
  }
  for (const HloInstruction* o : spec.outputs) {
    if (!o->shape().IsArray()) return layout;
    const std::vector<int64_t>& d = o->shape().dimensions();
    if (d.size() < row_dims.size() || !std::equal(row_dims.begin(), row_dims.end(), d.begin()))
      return layout;
  }
  if (Product(row_dims) == 0) return layout;
  layout.kind = GpuLayout::Kind::kRows;
  layout.row_dims = row_dims;
  layout.rows = Product(row_dims);
  layout.threads = WarpRoundedThreads(columns);
  // Groups of 4 consecutive columns per thread when every statistic's and output's row
  // length allows (rows then start on 16-byte boundaries too).
  bool groups = NarrowTypes(spec);
  for (const HloInstruction* s : stats) groups &= RowColumns(*s) % kVectorWidth == 0;
  for (const HloInstruction* o : spec.outputs)
    groups &= (o->shape().num_elements() / layout.rows) % kVectorWidth == 0;
  layout.vector_width = groups ? kVectorWidth : 1;
  return layout;
}

}  // namespace kiln::llvm_emit
