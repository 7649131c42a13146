// HLO's sort with a generated comparator (see sort_library.h): each row's positions are
// sorted by the comparator, then every operand is gathered into the output in that order.
#include "plugins/cpu_llvm/sort_library.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "hlo/computation.h"
#include "hlo/native_type.h"
#include "hlo/total_order.h"

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

// How a comparator orders rows when it is one LT or GT compare of a key computed from operand
// 0's two elements alone (its parameters 0 and 1; other operands ride along): the stable order
// is then the order of (key, position) pairs, sorted without a call per comparison.
struct KeyOrder {
  bool descending = false;
  // Floats compared TOTALORDER after a canonicalization: value rules, outermost select first
  // (the first that holds replaces the element's bits). JAX writes -0 -> 0 and NaN -> NaN.
  struct Rule {
    bool nan = false;   // x != x; otherwise x == value
    double value = 0;   // compared as a float of the key's type
    uint64_t bits = 0;  // the replacement's bits
  };
  std::vector<Rule> rules;
};
bool operator==(const KeyOrder::Rule& a, const KeyOrder::Rule& b) {
  return a.nan == b.nan && (a.nan || a.value == b.value) && a.bits == b.bits;
}

bool IsKeyFloat(PrimitiveType t) {
  return t == PrimitiveType::F32 || t == PrimitiveType::F64 || t == PrimitiveType::F16 ||
         t == PrimitiveType::BF16;
}

// A scalar constant's value and bits, when it is a float of type t.
std::optional<std::pair<double, uint64_t>> FloatConstant(const HloInstruction* h, PrimitiveType t) {
  if (h->opcode() != HloOpcode::kConstant || h->shape().element_type() != t ||
      !h->shape().dimensions().empty())
    return std::nullopt;
  std::pair<double, uint64_t> out{h->literal().GetAsDouble(0), 0};
  std::memcpy(&out.second, h->literal().untyped_data(), h->literal().size_bytes());
  return out;
}

// Matches h as p canonicalized: p itself, or select(compare(p, p, NE), constant, inner) or
// select(compare(p, c, EQ), constant, inner), inner matched the same way. Float compares only.
bool MatchCanonical(const HloInstruction* h, const HloInstruction* p,
                    std::vector<KeyOrder::Rule>& rules) {
  if (h == p) return true;
  const PrimitiveType t = p->shape().element_type();
  if (h->opcode() != HloOpcode::kSelect) return false;
  const HloInstruction* pred = h->operand(0);
  const auto replacement = FloatConstant(h->operand(1), t);
  if (!replacement || pred->opcode() != HloOpcode::kCompare ||
      !pred->attrs().comparison_direction ||
      (pred->attrs().comparison_type != ComparisonType::kDefault &&
       pred->attrs().comparison_type != ComparisonType::kFloat))
    return false;
  const ComparisonDirection d = *pred->attrs().comparison_direction;
  KeyOrder::Rule rule{.bits = replacement->second};
  if (d == ComparisonDirection::kNe && pred->operand(0) == p && pred->operand(1) == p) {
    rule.nan = true;
  } else if (d == ComparisonDirection::kEq && (pred->operand(0) == p || pred->operand(1) == p)) {
    const auto value = FloatConstant(pred->operand(pred->operand(0) == p ? 1 : 0), t);
    if (!value || std::isnan(value->first)) return false;
    rule.value = value->first;
  } else {
    return false;
  }
  rules.push_back(rule);
  return MatchCanonical(h->operand(2), p, rules);
}

std::optional<KeyOrder> KeyOrderOf(const HloInstruction& sort) {
  const HloComputation* c = sort.to_apply();
  if (c == nullptr || c->num_parameters() < 2) return std::nullopt;
  const HloInstruction* root = c->root();
  if (root->opcode() != HloOpcode::kCompare || !root->attrs().comparison_direction)
    return std::nullopt;
  const PrimitiveType t = c->parameter(0)->shape().element_type();
  const ComparisonType ct = root->attrs().comparison_type;
  KeyOrder order;
  const ComparisonDirection d = *root->attrs().comparison_direction;
  if (d != ComparisonDirection::kLt && d != ComparisonDirection::kGt) return std::nullopt;
  order.descending = d == ComparisonDirection::kGt;
  if (IsKeyFloat(t) && ct == ComparisonType::kFloatTotalOrder) {
    std::vector<KeyOrder::Rule> other;
    if (!MatchCanonical(root->operand(0), c->parameter(0), order.rules) ||
        !MatchCanonical(root->operand(1), c->parameter(1), other) || other != order.rules)
      return std::nullopt;
    return order;
  }
  if (root->operand(0) != c->parameter(0) || root->operand(1) != c->parameter(1) || IsSubByteInt(t))
    return std::nullopt;
  const bool is_signed = IsSignedInt(t), is_unsigned = IsUnsignedInt(t);
  if (!(is_signed && (ct == ComparisonType::kDefault || ct == ComparisonType::kSigned)) &&
      !(is_unsigned && (ct == ComparisonType::kDefault || ct == ComparisonType::kUnsigned)))
    return std::nullopt;
  return order;
}

// The signed integer of a float's width.
template <typename F>
using KeyInt = std::conditional_t<sizeof(F) == 8, int64_t,
                                  std::conditional_t<sizeof(F) == 4, int32_t, int16_t>>;

