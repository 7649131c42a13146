// Tests of async-to-sync: wrapped computations and shorthands become the synchronous
// instruction, values equal the same module written synchronously, shared contexts stay.
#include "hlo/passes/async_to_sync.h"

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RandomLiteral;
using testing::RunPassAndPrint;
using testing::SameValues;

// What `async` computes, written without wrappers.
constexpr std::string_view kSync = R"(
HloModule m
wrapped {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT m = f32[4] multiply(a, b)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  d = f32[4] call(p0, p1), to_apply=wrapped
  s = f32[2] slice(p0), slice={[1:3]}
  n = f32[4] negate(d)
  ROOT t = (f32[4], f32[2]) tuple(n, s)
}
)";

constexpr std::string_view kAsync = R"(
HloModule m
wrapped {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT m = f32[4] multiply(a, b)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  start = ((f32[4], f32[4]), f32[4], s32[]) async-start(p0, p1), calls=wrapped
  update = ((f32[4], f32[4]), f32[4], s32[]) async-update(start), calls=wrapped
  d = f32[4] async-done(update), calls=wrapped
  ss = ((f32[4]), f32[2], u32[]) slice-start(p0), slice={[1:3]}
  s = f32[2] slice-done(ss)
  n = f32[4] negate(d)
  ROOT t = (f32[4], f32[2]) tuple(n, s)
}
)";

TEST(AsyncToSyncTest, WrappersBecomeTheWrappedInstruction) {
  AsyncToSync pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kAsync, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("async"), std::string::npos) << out;
  EXPECT_EQ(out.find("-start"), std::string::npos) << out;
  EXPECT_FILECHECK(out, R"(
    CHECK: ENTRY
    CHECK-DAG: %d = f32[4]{0} call(f32[4]{0} %p0, f32[4]{0} %p1), to_apply=%wrapped
    CHECK-DAG: %s = f32[2]{0} slice(f32[4]{0} %p0), slice={[1:3]}
  )");

  // Values equal the module written synchronously.
  std::unique_ptr<HloModule> after = Parse(kAsync);
  ASSERT_TRUE(pass.Run(*after).ok());
  std::unique_ptr<HloModule> sync = Parse(kSync);
  std::mt19937 rng(7);
  std::vector<Literal> args;
  for (const HloInstruction* p : sync->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  absl::StatusOr<Literal> want = evaluator.Evaluate(*sync, args);
  absl::StatusOr<Literal> got = evaluator.Evaluate(*after, args);
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(SameValues(*want, *got));
}

TEST(AsyncToSyncTest, ContextReadElsewhereStaysAsync) {
  constexpr std::string_view kShared = R"(
HloModule m
wrapped {
  a = f32[4] parameter(0)
  ROOT e = f32[4] exponential(a)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  start = ((f32[4]), f32[4], s32[]) async-start(p0), calls=wrapped
  ctx = s32[] get-tuple-element(start), index=2
  d = f32[4] async-done(start), calls=wrapped
  ROOT t = (f32[4], s32[]) tuple(d, ctx)
}
)";
  AsyncToSync pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kShared, &changed);
  EXPECT_FALSE(changed);
  EXPECT_NE(out.find("async-start"), std::string::npos) << out;
}

TEST(AsyncToSyncTest, UpdateThatWaitsOnAnotherInstructionStaysAsync) {
  constexpr std::string_view kOrdered = R"(
HloModule m
wrapped {
  a = f32[4] parameter(0)
  ROOT e = f32[4] exponential(a)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  n = f32[4] negate(p0)
  start = ((f32[4]), f32[4], s32[]) async-start(p0), calls=wrapped
  update = ((f32[4]), f32[4], s32[]) async-update(start), calls=wrapped, control-predecessors={n}
  d = f32[4] async-done(update), calls=wrapped
  ROOT t = (f32[4], f32[4]) tuple(d, n)
}
)";
  AsyncToSync pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kOrdered, &changed);
  EXPECT_FALSE(changed);
  EXPECT_NE(out.find("control-predecessors={%n}"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln
