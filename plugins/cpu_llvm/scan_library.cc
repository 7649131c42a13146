// Running reductions in one pass (see scan_library.h).
#include "plugins/cpu_llvm/scan_library.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "hlo/passes/pass_util.h"
#include "hlo/passes/reduce_window_scan.h"

namespace kiln::cpu {
namespace {

// Scans shorter than this stay with the generated log-step form (cheap when short).
constexpr int64_t kMinLength = 64;
// Below this many elements a scan runs on the calling thread.
constexpr int64_t kParallelElements = int64_t{1} << 15;

// The reducer's operation when it is an add, multiply, maximum or minimum with the initial
// value its identity; kParameter otherwise.
HloOpcode ReducerOp(const HloInstruction& h) {
  const std::optional<HloOpcode> op = BinaryReducerWithIdentity(h);
  return op && *op != HloOpcode::kAnd && *op != HloOpcode::kOr ? *op : HloOpcode::kParameter;
}

template <typename T>
T Identity(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd:
      return T(0);
    case HloOpcode::kMultiply:
      return T(1);
    case HloOpcode::kMaximum:
      return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                         : std::numeric_limits<T>::lowest();
    default:
      return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                         : std::numeric_limits<T>::max();
  }
}

// op(a, b); maximum and minimum propagate NaN, as the emitter's do.
template <typename T, HloOpcode kOp>
inline T Combine(T a, T b) {
  if constexpr (kOp == HloOpcode::kAdd) {
    return a + b;
  } else if constexpr (kOp == HloOpcode::kMultiply) {
    return a * b;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return kOp == HloOpcode::kMaximum ? std::max(a, b) : std::min(a, b);
  } else {
    return kOp == HloOpcode::kMaximum ? std::max(a, b) : std::min(a, b);
  }
}

// What a running f32 sum or product is carried in: f64, each result rounded once. Carried in
// f32 one element after another, a sum of 2^20 values drifts by n eps of its magnitude
// (differences of two cumulative sums then lose their digits); the log-step form's tree
// order loses log n eps.
template <typename T, HloOpcode kOp>
using Acc = std::conditional_t<
    std::is_same_v<T, float> && (kOp == HloOpcode::kAdd || kOp == HloOpcode::kMultiply), double, T>;

// The data as [outer, n, inner] with the scan along n.
struct Layout {
  int64_t outer = 1, n = 1, inner = 1;
  bool reverse = false;
};

// Scans elements [lo, hi) of the run that starts at `x` (stride `inner`, runs of `width`
// contiguous lanes), starting from `carry` (width values), in scan order; leaves the last
// results in `carry`.
template <typename T, HloOpcode kOp, typename A = Acc<T, kOp>>
void ScanRange(const T* x, T* y, const Layout& l, int64_t lo, int64_t hi, int64_t width, A* carry) {
  if (width == 1) {  // one lane: the carry in a register, not stored and reloaded per element
    A c = carry[0];
    const int64_t step = l.reverse ? -l.inner : l.inner;
    const int64_t first = (l.reverse ? l.n - 1 - lo : lo) * l.inner;
    for (int64_t s = lo, i = first; s < hi; ++s, i += step) {
      c = Combine<A, kOp>(c, A(x[i]));
      y[i] = T(c);
    }
    carry[0] = c;
    return;
  }
  for (int64_t s = lo; s < hi; ++s) {
    const int64_t i = l.reverse ? l.n - 1 - s : s;
    const T* xi = x + i * l.inner;
    T* yi = y + i * l.inner;
    for (int64_t j = 0; j < width; ++j) {
      carry[j] = Combine<A, kOp>(carry[j], A(xi[j]));
      yi[j] = T(carry[j]);
    }
  }
}

// The combination of elements [lo, hi) of a run, in scan order, into `total` (width lanes).
template <typename T, HloOpcode kOp, typename A = Acc<T, kOp>>
void Total(const T* x, const Layout& l, int64_t lo, int64_t hi, int64_t width, A* total) {
  if (width == 1 && l.inner == 1) {  // one contiguous run: eight independent partial results
    const int64_t first = l.reverse ? l.n - hi : lo, count = hi - lo;
    A part[8];
    std::fill(part, part + 8, Identity<A>(kOp));
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
      for (int k = 0; k < 8; ++k) part[k] = Combine<A, kOp>(part[k], A(x[first + i + k]));
    for (; i < count; ++i) part[0] = Combine<A, kOp>(part[0], A(x[first + i]));
    for (int k = 0; k < 8; ++k) total[0] = Combine<A, kOp>(total[0], part[k]);
    return;
  }
  for (int64_t s = lo; s < hi; ++s) {
    const T* xi = x + (l.reverse ? l.n - 1 - s : s) * l.inner;
    for (int64_t j = 0; j < width; ++j) total[j] = Combine<A, kOp>(total[j], A(xi[j]));
  }
}

template <typename T, HloOpcode kOp>
void Scan(const T* x, T* y, const Layout& l, ThreadPool* pool) {
  using A = Acc<T, kOp>;
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t elements = l.outer * l.n * l.inner;
  const A id = Identity<A>(kOp);
  // Lanes of the inner dimension scanned together, a block of them per task.
  constexpr int64_t kLanes = 256;
  const int64_t blocks = (l.inner + kLanes - 1) / kLanes;
  const int64_t tasks = l.outer * blocks;
  auto run_block = [&](int64_t task, int64_t lo, int64_t hi, A* carry) {
    const int64_t o = task / blocks, b = task % blocks;
    const int64_t first = b * kLanes, width = std::min(kLanes, l.inner - first);
    const T* xo = x + o * l.n * l.inner + first;
    T* yo = y + o * l.n * l.inner + first;
    ScanRange<T, kOp>(xo, yo, l, lo, hi, width, carry);
  };
  if (threads <= 1 || elements < kParallelElements || tasks >= 2 * threads) {
    auto rows = [&](int64_t begin, int64_t end) {
      std::vector<A> carry(kLanes);
      for (int64_t t = begin; t < end; ++t) {
        std::fill(carry.begin(), carry.end(), id);
        run_block(t, 0, l.n, carry.data());
      }
    };
    if (threads <= 1 || elements < kParallelElements) {
      rows(0, tasks);
    } else {
      pool->ParallelFor(tasks, rows);
    }
    return;
  }
  // Few long runs: each cut into chunks; the chunks' totals, then each chunk from the
  // combination of the totals before it.
  const int64_t chunks = std::min<int64_t>(4 * threads, l.n);
  std::vector<A> totals(static_cast<size_t>(tasks * chunks * kLanes), id);
  auto bounds = [&](int64_t c) { return c * l.n / chunks; };
  pool->ParallelFor(tasks * chunks, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t task = k / chunks, c = k % chunks;
      const int64_t o = task / blocks, b = task % blocks;
      const int64_t first = b * kLanes, width = std::min(kLanes, l.inner - first);
      if (c + 1 < chunks)  // the last chunk's total is never read
        Total<T, kOp>(x + o * l.n * l.inner + first, l, bounds(c), bounds(c + 1), width,
                      totals.data() + k * kLanes);
    }
  });
  pool->ParallelFor(tasks * chunks, [&](int64_t begin, int64_t end) {
    std::vector<A> carry(kLanes);
    for (int64_t k = begin; k < end; ++k) {
      const int64_t task = k / chunks, c = k % chunks;
      std::fill(carry.begin(), carry.end(), id);
      for (int64_t p = 0; p < c; ++p) {
        const A* t = totals.data() + (task * chunks + p) * kLanes;
        for (int64_t j = 0; j < kLanes; ++j) carry[j] = Combine<A, kOp>(carry[j], t[j]);
      }
      run_block(task, bounds(c), bounds(c + 1), carry.data());
    }
  });
}

