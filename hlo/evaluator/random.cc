// Evaluation of rng-bit-generator (bit-exact with XLA's expansion of RngBitGenerator)
// and rng (deterministic, but not bit-equal to XLA's values).
//
// rng-bit-generator follows XLA's RngBitGeneratorExpander: key = state[0].
//  * three-fry: counter = state[1]; 32-bit outputs pair up along the first even-sized
//    dimension (else the largest): element p of that dimension takes word p % 2 of
//    Threefry-2x32-20(counter + linear index of the half-size array); 64-bit outputs use
//    one counter per element (word0 | word1 << 32). New state: [key, counter + count].
//  * philox: the 128-bit counter is (low, high) = (state[1], state[2]) for u64[3] states,
//    (state[1], state[0]) for u64[2] states; Philox-4x32-10 of counter + i yields 4 words
//    for elements 4i..4i+3 (32-bit) or two 64-bit values (w0|w1<<32, w2|w3<<32) for
//    elements 2i, 2i+1. New state: [key, counter + blocks] (u64[2] states keep only the
//    low counter word).
//  * 8/16-bit outputs take the low bits of the 32-bit stream, as XLA does.
//  * rng_default is Philox, the algorithm XLA's CPU and GPU compilers substitute.
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_util.h"
#include "hlo/evaluator/random_bits.h"

namespace kiln::eval {

std::array<uint32_t, 2> Threefry2x32(std::array<uint32_t, 2> x, std::array<uint32_t, 2> key) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  x[0] += ks[0];
  x[1] += ks[1];
  for (int block = 0; block < 5; ++block) {
    for (int r = 0; r < 4; ++r) {
      const int rot = kRot[(block % 2) * 4 + r];
      x[0] += x[1];
      x[1] = (x[1] << rot) | (x[1] >> (32 - rot));
      x[1] ^= x[0];
    }
    // Key injection after every 4 rounds, with the injection count added to the last word.
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  return x;
}

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> x, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(x[0]) * kM0;
    const uint64_t p1 = static_cast<uint64_t>(x[2]) * kM1;
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return x;
}

namespace {

std::array<uint32_t, 2> Split64(uint64_t v) {
  return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
}

// Writes the low `bytes` bytes of `v` as element i of `out` (little-endian hosts).
void StoreBits(Literal& out, int64_t i, uint64_t v, int bytes) {
  std::memcpy(out.untyped_data() + i * bytes, &v, bytes);
}

absl::StatusOr<Literal> RngBitGenerator(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
  const Literal& state = *ops[0];
  const Shape& rs = instr.shape();
  if (state.shape().element_type() != PrimitiveType::U64 || state.shape().rank() != 1 ||
      state.element_count() < 2)
    return EvalError(instr, "state must be u64[n] with n >= 2");
  if (!rs.IsTuple() || rs.tuple_size() != 2 || !rs.tuple_shapes(1).IsArray() ||
      rs.tuple_shapes(0).dimensions() != state.shape().dimensions())
    return EvalError(instr, "result must be (state, bits)");
  const Shape& data_shape = rs.tuple_shapes(1);
  const int bits = BitWidth(data_shape.element_type());
  if (data_shape.element_type() == PrimitiveType::PRED || IsComplex(data_shape.element_type()) ||
      (bits != 8 && bits != 16 && bits != 32 && bits != 64))
    return EvalError(instr, "random bits need an 8, 16, 32 or 64-bit non-complex type");
  const int bytes = bits / 8;
  auto s = state.data<uint64_t>();
  const uint64_t key = s[0];
  Literal new_state(state.shape());
  auto ns = new_state.data<uint64_t>();
  for (int64_t i = 0; i < state.element_count(); ++i) ns[i] = s[i];
  Literal data(data_shape);
  const int64_t count = data_shape.num_elements();
  const auto& dims = data_shape.dimensions();

  RandomAlgorithm alg = instr.attrs().rng_algorithm;
  if (alg == RandomAlgorithm::kDefault) alg = RandomAlgorithm::kPhilox;
  if (alg == RandomAlgorithm::kThreeFry) {
    const uint64_t counter = s[1];
    const auto k = Split64(key);
    if (bits == 64) {
      for (int64_t i = 0; i < count; ++i) {
        auto w = Threefry2x32(Split64(counter + static_cast<uint64_t>(i)), k);
        StoreBits(data, i, static_cast<uint64_t>(w[0]) | (static_cast<uint64_t>(w[1]) << 32), 8);
      }
      ns[1] = counter + static_cast<uint64_t>(count);
    } else {
      // Split dimension: first even-sized one, else the largest (first on ties).
      int split = -1;
      for (int d = 0; d < static_cast<int>(dims.size()) && split < 0; ++d)
        if (dims[d] % 2 == 0) split = d;
      if (split < 0)
        for (int d = 0; d < static_cast<int>(dims.size()); ++d)
          if (split < 0 || dims[d] > dims[split]) split = d;
      std::vector<int64_t> half = dims;
      if (split >= 0) half[split] = (dims[split] + 1) / 2;
      const auto half_strides = RowMajorStrides(half);
      std::vector<int64_t> idx(dims.size(), 0);
      if (count > 0) {
        int64_t i = 0;
        do {
          int64_t h = 0;
          for (size_t d = 0; d < dims.size(); ++d)
            h += (static_cast<int>(d) == split ? idx[d] / 2 : idx[d]) * half_strides[d];
          auto w = Threefry2x32(Split64(counter + static_cast<uint64_t>(h)), k);
          const int word = split >= 0 ? static_cast<int>(idx[split] % 2) : 0;
          StoreBits(data, i++, w[word], bytes);
        } while (NextIndex(idx, dims));
      }
      ns[1] = counter + static_cast<uint64_t>(Product(half));
    }
  } else if (alg == RandomAlgorithm::kPhilox) {
    const bool three = state.element_count() >= 3;
    uint64_t lo = s[1], hi = three ? s[2] : s[0];
    const auto k = Split64(key);
    const int64_t per_block = bits == 64 ? 2 : 4;
    const int64_t blocks = (count + per_block - 1) / per_block;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint64_t clo = lo + static_cast<uint64_t>(b);
      const uint64_t chi = clo < lo ? hi + 1 : hi;
      const auto l = Split64(clo), h = Split64(chi);
      auto w = Philox4x32({l[0], l[1], h[0], h[1]}, k);
      for (int64_t j = 0; j < per_block && b * per_block + j < count; ++j) {
        uint64_t v =
            bits == 64
                ? (static_cast<uint64_t>(w[2 * j]) | (static_cast<uint64_t>(w[2 * j + 1]) << 32))
                : w[j];
        StoreBits(data, b * per_block + j, v, bytes);
      }
    }
    const uint64_t nlo = lo + static_cast<uint64_t>(blocks);
    const uint64_t nhi = nlo < lo ? hi + 1 : hi;
    ns[1] = nlo;
    if (three) ns[2] = nhi;
  } else {
    return EvalError(instr, "unknown rng algorithm");
  }
  std::vector<Literal> out;
  out.push_back(std::move(new_state));
  out.push_back(std::move(data));
  return Literal::MakeTuple(std::move(out));
}

