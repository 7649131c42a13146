// Tests of the elementwise family against hand-computed (or NumPy-computed, as noted) values.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>

#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/test_builder.h"

namespace kiln {
namespace {

using testing_util::As;
using testing_util::AsDoubles;
using testing_util::Lit;
using testing_util::Vals;
using P = PrimitiveType;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class ElementwiseTest : public ::testing::Test {
 protected:
  // Evaluates one `op` instruction whose operands are parameters shaped like `args`.
  absl::StatusOr<Literal> Run(HloOpcode op, Shape out, std::vector<Literal> args,
                              const std::function<void(InstructionAttributes&)>& set = nullptr) {
    std::vector<HloInstruction*> operands;
    for (size_t i = 0; i < args.size(); ++i) {
      params_.push_back(HloInstruction::CreateParameter(static_cast<int64_t>(i), args[i].shape(),
                                                        "p" + std::to_string(i)));
      operands.push_back(params_.back().get());
    }
    auto instr = std::make_unique<HloInstruction>(op, std::move(out), operands);
    instr->set_name("op");
    if (set) set(instr->mutable_attrs());
    args_.push_back(std::move(args));
    std::vector<const Literal*> ptrs;
    for (const Literal& a : args_.back()) ptrs.push_back(&a);
    HloEvaluator evaluator;
    auto result = evaluator.EvaluateInstruction(*instr, ptrs);
    instrs_.push_back(std::move(instr));
    return result;
  }
  Literal MustRun(HloOpcode op, Shape out, std::vector<Literal> args,
                  const std::function<void(InstructionAttributes&)>& set = nullptr) {
    auto r = Run(op, std::move(out), std::move(args), set);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : Literal();
  }

  std::vector<std::unique_ptr<HloInstruction>> params_, instrs_;
  std::vector<std::vector<Literal>> args_;
};

std::vector<Literal> Args(Literal a) {
  std::vector<Literal> v;
  v.push_back(std::move(a));
  return v;
}
std::vector<Literal> Args(Literal a, Literal b) {
  std::vector<Literal> v;
  v.push_back(std::move(a));
  v.push_back(std::move(b));
  return v;
}
std::vector<Literal> Args(Literal a, Literal b, Literal c) {
  std::vector<Literal> v;
  v.push_back(std::move(a));
  v.push_back(std::move(b));
  v.push_back(std::move(c));
  return v;
}

TEST_F(ElementwiseTest, AddF32AndWrappingS32) {
  Literal r = MustRun(HloOpcode::kAdd, Shape(P::F32, {3}),
                      Args(Vals(P::F32, {3}, {1, 2.5, -4}), Vals(P::F32, {3}, {0.5, 0.5, 4})));
  EXPECT_EQ(As<float>(r), (std::vector<float>{1.5f, 3.0f, 0.0f}));
  Literal w = MustRun(HloOpcode::kAdd, Shape(P::S32, {1}),
                      Args(Lit<int32_t>(P::S32, {1}, {INT32_MAX}), Lit<int32_t>(P::S32, {1}, {1})));
  EXPECT_EQ(As<int32_t>(w)[0], INT32_MIN);
  Literal m =
      MustRun(HloOpcode::kMultiply, Shape(P::U16, {1}),
              Args(Lit<uint16_t>(P::U16, {1}, {65535}), Lit<uint16_t>(P::U16, {1}, {65535})));
  EXPECT_EQ(As<uint16_t>(m)[0], 1);  // 65535^2 mod 2^16
}

TEST_F(ElementwiseTest, IntegerDivisionAndRemainderEdgeCases) {
  Literal d = MustRun(HloOpcode::kDivide, Shape(P::S32, {4}),
                      Args(Lit<int32_t>(P::S32, {4}, {7, -7, INT32_MIN, 5}),
                           Lit<int32_t>(P::S32, {4}, {2, 2, -1, 0})));
  // C++ truncating division; INT_MIN / -1 -> INT_MIN; x / 0 -> -1.
  EXPECT_EQ(As<int32_t>(d), (std::vector<int32_t>{3, -3, INT32_MIN, -1}));
  Literal u = MustRun(HloOpcode::kDivide, Shape(P::U32, {2}),
                      Args(Lit<uint32_t>(P::U32, {2}, {9, 9}), Lit<uint32_t>(P::U32, {2}, {0, 4})));
  EXPECT_EQ(As<uint32_t>(u), (std::vector<uint32_t>{0xffffffffu, 2}));
  Literal r = MustRun(HloOpcode::kRemainder, Shape(P::S32, {4}),
                      Args(Lit<int32_t>(P::S32, {4}, {7, -7, INT32_MIN, 5}),
                           Lit<int32_t>(P::S32, {4}, {3, 3, -1, 0})));
  EXPECT_EQ(As<int32_t>(r), (std::vector<int32_t>{1, -1, 0, 5}));
  Literal f = MustRun(HloOpcode::kRemainder, Shape(P::F32, {2}),
                      Args(Vals(P::F32, {2}, {-7.5, 7.5}), Vals(P::F32, {2}, {2, -2})));
  EXPECT_EQ(As<float>(f), (std::vector<float>{-1.5f, 1.5f}));  // fmod keeps the dividend's sign
}

TEST_F(ElementwiseTest, ShiftsOutOfRange) {
  auto lhs = [] { return Lit<int32_t>(P::S32, {5}, {-8, 8, 1, -1, -8}); };
  auto amt = [] { return Lit<int32_t>(P::S32, {5}, {1, 40, 31, 32, -1}); };
  Literal shl = MustRun(HloOpcode::kShiftLeft, Shape(P::S32, {5}), Args(lhs(), amt()));
  EXPECT_EQ(As<int32_t>(shl), (std::vector<int32_t>{-16, 0, INT32_MIN, 0, 0}));
  Literal sra = MustRun(HloOpcode::kShiftRightArithmetic, Shape(P::S32, {5}), Args(lhs(), amt()));
  EXPECT_EQ(As<int32_t>(sra), (std::vector<int32_t>{-4, 0, 0, -1, -1}));
  Literal srl = MustRun(HloOpcode::kShiftRightLogical, Shape(P::S32, {5}), Args(lhs(), amt()));
  // 0xfffffff8 >> 1 = 0x7ffffffc; 1 >> 31 = 0; out of range -> 0.
  EXPECT_EQ(As<int32_t>(srl), (std::vector<int32_t>{0x7ffffffc, 0, 0, 0, 0}));
  Literal u8 =
      MustRun(HloOpcode::kShiftLeft, Shape(P::U8, {3}),
              Args(Lit<uint8_t>(P::U8, {3}, {0x81, 1, 1}), Lit<uint8_t>(P::U8, {3}, {1, 7, 8})));
  EXPECT_EQ(As<uint8_t>(u8), (std::vector<uint8_t>{0x02, 0x80, 0}));
}

TEST_F(ElementwiseTest, ConvertFloatToIntSaturatesAndMapsNaNToZero) {
  auto src = [] { return Lit<float>(P::F32, {6}, {kNaN, 3e9f, -3e9f, -1.7f, 2.9f, kInf}); };
  Literal s32 = MustRun(HloOpcode::kConvert, Shape(P::S32, {6}), Args(src()));
  EXPECT_EQ(As<int32_t>(s32), (std::vector<int32_t>{0, INT32_MAX, INT32_MIN, -1, 2, INT32_MAX}));
  Literal u8 = MustRun(HloOpcode::kConvert, Shape(P::U8, {6}), Args(src()));
  EXPECT_EQ(As<uint8_t>(u8), (std::vector<uint8_t>{0, 255, 0, 0, 2, 255}));
  Literal s64 = MustRun(HloOpcode::kConvert, Shape(P::S64, {3}),
                        Args(Lit<double>(P::F64, {3}, {1e19, -1e19, -0.5})));
  EXPECT_EQ(As<int64_t>(s64), (std::vector<int64_t>{INT64_MAX, INT64_MIN, 0}));
}

TEST_F(ElementwiseTest, ConvertIntegersWrapAndPred) {
  Literal s8 = MustRun(HloOpcode::kConvert, Shape(P::S8, {3}),
                       Args(Lit<int32_t>(P::S32, {3}, {300, -129, 127})));
  EXPECT_EQ(As<int8_t>(s8), (std::vector<int8_t>{44, 127, 127}));
  Literal u32 =
      MustRun(HloOpcode::kConvert, Shape(P::U32, {1}), Args(Lit<int8_t>(P::S8, {1}, {-1})));
  EXPECT_EQ(As<uint32_t>(u32)[0], 0xffffffffu);  // sign extension, then reinterpretation
  Literal pred = MustRun(HloOpcode::kConvert, Shape(P::PRED, {3}),
                         Args(Lit<float>(P::F32, {3}, {0.5f, 0.0f, kNaN})));
  EXPECT_EQ(As<bool>(pred), (std::vector<bool>{true, false, true}));
  Literal back = MustRun(HloOpcode::kConvert, Shape(P::F32, {2}),
                         Args(Lit<bool>(P::PRED, {2}, {true, false})));
  EXPECT_EQ(As<float>(back), (std::vector<float>{1.0f, 0.0f}));
}

TEST_F(ElementwiseTest, ConvertToBf16AndF16RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3f80) and 1 + 2^-7 (0x3f81): even wins.
  // 1 + 3*2^-8 lies halfway between 0x3f81 and 0x3f82: even (0x3f82) wins.
  Literal bf = MustRun(
      HloOpcode::kConvert, Shape(P::BF16, {3}),
      Args(Lit<float>(P::F32, {3}, {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1.8p-8f})));
  auto bits = As<bfloat16>(bf);
  EXPECT_EQ(bits[0].bits, 0x3f80);
  EXPECT_EQ(bits[1].bits, 0x3f82);
  EXPECT_EQ(bits[2].bits, 0x3f81);  // above the halfway point rounds up
  // f16: same ties one mantissa width lower; 65520 ties between 65504 and 65536 -> inf.
  // (NumPy: np.float16(1+3*2**-11).view(np.uint16) == 0x3c02, np.float16(65520.0) == inf.)
  Literal h =
      MustRun(HloOpcode::kConvert, Shape(P::F16, {3}),
              Args(Lit<float>(P::F32, {3}, {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f})));
  auto hb = As<half>(h);
  EXPECT_EQ(hb[0].bits, 0x3c00);
  EXPECT_EQ(hb[1].bits, 0x3c02);
  EXPECT_EQ(hb[2].bits, 0x7c00);
}

TEST_F(ElementwiseTest, HalfPrecisionArithmeticRoundsAfterEachOp) {
  // NumPy: np.float16(0.1) + np.float16(0.2) -> bits 0x34cc (0.2998).
  Literal a = Lit<half>(P::F16, {1}, {half(0.1f)});
  Literal b = Lit<half>(P::F16, {1}, {half(0.2f)});
  Literal r = MustRun(HloOpcode::kAdd, Shape(P::F16, {1}), Args(std::move(a), std::move(b)));
  EXPECT_EQ(As<half>(r)[0].bits, 0x34cc);
  // bf16: 1 + 2^-8 is a tie and rounds back to 1.
  Literal c = MustRun(HloOpcode::kAdd, Shape(P::BF16, {1}),
                      Args(Lit<bfloat16>(P::BF16, {1}, {bfloat16(1.0f)}),
                           Lit<bfloat16>(P::BF16, {1}, {bfloat16(0x1p-8f)})));
  EXPECT_EQ(As<bfloat16>(c)[0].bits, 0x3f80);
}

TEST_F(ElementwiseTest, MaximumMinimumPropagateNaN) {
  auto a = [] { return Lit<float>(P::F32, {4}, {kNaN, 1.0f, 2.0f, -kInf}); };
  auto b = [] { return Lit<float>(P::F32, {4}, {1.0f, kNaN, 3.0f, 0.0f}); };
  auto mx = As<float>(MustRun(HloOpcode::kMaximum, Shape(P::F32, {4}), Args(a(), b())));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3.0f);
  EXPECT_EQ(mx[3], 0.0f);
  auto mn = As<float>(MustRun(HloOpcode::kMinimum, Shape(P::F32, {4}), Args(a(), b())));
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 2.0f);
  EXPECT_EQ(mn[3], -kInf);
  auto imx = As<uint32_t>(
      MustRun(HloOpcode::kMaximum, Shape(P::U32, {1}),
              Args(Lit<uint32_t>(P::U32, {1}, {0xffffffffu}), Lit<uint32_t>(P::U32, {1}, {1}))));
  EXPECT_EQ(imx[0], 0xffffffffu);
}

