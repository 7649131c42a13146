// Tests of the Threefry/Philox generators (Random123 known-answer vectors) and of
// rng-bit-generator's use of them (layout of outputs and state updates as in XLA).
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_test_util.h"
#include "hlo/evaluator/random_bits.h"

namespace kiln::eval {
namespace {

// Random123 kat_vectors: threefry2x32 (20 rounds).
TEST(RandomBitsTest, ThreefryKnownAnswers) {
  auto z = Threefry2x32({0, 0}, {0, 0});
  EXPECT_EQ(z[0], 0x6b200159u);
  EXPECT_EQ(z[1], 0x99ba4efeu);
  auto f = Threefry2x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(f[0], 0x1cb996fcu);
  EXPECT_EQ(f[1], 0xbb002be7u);
}

// Random123 kat_vectors: philox4x32 (10 rounds).
TEST(RandomBitsTest, PhiloxKnownAnswers) {
  auto z = Philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(z[0], 0x6627e8d5u);
  EXPECT_EQ(z[1], 0xe169c58du);
  EXPECT_EQ(z[2], 0xbc57ac4cu);
  EXPECT_EQ(z[3], 0x9b00dbd8u);
  auto f =
      Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(f[0], 0x408f276du);
  EXPECT_EQ(f[1], 0x41c83b0eu);
  EXPECT_EQ(f[2], 0xa20bc7c6u);
  EXPECT_EQ(f[3], 0x6d5451fdu);
}

Literal U64State(std::vector<uint64_t> v) {
  Literal l(Shape(PrimitiveType::U64, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) l.data<uint64_t>()[i] = v[i];
  return l;
}

// u32[3,2] from three-fry state [0, 0]: dim 1 is the first even one, so each row i holds
// both words of Threefry(counter = i). The first row is the zero-key/zero-counter vector;
// XLA (through a published R binding's example) prints 1.7973e+09 2.5791e+09 for it and
// the new state [0, 3].
TEST(RngBitGeneratorTest, ThreefryU32Layout) {
  Literal state = U64State({0, 0});
  HloInstruction rng(
      HloOpcode::kRngBitGenerator,
      Shape::Tuple({Shape(PrimitiveType::U64, {2}), Shape(PrimitiveType::U32, {3, 2})}));
  rng.mutable_attrs().rng_algorithm = RandomAlgorithm::kThreeFry;
  auto r = EvalRandom(rng, std::vector<const Literal*>{&state});
  ASSERT_TRUE(r.ok()) << r.status();
  const Literal& bits = r->element(1);
  EXPECT_EQ(bits.data<uint32_t>()[0], 0x6b200159u);
  EXPECT_EQ(bits.data<uint32_t>()[1], 0x99ba4efeu);
  for (int i = 0; i < 3; ++i) {
    auto w = Threefry2x32({static_cast<uint32_t>(i), 0}, {0, 0});
    EXPECT_EQ(bits.data<uint32_t>()[2 * i], w[0]);
    EXPECT_EQ(bits.data<uint32_t>()[2 * i + 1], w[1]);
  }
  EXPECT_EQ(r->element(0).data<uint64_t>()[0], 0u);
  EXPECT_EQ(r->element(0).data<uint64_t>()[1], 3u);
}

// u32[3] (no even dim: split the largest, 3 -> 2 counters): elements 0,1 from counter 0,
// element 2 is word 0 of counter 1. Key 0x0000000100000002 splits into (2, 1).
TEST(RngBitGeneratorTest, ThreefryOddSizeAndU64) {
  Literal state = U64State({0x0000000100000002ull, 5});
  HloInstruction rng(HloOpcode::kRngBitGenerator, Shape::Tuple({Shape(PrimitiveType::U64, {2}),
                                                                Shape(PrimitiveType::U32, {3})}));
  rng.mutable_attrs().rng_algorithm = RandomAlgorithm::kThreeFry;
  auto r = EvalRandom(rng, std::vector<const Literal*>{&state});
  ASSERT_TRUE(r.ok()) << r.status();
  auto w0 = Threefry2x32({5, 0}, {2, 1}), w1 = Threefry2x32({6, 0}, {2, 1});
  auto d = r->element(1).data<uint32_t>();
  EXPECT_EQ(d[0], w0[0]);
  EXPECT_EQ(d[1], w0[1]);
  EXPECT_EQ(d[2], w1[0]);
  EXPECT_EQ(r->element(0).data<uint64_t>()[1], 7u);
  // u64[2]: one counter per element, word0 | word1 << 32; state advances by 2.
  rng.mutable_shape()->mutable_tuple_shapes()[1] = Shape(PrimitiveType::U64, {2});
  r = EvalRandom(rng, std::vector<const Literal*>{&state});
  ASSERT_TRUE(r.ok()) << r.status();
  auto d64 = r->element(1).data<uint64_t>();
  EXPECT_EQ(d64[0], uint64_t{w0[0]} | (uint64_t{w0[1]} << 32));
  EXPECT_EQ(d64[1], uint64_t{w1[0]} | (uint64_t{w1[1]} << 32));
  EXPECT_EQ(r->element(0).data<uint64_t>()[1], 7u);
}

// Philox with a u64[3] state: 128-bit counter (state[1], state[2]); u32[6] takes 4 words
// from counter c and 2 from c + 1; new state [key, c + 2]. Counter low word all ones
// checks the carry into the high word.
TEST(RngBitGeneratorTest, PhiloxU32AndCarry) {
  Literal state = U64State({0, 0xffffffffffffffffull, 0});
  HloInstruction rng(HloOpcode::kRngBitGenerator, Shape::Tuple({Shape(PrimitiveType::U64, {3}),
                                                                Shape(PrimitiveType::U32, {6})}));
  rng.mutable_attrs().rng_algorithm = RandomAlgorithm::kDefault;  // Philox
  auto r = EvalRandom(rng, std::vector<const Literal*>{&state});
  ASSERT_TRUE(r.ok()) << r.status();
  auto a = Philox4x32({0xffffffffu, 0xffffffffu, 0, 0}, {0, 0});
  auto b = Philox4x32({0, 0, 1, 0}, {0, 0});
  auto d = r->element(1).data<uint32_t>();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d[i], a[i]);
  EXPECT_EQ(d[4], b[0]);
  EXPECT_EQ(d[5], b[1]);
  auto s = r->element(0).data<uint64_t>();
  EXPECT_EQ(s[0], 0u);
  EXPECT_EQ(s[1], 1u);
  EXPECT_EQ(s[2], 1u);
}

// Zero state and key: the first u32 block is the Random123 zero vector.
TEST(RngBitGeneratorTest, PhiloxZeroStateMatchesKnownAnswer) {
  Literal state = U64State({0, 0, 0});
  HloInstruction rng(
      HloOpcode::kRngBitGenerator,
      Shape::Tuple({Shape(PrimitiveType::U64, {3}), Shape(PrimitiveType::U32, {2, 2})}));
  rng.mutable_attrs().rng_algorithm = RandomAlgorithm::kPhilox;
  auto r = EvalRandom(rng, std::vector<const Literal*>{&state});
  ASSERT_TRUE(r.ok()) << r.status();
  auto d = r->element(1).data<uint32_t>();
  EXPECT_EQ(d[0], 0x6627e8d5u);
  EXPECT_EQ(d[1], 0xe169c58du);
  EXPECT_EQ(d[2], 0xbc57ac4cu);
  EXPECT_EQ(d[3], 0x9b00dbd8u);
  EXPECT_EQ(r->element(0).data<uint64_t>()[1], 1u);
}

TEST(RngTest, UniformStaysInRange) {
  Literal lo = Literal::Scalar(PrimitiveType::F32, -2), hi = Literal::Scalar(PrimitiveType::F32, 3);
  HloInstruction rng(HloOpcode::kRng, Shape(PrimitiveType::F32, {1000}));
  auto r = EvalRandom(rng, std::vector<const Literal*>{&lo, &hi});
  ASSERT_TRUE(r.ok()) << r.status();
  double sum = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    double v = r->GetAsDouble(i);
    EXPECT_GE(v, -2);
    EXPECT_LT(v, 3);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.25);  // mean of U(-2,3) is 0.5; std error ~0.05
}

}  // namespace
}  // namespace kiln::eval