// `rng` draws from a process-wide Philox stream (so repeated runs of a module in one
// process differ, like XLA's stateful rng, but runs are reproducible from process start).
std::atomic<uint64_t> g_rng_counter{0};

absl::StatusOr<Literal> Rng(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
  const Shape& rs = instr.shape();
  if (!rs.IsArray()) return EvalError(instr, "result must be an array");
  const PrimitiveType t = rs.element_type();
  const int64_t count = rs.num_elements();
  const uint64_t base = g_rng_counter.fetch_add(static_cast<uint64_t>(count) + 1);
  auto draw = [&](int64_t i) {
    auto w =
        Philox4x32({static_cast<uint32_t>(base + i), static_cast<uint32_t>((base + i) >> 32), 0, 0},
                   {0x6B697Cu, 0x6E726E67u});
    return static_cast<uint64_t>(w[0]) | (static_cast<uint64_t>(w[1]) << 32);
  };
  auto uniform01 = [&](int64_t i) { return static_cast<double>(draw(i) >> 11) * 0x1.0p-53; };
  Literal out(rs);
  const double a = ops[0]->GetAsDouble(0), b = ops[1]->GetAsDouble(0);
  if (instr.attrs().distribution == RandomDistribution::kNormal) {
    if (!IsFloating(t)) return EvalError(instr, "normal distribution needs a floating type");
    for (int64_t i = 0; i < count; ++i) {
      const double u1 = std::max(uniform01(2 * i), 1e-300), u2 = uniform01(2 * i + 1);
      out.SetFromDouble(i, a + b * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
    }
  } else if (IsFloating(t)) {
    for (int64_t i = 0; i < count; ++i) {
      double v = a + (b - a) * uniform01(i);
      out.SetFromDouble(i, v);
      // Rounding to the element type may land on b; keep the interval half-open.
      if (out.GetAsDouble(i) >= b && b > a) out.SetFromDouble(i, a);
    }
  } else if (IsInteger(t)) {
    const int64_t lo = ops[0]->GetAsInt64(0), hi = ops[1]->GetAsInt64(0);
    if (hi <= lo) return EvalError(instr, "uniform integer range is empty");
    const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(lo) + draw(i) % range);
      PrimitiveTypeSwitch(t, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) out.data<T>()[i] = static_cast<T>(v);
      });
    }
  } else {
    return EvalError(instr, "rng needs a floating or integer result type");
  }
  return out;
}

}  // namespace

absl::StatusOr<Literal> EvalRandom(const HloInstruction& instr, Operands ops) {
  switch (instr.opcode()) {
    case HloOpcode::kRngBitGenerator:
      return RngBitGenerator(instr, ops);
    case HloOpcode::kRng:
      return Rng(instr, ops);
    default:
      return EvalError(instr, "not a random-number opcode");
  }
}

}  // namespace kiln::eval