TEST_F(ElementwiseTest, CompareFloatIeeeAndTotalOrder) {
  auto a = [] { return Lit<float>(P::F32, {4}, {kNaN, -0.0f, kNaN, -kNaN}); };
  auto b = [] { return Lit<float>(P::F32, {4}, {kNaN, 0.0f, kInf, -kInf}); };
  auto dir = [](ComparisonDirection d, ComparisonType t = ComparisonType::kDefault) {
    return [d, t](InstructionAttributes& at) {
      at.comparison_direction = d;
      at.comparison_type = t;
    };
  };
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a(), b()),
                             dir(ComparisonDirection::kEq))),
            (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a(), b()),
                             dir(ComparisonDirection::kNe))),
            (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a(), b()),
                             dir(ComparisonDirection::kLt))),
            (std::vector<bool>{false, false, false, false}));
  // Total order: -NaN < -inf < -0 < +0 < +inf < +NaN, and NaN == NaN.
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a(), b()),
                             dir(ComparisonDirection::kLt, ComparisonType::kFloatTotalOrder))),
            (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a(), b()),
                             dir(ComparisonDirection::kEq, ComparisonType::kFloatTotalOrder))),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a(), b()),
                             dir(ComparisonDirection::kGt, ComparisonType::kFloatTotalOrder))),
            (std::vector<bool>{false, false, true, false}));
}

