#include "plugins/cpu_llvm/scatter_rows.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "hlo/evaluator/combiner.h"
#include "hlo/native_type.h"

namespace kiln::cpu {

namespace {

using eval::CombinerKind;

// The elements per table row, and the update count, when `h` is a row scatter's shape.
struct RowScatterShape {
  int64_t rows = 0;        // table rows: the product of the dimensions an index addresses
  int64_t row = 0;         // elements per row
  int64_t updates = 0;     // one row number each
  int64_t index_size = 1;  // the components of each index (leading table dimensions)
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
  // The index vector is implicit (index_vector_dim == rank: one component) or the trailing
  // dimension, its k components addressing the table's first k dimensions in order.
  const int64_t ivd = dn.index_vector_dim;
  if (ivd != ids.rank() && ivd != ids.rank() - 1) return std::nullopt;
  const int64_t k = ivd == ids.rank() ? 1 : ids.dimensions().back();
  if (k < 1 || k > table.rank()) return std::nullopt;
  std::vector<int64_t> leading(static_cast<size_t>(k));
  for (int64_t d = 0; d < k; ++d) leading[d] = d;
  if (dn.inserted_window_dims != leading || dn.scatter_dims_to_operand_dims != leading ||
      !dn.input_batching_dims.empty() || !dn.scatter_indices_batching_dims.empty())
    return std::nullopt;
  // The update window is every update dimension after the scatter ones: the table's other
  // dimensions in full.
  const int64_t window = table.rank() - k;
  const int64_t scatter_dims = upd.rank() - window;
  if (scatter_dims != std::min<int64_t>(ivd, ids.rank())) return std::nullopt;
  RowScatterShape s;
  s.index_size = k;
  s.rows = 1;
  for (int64_t d = 0; d < k; ++d) s.rows *= table.dimensions()[d];
  s.row = 1;
  s.updates = 1;
  for (int64_t j = 0; j < window; ++j) {
    if (dn.update_window_dims.size() != static_cast<size_t>(window) ||
        dn.update_window_dims[j] != scatter_dims + j ||
        upd.dimensions()[scatter_dims + j] != table.dimensions()[j + k])
      return std::nullopt;
    s.row *= table.dimensions()[j + k];
  }
  for (int64_t d = 0; d < scatter_dims; ++d) {
    if (upd.dimensions()[d] != ids.dimensions()[d]) return std::nullopt;
    s.updates *= upd.dimensions()[d];
  }
  // Row numbers and update numbers are kept as int32.
  if (s.rows >= INT32_MAX || s.updates >= INT32_MAX) return std::nullopt;
  return s;
}

// The combining loops of one combiner K on one element type T. Row numbers are int32; one
// outside [0, rows) skips its update, as XLA's scatter does.
template <CombinerKind K, typename T>
struct RowCombiner {
  static T Combine(T d, T s) {
    using A = eval::AccumT<T>;
    return eval::CastTo<T>(eval::ApplyCombiner<A>(K, eval::CastTo<A>(d), eval::CastTo<A>(s)));
  }

  // Applies updates [begin, end) in order.
  static void Serial(T* table, const T* updates, const int32_t* ids, int64_t rows, int64_t row,
                     int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const auto r = static_cast<uint32_t>(ids[u]);  // a negative id wraps past `rows`
      if (r >= rows) continue;
      if (row == 1)  // a bincount, a scatter into a vector: no loop per update
        table[r] = Combine(table[r], updates[u]);
      else
        eval::CombineRowAs<K>(table + r * row, updates + u * row, row);
    }
  }

