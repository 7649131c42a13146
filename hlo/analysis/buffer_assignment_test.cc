// Buffer assignment on small modules whose allocations and peaks are worked out by hand in
// the comments (f32, so an [N] array is 4N bytes).
#include "hlo/analysis/buffer_assignment.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "hlo/analysis/cost_model.h"
#include "hlo/passes/fusion_test_util.h"

namespace kiln {
namespace {

using testing::Builder;

const Shape kVec100(PrimitiveType::F32, {100});

// x; a=exp(x)@1; b=neg(a)@2; c=add(a,b)@3; d=log(c)@4 (root).
// a: new alloc0 (x is a parameter: never overwritten). b: a is still live -> alloc1.
// c: a dies at 3 -> in place in alloc0. d: c dies at 4 -> in place in alloc0.
// Allocated 800; naive 4*400=1600; peak 800 (a and b at steps 2 and 3).
TEST(BufferAssignment, ChainWithInPlaceReuse) {
  Builder b;
  auto* x = b.Param(kVec100, "x");
  auto* a = b.Unary(HloOpcode::kExp, x);
  auto* bb = b.Unary(HloOpcode::kNegate, a);
  auto* c = b.Binary(HloOpcode::kAdd, a, bb);
  auto m = b.Finish(b.Unary(HloOpcode::kLog, c));
  auto ba = BufferAssignment::Run(*m);
  ASSERT_TRUE(ba.ok()) << ba.status();
  std::printf("%s", ba->ToString().c_str());
  EXPECT_EQ(ba->stats().total_allocation_bytes, 800);
  EXPECT_EQ(ba->stats().allocation_count, 2);
  EXPECT_EQ(ba->stats().sum_intermediate_bytes, 1600);
  EXPECT_EQ(ba->stats().peak_live_bytes, 800);
  EXPECT_EQ(ba->stats().in_place_count, 2);
  EXPECT_EQ(ba->stats().parameter_bytes, 400);
}

// x; a=exp(x)[100]@1; r=reduce(a)[]@2; bb=broadcast(r)[50]@3; y=exp(bb)@4 (root).
// a: alloc0 (400). r: alloc0 still holds a (read at 2) -> alloc1 (4).
// bb: alloc0 is dead and 400 >= 200 -> best fit reuse. y: in place on bb.
// Allocated 404; naive 400+4+200+200=804; peak 404 at step 2 (a and r).
TEST(BufferAssignment, BestFitReusesLargerDeadAllocation) {
  Builder b;
  auto* x = b.Param(kVec100, "x");
  auto* a = b.Unary(HloOpcode::kExp, x);
  auto* r = b.Reduce(a, b.Scalar(0), {0});
  auto* bc = b.Broadcast(r, {50}, {});
  auto m = b.Finish(b.Unary(HloOpcode::kExp, bc));
  auto ba = BufferAssignment::Run(*m);
  ASSERT_TRUE(ba.ok()) << ba.status();
  std::printf("%s", ba->ToString().c_str());
  EXPECT_EQ(ba->stats().total_allocation_bytes, 404);
  EXPECT_EQ(ba->stats().sum_intermediate_bytes, 804);
  EXPECT_EQ(ba->stats().peak_live_bytes, 404);
  EXPECT_EQ(ba->stats().constant_bytes, 4);
}

// x; s=reduce(x)[]@k; y=broadcast(s)[100] (root). Without aliasing y needs its own 400
// bytes (s is live while y is written): 404 allocated. With the output aliased to
// parameter 0, x is dead before y is written, so y lives in x's buffer: 4 allocated.
TEST(BufferAssignment, InputOutputAliasUsesParameterBuffer) {
  for (bool alias : {false, true}) {
    Builder b;
    auto* x = b.Param(kVec100, "x");
    auto* s = b.Reduce(x, b.Scalar(0), {0});
    auto m = b.Finish(b.Broadcast(s, {100}, {}));
    if (alias) m->attributes().push_back({"input_output_alias", "{ {}: (0, {}, may-alias) }"});
    auto ba = BufferAssignment::Run(*m);
    ASSERT_TRUE(ba.ok()) << ba.status();
    std::printf("%s", ba->ToString().c_str());
    EXPECT_EQ(ba->stats().total_allocation_bytes, alias ? 4 : 404);
    EXPECT_EQ(ba->stats().peak_live_bytes, alias ? 4 : 404);
    EXPECT_EQ(ba->stats().aliased_outputs, alias ? 1 : 0);
    EXPECT_EQ(ba->stats().sum_intermediate_bytes, 404);
  }
}

// A tuple root: two 400-byte leaves plus a 16-byte table, all live out.
TEST(BufferAssignment, TupleRootCountsLeavesAndTable) {
  Builder b;
  auto* x = b.Param(kVec100, "x");
  auto* a = b.Unary(HloOpcode::kExp, x);
  auto* c = b.Unary(HloOpcode::kNegate, x);
  auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple({kVec100, kVec100}),
                                            std::vector<HloInstruction*>{a, c});
  t->set_name("t");
  auto m = b.Finish(b.entry()->AddInstruction(std::move(t)));
  auto ba = BufferAssignment::Run(*m);
  ASSERT_TRUE(ba.ok()) << ba.status();
  EXPECT_EQ(ba->stats().total_allocation_bytes, 816);
  EXPECT_EQ(ba->stats().peak_live_bytes, 816);
}

TEST(BufferAssignment, ParsesAliasAttribute) {
  auto a = ParseInputOutputAlias("{ {0}: (1, {}, may-alias), {1, 2}: (0, {3}, must-alias) }");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].output_index, std::vector<int64_t>{0});
  EXPECT_EQ((*a)[0].parameter_number, 1);
  EXPECT_FALSE((*a)[0].must_alias);
  EXPECT_EQ((*a)[1].output_index, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*a)[1].parameter_index, std::vector<int64_t>{3});
  EXPECT_TRUE((*a)[1].must_alias);
  EXPECT_TRUE(ParseInputOutputAlias("{}")->empty());
  auto bad = ParseInputOutputAlias("{ {0}: (x, {}) }");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("parameter number"), std::string::npos);
}

// relu(x@W+b) with x[2,3], W[3,4]: dot 2*2*4*3 = 48 flops, add 8, max 8.
TEST(CostModel, CountsKernelsBytesAndFlops) {
  Builder b;
  auto* x = b.Param(Shape(PrimitiveType::F32, {2, 3}), "x");
  auto* w = b.Param(Shape(PrimitiveType::F32, {3, 4}), "w");
  auto* d = b.Dot(x, w);
  auto* z = b.Binary(HloOpcode::kAdd, d, d);
  auto m = b.Finish(b.Binary(HloOpcode::kMaximum, z, z));
  ComputationCost c = EstimateCost(*m->entry());
  EXPECT_EQ(c.kernels, 3);
  EXPECT_EQ(c.flops, 48 + 8 + 8);
  EXPECT_EQ(c.bytes_read, (6 + 12) * 4 + 2 * 32 + 2 * 32);
  EXPECT_EQ(c.bytes_written, 3 * 32);
}

}  // namespace
}  // namespace kiln