// One-byte floats in total order by value: the bits of -1 (f8e4m3fn 0xB8, f4e2m1fn 0x0A)
// read as a positive integer must not order it above 0.5.
TEST_F(ElementwiseTest, CompareMiniFloatsInTotalOrder) {
  auto lt = [](InstructionAttributes& at) {
    at.comparison_direction = ComparisonDirection::kLt;
    at.comparison_type = ComparisonType::kFloatTotalOrder;
  };
  auto f8 = [](std::vector<uint8_t> bits) {
    std::vector<f8e4m3fn> v;
    for (uint8_t b : bits) v.push_back(f8e4m3fn::FromBits(b));
    return Lit<f8e4m3fn>(P::F8E4M3FN, {static_cast<int64_t>(v.size())}, v);
  };
  // -1 < 0.5, -0 < +0, 0.5 < NaN, -2 < -1; and the reverse pairs are not.
  auto a = f8({0xB8, 0x80, 0x30, 0xC0});
  auto b = f8({0x30, 0x00, 0x7F, 0xB8});
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(a, b), lt)),
            (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {4}), Args(b, a), lt)),
            (std::vector<bool>{false, false, false, false}));
  // f4e2m1fn: -1 is 0b1010, 0.5 is 0b0001, -6 is 0b1111.
  auto f4 = [](std::vector<uint8_t> bits) {
    std::vector<f4e2m1fn> v;
    for (uint8_t b : bits) v.push_back(f4e2m1fn::FromBits(b));
    return Lit<f4e2m1fn>(P::F4E2M1FN, {static_cast<int64_t>(v.size())}, v);
  };
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {2}),
                             Args(f4({0x0A, 0x0F}), f4({0x01, 0x0A})), lt)),
            (std::vector<bool>{true, true}));
}

