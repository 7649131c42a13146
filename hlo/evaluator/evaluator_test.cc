// Tests of the evaluator driver: argument checks, tuples, call/fusion, while, conditional,
// pass-through ops and error messages, written as HLO text.
#include "hlo/evaluator/evaluator.h"

#include <gtest/gtest.h>

#include "hlo/evaluator/test_builder.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using testing_util::As;
using testing_util::Lit;
using P = PrimitiveType;

absl::StatusOr<Literal> RunText(const std::string& text, std::vector<Literal> args) {
  auto module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  HloEvaluator evaluator;
  return evaluator.Evaluate(**module, args);
}

Literal MustRunText(const std::string& text, std::vector<Literal> args) {
  auto r = RunText(text, std::move(args));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : Literal();
}

std::vector<Literal> NoArgs() { return {}; }
template <typename... L>
std::vector<Literal> Args(L... ls) {
  std::vector<Literal> v;
  (v.push_back(std::move(ls)), ...);
  return v;
}

constexpr char kAddModule[] = R"(
HloModule add
ENTRY %main (a: f32[3], b: f32[3]) -> f32[3] {
  %a = f32[3] parameter(0)
  %b = f32[3] parameter(1)
  %sum = f32[3] add(%a, %b)
  ROOT %out = f32[3] multiply(%sum, %sum)
}
)";

TEST(EvaluatorTest, EvaluatesEntryWithArguments) {
  Literal r = MustRunText(
      kAddModule, Args(Lit<float>(P::F32, {3}, {1, 2, 3}), Lit<float>(P::F32, {3}, {1, 0, -4})));
  EXPECT_EQ(As<float>(r), (std::vector<float>{4, 4, 1}));
}

TEST(EvaluatorTest, RejectsWrongArgumentCountAndShape) {
  auto few = RunText(kAddModule, Args(Lit<float>(P::F32, {3}, {1, 2, 3})));
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("takes 2 arguments, got 1"), std::string::npos)
      << few.status();
  auto bad = RunText(kAddModule,
                     Args(Lit<float>(P::F32, {3}, {1, 2, 3}), Lit<float>(P::F32, {2}, {1, 2})));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("argument 1 has shape f32[2] but parameter 1 (%b)"),
            std::string::npos)
      << bad.status();
}

TEST(EvaluatorTest, TuplesCallAndFusion) {
  constexpr char kText[] = R"(
HloModule m
%twice (x: s32[2]) -> s32[2] {
  %x = s32[2] parameter(0)
  ROOT %d = s32[2] add(%x, %x)
}
%fused (p: s32[2], q: s32[2]) -> s32[2] {
  %p = s32[2] parameter(0)
  %q = s32[2] parameter(1)
  ROOT %s = s32[2] subtract(%p, %q)
}
ENTRY %main (a: s32[2]) -> (s32[2], s32[2]) {
  %a = s32[2] parameter(0)
  %c = s32[2] call(%a), to_apply=%twice
  %one = s32[2] constant({1, 1})
  %f = s32[2] fusion(%c, %one), kind=kLoop, calls=%fused
  %t = (s32[2], s32[2]) tuple(%c, %f)
  %g = s32[2] get-tuple-element(%t), index=1
  ROOT %r = (s32[2], s32[2]) tuple(%g, %a)
}
)";
  Literal r = MustRunText(kText, Args(Lit<int32_t>(P::S32, {2}, {3, 5})));
  ASSERT_TRUE(r.IsTuple());
  EXPECT_EQ(As<int32_t>(r.element(0)), (std::vector<int32_t>{5, 9}));
  EXPECT_EQ(As<int32_t>(r.element(1)), (std::vector<int32_t>{3, 5}));
}

TEST(EvaluatorTest, SharedValuesAreNotMovedAwayFromOtherUsers) {
  // %t is read by two get-tuple-elements of the same index and %n appears twice in one
  // tuple: values handed on by move must never be taken from a reader still to come.
  constexpr char kText[] = R"(
HloModule share
ENTRY %main (a: s32[2]) -> (s32[2], s32[2], s32[2], s32[2]) {
  %a = s32[2] parameter(0)
  %n = s32[2] negate(%a)
  %t = (s32[2], s32[2]) tuple(%n, %a)
  %g0 = s32[2] get-tuple-element(%t), index=0
  %g1 = s32[2] get-tuple-element(%t), index=0
  %s = s32[2] add(%g0, %g1)
  %u = (s32[2], s32[2]) tuple(%s, %s)
  %h = s32[2] get-tuple-element(%u), index=1
  ROOT %r = (s32[2], s32[2], s32[2], s32[2]) tuple(%h, %g0, %n, %n)
}
)";
  Literal r = MustRunText(kText, Args(Lit<int32_t>(P::S32, {2}, {1, -3})));
  ASSERT_TRUE(r.IsTuple());
  EXPECT_EQ(As<int32_t>(r.element(0)), (std::vector<int32_t>{-2, 6}));
  EXPECT_EQ(As<int32_t>(r.element(1)), (std::vector<int32_t>{-1, 3}));
  EXPECT_EQ(As<int32_t>(r.element(2)), (std::vector<int32_t>{-1, 3}));
  EXPECT_EQ(As<int32_t>(r.element(3)), (std::vector<int32_t>{-1, 3}));
}