template <typename T>
void ScanOfType(HloOpcode op, const T* x, T* y, const Layout& l, ThreadPool* pool) {
  switch (op) {
    case HloOpcode::kAdd:
      return Scan<T, HloOpcode::kAdd>(x, y, l, pool);
    case HloOpcode::kMultiply:
      return Scan<T, HloOpcode::kMultiply>(x, y, l, pool);
    case HloOpcode::kMaximum:
      return Scan<T, HloOpcode::kMaximum>(x, y, l, pool);
    default:
      return Scan<T, HloOpcode::kMinimum>(x, y, l, pool);
  }
}

}  // namespace

bool IsScanLibraryCall(const HloInstruction& h) {
  const std::optional<RunningScan> scan = RunningScanOf(h, kMinLength);
  if (!scan || !h.shape().HasDefaultLayout() || !h.operand(0)->shape().HasDefaultLayout())
    return false;
  const PrimitiveType t = h.shape().element_type();
  if (t != PrimitiveType::F32 && t != PrimitiveType::F64 && t != PrimitiveType::S32 &&
      t != PrimitiveType::S64)
    return false;
  return ReducerOp(h) != HloOpcode::kParameter;
}

void RunScan(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool) {
  const RunningScan scan = *RunningScanOf(h, kMinLength);
  const std::vector<int64_t>& dims = h.shape().dimensions();
  Layout l;
  l.reverse = scan.reverse;
  l.n = dims[scan.dim];
  for (int64_t d = 0; d < scan.dim; ++d) l.outer *= dims[d];
  for (size_t d = scan.dim + 1; d < dims.size(); ++d) l.inner *= dims[d];
  const HloOpcode op = ReducerOp(h);
  switch (h.shape().element_type()) {
    case PrimitiveType::F32:
      return ScanOfType<float>(op, in.data<float>().data(), out.data<float>().data(), l, pool);
    case PrimitiveType::F64:
      return ScanOfType<double>(op, in.data<double>().data(), out.data<double>().data(), l, pool);
    case PrimitiveType::S32:
      return ScanOfType<int32_t>(op, in.data<int32_t>().data(), out.data<int32_t>().data(), l,
                                 pool);
    default:
      return ScanOfType<int64_t>(op, in.data<int64_t>().data(), out.data<int64_t>().data(), l,
                                 pool);
  }
}

}  // namespace kiln::cpu