TEST_F(ElementwiseTest, CompareIntegersSignedAndUnsigned) {
  auto d = [](InstructionAttributes& at) { at.comparison_direction = ComparisonDirection::kGt; };
  EXPECT_EQ(As<bool>(MustRun(
                HloOpcode::kCompare, Shape(P::PRED, {2}),
                Args(Lit<int32_t>(P::S32, {2}, {-1, 5}), Lit<int32_t>(P::S32, {2}, {1, 5})), d)),
            (std::vector<bool>{false, false}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {2}),
                             Args(Lit<uint32_t>(P::U32, {2}, {0xffffffffu, 5}),
                                  Lit<uint32_t>(P::U32, {2}, {1, 4})),
                             d)),
            (std::vector<bool>{true, true}));
  auto ge = [](InstructionAttributes& at) { at.comparison_direction = ComparisonDirection::kGe; };
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kCompare, Shape(P::PRED, {3}),
                             Args(Lit<half>(P::F16, {3}, {half(1.0f), half(-2.0f), half(0.5f)}),
                                  Lit<half>(P::F16, {3}, {half(1.0f), half(2.0f), half(0.25f)})),
                             ge)),
            (std::vector<bool>{true, false, true}));
}

TEST_F(ElementwiseTest, IntegerPower) {
  Literal r = MustRun(HloOpcode::kPower, Shape(P::S32, {8}),
                      Args(Lit<int32_t>(P::S32, {8}, {2, 2, 1, -1, 0, 3, -2, -1}),
                           Lit<int32_t>(P::S32, {8}, {10, -1, -5, -1, 0, 3, 3, 3})));
  // Negative exponents give 0 except for base 1 (XLA's evaluator); 0^0 = 1.
  EXPECT_EQ(As<int32_t>(r), (std::vector<int32_t>{1024, 0, 1, 0, 1, 27, -8, -1}));
  Literal w = MustRun(HloOpcode::kPower, Shape(P::U8, {1}),
                      Args(Lit<uint8_t>(P::U8, {1}, {3}), Lit<uint8_t>(P::U8, {1}, {5})));
  EXPECT_EQ(As<uint8_t>(w)[0], 243);
  Literal f = MustRun(HloOpcode::kPower, Shape(P::F32, {3}),
                      Args(Vals(P::F32, {3}, {0, 2, 1}), Lit<float>(P::F32, {3}, {0, 0.5f, kNaN})));
  auto fv = As<float>(f);
  EXPECT_EQ(fv[0], 1.0f);
  EXPECT_FLOAT_EQ(fv[1], std::sqrt(2.0f));
  EXPECT_EQ(fv[2], 1.0f);  // 1^x = 1 even for NaN
}