TEST(EvaluatorTest, WhileLoopRunsUntilConditionIsFalse) {
  // Sums 2 ten times: (i, acc) from (0, 0) to (10, 20).
  constexpr char kText[] = R"(
HloModule loop
%cond (s: (s32[], f32[])) -> pred[] {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[])) -> (s32[], f32[]) {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %acc = f32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %two = f32[] constant(2)
  %i1 = s32[] add(%i, %one)
  %acc1 = f32[] add(%acc, %two)
  ROOT %t = (s32[], f32[]) tuple(%i1, %acc1)
}
ENTRY %main () -> (s32[], f32[]) {
  %z = s32[] constant(0)
  %zf = f32[] constant(0)
  %init = (s32[], f32[]) tuple(%z, %zf)
  ROOT %w = (s32[], f32[]) while(%init), condition=%cond, body=%body
}
)";
  Literal r = MustRunText(kText, NoArgs());
  ASSERT_TRUE(r.IsTuple());
  EXPECT_EQ(As<int32_t>(r.element(0))[0], 10);
  EXPECT_EQ(As<float>(r.element(1))[0], 20.0f);
}

constexpr char kConditional[] = R"(
HloModule cond
%b0 (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %r = s32[] add(%x, %x)
}
%b1 (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %r = s32[] negate(%x)
}
%b2 (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %r = s32[] constant(100)
}
ENTRY %main (i: s32[], v: s32[]) -> s32[] {
  %i = s32[] parameter(0)
  %v = s32[] parameter(1)
  ROOT %c = s32[] conditional(%i, %v, %v, %v), branch_computations={%b0, %b1, %b2}
}
)";

TEST(EvaluatorTest, ConditionalWithIndexRunsLastBranchWhenOutOfRange) {
  auto run = [](int32_t index) {
    Literal r = MustRunText(kConditional,
                            Args(Lit<int32_t>(P::S32, {}, {index}), Lit<int32_t>(P::S32, {}, {7})));
    return As<int32_t>(r)[0];
  };
  EXPECT_EQ(run(0), 14);
  EXPECT_EQ(run(1), -7);
  EXPECT_EQ(run(2), 100);
  EXPECT_EQ(run(3), 100);   // out of range -> last branch
  EXPECT_EQ(run(-1), 100);  // negative too
}

TEST(EvaluatorTest, ConditionalWithPredicate) {
  constexpr char kText[] = R"(
HloModule condp
%t (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %r = f32[] exponential(%x)
}
%f (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %r = f32[] negate(%x)
}
ENTRY %main (p: pred[], v: f32[]) -> f32[] {
  %p = pred[] parameter(0)
  %v = f32[] parameter(1)
  ROOT %c = f32[] conditional(%p, %v, %v), true_computation=%t, false_computation=%f
}
)";
  EXPECT_EQ(As<float>(MustRunText(
                kText, Args(Lit<bool>(P::PRED, {}, {true}), Lit<float>(P::F32, {}, {0}))))[0],
            1.0f);
  EXPECT_EQ(As<float>(MustRunText(
                kText, Args(Lit<bool>(P::PRED, {}, {false}), Lit<float>(P::F32, {}, {3}))))[0],
            -3.0f);
}

TEST(EvaluatorTest, PassThroughOpsAndTokens) {
  constexpr char kText[] = R"(
HloModule pt
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  %tok = token[] after-all()
  %dep = f32[2] add-dependency(%a, %tok)
  %t = (f32[2]) tuple(%dep)
  %b = (f32[2]) opt-barrier(%t)
  ROOT %g = f32[2] get-tuple-element(%b), index=0
}
)";
  EXPECT_EQ(As<float>(MustRunText(kText, Args(Lit<float>(P::F32, {2}, {1, 2})))),
            (std::vector<float>{1, 2}));
}

TEST(EvaluatorTest, TupleCopyAndReplicaId) {
  constexpr char kText[] = R"(
HloModule tc
ENTRY %main (a: f32[2]) -> (f32[2], u32[]) {
  %a = f32[2] parameter(0)
  %r = u32[] replica-id()
  %t = (f32[2], u32[]) tuple(%a, %r)
  ROOT %c = (f32[2], u32[]) copy(%t)
}
)";
  Literal r = MustRunText(kText, Args(Lit<float>(P::F32, {2}, {1, 2})));
  ASSERT_TRUE(r.IsTuple());
  EXPECT_EQ(As<float>(r.element(0)), (std::vector<float>{1, 2}));
  EXPECT_EQ(As<uint32_t>(r.element(1))[0], 0u);  // a single device is replica 0
}

TEST(EvaluatorTest, CustomCallErrorNamesTargetAndInstruction) {
  constexpr char kText[] = R"(
HloModule cc
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  ROOT %cc.1 = f32[2] custom-call(%a), custom_call_target="SPMDFullToShardShape"
}
)";
  auto r = RunText(kText, Args(Lit<float>(P::F32, {2}, {1, 2})));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(),
            "custom-call target 'SPMDFullToShardShape' is not supported by the evaluator "
            "(instruction %cc.1)");
}

