// Tests of dot merging: independent dots sharing an operand become one dot and slices, with
// values unchanged on the evaluator; dependent, large or mismatched dots stay apart.
#include "hlo/passes/dot_merger.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DotMergerTest, SharedRhsConcatenatesTheLhs) {
  // Three steps' input projections x_t @ w, each read by its own consumer.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x0 = f32[4,3] parameter(0)
  x1 = f32[4,3] parameter(1)
  x2 = f32[2,3] parameter(2)
  w = f32[3,5] parameter(3)
  d0 = f32[4,5] dot(x0, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[4,5] dot(x1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[2,5] dot(x2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n1 = f32[4,5] negate(d1)
  ROOT t = (f32[4,5], f32[4,5], f32[2,5]) tuple(d0, n1, d2)
}
)";
  DotMerger pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: f32[10,3]{1,0} concatenate(f32[4,3]{1,0} %x0, f32[4,3]{1,0} %x1, f32[2,3]{1,0} %x2), dimensions={0}
    CHECK: f32[10,5]{1,0} dot(
    CHECK-SAME: lhs_contracting_dims={1}, rhs_contracting_dims={0}
    CHECK: slice({{.*}}), slice={[0:4], [0:5]}
    CHECK: slice({{.*}}), slice={[4:8], [0:5]}
    CHECK: slice({{.*}}), slice={[8:10], [0:5]}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(DotMergerTest, SharedLhsConcatenatesTheRhsBatched) {
  // q, k and v projections of one batched x: the result's rhs-free dimension is the last.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x = f32[2,4,3] parameter(0)
  wq = f32[2,3,5] parameter(1)
  wk = f32[2,3,5] parameter(2)
  wv = f32[2,3,6] parameter(3)
  q = f32[2,4,5] dot(x, wq), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  k = f32[2,4,5] dot(x, wk), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  v = f32[2,4,6] dot(x, wv), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (f32[2,4,5], f32[2,4,5], f32[2,4,6]) tuple(q, k, v)
}
)";
  DotMerger pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: f32[2,3,16]{2,1,0} concatenate({{.*}}), dimensions={2}
    CHECK: f32[2,4,16]{2,1,0} dot(
    CHECK: slice({{.*}}), slice={[0:2], [0:4], [10:16]}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(DotMergerTest, DependentDotsStayApart) {
  // A recurrence h1 = h0 @ u, h2 = h1 @ u: the second reads the first.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  h0 = f32[4,4] parameter(0)
  u = f32[4,4] parameter(1)
  h1 = f32[4,4] dot(h0, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t1 = f32[4,4] tanh(h1)
  h2 = f32[4,4] dot(t1, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t2 = f32[4,4] tanh(h2)
}
)";
  DotMerger pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_FALSE(changed) << out;
  // Of three dots the two independent ones merge; the one reading them stays.
  constexpr std::string_view kPartly = R"(
HloModule m
ENTRY main {
  a = f32[4,4] parameter(0)
  b = f32[4,4] parameter(1)
  u = f32[4,4] parameter(2)
  da = f32[4,4] dot(a, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  db = f32[4,4] dot(b, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[4,4] add(da, db)
  ROOT dc = f32[4,4] dot(s, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  out = RunPassAndPrint(pass, kPartly, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(CountOf(out, " dot("), 2) << out;  // the merged one and dc
  EXPECT_EQ(CountOf(out, "concatenate("), 1) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kPartly));
}

TEST(DotMergerTest, LargeOrMismatchedDotsStayApart) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x0 = f32[64,64] parameter(0)
  x1 = f32[64,64] parameter(1)
  x2 = f32[64,32] parameter(2)
  w = f32[64,64] parameter(3)
  v = f32[32,64] parameter(4)
  d0 = f32[64,64] dot(x0, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[64,64] dot(x1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[64,64] dot(x2, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[64,64], f32[64,64], f32[64,64]) tuple(d0, d1, d2)
}
)";
  DotMerger small(/*max_multiply_adds=*/64 * 64 * 64 - 1);
  bool changed = true;
  RunPassAndPrint(small, kHlo, &changed);
  EXPECT_FALSE(changed);  // each dot is one multiply-add over the limit
  DotMerger pass;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(CountOf(out, "concatenate("), 1) << out;  // d0 and d1; d2 has its own rhs
  EXPECT_NE(out.find("f32[128,64]{1,0} concatenate(f32[64,64]{1,0} %x0, f32[64,64]{1,0} %x1)"),
            std::string::npos)
      << out;
}

// Dots whose concatenated operand would be a large copy for little work stay apart:
// non-negative matrix factorization's [512,256] x [256,16] pair (2 M multiply-adds, 512 KB
// each to copy); the same operands against a [256,256] rhs (16x the work) merge.
TEST(DotMergerTest, CopiesLargerThanTheirDotsWorkStayApart) {
  constexpr std::string_view kNarrow = R"(
HloModule m
ENTRY main {
  v = f32[512,256] parameter(0)
  wh = f32[512,256] parameter(1)
  ht = f32[256,16] parameter(2)
  d0 = f32[512,16] dot(v, ht), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[512,16] dot(wh, ht), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[512,16], f32[512,16]) tuple(d0, d1)
}
)";
  DotMerger pass(/*max_multiply_adds=*/int64_t{1} << 30);
  bool changed = true;
  RunPassAndPrint(pass, kNarrow, &changed);
  EXPECT_FALSE(changed);
  std::string wide(kNarrow);
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"[256,16]", "[256,256]"}, {"[512,16]", "[512,256]"}})
    for (size_t at = wide.find(from); at != std::string::npos; at = wide.find(from, at))
      wide.replace(at, from.size(), to);
  const std::string out = RunPassAndPrint(pass, wide, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(CountOf(out, "concatenate("), 1) << out;
}