TEST_F(ElementwiseTest, UnaryIntegerOps) {
  auto v = [] { return Lit<int32_t>(P::S32, {4}, {0, 1, -1, INT32_MIN}); };
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kClz, Shape(P::S32, {4}), Args(v()))),
            (std::vector<int32_t>{32, 31, 0, 0}));
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kPopulationCount, Shape(P::S32, {4}), Args(v()))),
            (std::vector<int32_t>{0, 1, 32, 1}));
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kAbs, Shape(P::S32, {4}), Args(v()))),
            (std::vector<int32_t>{0, 1, 1, INT32_MIN}));
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kNegate, Shape(P::S32, {4}), Args(v()))),
            (std::vector<int32_t>{0, -1, 1, INT32_MIN}));
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kNot, Shape(P::S32, {4}), Args(v()))),
            (std::vector<int32_t>{-1, -2, 0, INT32_MAX}));
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kSign, Shape(P::S32, {4}), Args(v()))),
            (std::vector<int32_t>{0, 1, -1, -1}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kNot, Shape(P::PRED, {2}),
                             Args(Lit<bool>(P::PRED, {2}, {true, false})))),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kXor, Shape(P::PRED, {2}),
                             Args(Lit<bool>(P::PRED, {2}, {true, true}),
                                  Lit<bool>(P::PRED, {2}, {true, false})))),
            (std::vector<bool>{false, true}));
}