TEST(EvaluatorTest, AnnotationCustomCallsPassTheirOperandThrough) {
  constexpr char kText[] = R"(
HloModule ann
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  %s = f32[2] custom-call(%a), custom_call_target="Sharding", sharding={devices=[2]<=[2]}
  ROOT %t = f32[2] custom-call(%s), custom_call_target="AwsNeuronTransferWithStaticRing"
}
)";
  EXPECT_EQ(As<float>(MustRunText(kText, Args(Lit<float>(P::F32, {2}, {3, -1})))),
            (std::vector<float>{3, -1}));
}

TEST(EvaluatorTest, CollectiveAloneIsIdentityAndNamingOtherDevicesIsAnError) {
  constexpr char kText[] = R"(
HloModule ar
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  ROOT %ar.7 = f32[2] all-reduce(%a), replica_groups=GROUPS, to_apply=%sum
}
)";
  std::string alone = kText, pair = kText;
  alone.replace(alone.find("GROUPS"), 6, "{}");
  pair.replace(pair.find("GROUPS"), 6, "{{0,1}}");
  // One device without a communicator: the sum over a group of one is the operand.
  EXPECT_EQ(As<float>(MustRunText(alone, Args(Lit<float>(P::F32, {2}, {1, 2})))),
            (std::vector<float>{1, 2}));
  auto r = RunText(pair, Args(Lit<float>(P::F32, {2}, {1, 2})));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("name replica 1"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("%ar.7"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("--replicas"), std::string::npos) << r.status();
}

TEST(EvaluatorTest, ErrorsInsideLoopBodiesNameTheInnerInstruction) {
  constexpr char kText[] = R"(
HloModule e
%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  ROOT %t = pred[] constant(true)
}
%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  ROOT %bad.3 = s32[] custom-call(%s), custom_call_target="nope"
}
ENTRY %main () -> s32[] {
  %z = s32[] constant(0)
  ROOT %w = s32[] while(%z), condition=%cond, body=%body
}
)";
  auto r = RunText(kText, NoArgs());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("%bad.3"), std::string::npos) << r.status();
}

TEST(EvaluatorTest, SelfCallingComputationHitsDepthLimit) {
  // The parser will not build a cycle, so make one in code: %f calls itself.
  HloModule module("rec");
  testing_util::CompBuilder fb("f");
  HloInstruction* x = fb.Param(0, Shape(P::S32, {}));
  HloInstruction* call = fb.Op(HloOpcode::kCall, Shape(P::S32, {}), {x});
  HloComputation* f = fb.Finish(module, call);
  call->AppendCalledComputation(f);
  testing_util::CompBuilder eb("main");
  HloInstruction* c = eb.Const(Lit<int32_t>(P::S32, {}, {1}));
  HloInstruction* root = eb.Op(HloOpcode::kCall, Shape(P::S32, {}), {c}, {f});
  eb.Finish(module, root, /*is_entry=*/true);
  HloEvaluator evaluator;
  auto r = evaluator.Evaluate(module, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos) << r.status();
}

TEST(EvaluatorTest, DeadInstructionsAreNotEvaluated) {
  constexpr char kText[] = R"(
HloModule dead
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  %unused = f32[2] custom-call(%a), custom_call_target="never"
  ROOT %n = f32[2] negate(%a)
}
)";
  EXPECT_EQ(As<float>(MustRunText(kText, Args(Lit<float>(P::F32, {2}, {1, -2})))),
            (std::vector<float>{-1, 2}));
}

TEST(EvaluatorTest, HugeResultIsAnErrorNotACrash) {
  // 2^50 bytes: no machine can allocate it, so the evaluator must report it.
  constexpr char kText[] = R"(
HloModule huge
ENTRY %main () -> pred[1048576,1048576,1024] {
  %t = pred[] constant(true)
  ROOT %big = pred[1048576,1048576,1024] broadcast(%t), dimensions={}
}
)";
  auto r = RunText(kText, NoArgs());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("%big"), std::string::npos) << r.status();
}

TEST(EvaluatorTest, EvaluateInstructionFoldsConstants) {
  HloModule module("fold");
  testing_util::CompBuilder b("main");
  HloInstruction* c = b.Const(Lit<int32_t>(P::S32, {2}, {3, 4}));
  HloInstruction* bc = b.Op(HloOpcode::kBroadcast, Shape(P::S32, {2, 2}), {c});
  bc->mutable_attrs().dimensions = {1};
  b.Finish(module, bc, true);
  Literal operand = Lit<int32_t>(P::S32, {2}, {3, 4});
  const Literal* ops[] = {&operand};
  HloEvaluator evaluator;
  auto r = evaluator.EvaluateInstruction(*bc, ops);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(As<int32_t>(*r), (std::vector<int32_t>{3, 4, 3, 4}));
}

}  // namespace
}  // namespace kiln