  // Applies, in update order, the updates whose row number is in [first, last).
  static void Band(T* table, const T* updates, std::span<const int32_t> ids, int64_t row,
                   int32_t first, int32_t last) {
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

  // The value x with combine(x, y) == y: what a private table starts as.
  static T Identity() {
    using A = eval::AccumT<T>;
    if constexpr (K == CombinerKind::kMultiply) return eval::CastTo<T>(A{1});
    if constexpr (K == CombinerKind::kAnd && std::is_integral_v<A>)
      return eval::CastTo<T>(static_cast<A>(~A{0}));
    if constexpr (K == CombinerKind::kMaximum || K == CombinerKind::kMinimum) {
      constexpr bool max = K == CombinerKind::kMaximum;
      if constexpr (std::is_floating_point_v<A>)
        return eval::CastTo<T>(max ? -std::numeric_limits<A>::infinity()
                                   : std::numeric_limits<A>::infinity());
      return eval::CastTo<T>(max ? std::numeric_limits<A>::lowest()
                                 : std::numeric_limits<A>::max());
    }
    return eval::CastTo<T>(A{0});
  }

  // Updates split into `parts` contiguous runs: the first combines into the table, each
  // other into a private table of its own, and the private tables are then combined into the
  // table in order. For a small table hit by many updates (a bincount, a segment sum) each
  // worker reads only its run of updates.
  static void Private(T* table, const T* updates, const int32_t* ids, int64_t rows, int64_t row,
                      int64_t count, int parts, ThreadPool& pool) {
    const int64_t size = rows * row;
    std::vector<std::unique_ptr<T[]>> partial(static_cast<size_t>(parts - 1));
    pool.ParallelFor(
        parts,
        [&](int64_t p0, int64_t p1) {
          for (int64_t p = p0; p < p1; ++p) {
            T* into = table;
            if (p > 0) {
              partial[p - 1].reset(new T[size]);
              into = partial[p - 1].get();
              std::fill_n(into, size, Identity());
            }
            Serial(into, updates, ids, rows, row, count * p / parts, count * (p + 1) / parts);
          }
        },
        parts, /*even=*/false);
    // The whole table as one row: CombineRowAs's vectorized loop (a scalar loop with the
    // maximum's NaN test took as long as a part's updates).
    for (const std::unique_ptr<T[]>& t : partial) eval::CombineRowAs<K>(table, t.get(), size);
  }

  static void Run(T* table, const T* updates, std::span<const int32_t> ids, int64_t rows,
                  int64_t row, ThreadPool* pool) {
    const int64_t count = static_cast<int64_t>(ids.size());
    const int threads = pool != nullptr ? pool->size() : 1;
    const int64_t work = count * row;
    if (threads > 1 && work >= (int64_t{1} << 16)) {
      // Bands for wide rows: a worker reads just its own updates' rows. Of narrow rows (a
      // segment sum's 32 floats) the prefetcher brings in the neighbours' too (measured: no
      // gain), so those take private tables when the table is small.
      if (row * static_cast<int64_t>(sizeof(T)) >= 512 && rows > 1) {
        pool->ParallelFor(
            rows,
            [&](int64_t first, int64_t last) {
              Band(table, updates, ids, row, static_cast<int32_t>(first),
                   static_cast<int32_t>(last));
            },
            threads, /*even=*/false);
        return;
      }
      // Not for .set (the order between runs matters), nor for types without exact
      // identities here (bf16, f16, 8-bit floats, complex).
      if constexpr (K != CombinerKind::kAssign && std::is_arithmetic_v<T>) {
        if (rows * row <= (int64_t{1} << 18) && work >= 4 * rows * row) {
          Private(table, updates, ids.data(), rows, row, count, threads, *pool);
          return;
        }
      }
    }
    Serial(table, updates, ids.data(), rows, row, 0, count);
  }
};

template <typename T>
void CombineRows(CombinerKind kind, T* table, const T* updates, std::span<const int32_t> ids,
                 int64_t rows, int64_t row, ThreadPool* pool) {
  switch (kind) {
    case CombinerKind::kAdd:
      return RowCombiner<CombinerKind::kAdd, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kMultiply:
      return RowCombiner<CombinerKind::kMultiply, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kMaximum:
      return RowCombiner<CombinerKind::kMaximum, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kMinimum:
      return RowCombiner<CombinerKind::kMinimum, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kAnd:
      return RowCombiner<CombinerKind::kAnd, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kOr:
      return RowCombiner<CombinerKind::kOr, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kAssign:
      return RowCombiner<CombinerKind::kAssign, T>::Run(table, updates, ids, rows, row, pool);
    case CombinerKind::kOther:
      return;
  }
}

}  // namespace

// From this many updates, index vectors are flattened into row numbers on the pool.
constexpr int64_t kParallelConvertMin = int64_t{1} << 16;

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
  // Row numbers as int32: s32 row numbers as they are, others converted and index vectors
  // flattened (an index outside the table, in any component, as -1).
  std::vector<int32_t> converted;
  std::span<const int32_t> ids;
  if (indices.shape().element_type() == PrimitiveType::S32 && s.index_size == 1) {
    ids = indices.data<int32_t>();
  } else {
    converted.resize(static_cast<size_t>(s.updates));
    const std::vector<int64_t>& dims = table.shape().dimensions();
    PrimitiveTypeSwitch(indices.shape().element_type(), [&](auto tag) {
      using I = decltype(tag);
      if constexpr (std::is_integral_v<I>) {
        auto convert = [&](int64_t begin, int64_t end) {
          const I* p = indices.data<I>().data() + begin * s.index_size;
          for (int64_t u = begin; u < end; ++u, p += s.index_size) {
            int64_t row = 0;
            bool inside = true;
            for (int64_t d = 0; d < s.index_size; ++d) {
              const auto c = static_cast<int64_t>(p[d]);
              inside = inside && c >= 0 && c < dims[d];
              row = row * dims[d] + c;
            }
            converted[u] = inside ? static_cast<int32_t>(row) : -1;
          }
        };
        // On the pool when long: a vmapped bincount's 2^19 (image, bin) pairs took as long
        // on one thread as the scatter itself.
        if (pool != nullptr && pool->size() > 1 && s.updates >= kParallelConvertMin)
          pool->ParallelFor(s.updates, convert);
        else
          convert(0, s.updates);
      }
    });
    ids = converted;
  }
  PrimitiveTypeSwitch(table.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    CombineRows<T>(kind, table.data<T>().data(), updates.data<T>().data(), ids, s.rows, s.row,
                   pool);
  });
}

}  // namespace kiln::cpu
