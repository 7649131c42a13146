// Tests of producer-consumer fusion on modules built in C++: the shapes of the result
// (how many fusions of which kind, what stayed outside) follow from the rules by hand.
#include "hlo/passes/instruction_fusion.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "hlo/passes/fusion_test_util.h"

namespace kiln {
namespace {

using testing::Builder;
using testing::CountFusions;

const Shape kF32_64x128(PrimitiveType::F32, {64, 128});

void Report(const char* what, const HloModule& m) {
  auto c = CountFusions(*m.entry());
  std::printf("[%s] kernels=%d fusions=%d (loop=%d input=%d output=%d)\n", what, c.kernels,
              c.fusions, c.loop, c.input, c.output);
}

int CountOpcodeInBodies(const HloModule& m, HloOpcode op) {
  int n = 0;
  for (const HloComputation* c : m.computations())
    if (c->is_fusion_computation())
      for (const HloInstruction* i : c->instructions()) n += i->opcode() == op;
  return n;
}

int CountOpcodeInEntry(const HloModule& m, HloOpcode op) {
  int n = 0;
  for (const HloInstruction* i : m.entry()->instructions()) n += i->opcode() == op;
  return n;
}

std::unique_ptr<HloModule> Softmax() {
  Builder b("softmax");
  auto* x = b.Param(kF32_64x128, "x");
  auto* ninf = b.Scalar(-INFINITY);
  auto* rowmax = b.Reduce(x, ninf, {1}, HloOpcode::kMaximum);
  auto* bmax = b.Broadcast(rowmax, {64, 128}, {0});
  auto* shifted = b.Binary(HloOpcode::kSubtract, x, bmax);
  auto* e = b.Unary(HloOpcode::kExp, shifted);
  auto* zero = b.Scalar(0);
  auto* rowsum = b.Reduce(e, zero, {1});
  auto* bsum = b.Broadcast(rowsum, {64, 128}, {0});
  return b.Finish(b.Binary(HloOpcode::kDivide, e, bsum));
}

TEST(InstructionFusion, ReduceOfElementwiseIsOneInputFusion) {
  Builder b;
  Shape s(PrimitiveType::F32, {32, 16});
  auto* x = b.Param(s, "x");
  auto* y = b.Param(s, "y");
  auto* z = b.Param(s, "z");
  auto* sum = b.Binary(HloOpcode::kAdd, x, b.Binary(HloOpcode::kMultiply, y, z));
  auto m = b.Finish(b.Reduce(sum, b.Scalar(0), {0, 1}));
  InstructionFusion pass;
  ASSERT_TRUE(pass.Run(*m).value());
  Report("reduce_sum(x+y*z)", *m);
  auto c = CountFusions(*m->entry());
  EXPECT_EQ(c.fusions, 1);
  EXPECT_EQ(c.input, 1);
  EXPECT_EQ(c.kernels, 1);
  HloInstruction* root = m->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(root->operand_count(), 3);  // x, y, z; the constant moved in
  EXPECT_EQ(root->fused_computation()->name(), "fused_computation");
  EXPECT_TRUE(root->fused_computation()->is_fusion_computation());
  EXPECT_EQ(root->fused_computation()->root()->opcode(), HloOpcode::kReduce);
  EXPECT_EQ(root->fused_computation()->instruction_count(),
            3 + 4);  // 3 params, mul, add, const, reduce
}

TEST(InstructionFusion, SoftmaxIsAtMostTwoFusions) {
  auto m = Softmax();
  InstructionFusion pass;
  ASSERT_TRUE(pass.Run(*m).value());
  Report("softmax", *m);
  auto c = CountFusions(*m->entry());
  EXPECT_LE(c.fusions, 2);
  EXPECT_EQ(c.kernels, c.fusions);  // nothing left unfused
  // Two reductions, never in the same fusion; exp computed once (not duplicated).
  EXPECT_EQ(CountOpcodeInBodies(*m, HloOpcode::kReduce), 2);
  EXPECT_EQ(CountOpcodeInBodies(*m, HloOpcode::kExp), 1);
  for (const HloComputation* comp : m->computations()) {
    int reduces = 0;
    for (const HloInstruction* i : comp->instructions())
      reduces += i->opcode() == HloOpcode::kReduce;
    EXPECT_LE(reduces, 1) << comp->name();
  }
}

TEST(InstructionFusion, DenseReluIsOneOutputFusion) {
  Builder b;
  auto* x = b.Param(Shape(PrimitiveType::F32, {8, 16}), "x");
  auto* w = b.Param(Shape(PrimitiveType::F32, {16, 4}), "w");
  auto* bias = b.Param(Shape(PrimitiveType::F32, {4}), "b");
  auto* xw = b.Dot(x, w);
  auto* z = b.Binary(HloOpcode::kAdd, xw, b.Broadcast(bias, {8, 4}, {1}));
  auto* zeros = b.Broadcast(b.Scalar(0), {8, 4}, {});
  auto m = b.Finish(b.Binary(HloOpcode::kMaximum, z, zeros));
  InstructionFusion pass;
  ASSERT_TRUE(pass.Run(*m).value());
  Report("relu(x@W+b)", *m);
  auto c = CountFusions(*m->entry());
  EXPECT_EQ(c.fusions, 1);
  EXPECT_EQ(c.output, 1);
  EXPECT_EQ(c.kernels, 1);
  // The dot reads x and w straight from the fusion's parameters.
  HloInstruction* root = m->entry()->root();
  EXPECT_EQ(root->operand_count(), 3);
}

TEST(InstructionFusion, ExpensiveProducerWithTwoConsumersIsNotDuplicated) {
  Builder b;
  Shape s(PrimitiveType::F32, {100});
  auto* x = b.Param(s, "x");
  auto* e = b.Unary(HloOpcode::kExp, x);
  auto* one = b.Broadcast(b.Scalar(1), {100}, {});
  auto* a = b.Binary(HloOpcode::kAdd, e, one);
  auto* c2 = b.Binary(HloOpcode::kMultiply, e, one);
  auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple({s, s}),
                                            std::vector<HloInstruction*>{a, c2});
  t->set_name("tuple");
  auto m = b.Finish(b.entry()->AddInstruction(std::move(t)));
  InstructionFusion pass;
  ASSERT_TRUE(pass.Run(*m).value());
  Report("exp with two users", *m);
  EXPECT_EQ(CountOpcodeInEntry(*m, HloOpcode::kExp), 1);
  EXPECT_EQ(CountOpcodeInBodies(*m, HloOpcode::kExp), 0);
  // The cheap broadcast of a scalar was copied into both consumers and is gone outside.
  EXPECT_EQ(CountOpcodeInEntry(*m, HloOpcode::kBroadcast), 0);
  EXPECT_EQ(CountOpcodeInBodies(*m, HloOpcode::kBroadcast), 2);
  EXPECT_EQ(CountFusions(*m->entry()).fusions, 2);
}

TEST(InstructionFusion, ExpensiveProducerNotFusedUnderExpandingBroadcast) {
  Builder b;
  auto* v = b.Param(Shape(PrimitiveType::F32, {64}), "v");
  auto* x = b.Param(kF32_64x128, "x");
  auto* e = b.Unary(HloOpcode::kLog, v);
  auto* be = b.Broadcast(e, {64, 128}, {0});
  auto m = b.Finish(b.Binary(HloOpcode::kAdd, x, be));
  InstructionFusion pass;
  ASSERT_TRUE(pass.Run(*m).value());
  Report("log under broadcast", *m);
  EXPECT_EQ(CountOpcodeInEntry(*m, HloOpcode::kLog), 1);
  EXPECT_EQ(CountOpcodeInBodies(*m, HloOpcode::kBroadcast), 1);
}

TEST(InstructionFusion, ReduceOfReduceStaysTwoFusions) {
  Builder b;
  auto* x = b.Param(kF32_64x128, "x");
  auto* r1 = b.Reduce(b.Unary(HloOpcode::kNegate, x), b.Scalar(0), {1});
  auto* r2 = b.Reduce(b.Unary(HloOpcode::kAbs, r1), b.Scalar(0), {0});
  auto m = b.Finish(r2);
  InstructionFusion pass;
  ASSERT_TRUE(pass.Run(*m).value());
  Report("reduce(abs(reduce(-x)))", *m);
  auto c = CountFusions(*m->entry());
  EXPECT_EQ(c.fusions, 2);
  EXPECT_EQ(c.input, 2);
}

TEST(InstructionFusion, OperandLimitIsRespected) {
  Builder b;
  Shape s(PrimitiveType::F32, {4});
  HloInstruction* acc = b.Param(s, "p0");
  for (int i = 1; i < 10; ++i)
    acc = b.Binary(HloOpcode::kAdd, acc, b.Param(s, "p" + std::to_string(i)));
  auto m = b.Finish(acc);
  InstructionFusionOptions opts;
  opts.max_operands = 4;
  InstructionFusion pass(opts);
  ASSERT_TRUE(pass.Run(*m).value());
  Report("add chain, max 4 operands", *m);
  for (const HloInstruction* i : m->entry()->instructions())
    if (i->opcode() == HloOpcode::kFusion) {
      EXPECT_LE(i->operand_count(), 4);
    }
  EXPECT_GE(CountFusions(*m->entry()).fusions, 3);
}

TEST(InstructionFusion, NothingToFuseReportsUnchanged) {
  Builder b;
  auto* x = b.Param(Shape(PrimitiveType::F32, {4, 4}), "x");
  auto m = b.Finish(b.Dot(x, x));
  InstructionFusion pass;
  EXPECT_FALSE(pass.Run(*m).value());
}

}  // namespace
}  // namespace kiln
