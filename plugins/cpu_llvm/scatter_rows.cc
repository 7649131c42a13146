#include "plugins/cpu_llvm/scatter_rows.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <span>
#include <vector>

#include "hlo/evaluator/combiner.h"
#include "hlo/native_type.h"

namespace kiln::cpu {

namespace {

using eval::CombinerKind;

constexpr int32_t kWholeTable = INT32_MAX;  // a band's end: every row, one worker

// The elements per table row, and the update count, when `h` is a row scatter's shape.
struct RowScatterShape {
  int64_t rows = 0;     // table rows
  int64_t row = 0;      // elements per row
  int64_t updates = 0;  // one row number each
};

std::optional<RowScatterShape> ShapeOf(const HloInstruction& h) {
  if (h.opcode() != HloOpcode::kScatter || h.operand_count() != 3 || !h.shape().IsArray() ||
      !h.attrs().scatter_dimension_numbers || h.to_apply() == nullptr)
    return std::nullopt;
  const Shape& table = h.operand(0)->shape();
  const Shape& ids = h.operand(1)->shape();
  const Shape& upd = h.operand(2)->shape();
  if (!table.IsArray() || !ids.IsArray() || !upd.IsArray() || table.is_dynamic() ||
      ids.is_dynamic() || upd.is_dynamic() || table.rank() < 1 || table != h.shape() ||
      upd.element_type() != table.element_type())
    return std::nullopt;
  const PrimitiveType it = ids.element_type();
  if (it != PrimitiveType::S32 && it != PrimitiveType::S64 && it != PrimitiveType::U32)
    return std::nullopt;
  const ScatterDimensionNumbers& dn = *h.attrs().scatter_dimension_numbers;
  if (dn.inserted_window_dims != std::vector<int64_t>{0} ||
      dn.scatter_dims_to_operand_dims != std::vector<int64_t>{0} ||
      !dn.input_batching_dims.empty() || !dn.scatter_indices_batching_dims.empty())
    return std::nullopt;
  // The index vector is implicit (index_vector_dim == rank) or a trailing dimension of 1.
  const int64_t ivd = dn.index_vector_dim;
  if (ivd == ids.rank() - 1 ? ids.dimensions().back() != 1 : ivd != ids.rank()) return std::nullopt;
  // The update window is every update dimension after the scatter ones, the table's rows.
  const int64_t window = table.rank() - 1;
  const int64_t scatter_dims = upd.rank() - window;
  if (scatter_dims != std::min<int64_t>(ivd, ids.rank())) return std::nullopt;
  RowScatterShape s;
  s.rows = table.dimensions()[0];
  s.row = 1;
  s.updates = 1;
  for (int64_t j = 0; j < window; ++j) {
    if (dn.update_window_dims.size() != static_cast<size_t>(window) ||
        dn.update_window_dims[j] != scatter_dims + j ||
        upd.dimensions()[scatter_dims + j] != table.dimensions()[j + 1])
      return std::nullopt;
    s.row *= table.dimensions()[j + 1];
  }
  for (int64_t d = 0; d < scatter_dims; ++d) {
    if (upd.dimensions()[d] != ids.dimensions()[d]) return std::nullopt;
    s.updates *= upd.dimensions()[d];
  }
  // Row numbers and update numbers are kept as int32.
  if (s.rows >= INT32_MAX || s.updates >= INT32_MAX) return std::nullopt;
  return s;
}

// Applies, in update order, the updates whose row number is in [first, last) (-1: none).
template <CombinerKind K, typename T>
void ScatterBand(T* table, const T* updates, std::span<const int32_t> ids, int64_t row,
                 int32_t first, int32_t last) {
  if (first == 0 && last == kWholeTable) {
    for (size_t u = 0; u < ids.size(); ++u)
      if (ids[u] >= 0)
        eval::CombineRowAs<K>(table + ids[u] * row, updates + static_cast<int64_t>(u) * row, row);
    return;
  }
  // The updates landing in the band, listed without a branch per id: with random ids that
  // branch mispredicts about half the time, which costs more than combining a short row.
  std::unique_ptr<int32_t[]> mine(new int32_t[ids.size()]);
  size_t n = 0;
  for (size_t u = 0; u < ids.size(); ++u) {
    mine[n] = static_cast<int32_t>(u);
    n += static_cast<size_t>(ids[u] >= first && ids[u] < last);
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t u = mine[i];
    eval::CombineRowAs<K>(table + ids[u] * row, updates + u * row, row);
  }
}

template <typename T>
void ScatterBand(CombinerKind kind, T* table, const T* updates, std::span<const int32_t> ids,
                 int64_t row, int32_t first, int32_t last) {
  switch (kind) {
    case CombinerKind::kAdd:
      return ScatterBand<CombinerKind::kAdd>(table, updates, ids, row, first, last);
    case CombinerKind::kMultiply:
      return ScatterBand<CombinerKind::kMultiply>(table, updates, ids, row, first, last);
    case CombinerKind::kMaximum:
      return ScatterBand<CombinerKind::kMaximum>(table, updates, ids, row, first, last);
    case CombinerKind::kMinimum:
      return ScatterBand<CombinerKind::kMinimum>(table, updates, ids, row, first, last);
    case CombinerKind::kAnd:
      return ScatterBand<CombinerKind::kAnd>(table, updates, ids, row, first, last);
    case CombinerKind::kOr:
      return ScatterBand<CombinerKind::kOr>(table, updates, ids, row, first, last);
    case CombinerKind::kAssign:
      return ScatterBand<CombinerKind::kAssign>(table, updates, ids, row, first, last);
    case CombinerKind::kOther:
      return;
  }
}

}  // namespace

bool IsRowScatter(const HloInstruction& h) {
  if (!ShapeOf(h)) return false;
  const PrimitiveType t = h.shape().element_type();
  if (IsSubByteInt(t)) return false;
  const CombinerKind kind = eval::ClassifyCombiner(*h.to_apply());
  return kind != CombinerKind::kOther && PrimitiveTypeSwitch(t, [&](auto tag) {
           return eval::CombinerSupports<decltype(tag)>(kind);
         });
}

void RunRowScatter(const HloInstruction& h, Literal& table, const Literal& indices,
                   const Literal& updates, ThreadPool* pool) {
  const RowScatterShape s = *ShapeOf(h);
  const CombinerKind kind = eval::ClassifyCombiner(*h.to_apply());
  // Row numbers, out-of-table ones as -1 (skipped by every band).
  std::vector<int32_t> ids(static_cast<size_t>(s.updates));
  PrimitiveTypeSwitch(indices.shape().element_type(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I>) {
      const I* p = indices.data<I>().data();
      for (size_t u = 0; u < ids.size(); ++u) {
        const int64_t r = static_cast<int64_t>(p[u]);
        ids[u] = r >= 0 && r < s.rows ? static_cast<int32_t>(r) : -1;
      }
    }
  });
  PrimitiveTypeSwitch(table.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = table.data<T>().data();
    const T* src = updates.data<T>().data();
    // Bands pay off for wide rows only: a worker reads just its own updates' rows, but of
    // narrow rows (a segment sum's 32 floats) the prefetcher brings in the neighbours'
    // too, and memory bandwidth, not combining, bounds the time (measured: no gain).
    const bool parallel = pool != nullptr && pool->size() > 1 && s.rows > 1 &&
                          s.row * static_cast<int64_t>(sizeof(T)) >= 512 &&
                          s.updates * s.row >= (int64_t{1} << 16);
    if (!parallel) return ScatterBand<T>(kind, dst, src, ids, s.row, 0, kWholeTable);
    pool->ParallelFor(
        s.rows,
        [&](int64_t first, int64_t last) {
          ScatterBand<T>(kind, dst, src, ids, s.row, first, last);
        },
        pool->size(), /*even=*/false);
  });
}

}  // namespace kiln::cpu
