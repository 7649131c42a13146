// HLO's topk on the pool (see top_k_library.h).
#include "plugins/cpu_llvm/top_k_library.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "hlo/float16.h"
#include "hlo/total_order.h"

namespace kiln::cpu {
namespace {

// Each element's sort key: a signed integer whose order is the values' (floats: the total
// order of their bits), bitwise inverted for the smallest (~ reverses a signed order).
template <typename T>
struct Keys {
  // 64-bit keys for 64-bit types and u32 (whose order an s32 key would break).
  using K = std::conditional_t<sizeof(T) == 8 || std::is_same_v<T, uint32_t>, int64_t, int32_t>;
  static K Key(T v) {
    if constexpr (std::is_same_v<T, float>) {
      int32_t b;
      std::memcpy(&b, &v, 4);
      return TotalOrderKeyOfBits(b);
    } else if constexpr (std::is_same_v<T, double>) {
      int64_t b;
      std::memcpy(&b, &v, 8);
      return TotalOrderKeyOfBits(b);
    } else if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, half>) {
      // Sign, exponent and fraction in the top 16 bits: the float total order carries over.
      return TotalOrderKeyOfBits(static_cast<int32_t>(static_cast<uint32_t>(v.bits) << 16));
    } else {
      return static_cast<K>(v);
    }
  }
};

// A mask of which of the 16 elements at `row` have a key above `worst`: four 4-lane compares
// for 4-byte types where SSE2 is there (GCC's -O2 vectorizer leaves the scalar loop alone),
// else a loop. Only the elements it names are offered.
template <typename T>
uint32_t AboveMask(const T* row, typename Keys<T>::K worst, typename Keys<T>::K flip) {
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int32_t>) {
    const __m128i w = _mm_set1_epi32(worst), f = _mm_set1_epi32(flip);
    uint32_t mask = 0;
    for (int q = 0; q < 4; ++q) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 4 * q));
      if constexpr (std::is_same_v<T, float>)  // TotalOrderKeyOfBits, lane by lane
        v = _mm_xor_si128(v, _mm_and_si128(_mm_srai_epi32(v, 31), _mm_set1_epi32(0x7fffffff)));
      const __m128i above = _mm_cmpgt_epi32(_mm_xor_si128(v, f), w);
      mask |= static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(above))) << (4 * q);
    }
    return mask;
  }
#endif
  uint32_t mask = 0;
  for (int j = 0; j < 16; ++j)
    mask |= static_cast<uint32_t>((Keys<T>::Key(row[j]) ^ flip) > worst) << j;
  return mask;
}

// The k best of one row, in order: keys strictly larger go first; among equal keys the lower
// index does, which visiting the row in order gives for free (a later index never passes an
// equal key). `key` and `at` hold k entries.
template <typename T>
void RowTopK(const T* row, int64_t len, int64_t k, bool largest, typename Keys<T>::K* key,
             int32_t* at) {
  using K = typename Keys<T>::K;
  const K flip = largest ? K{0} : K{-1};  // x ^ -1 == ~x
  int64_t n = 0;
  auto offer = [&](int64_t i, K v) {
    if (n == k && v <= key[k - 1]) return;
    int64_t pos = n < k ? n++ : k - 1;
    for (; pos > 0 && v > key[pos - 1]; --pos) {
      key[pos] = key[pos - 1];
      at[pos] = at[pos - 1];
    }
    key[pos] = v;
    at[pos] = static_cast<int32_t>(i);
  };
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i < len && n < k; ++i) offer(i, Keys<T>::Key(row[i]) ^ flip);
  // Once k are held, most blocks hold nothing better than the k-th: one compare of the
  // block's keys against it, then the rare block that does is offered.
  for (; i + kBlock <= len; i += kBlock) {
    for (uint32_t m = AboveMask(row + i, key[k - 1], flip); m != 0; m &= m - 1) {
      const int j = __builtin_ctz(m);  // an earlier one may have raised the k-th: offer checks
      offer(i + j, Keys<T>::Key(row[i + j]) ^ flip);
    }
  }
  for (; i < len; ++i) offer(i, Keys<T>::Key(row[i]) ^ flip);
}