TEST_F(ElementwiseTest, RoundingAndSign) {
  auto v = [] { return Lit<float>(P::F32, {6}, {2.5f, 3.5f, -2.5f, -0.0f, kNaN, -7.25f}); };
  auto rne = As<float>(MustRun(HloOpcode::kRoundNearestEven, Shape(P::F32, {6}), Args(v())));
  EXPECT_EQ(rne[0], 2.0f);
  EXPECT_EQ(rne[1], 4.0f);
  EXPECT_EQ(rne[2], -2.0f);
  EXPECT_EQ(rne[5], -7.0f);
  auto afz = As<float>(MustRun(HloOpcode::kRoundNearestAfz, Shape(P::F32, {6}), Args(v())));
  EXPECT_EQ(afz[0], 3.0f);
  EXPECT_EQ(afz[1], 4.0f);
  EXPECT_EQ(afz[2], -3.0f);
  auto sg = As<float>(MustRun(HloOpcode::kSign, Shape(P::F32, {6}), Args(v())));
  EXPECT_EQ(sg[0], 1.0f);
  EXPECT_EQ(sg[2], -1.0f);
  EXPECT_EQ(sg[3], 0.0f);
  EXPECT_TRUE(std::signbit(sg[3]));
  EXPECT_TRUE(std::isnan(sg[4]));
  auto fl = As<float>(MustRun(HloOpcode::kFloor, Shape(P::F32, {6}), Args(v())));
  EXPECT_EQ(fl[5], -8.0f);
  auto ce = As<float>(MustRun(HloOpcode::kCeil, Shape(P::F32, {6}), Args(v())));
  EXPECT_EQ(ce[5], -7.0f);
}

