// HLO's sort with a generated comparator (see sort_library.h): each row's positions are
// sorted by the comparator, then every operand is gathered into the output in that order.
#include "plugins/cpu_llvm/sort_library.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace kiln::cpu {
namespace {

// Below this many elements in all a sort runs on the calling thread.
constexpr int64_t kParallelMinElements = int64_t{1} << 14;
// A single row at least this long is sorted in parts on the pool, then merged.
constexpr int64_t kSplitRowMinElements = int64_t{1} << 16;

struct Rows {
  int64_t count = 1, length = 1, stride = 1;  // rows, elements per row, elements apart
  // The linear index of row r's first element.
  int64_t Base(int64_t r) const { return r / stride * length * stride + r % stride; }
};

// Calls the comparator entry point: its buffers are the operands, then one answer byte.
// Sorts copy their comparator, so the buffer table and the answer live in `Slots`, one per
// thread, and every copy points at the same one.
struct Slots {
  std::vector<void*> buffers;
  uint8_t answer = 0;
  explicit Slots(std::span<const Literal* const> operands) {
    for (const Literal* l : operands) buffers.push_back(const_cast<uint8_t*>(l->untyped_data()));
    buffers.push_back(&answer);
  }
};

class Less {
 public:
  Less(KernelFn fn, Slots& slots, const Rows& rows, int64_t base)
      : fn_(fn), slots_(&slots), base_(base), stride_(rows.stride) {}
  bool operator()(int64_t x, int64_t y) const {
    fn_(slots_->buffers.data(), base_ + x * stride_, base_ + y * stride_);
    return slots_->answer != 0;
  }

 private:
  KernelFn fn_;
  Slots* slots_;
  int64_t base_, stride_;
};

}  // namespace

void RunSort(const HloInstruction& sort, KernelFn less, std::span<const Literal* const> operands,
             Literal& out, ThreadPool* pool) {
  const std::vector<int64_t>& dims = operands[0]->shape().dimensions();
  const int64_t d = sort.dimensions().empty() ? 0 : sort.dimensions()[0];
  Rows rows;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i < d) rows.count *= dims[i];
    if (i > d) rows.stride *= dims[i];
  }
  rows.count *= rows.stride;
  rows.length = dims.empty() ? 1 : dims[d];
  const int64_t total = rows.count * rows.length;
  if (total == 0) return;
  std::vector<Literal*> outs;
  if (out.IsTuple()) {
    for (Literal& e : out.elements()) outs.push_back(&e);
  } else {
    outs.push_back(&out);
  }
  // Bytes per element of each operand (sub-byte integers take a byte each).
  std::vector<int64_t> bytes;
  for (const Literal* l : operands) bytes.push_back(l->size_bytes() / total);

  auto gather = [&](int64_t base, const std::vector<int64_t>& order) {
    for (size_t k = 0; k < operands.size(); ++k) {
      const uint8_t* src = operands[k]->untyped_data();
      uint8_t* dst = outs[k]->untyped_data();
      const int64_t b = bytes[k];
      for (int64_t j = 0; j < rows.length; ++j)
        std::memcpy(dst + (base + j * rows.stride) * b, src + (base + order[j] * rows.stride) * b,
                    b);
    }
  };
  const bool parallel = pool != nullptr && pool->size() > 1 && total >= kParallelMinElements;
  if (parallel && rows.count == 1 && rows.length >= kSplitRowMinElements) {
    // One long row: parts sorted on the pool, merged in order (stable).
    const int64_t parts = pool->size();
    std::vector<int64_t> order(rows.length);
    std::iota(order.begin(), order.end(), 0);
    auto cut = [&](int64_t p) { return order.begin() + rows.length * p / parts; };
    pool->ParallelFor(
        parts,
        [&](int64_t p0, int64_t p1) {
          Slots slots(operands);
          for (int64_t p = p0; p < p1; ++p)
            std::stable_sort(cut(p), cut(p + 1), Less(less, slots, rows, 0));
        },
        static_cast<int>(parts), /*even=*/true, /*large=*/true);
    Slots slots(operands);
    for (int64_t p = 1; p < parts; ++p)
      std::inplace_merge(order.begin(), cut(p), cut(p + 1), Less(less, slots, rows, 0));
    gather(0, order);
    return;
  }
  auto sort_rows = [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> order(rows.length);
    Slots slots(operands);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = rows.Base(r);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), Less(less, slots, rows, base));
      gather(base, order);
    }
  };
  if (parallel && rows.count > 1)
    pool->ParallelFor(rows.count, sort_rows);
  else
    sort_rows(0, rows.count);
}

}  // namespace kiln::cpu
