// Tests of sibling multi-output fusion on modules built in C++.
#include "hlo/passes/multi_output_fusion.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "hlo/passes/fusion_test_util.h"
#include "hlo/passes/instruction_fusion.h"

namespace kiln {
namespace {

using testing::Builder;
using testing::CountFusions;

HloInstruction* MakeTuple(Builder& b, std::vector<HloInstruction*> elems) {
  std::vector<Shape> shapes;
  for (auto* e : elems) shapes.push_back(e->shape());
  auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple(shapes), elems);
  t->set_name("result");
  return b.entry()->AddInstruction(std::move(t));
}

// sum(x) and sum(x*x) over rows: two reductions of the same input, one kernel after merging.
TEST(MultiOutputFusion, SiblingReductionsMerge) {
  Builder b;
  Shape s(PrimitiveType::F32, {64, 128});
  auto* x = b.Param(s, "x");
  auto* s1 = b.Reduce(x, b.Scalar(0), {1});
  auto* s2 = b.Reduce(b.Binary(HloOpcode::kMultiply, x, x), b.Scalar(0), {1});
  auto m = b.Finish(MakeTuple(b, {s1, s2}));
  ASSERT_TRUE(InstructionFusion().Run(*m).value());
  auto before = CountFusions(*m->entry());
  EXPECT_EQ(before.fusions, 2);
  ASSERT_TRUE(MultiOutputFusion().Run(*m).value());
  auto after = CountFusions(*m->entry());
  std::printf("[mean/var] kernels before=%d after=%d multi_output=%d\n", before.kernels,
              after.kernels, after.multi_output);
  EXPECT_EQ(after.fusions, 1);
  EXPECT_EQ(after.multi_output, 1);
  EXPECT_EQ(after.input, 1);
  // The result tuple reads both sums through get-tuple-element 0 and 1.
  HloInstruction* root = m->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kTuple);
  ASSERT_EQ(root->operand(0)->opcode(), HloOpcode::kGetTupleElement);
  ASSERT_EQ(root->operand(1)->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(root->operand(0)->operand(0), root->operand(1)->operand(0));
  EXPECT_NE(root->operand(0)->tuple_index(), root->operand(1)->tuple_index());
  const HloInstruction* f = root->operand(0)->operand(0);
  EXPECT_EQ(f->operand_count(), 1);  // only x: the zeros moved inside
  EXPECT_EQ(f->fused_computation()->root()->opcode(), HloOpcode::kTuple);
}

// The second reduction reads the first one's result: merging would create a cycle.
TEST(MultiOutputFusion, DependentSiblingsDoNotMerge) {
  Builder b;
  Shape s(PrimitiveType::F32, {64, 128});
  auto* x = b.Param(s, "x");
  auto* r1 = b.Reduce(x, b.Scalar(0), {1});
  auto* scaled = b.Binary(HloOpcode::kMultiply, x, b.Broadcast(r1, {64, 128}, {0}));
  auto* r2 = b.Reduce(scaled, b.Scalar(0), {1});
  auto m = b.Finish(MakeTuple(b, {r1, r2}));
  ASSERT_TRUE(InstructionFusion().Run(*m).value());
  EXPECT_FALSE(MultiOutputFusion().Run(*m).value());
  EXPECT_EQ(CountFusions(*m->entry()).fusions, 2);
}

// Reductions over different dimensions iterate differently: they stay apart.
TEST(MultiOutputFusion, IncompatibleSiblingsDoNotMerge) {
  Builder b;
  Shape s(PrimitiveType::F32, {64, 128});
  auto* x = b.Param(s, "x");
  auto* r1 = b.Reduce(x, b.Scalar(0), {1});
  auto* r2 = b.Reduce(x, b.Scalar(0), {0});
  auto m = b.Finish(MakeTuple(b, {r1, r2}));
  EXPECT_FALSE(MultiOutputFusion().Run(*m).value());
}

// Three loop fusions over the same input merge into one with three outputs.
TEST(MultiOutputFusion, ThreeLoopSiblingsMerge) {
  Builder b;
  Shape s(PrimitiveType::F32, {256});
  auto* x = b.Param(s, "x");
  auto* y = b.Param(s, "y");
  auto* a = b.Unary(HloOpcode::kNegate, b.Binary(HloOpcode::kAdd, x, y));
  auto* c = b.Unary(HloOpcode::kAbs, b.Binary(HloOpcode::kMultiply, x, y));
  auto* d = b.Unary(HloOpcode::kExp, b.Binary(HloOpcode::kSubtract, x, y));
  auto m = b.Finish(MakeTuple(b, {a, c, d}));
  ASSERT_TRUE(InstructionFusion().Run(*m).value());
  EXPECT_EQ(CountFusions(*m->entry()).fusions, 3);
  ASSERT_TRUE(MultiOutputFusion().Run(*m).value());
  auto after = CountFusions(*m->entry());
  EXPECT_EQ(after.fusions, 1);
  EXPECT_EQ(after.multi_output, 1);
  const HloInstruction* root = m->entry()->root();
  std::vector<int64_t> idx;
  for (const HloInstruction* g : root->operands()) idx.push_back(g->tuple_index());
  std::sort(idx.begin(), idx.end());
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace kiln