TEST_F(ElementwiseTest, TranscendentalsMatchReferenceValues) {
  // Reference values from Python's math module (math.erf(0.5), 1/(1+math.exp(-1)),
  // math.atan2(1,-1), math.tanh(0.5)).
  auto one = [](HloOpcode op, double x) { return Lit<double>(P::F64, {1}, {x}); };
  auto run = [&](HloOpcode op, double x) {
    return As<double>(MustRun(op, Shape(P::F64, {1}), Args(one(op, x))))[0];
  };
  EXPECT_NEAR(run(HloOpcode::kErf, 0.5), 0.5204998778130465, 1e-15);
  EXPECT_NEAR(run(HloOpcode::kLogistic, 1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(run(HloOpcode::kTanh, 0.5), 0.46211715726000974, 1e-15);
  EXPECT_NEAR(run(HloOpcode::kExpm1, 1e-10), 1.00000000005e-10, 1e-24);
  EXPECT_NEAR(run(HloOpcode::kLog1p, 1e-10), 9.999999999500001e-11, 1e-24);
  EXPECT_EQ(run(HloOpcode::kCbrt, -8.0), -2.0);
  EXPECT_EQ(run(HloOpcode::kRsqrt, 4.0), 0.5);
  auto at =
      As<double>(MustRun(HloOpcode::kAtan2, Shape(P::F64, {1}),
                         Args(Lit<double>(P::F64, {1}, {1.0}), Lit<double>(P::F64, {1}, {-1.0}))));
  EXPECT_NEAR(at[0], 2.356194490192345, 1e-15);
  // logistic saturates instead of producing NaN for large magnitudes.
  EXPECT_EQ(As<float>(MustRun(HloOpcode::kLogistic, Shape(P::F32, {2}),
                              Args(Vals(P::F32, {2}, {-1000, 1000})))),
            (std::vector<float>{0.0f, 1.0f}));
}

TEST_F(ElementwiseTest, ReducePrecision) {
  auto rp = [](int e, int m) {
    return [e, m](InstructionAttributes& at) {
      at.exponent_bits = e;
      at.mantissa_bits = m;
    };
  };
  // To f16's (5, 10): ties to even, overflow to inf (65520 rounds up to 65536), small
  // values (below f16's smallest normal 2^-14) flush to zero, NaN stays NaN.
  auto r = As<float>(MustRun(
      HloOpcode::kReducePrecision, Shape(P::F32, {6}),
      Args(Lit<float>(P::F32, {6},
                      {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, 1e-8f, kNaN, -65504.0f})),
      rp(5, 10)));
  EXPECT_EQ(r[0], 1.0f);
  EXPECT_EQ(r[1], 1.0f + 0x1p-9f);
  EXPECT_EQ(r[2], kInf);
  EXPECT_EQ(r[3], 0.0f);
  EXPECT_TRUE(std::isnan(r[4]));
  EXPECT_EQ(r[5], -65504.0f);
  // With no mantissa bits NaN becomes infinity; 1.5 (a tie) rounds to even 2.
  auto z = As<float>(MustRun(HloOpcode::kReducePrecision, Shape(P::F32, {3}),
                             Args(Lit<float>(P::F32, {3}, {kNaN, 1.5f, 1.25f})), rp(8, 0)));
  EXPECT_EQ(z[0], kInf);
  EXPECT_EQ(z[1], 2.0f);
  EXPECT_EQ(z[2], 1.0f);
}

TEST_F(ElementwiseTest, SelectWithScalarAndArrayPredicate) {
  auto s = As<int32_t>(
      MustRun(HloOpcode::kSelect, Shape(P::S32, {3}),
              Args(Lit<bool>(P::PRED, {3}, {true, false, true}),
                   Lit<int32_t>(P::S32, {3}, {1, 2, 3}), Lit<int32_t>(P::S32, {3}, {4, 5, 6}))));
  EXPECT_EQ(s, (std::vector<int32_t>{1, 5, 3}));
  auto t = As<int32_t>(
      MustRun(HloOpcode::kSelect, Shape(P::S32, {3}),
              Args(Lit<bool>(P::PRED, {}, {false}), Lit<int32_t>(P::S32, {3}, {1, 2, 3}),
                   Lit<int32_t>(P::S32, {3}, {4, 5, 6}))));
  EXPECT_EQ(t, (std::vector<int32_t>{4, 5, 6}));
}

TEST_F(ElementwiseTest, ClampWithScalarBoundsAndNaN) {
  auto c = As<float>(MustRun(
      HloOpcode::kClamp, Shape(P::F32, {4}),
      Args(Lit<float>(P::F32, {}, {0.0f}), Lit<float>(P::F32, {4}, {-1.0f, 0.5f, 9.0f, kNaN}),
           Lit<float>(P::F32, {}, {1.0f}))));
  EXPECT_EQ(c[0], 0.0f);
  EXPECT_EQ(c[1], 0.5f);
  EXPECT_EQ(c[2], 1.0f);
  EXPECT_TRUE(std::isnan(c[3]));
  auto i = As<int32_t>(
      MustRun(HloOpcode::kClamp, Shape(P::S32, {3}),
              Args(Lit<int32_t>(P::S32, {3}, {0, 0, 5}), Lit<int32_t>(P::S32, {3}, {-3, 3, 3}),
                   Lit<int32_t>(P::S32, {}, {2}))));
  EXPECT_EQ(i, (std::vector<int32_t>{0, 2, 2}));  // min(hi, max(x, lo)): 5 > 2 gives 2
}

TEST_F(ElementwiseTest, ComplexOps) {
  using c64 = std::complex<float>;
  Literal z = MustRun(HloOpcode::kComplex, Shape(P::C64, {2}),
                      Args(Vals(P::F32, {2}, {3, 1}), Vals(P::F32, {2}, {4, -1})));
  EXPECT_EQ(As<c64>(z), (std::vector<c64>{c64(3, 4), c64(1, -1)}));
  Literal zz = MustRun(HloOpcode::kComplex, Shape(P::C64, {2}),
                       Args(Vals(P::F32, {2}, {3, 1}), Vals(P::F32, {2}, {4, -1})));
  EXPECT_EQ(As<float>(MustRun(HloOpcode::kAbs, Shape(P::F32, {2}), Args(std::move(zz))))[0], 5.0f);
  auto mk = [] { return Lit<c64>(P::C64, {2}, {c64(3, 4), c64(1, -1)}); };
  EXPECT_EQ(As<float>(MustRun(HloOpcode::kReal, Shape(P::F32, {2}), Args(mk()))),
            (std::vector<float>{3, 1}));
  EXPECT_EQ(As<float>(MustRun(HloOpcode::kImag, Shape(P::F32, {2}), Args(mk()))),
            (std::vector<float>{4, -1}));
  // (3+4i)(1-i) = 7+i
  EXPECT_EQ(As<c64>(MustRun(
                HloOpcode::kMultiply, Shape(P::C64, {1}),
                Args(Lit<c64>(P::C64, {1}, {c64(3, 4)}), Lit<c64>(P::C64, {1}, {c64(1, -1)}))))[0],
            c64(7, 1));
}

TEST_F(ElementwiseTest, IsFinite) {
  EXPECT_EQ(As<bool>(MustRun(HloOpcode::kIsFinite, Shape(P::PRED, {4}),
                             Args(Lit<float>(P::F32, {4}, {1.0f, kInf, -kInf, kNaN})))),
            (std::vector<bool>{true, false, false, false}));
}

TEST_F(ElementwiseTest, BitcastConvertSameAndDifferentWidths) {
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kBitcastConvert, Shape(P::S32, {2}),
                                Args(Lit<float>(P::F32, {2}, {1.0f, -2.0f}))))[0],
            0x3f800000);
  // f32 -> u16 adds a minor dimension of 2; little-endian halves: low then high.
  EXPECT_EQ(As<uint16_t>(MustRun(HloOpcode::kBitcastConvert, Shape(P::U16, {1, 2}),
                                 Args(Lit<float>(P::F32, {1}, {1.0f})))),
            (std::vector<uint16_t>{0x0000, 0x3f80}));
  // u8[2,4] -> s32[2] drops the minor dimension.
  EXPECT_EQ(As<int32_t>(MustRun(HloOpcode::kBitcastConvert, Shape(P::S32, {2}),
                                Args(Lit<uint8_t>(P::U8, {2, 4}, {1, 0, 0, 0, 0, 0, 0, 0x80})))),
            (std::vector<int32_t>{1, INT32_MIN}));
}

