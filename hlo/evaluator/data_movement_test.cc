// Tests of the data movement family against hand-computed arrays.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/test_builder.h"

namespace kiln {
namespace {

using testing_util::As;
using testing_util::Lit;
using P = PrimitiveType;

class DataMovementTest : public ::testing::Test {
 protected:
  // Evaluates one `op` instruction whose operands are parameters with `args`' shapes (or
  // `operand_shapes`, when given, to carry layouts).
  absl::StatusOr<Literal> Run(HloOpcode op, Shape out, std::vector<Literal> args,
                              const std::function<void(InstructionAttributes&)>& set = nullptr,
                              std::vector<Shape> operand_shapes = {}) {
    std::vector<HloInstruction*> operands;
    for (size_t i = 0; i < args.size(); ++i) {
      Shape s = i < operand_shapes.size() ? operand_shapes[i] : args[i].shape();
      params_.push_back(
          HloInstruction::CreateParameter(static_cast<int64_t>(i), s, "p" + std::to_string(i)));
      operands.push_back(params_.back().get());
    }
    auto instr = std::make_unique<HloInstruction>(op, std::move(out), operands);
    instr->set_name("dm");
    if (set) set(instr->mutable_attrs());
    args_.push_back(std::move(args));
    std::vector<const Literal*> ptrs;
    for (const Literal& a : args_.back()) ptrs.push_back(&a);
    HloEvaluator evaluator;
    auto result = evaluator.EvaluateInstruction(*instr, ptrs);
    instrs_.push_back(std::move(instr));
    return result;
  }
  template <typename T>
  std::vector<T> MustRun(HloOpcode op, Shape out, std::vector<Literal> args,
                         const std::function<void(InstructionAttributes&)>& set = nullptr,
                         std::vector<Shape> operand_shapes = {}) {
    auto r = Run(op, std::move(out), std::move(args), set, std::move(operand_shapes));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? As<T>(*r) : std::vector<T>{};
  }

  std::vector<std::unique_ptr<HloInstruction>> params_, instrs_;
  std::vector<std::vector<Literal>> args_;
};

template <typename... L>
std::vector<Literal> Args(L... ls) {
  std::vector<Literal> v;
  (v.push_back(std::move(ls)), ...);
  return v;
}

Literal S32(std::vector<int64_t> dims, std::vector<int32_t> v) {
  return Lit<int32_t>(P::S32, std::move(dims), v);
}
Literal Idx(int32_t i) { return Lit<int32_t>(P::S32, {}, {i}); }

auto Dims(std::vector<int64_t> d) {
  return [d](InstructionAttributes& a) {
    a.dimensions = d;
    a.has_dimensions = true;
  };
}

TEST_F(DataMovementTest, Broadcast) {
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kBroadcast, Shape(P::S32, {2, 3}), Args(S32({2}, {1, 2})),
                             Dims({0})),
            (std::vector<int32_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kBroadcast, Shape(P::S32, {2, 3}),
                             Args(S32({3}, {1, 2, 3})), Dims({1})),
            (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(
      MustRun<int32_t>(HloOpcode::kBroadcast, Shape(P::S32, {2, 2}), Args(S32({}, {7})), Dims({})),
      (std::vector<int32_t>{7, 7, 7, 7}));
  // operand [2,3] into [3,2,2] with dims {2,1}: out[i,j,k] = in[k,j]... dims map operand dim
  // 0 -> out dim 2 and operand dim 1 -> out dim 1, so out[i,j,k] = in[k][j].
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kBroadcast, Shape(P::S32, {2, 3, 2}),
                             Args(S32({2, 3}, {1, 2, 3, 4, 5, 6})), Dims({2, 1})),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6, 1, 4, 2, 5, 3, 6}));
}

TEST_F(DataMovementTest, TransposeReshapeReverse) {
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kTranspose, Shape(P::S32, {3, 2}),
                             Args(S32({2, 3}, {1, 2, 3, 4, 5, 6})), Dims({1, 0})),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kReshape, Shape(P::S32, {3, 2}),
                             Args(S32({2, 3}, {1, 2, 3, 4, 5, 6}))),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kReverse, Shape(P::S32, {2, 3}),
                             Args(S32({2, 3}, {1, 2, 3, 4, 5, 6})), Dims({1})),
            (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kReverse, Shape(P::S32, {2, 3}),
                             Args(S32({2, 3}, {1, 2, 3, 4, 5, 6})), Dims({0, 1})),
            (std::vector<int32_t>{6, 5, 4, 3, 2, 1}));
  auto bad = Run(HloOpcode::kReshape, Shape(P::S32, {4}), Args(S32({2, 3}, {1, 2, 3, 4, 5, 6})));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("%dm"), std::string::npos) << bad.status();
}

