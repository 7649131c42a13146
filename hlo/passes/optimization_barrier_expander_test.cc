// Tests of optimization-barrier-expander: the barriers jax.checkpoint writes around a
// recomputed layer go, the values stay what the evaluator computes with them, and CSE then
// computes the recomputed dot once; a barrier that is the root, and one in a while body.
#include "hlo/passes/optimization_barrier_expander.h"

#include "gtest/gtest.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::FileCheck;
using testing::Parse;
using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// The shape of a rematerialized tanh layer's gradient as JAX lowers it: the forward's
// input and weight pass through a barrier, and the backward recomputes the same dot.
constexpr char kRemat[] = R"(
HloModule remat
ENTRY main {
  x = f32[4,8] parameter(0)
  w = f32[8,8] parameter(1)
  g = f32[4,8] parameter(2)
  fwd = f32[4,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  act = f32[4,8] tanh(fwd)
  t = (f32[4,8], f32[8,8], f32[4,8]) tuple(x, w, g)
  b = (f32[4,8], f32[8,8], f32[4,8]) opt-barrier(t)
  bx = f32[4,8] get-tuple-element(b), index=0
  bw = f32[8,8] get-tuple-element(b), index=1
  bg = f32[4,8] get-tuple-element(b), index=2
  re = f32[4,8] dot(bx, bw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  th = f32[4,8] tanh(re)
  one = f32[] constant(1)
  ones = f32[4,8] broadcast(one), dimensions={}
  sq = f32[4,8] multiply(th, th)
  d = f32[4,8] subtract(ones, sq)
  dg = f32[4,8] multiply(bg, d)
  gw = f32[8,8] dot(bx, dg), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT r = (f32[4,8], f32[8,8]) tuple(act, gw)
}
)";

constexpr char kBarrierRoot[] = R"(
HloModule root
ENTRY main {
  a = f32[16] parameter(0)
  b = f32[16] parameter(1)
  s = f32[16] add(a, b)
  t = (f32[16], f32[16]) tuple(s, a)
  ROOT o = (f32[16], f32[16]) opt-barrier(t)
}
)";

// A barrier on the loop state inside a while body (what a checkpointed scan step holds).
constexpr char kInLoop[] = R"(
HloModule loop
cond {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8]) parameter(0)
  b = (s32[], f32[8]) opt-barrier(p)
  i = s32[] get-tuple-element(b), index=0
  v = f32[8] get-tuple-element(b), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  e = f32[8] sine(v)
  ROOT t = (s32[], f32[8]) tuple(j, e)
}
ENTRY main {
  v = f32[8] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[8]) tuple(zero, v)
  w = (s32[], f32[8]) while(t), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}
)";

TEST(OptimizationBarrierExpander, RematBarrierGoesAndCseMergesTheRecomputedDot) {
  OptimizationBarrierExpander pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kRemat, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("opt-barrier"), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kRemat, 3));
  // With the barrier gone the recomputed dot and tanh are the forward's own.
  std::unique_ptr<HloModule> m = Parse(kRemat);
  ASSERT_TRUE(m);
  ASSERT_TRUE(pass.Run(*m).ok());
  ASSERT_TRUE(HloCSE().Run(*m).ok());
  const std::string merged = m->ToString();
  EXPECT_TRUE(FileCheck(merged, R"(
CHECK:     dot(
CHECK:     tanh(
CHECK-NOT: tanh(
CHECK:     dot(
CHECK-NOT: dot(
)")
                  .ok())
      << merged;
}

TEST(OptimizationBarrierExpander, BarrierAtTheRoot) {
  OptimizationBarrierExpander pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kBarrierRoot, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("opt-barrier"), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kBarrierRoot, 3));
}

TEST(OptimizationBarrierExpander, BarrierInALoopBody) {
  OptimizationBarrierExpander pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kInLoop, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("opt-barrier"), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kInLoop, 3));
}

TEST(OptimizationBarrierExpander, NothingToDo) {
  OptimizationBarrierExpander pass;
  bool changed = true;
  RunPassAndPrint(pass, R"(
HloModule plain
ENTRY main {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
)",
                  &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