TEST_F(ElementwiseTest, StochasticConvertRoundsUpBelowTheFraction) {
  // 2.25: fraction 0.25 is 2^30 as a u32 fixed-point value; random values below it round the
  // magnitude up. NaN -> 0; out-of-range values saturate.
  auto r = As<int32_t>(
      MustRun(HloOpcode::kStochasticConvert, Shape(P::S32, {6}),
              Args(Lit<float>(P::F32, {6}, {2.25f, 2.25f, 2.25f, -2.25f, kNaN, 1e10f}),
                   Lit<uint32_t>(P::U32, {6}, {0, 1u << 30, (1u << 30) - 1, 0, 0, 0}))));
  EXPECT_EQ(r, (std::vector<int32_t>{3, 2, 3, -3, 0, INT32_MAX}));
  auto h = As<int8_t>(MustRun(HloOpcode::kStochasticConvert, Shape(P::S8, {2}),
                              Args(Lit<half>(P::F16, {2}, {half(1.5f), half(1.5f)}),
                                   Lit<uint16_t>(P::U16, {2}, {0x7fff, 0x8000}))));
  EXPECT_EQ(h, (std::vector<int8_t>{2, 1}));
}

TEST_F(ElementwiseTest, ErrorsNameTheInstruction) {
  auto r = Run(HloOpcode::kAnd, Shape(P::F32, {1}),
               Args(Vals(P::F32, {1}, {1}), Vals(P::F32, {1}, {1})));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("%op"), std::string::npos) << r.status();
  auto s = Run(HloOpcode::kAdd, Shape(P::F32, {3}),
               Args(Vals(P::F32, {2}, {1, 2}), Vals(P::F32, {3}, {1, 2, 3})));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("%op"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace kiln