TEST_F(DataMovementTest, BitcastFollowsLayouts) {
  // Operand f32[2,3]{0,1} is column-major: its bytes are a00 a10 a01 a11 a02 a12. Read as a
  // row-major [3,2] they form the transpose.
  Shape col_major(P::F32, {2, 3});
  col_major.set_layout(Layout{{0, 1}, ""});
  EXPECT_EQ(
      MustRun<float>(HloOpcode::kBitcast, Shape(P::F32, {3, 2}),
                     Args(Lit<float>(P::F32, {2, 3}, {1, 2, 3, 4, 5, 6})), nullptr, {col_major}),
      (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // Default layouts: a plain reshape.
  EXPECT_EQ(MustRun<float>(HloOpcode::kBitcast, Shape(P::F32, {6}),
                           Args(Lit<float>(P::F32, {2, 3}, {1, 2, 3, 4, 5, 6}))),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Result layout {0,1} over the same bytes: logical [2,3] from physical order.
  Shape out_col(P::F32, {3, 2});
  out_col.set_layout(Layout{{0, 1}, ""});
  // Physical bytes 1..6 read with result dims [3,2] column-major: r[i,j] = bytes[j*3+i].
  EXPECT_EQ(MustRun<float>(HloOpcode::kBitcast, out_col,
                           Args(Lit<float>(P::F32, {6}, {1, 2, 3, 4, 5, 6}))),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST_F(DataMovementTest, SliceWithStrides) {
  auto sl = [](std::vector<int64_t> s, std::vector<int64_t> l, std::vector<int64_t> st) {
    return [=](InstructionAttributes& a) {
      a.slice_starts = s;
      a.slice_limits = l;
      a.slice_strides = st;
    };
  };
  // [3,4] = 0..11; rows 0:3:2, cols 1:4:2 -> rows {0,2}, cols {1,3}.
  std::vector<int32_t> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kSlice, Shape(P::S32, {2, 2}), Args(S32({3, 4}, v)),
                             sl({0, 1}, {3, 4}, {2, 2})),
            (std::vector<int32_t>{1, 3, 9, 11}));
  auto bad = Run(HloOpcode::kSlice, Shape(P::S32, {2, 2}), Args(S32({3, 4}, v)),
                 sl({0, 3}, {3, 5}, {2, 1}));
  EXPECT_FALSE(bad.ok());
  // Strides of INT64_MAX take one element per dimension (their sizes once wrapped to 0, and
  // stride * row length overflowed).
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kSlice, Shape(P::S32, {1, 1}), Args(S32({3, 4}, v)),
                             sl({2, 1}, {3, 4}, {kMax, kMax})),
            (std::vector<int32_t>{9}));
}

TEST_F(DataMovementTest, DynamicSliceClampsStartIndices) {
  auto sizes = [](std::vector<int64_t> s) {
    return [=](InstructionAttributes& a) { a.dynamic_slice_sizes = s; };
  };
  // Start 4 with size 2 in a dimension of 5 clamps to 3; negative starts clamp to 0.
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kDynamicSlice, Shape(P::S32, {2}),
                             Args(S32({5}, {0, 1, 2, 3, 4}), Idx(4)), sizes({2})),
            (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kDynamicSlice, Shape(P::S32, {2}),
                             Args(S32({5}, {0, 1, 2, 3, 4}), Idx(-7)), sizes({2})),
            (std::vector<int32_t>{0, 1}));
  std::vector<int32_t> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  // [3,4]: start (1, 9) -> (1, 2) for a 2x2 window.
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kDynamicSlice, Shape(P::S32, {2, 2}),
                             Args(S32({3, 4}, v), Idx(1), Idx(9)), sizes({2, 2})),
            (std::vector<int32_t>{6, 7, 10, 11}));
  // Unsigned and 64-bit index types work too.
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kDynamicSlice, Shape(P::S32, {1}),
                             Args(S32({5}, {0, 1, 2, 3, 4}), Lit<uint64_t>(P::U64, {}, {~0ull})),
                             sizes({1})),
            (std::vector<int32_t>{4}));
}