// In a loop body, operands the loop passes through unchanged merge whatever their size: the
// concatenation is computed once, before the loop (a GRU's gates from one weight matrix). A
// weight the loop updates stays apart.
TEST(DotMergerTest, LoopInvariantOperandsMergeInALoopBody) {
  constexpr std::string_view kLoop = R"(
HloModule m
cond {
  p = (s32[], f32[4,512], f32[512,512]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4,512], f32[512,512]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[4,512] get-tuple-element(p), index=1
  w = f32[512,512] get-tuple-element(p), index=2
  wa = f32[512,256] slice(w), slice={[0:512], [0:256]}
  wb = f32[512,256] slice(w), slice={[0:512], [256:512]}
  a = f32[4,256] dot(x, wa), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[4,256] dot(x, wb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[4,256] tanh(a)
  s = f32[4,256] logistic(b)
  y = f32[4,512] concatenate(t, s), dimensions={1}
  ROOT r = (s32[], f32[4,512], f32[512,512]) tuple(next, y, W_NEXT)
}
ENTRY main {
  x = f32[4,512] parameter(0)
  w = f32[512,512] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4,512], f32[512,512]) tuple(zero, x, w)
  ROOT l = (s32[], f32[4,512], f32[512,512]) while(init), condition=cond, body=body
}
)";
  auto with = [&](const std::string& next) {
    std::string text(kLoop);
    text.replace(text.find("W_NEXT"), 6, next);
    return text;
  };
  DotMerger pass;
  bool changed = false;
  const std::string invariant = with("w");
  std::string out = RunPassAndPrint(pass, invariant, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(CountOf(out, "f32[512,512]{1,0} concatenate("), 1) << out;
  EXPECT_TRUE(PassPreservesValues(pass, invariant, /*trials=*/1));
  // The same dots with a weight the loop changes: 512 KB copied a step for 512 K
  // multiply-adds each.
  std::string updated = with("w2");
  updated.insert(updated.find("  ROOT r ="), "  w2 = f32[512,512] negate(w)\n");
  out = RunPassAndPrint(pass, updated, &changed);
  EXPECT_FALSE(changed) << out;
}

}  // namespace
}  // namespace kiln