// A large k: the row's indices partially sorted by key (n log k).
template <typename T>
void RowTopKSorted(const T* row, int64_t len, int64_t k, bool largest,
                   std::vector<typename Keys<T>::K>& keys, std::vector<int32_t>& perm) {
  using K = typename Keys<T>::K;
  const K flip = largest ? K{0} : K{-1};
  keys.resize(len);
  perm.resize(len);
  for (int64_t i = 0; i < len; ++i) keys[i] = Keys<T>::Key(row[i]) ^ flip;
  std::iota(perm.begin(), perm.end(), 0);
  std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), [&](int32_t a, int32_t b) {
    return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
  });
}

template <typename T>
void Run(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool) {
  using K = typename Keys<T>::K;
  const Shape& s = in.shape();
  const int64_t len = s.dimensions(s.rank() - 1), k = h.attrs().k;
  const int64_t rows = len == 0 ? 0 : s.num_elements() / len;
  const bool largest = h.attrs().largest;
  const T* x = in.data<T>().data();
  T* values = out.elements()[0].data<T>().data();
  int32_t* indices = out.elements()[1].data<int32_t>().data();
  if (k == 0 || rows == 0) return;
  constexpr int64_t kInsertionMaxK = 64;  // beyond, insertion costs more than a partial sort
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<K> key(static_cast<size_t>(k)), keys;
    std::vector<int32_t> perm;
    for (int64_t r = begin; r < end; ++r) {
      const T* row = x + r * len;
      int32_t* at = indices + r * k;
      if (k <= kInsertionMaxK) {
        RowTopK(row, len, k, largest, key.data(), at);
      } else {
        RowTopKSorted(row, len, k, largest, keys, perm);
        std::copy(perm.begin(), perm.begin() + k, at);
      }
      for (int64_t j = 0; j < k; ++j) values[r * k + j] = row[at[j]];
    }
  };
  // Rows in parallel when there is enough to share (a few hundred microseconds of work).
  if (pool != nullptr && pool->size() > 1 && rows > 1 && rows * len >= (int64_t{1} << 16))
    pool->ParallelFor(rows, run);
  else
    run(0, rows);
}

}  // namespace

bool IsTopKLibraryCall(const HloInstruction& h) {
  if (h.opcode() != HloOpcode::kTopK || h.operand_count() != 1) return false;
  const Shape& s = h.operand(0)->shape();
  const Shape& r = h.shape();
  if (!s.IsArray() || s.rank() < 1 || !r.IsTuple() || r.tuple_size() != 2) return false;
  const int64_t len = s.dimensions(s.rank() - 1), k = h.attrs().k;
  if (k < 0 || k > len || len > std::numeric_limits<int32_t>::max()) return false;
  std::vector<int64_t> dims = s.dimensions();
  dims.back() = k;
  const PrimitiveType t = s.element_type();
  const bool typed = t == PrimitiveType::F32 || t == PrimitiveType::BF16 ||
                     t == PrimitiveType::F16 || t == PrimitiveType::F64 || t == PrimitiveType::S8 ||
                     t == PrimitiveType::U8 || t == PrimitiveType::S16 || t == PrimitiveType::U16 ||
                     t == PrimitiveType::S32 || t == PrimitiveType::U32 || t == PrimitiveType::S64;
  return typed && r.tuple_shapes(0).element_type() == t && r.tuple_shapes(0).dimensions() == dims &&
         r.tuple_shapes(1).element_type() == PrimitiveType::S32 &&
         r.tuple_shapes(1).dimensions() == dims;
}

void RunTopK(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool) {
  switch (in.shape().element_type()) {
    case PrimitiveType::F32:
      return Run<float>(h, in, out, pool);
    case PrimitiveType::BF16:
      return Run<bfloat16>(h, in, out, pool);
    case PrimitiveType::F64:
      return Run<double>(h, in, out, pool);
    case PrimitiveType::F16:
      return Run<half>(h, in, out, pool);
    case PrimitiveType::S8:
      return Run<int8_t>(h, in, out, pool);
    case PrimitiveType::U8:
      return Run<uint8_t>(h, in, out, pool);
    case PrimitiveType::S16:
      return Run<int16_t>(h, in, out, pool);
    case PrimitiveType::U16:
      return Run<uint16_t>(h, in, out, pool);
    case PrimitiveType::S32:
      return Run<int32_t>(h, in, out, pool);
    case PrimitiveType::U32:
      return Run<uint32_t>(h, in, out, pool);
    case PrimitiveType::S64:
      return Run<int64_t>(h, in, out, pool);
    default:
      return;  // IsTopKLibraryCall admits no other type
  }
}

}  // namespace kiln::cpu