TEST_F(DataMovementTest, DynamicUpdateSliceClampsStartIndices) {
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kDynamicUpdateSlice, Shape(P::S32, {5}),
                             Args(S32({5}, {0, 1, 2, 3, 4}), S32({2}, {8, 9}), Idx(10))),
            (std::vector<int32_t>{0, 1, 2, 8, 9}));
  std::vector<int32_t> zeros(12, 0);
  // Update [2,2] at (-1, 1) -> (0, 1) in [3,4].
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kDynamicUpdateSlice, Shape(P::S32, {3, 4}),
                             Args(S32({3, 4}, zeros), S32({2, 2}, {1, 2, 3, 4}), Idx(-1), Idx(1))),
            (std::vector<int32_t>{0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0}));
}

TEST_F(DataMovementTest, Concatenate) {
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kConcatenate, Shape(P::S32, {2, 3}),
                             Args(S32({2, 1}, {1, 4}), S32({2, 2}, {2, 3, 5, 6})), Dims({1})),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(
      MustRun<int32_t>(HloOpcode::kConcatenate, Shape(P::S32, {3, 1}),
                       Args(S32({1, 1}, {1}), S32({0, 1}, {}), S32({2, 1}, {2, 3})), Dims({0})),
      (std::vector<int32_t>{1, 2, 3}));
}

TEST_F(DataMovementTest, PadWithNegativeEdgesAndInterior) {
  auto pad = [](PaddingConfig c) {
    return [=](InstructionAttributes& a) { a.padding_config = c; };
  };
  // [1,2,3] interior 1 -> [1,p,2,p,3]; low -1 drops the first; high 2 appends p,p.
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kPad, Shape(P::S32, {6}), Args(S32({3}, {1, 2, 3}), Idx(0)),
                             pad({{-1, 2, 1}})),
            (std::vector<int32_t>{0, 2, 0, 3, 0, 0}));
  // 2-D: [[1,2],[3,4]] with rows low 1 high 0, cols low 0 high -1 interior 1:
  // columns become [a,p,b] then the last is cut -> [a,p].
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kPad, Shape(P::S32, {3, 2}),
                             Args(S32({2, 2}, {1, 2, 3, 4}), Idx(9)), pad({{1, 0, 0}, {0, -1, 1}})),
            (std::vector<int32_t>{9, 9, 1, 9, 3, 9}));
  // Everything cropped away except padding.
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kPad, Shape(P::S32, {2}), Args(S32({2}, {1, 2}), Idx(5)),
                             pad({{-3, 3, 0}})),
            (std::vector<int32_t>{5, 5}));
  // Interior padding of a single element is no padding, however large.
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kPad, Shape(P::S32, {2, 3}),
                             Args(S32({2, 1}, {1, 2}), Idx(0)), pad({{0, 0, 0}, {1, 1, kMax}})),
            (std::vector<int32_t>{0, 1, 0, 0, 2, 0}));
  // Edge paddings far apart whose sum is small: the operand lies entirely before the result.
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kPad, Shape(P::S32, {3}), Args(S32({2}, {1, 2}), Idx(7)),
                             pad({{-kMax / 2, kMax / 2 + 1, 0}})),
            (std::vector<int32_t>{7, 7, 7}));
  // Sizes that overflow are errors, not wrapped sizes.
  EXPECT_FALSE(Run(HloOpcode::kPad, Shape(P::S32, {2}), Args(S32({4}, {1, 2, 3, 4}), Idx(0)),
                   pad({{kMax, kMax, 0}}))
                   .ok());
}

TEST_F(DataMovementTest, IotaAndGetDimensionSize) {
  auto iota = [](int64_t d) { return [=](InstructionAttributes& a) { a.iota_dimension = d; }; };
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kIota, Shape(P::S32, {2, 3}), Args(), iota(1)),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(MustRun<float>(HloOpcode::kIota, Shape(P::F32, {2, 3}), Args(), iota(0)),
            (std::vector<float>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(MustRun<int32_t>(HloOpcode::kGetDimensionSize, Shape(P::S32, {}), Args(S32({2, 7}, {})),
                             Dims({1})),
            (std::vector<int32_t>{7}));
}

}  // namespace
}  // namespace kiln
