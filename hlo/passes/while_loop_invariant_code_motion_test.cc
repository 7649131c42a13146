// Tests of while-loop invariant code motion: the work of a fori_loop body on what it closes
// over leaves the body (a state element more, passed through) with the loop's values kept;
// what only moves data, what depends on the changing state, side effects and shared bodies
// stay.
#include "hlo/passes/while_loop_invariant_code_motion.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// A logistic-regression step as JAX lowers it (closed_call inlined): w -= x.T * 0.1 @ (p - y),
// where x.T * 0.1 depends on the loop-invariant x only.
constexpr char kGradientStep[] = R"(HloModule m
body {
  s = (s32[], f32[4], f32[6,4], f32[6]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  w = f32[4] get-tuple-element(s), index=1
  x = f32[6,4] get-tuple-element(s), index=2
  y = f32[6] get-tuple-element(s), index=3
  xt = f32[4,6] transpose(x), dimensions={1,0}
  lr = f32[] constant(0.1)
  lrb = f32[4,6] broadcast(lr), dimensions={}
  scaled = f32[4,6] multiply(xt, lrb)
  z = f32[6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  p = f32[6] logistic(z)
  d = f32[6] subtract(p, y)
  g = f32[4] dot(scaled, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  w2 = f32[4] subtract(w, g)
  ROOT t = (s32[], f32[4], f32[6,4], f32[6]) tuple(next, w2, x, y)
}
cond {
  s = (s32[], f32[4], f32[6,4], f32[6]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[6,4] parameter(0)
  y = f32[6] parameter(1)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  w = f32[4] broadcast(z), dimensions={}
  init = (s32[], f32[4], f32[6,4], f32[6]) tuple(zero, w, x, y)
  loop = (s32[], f32[4], f32[6,4], f32[6]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(loop), index=1
}
)";

TEST(WhileLoopInvariantCodeMotionTest, HoistsWorkOnPassedThroughState) {
  WhileLoopInvariantCodeMotion pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, kGradientStep, &changed);
  EXPECT_TRUE(changed);
  // The scaled transpose is computed once in the entry and carried as a fifth element.
  EXPECT_NE(out.find(", f32[4,6]{1,0}) while("), std::string::npos) << out;
  EXPECT_NE(out.find("dot(f32[4,6]{1,0} %get-tuple-element"), std::string::npos) << out;
  const size_t entry = out.find("ENTRY");
  ASSERT_NE(entry, std::string::npos);
  EXPECT_NE(out.find("transpose(", entry), std::string::npos) << out;
  EXPECT_EQ(out.find("transpose("), out.find("transpose(", entry)) << "still in the body:\n" << out;
  EXPECT_TRUE(PassPreservesValues(pass, kGradientStep));
  // Run again: nothing left to hoist.
  std::unique_ptr<HloModule> m = testing::Parse(kGradientStep);
  ASSERT_TRUE(m);
  ASSERT_TRUE(pass.Run(*m).ok());
  absl::StatusOr<bool> again = pass.Run(*m);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

// Inverse iteration as JAX lowers it: the LU of a matrix the loop does not change (a tuple-
// shaped LAPACK custom call without effects) leaves the body; the loop carries the two
// elements it reads, not the tuple. One marked as having effects stays.
constexpr char kInvariantLu[] = R"(HloModule m
body {
  s = (s32[], f32[8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  v = f32[8] get-tuple-element(s), index=1
  a = f32[8,8] get-tuple-element(s), index=2
  lu = (f32[8,8], s32[8], s32[]) custom-call(a), custom_call_target="lapack_sgetrf_ffi"
  f = f32[8,8] get-tuple-element(lu), index=0
  p = s32[8] get-tuple-element(lu), index=1
  pf = f32[8] convert(p)
  d = f32[8] dot(f, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  w = f32[8] add(d, pf)
  ROOT t = (s32[], f32[8], f32[8,8]) tuple(next, w, a)
}
cond {
  s = (s32[], f32[8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  a = f32[8,8] parameter(0)
  v = f32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8], f32[8,8]) tuple(zero, v, a)
  loop = (s32[], f32[8], f32[8,8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(loop), index=1
}
)";

TEST(WhileLoopInvariantCodeMotionTest, HoistsACustomCallAndCarriesItsElements) {
  WhileLoopInvariantCodeMotion pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, kInvariantLu, &changed);
  EXPECT_TRUE(changed);
  const size_t entry = out.find("ENTRY");
  ASSERT_NE(entry, std::string::npos);
  EXPECT_NE(out.find("custom-call(", entry), std::string::npos) << out;
  EXPECT_EQ(out.find("custom-call("), out.find("custom-call(", entry)) << "still in the body:\n"
                                                                       << out;
  // The state gains the factor and the converted pivots, arrays both.
  EXPECT_NE(out.find("(s32[], f32[8]{0}, f32[8,8]{1,0}, f32[8]{0}, f32[8,8]{1,0}) while("),
            std::string::npos)
      << out;

  // Of a - I, the identity made from iotas (invariant sources, as constants are).
  std::string shifted = kInvariantLu;
  const std::string lu = "custom-call(a)";
  shifted.replace(shifted.find(lu), lu.size(), "custom-call(ae)");
  const std::string before_lu = "  lu = ";
  shifted.insert(shifted.find(before_lu),
                 "  r = s32[8,8] iota(), iota_dimension=0\n"
                 "  c = s32[8,8] iota(), iota_dimension=1\n"
                 "  e = pred[8,8] compare(r, c), direction=EQ\n"
                 "  ef = f32[8,8] convert(e)\n"
                 "  ae = f32[8,8] subtract(a, ef)\n");
  const std::string moved = RunPassAndPrint(pass, shifted, &changed);
  EXPECT_TRUE(changed);
  const size_t moved_entry = moved.find("ENTRY");
  ASSERT_NE(moved_entry, std::string::npos);
  EXPECT_EQ(moved.find("custom-call("), moved.find("custom-call(", moved_entry)) << moved;

  std::string effects = kInvariantLu;
  const std::string call = "custom_call_target=\"lapack_sgetrf_ffi\"";
  effects.replace(effects.find(call), call.size(), call + ", custom_call_has_side_effect=true");
  changed = true;
  const std::string kept = RunPassAndPrint(pass, effects, &changed);
  EXPECT_FALSE(changed) << kept;
}

TEST(WhileLoopInvariantCodeMotionTest, LoopUsedAsATupleAndStateFromAParameter) {
  // The initial state is a parameter (no tuple instruction to extend) and the loop's whole
  // value is the entry's root: both keep their old shapes.
  const std::string text = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body2 {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  v = f32[8] get-tuple-element(s), index=1
  acc = f32[8] get-tuple-element(s), index=2
  e = f32[8] exponential(v)
  zero = f32[] constant(0)
  r = f32[] reduce(e, zero), dimensions={0}, to_apply=add
  rb = f32[8] broadcast(r), dimensions={}
  acc2 = f32[8] add(acc, rb)
  ROOT t = (s32[], f32[8], f32[8]) tuple(next, v, acc2)
}
cond {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  init = (s32[], f32[8], f32[8]) parameter(0)
  ROOT loop = (s32[], f32[8], f32[8]) while(init), condition=cond, body=body2
}
)";
  WhileLoopInvariantCodeMotion pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, text, &changed);
  EXPECT_TRUE(changed) << out;
  // The reduce (the sum of exp(v)) is carried; its broadcast stays in the body.
  EXPECT_NE(out.find(", f32[]) while("), std::string::npos) << out;
  EXPECT_NE(out.find("broadcast(f32[] %get-tuple-element"), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, text));
}

TEST(WhileLoopInvariantCodeMotionTest, WhatStays) {
  WhileLoopInvariantCodeMotion pass;
  // Only data movement on the invariant state (a broadcast and a reshape): nothing to gain.
  const std::string movement = R"(HloModule m
body {
  s = (s32[], f32[4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  w = f32[4] get-tuple-element(s), index=1
  b = f32[4,4] broadcast(w), dimensions={1}
  a = f32[4,4] get-tuple-element(s), index=2
  a2 = f32[4,4] add(a, b)
  ROOT t = (s32[], f32[4], f32[4,4]) tuple(next, w, a2)
}
cond {
  s = (s32[], f32[4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  init = (s32[], f32[4], f32[4,4]) parameter(0)
  loop = (s32[], f32[4], f32[4,4]) while(init), condition=cond, body=body
  ROOT r = f32[4,4] get-tuple-element(loop), index=2
}
)";
  bool changed = true;
  RunPassAndPrint(pass, movement, &changed);
  EXPECT_FALSE(changed);
  // Work on the changing state, and a body two loops share.
  std::string shared = kGradientStep;
  shared.replace(shared.find("  ROOT r = f32[4]"), std::string::npos,
                 "  loop2 = (s32[], f32[4], f32[6,4], f32[6]) while(init), condition=cond, "
                 "body=body\n  r1 = f32[4] get-tuple-element(loop), index=1\n  r2 = f32[4] "
                 "get-tuple-element(loop2), index=1\n  ROOT r = f32[4] add(r1, r2)\n}\n");
  changed = true;
  RunPassAndPrint(pass, shared, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