// x's place in the total order (-NaN < -inf < ... < -0 < 0 < ... < inf < NaN) after the
// rules, as a signed integer: negative floats' magnitude bits are flipped.
template <typename F>
KeyInt<F> TotalOrderKey(F x, const std::vector<KeyOrder::Rule>& rules) {
  using I = KeyInt<F>;
  using U = std::make_unsigned_t<I>;
  U bits;
  std::memcpy(&bits, &x, sizeof(F));
  if (!rules.empty()) {
    const double v = static_cast<double>(x);
    for (const KeyOrder::Rule& r : rules)
      if (r.nan ? std::isnan(v) : v == r.value) {
        bits = static_cast<U>(r.bits);
        break;
      }
  }
  return TotalOrderKeyOfBits(static_cast<I>(bits));
}

// Sorts `v` by `less`: on the pool in parts, merged in order, when it is long.
template <typename T, typename Less>
void SortMaybeInParts(std::vector<T>& v, Less less, ThreadPool* pool) {
  const int64_t n = static_cast<int64_t>(v.size());
  if (pool == nullptr || pool->size() < 2 || n < kSplitRowMinElements) {
    std::sort(v.begin(), v.end(), less);
    return;
  }
  const int64_t parts = pool->size();
  auto cut = [&](int64_t p) { return v.begin() + n * p / parts; };
  pool->ParallelFor(
      parts,
      [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) std::sort(cut(p), cut(p + 1), less);
      },
      static_cast<int>(parts), /*even=*/true, /*large_cost=*/n);
  for (int64_t p = 1; p < parts; ++p) std::inplace_merge(v.begin(), cut(p), cut(p + 1), less);
}

// One row of integer keys (`count` of them, `stride` elements apart) in the order `before`
// (std::less or std::greater): sorted into `sorted` when the keys are the only operand (equal
// keys are indistinguishable), else its stable order into `order` (as (key, position) pairs:
// a tie goes by position).
template <typename K, typename Before>
void SortKeys(const K* keys, int64_t count, int64_t stride, Before before, bool keys_only,
              K* sorted, std::vector<int64_t>& order, ThreadPool* pool) {
  if (keys_only) {
    std::vector<K> v(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) v[j] = keys[j * stride];
    SortMaybeInParts(v, before, pool);
    for (int64_t j = 0; j < count; ++j) sorted[j * stride] = v[j];
    return;
  }
  struct Entry {
    K key;
    int32_t at;  // rows are shorter than 2^31 (checked by the caller)
  };
  std::vector<Entry> e(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) e[j] = {keys[j * stride], static_cast<int32_t>(j)};
  SortMaybeInParts(
      e,
      [before](const Entry& x, const Entry& y) {
        return before(x.key, y.key) || (x.key == y.key && x.at < y.at);
      },
      pool);
  order.resize(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) order[j] = e[j].at;
}

}  // namespace

bool SortsByKeys(const HloInstruction& sort) { return KeyOrderOf(sort).has_value(); }

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
  const std::optional<KeyOrder> key_order = KeyOrderOf(sort);
  if (key_order && rows.length < INT32_MAX) {
    const PrimitiveType t = operands[0]->shape().element_type();
    // Float keys are sorted as integers; the output is the operand's own elements (-0 and
    // NaN payloads stay), so it is gathered.
    const bool keys_only = operands.size() == 1 && !IsKeyFloat(t);
    // Rows in parallel, or a single long row sorted in parts on the pool.
    const bool split = parallel && rows.count == 1;
    auto key_rows = [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> order;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t base = rows.Base(r);
        ThreadPool* parts = split ? pool : nullptr;
        auto sort_keys = [&](const auto* keys, int64_t stride, auto* sorted) {
          using K = std::remove_const_t<std::remove_pointer_t<decltype(keys)>>;
          if (key_order->descending)
            SortKeys(keys, rows.length, stride, std::greater<K>(), keys_only, sorted, order, parts);
          else
            SortKeys(keys, rows.length, stride, std::less<K>(), keys_only, sorted, order, parts);
        };
        PrimitiveTypeSwitch(t, [&](auto tag) {
          using K = decltype(tag);
          if constexpr (std::is_integral_v<K>) {
            sort_keys(operands[0]->data<K>().data() + base, rows.stride,
                      outs[0]->data<K>().data() + base);
          } else if constexpr (std::is_same_v<K, float> || std::is_same_v<K, double> ||
                               std::is_same_v<K, half> || std::is_same_v<K, bfloat16>) {
            const K* x = operands[0]->data<K>().data() + base;
            std::vector<KeyInt<K>> keys(static_cast<size_t>(rows.length));
            for (int64_t j = 0; j < rows.length; ++j)
              keys[j] = TotalOrderKey(x[j * rows.stride], key_order->rules);
            sort_keys(keys.data(), int64_t{1}, static_cast<KeyInt<K>*>(nullptr));
          }
        });
        if (!keys_only) gather(base, order);
      }
    };
    if (parallel && rows.count > 1)
      pool->ParallelFor(rows.count, key_rows);
    else
      key_rows(0, rows.count);
    return;
  }
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
        static_cast<int>(parts), /*even=*/true, /*large_cost=*/rows.length);
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
