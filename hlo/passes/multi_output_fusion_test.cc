// Tests of sibling multi-output fusion on modules built in C++, and of producer-consumer
// merging on fused modules written as text.
#include "hlo/passes/multi_output_fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/fusion_test_util.h"
#include "hlo/passes/instruction_fusion.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"

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

// Producer-consumer merging as the host plan runs it: elementwise loops only.
MultiOutputFusionOptions ProducerConsumer() {
  MultiOutputFusionOptions o;
  o.elementwise_loops_only = true;
  o.producer_consumer = true;
  return o;
}

// Runs the pass on `text`; checks that the result verifies and computes what the module
// computed before (on the evaluator, random inputs), and returns it.
std::unique_ptr<HloModule> MergeAndCompare(std::string_view text, MultiOutputFusionOptions options,
                                           bool* changed) {
  auto before = ParseHloModule(text);
  EXPECT_TRUE(before.ok()) << before.status();
  auto after = ParseHloModule(text);
  auto ran = MultiOutputFusion(options).Run(**after);
  EXPECT_TRUE(ran.ok()) << ran.status();
  *changed = ran.ok() && *ran;
  absl::Status verified = VerifyModule(**after);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << (*after)->ToString();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<Literal> args;
  for (const HloInstruction* p : (*before)->entry()->parameters()) {
    Literal l(p->shape());
    for (int64_t i = 0; i < l.element_count(); ++i) l.SetFromDouble(i, dist(rng));
    args.push_back(std::move(l));
  }
  HloEvaluator ev;
  auto want = ev.Evaluate(**before, args);
  auto got = ev.Evaluate(**after, args);
  EXPECT_TRUE(want.ok() && got.ok()) << (*after)->ToString();
  if (want.ok() && got.ok()) {
    EXPECT_EQ(want->IsTuple(), got->IsTuple());
    const int64_t n = want->IsTuple() ? static_cast<int64_t>(want->elements().size()) : 1;
    for (int64_t k = 0; k < n; ++k) {
      const Literal& w = want->IsTuple() ? want->element(k) : *want;
      const Literal& g = got->IsTuple() ? got->element(k) : *got;
      for (int64_t i = 0; i < w.element_count(); ++i) {
        if (std::isnan(w.GetAsDouble(i)) && std::isnan(g.GetAsDouble(i))) continue;
        EXPECT_EQ(w.GetAsDouble(i), g.GetAsDouble(i)) << "output " << k << " element " << i;
      }
    }
  }
  return std::move(*after);
}

// t = tanh(x*y) is read by c = t + x and by a reverse of it; c by the root. The reverse
// reads t at other indexes, so t stays in memory, but it is computed in c's kernel: one
// fusion with outputs t and c, and the reverse's fusion reading t from it.
std::string ProducerKeptForAnotherReader(int64_t n) {
  std::string text = R"(
HloModule pc
%f_t (a: f32[N], b: f32[N]) -> f32[N] {
  %a = f32[N] parameter(0)
  %b = f32[N] parameter(1)
  %m = f32[N] multiply(%a, %b)
  ROOT %t = f32[N] tanh(%m)
}
%f_c (t: f32[N], x: f32[N]) -> f32[N] {
  %t = f32[N] parameter(0)
  %x = f32[N] parameter(1)
  ROOT %c = f32[N] add(%t, %x)
}
%f_r (t: f32[N], c: f32[N]) -> f32[N] {
  %t = f32[N] parameter(0)
  %c = f32[N] parameter(1)
  %r = f32[N] reverse(%t), dimensions={0}
  ROOT %s = f32[N] subtract(%r, %c)
}
ENTRY %main (x: f32[N], y: f32[N]) -> (f32[N], f32[N]) {
  %x = f32[N] parameter(0)
  %y = f32[N] parameter(1)
  %ft = f32[N] fusion(%x, %y), kind=kLoop, calls=%f_t
  %fc = f32[N] fusion(%ft, %x), kind=kLoop, calls=%f_c
  %fr = f32[N] fusion(%ft, %fc), kind=kLoop, calls=%f_r
  ROOT %out = (f32[N], f32[N]) tuple(%fc, %fr)
}
)";
  for (size_t at; (at = text.find("[N]")) != std::string::npos;)
    text.replace(at, 3, "[" + std::to_string(n) + "]");
  return text;
}

TEST(ProducerConsumerFusion, ProducerKeptForAnotherReaderIsComputedInTheConsumer) {
  const std::string text = ProducerKeptForAnotherReader(4096);
  bool changed = false;
  auto m = MergeAndCompare(text, ProducerConsumer(), &changed);
  EXPECT_TRUE(changed);
  auto c = CountFusions(*m->entry());
  EXPECT_EQ(c.fusions, 2) << m->ToString();
  EXPECT_EQ(c.multi_output, 1) << m->ToString();
  // The reverse's fusion reads both of its operands from the merged one.
  const HloInstruction* fr = m->entry()->root()->operand(1);
  ASSERT_EQ(fr->opcode(), HloOpcode::kFusion);
  ASSERT_EQ(fr->operand_count(), 2);
  for (const HloInstruction* o : fr->operands()) {
    ASSERT_EQ(o->opcode(), HloOpcode::kGetTupleElement) << m->ToString();
    EXPECT_EQ(o->operand(0), m->entry()->root()->operand(0)->operand(0));
  }
  // Sibling merging alone leaves the three kernels.
  MultiOutputFusionOptions siblings = ProducerConsumer();
  siblings.producer_consumer = false;
  auto plain = MergeAndCompare(text, siblings, &changed);
  EXPECT_EQ(CountFusions(*plain->entry()).fusions, 3);
  // Below min_merged_elements, kernels stay apart: a kernel's outputs then cost more to
  // hand over than what merging saves.
  auto small = MergeAndCompare(ProducerKeptForAnotherReader(256), ProducerConsumer(), &changed);
  EXPECT_FALSE(changed) << small->ToString();
}

// A chain of `steps` fusions, each of two operations (the second `op`) on the two values
// before it: every value is read by the next step and by the one after.
std::string SharedValueChain(int steps, const std::string& op) {
  std::string text = "HloModule chain\n";
  const std::string s = "f32[64,64]";
  for (int i = 0; i < steps; ++i)
    text += absl::StrCat("%f", i, " (a: ", s, ", b: ", s, ") -> ", s, " {\n  %a = ", s,
                         " parameter(0)\n  %b = ", s, " parameter(1)\n  %s = ", s,
                         " add(%a, %b)\n  ROOT %t = ", s, " ", op, "\n}\n");
  text += absl::StrCat("ENTRY %main (x: ", s, ", y: ", s, ") -> ", s, " {\n  %x = ", s,
                       " parameter(0)\n  %y = ", s, " parameter(1)\n");
  std::vector<std::string> v = {"x", "y"};
  for (int i = 0; i < steps; ++i) {
    std::string name = absl::StrCat("v", i);
    text += absl::StrCat("  %", name, " = ", s, " fusion(%", v[v.size() - 1], ", %",
                         v[v.size() - 2], "), kind=kLoop, calls=%f", i, "\n");
    v.push_back(name);
  }
  return text + absl::StrCat("  ROOT %out = ", s, " negate(%", v.back(), ")\n}\n");
}

// Each step's kernel computed its value into memory for the next two. Merged, the chain is
// one kernel and the intermediate values stay inside it.
TEST(ProducerConsumerFusion, ChainOfSharedValuesBecomesOneKernel) {
  const std::string text = SharedValueChain(12, "maximum(%s, %b)");
  bool changed = false;
  auto m = MergeAndCompare(text, ProducerConsumer(), &changed);
  EXPECT_TRUE(changed);
  auto c = CountFusions(*m->entry());
  EXPECT_EQ(c.fusions, 1) << m->ToString();
  EXPECT_EQ(c.multi_output, 0) << m->ToString();
  // A limit on the merged size splits it: at most 8 operations a kernel (4 steps).
  MultiOutputFusionOptions small = ProducerConsumer();
  small.max_merged_operations = 8;
  auto split = MergeAndCompare(text, small, &changed);
  EXPECT_EQ(CountFusions(*split->entry()).fusions, 3) << split->ToString();
}

// Costly operations one after the other in one loop body run at their latency, not their
// throughput: a merged kernel holds at most max_merged_costly_depth (4) of them on a path.
TEST(ProducerConsumerFusion, CostlyChainsAreMergedFourDeep) {
  bool changed = false;
  auto m = MergeAndCompare(SharedValueChain(12, "tanh(%s)"), ProducerConsumer(), &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(CountFusions(*m->entry()).fusions, 3) << m->ToString();
}

// The consumer reads the producer through a broadcast (another index), or another reader of
// the producer comes before the consumer: nothing merges.
TEST(ProducerConsumerFusion, BroadcastReadsAndEarlierReadersDoNotMerge) {
  constexpr std::string_view kBroadcast = R"(
HloModule pc
%f_t (a: f32[64,64]) -> f32[64,64] {
  %a = f32[64,64] parameter(0)
  ROOT %t = f32[64,64] exponential(%a)
}
%f_c (t: f32[64,64], x: f32[64,64]) -> f32[64,64] {
  %t = f32[64,64] parameter(0)
  %x = f32[64,64] parameter(1)
  %tt = f32[64,64] broadcast(%t), dimensions={1,0}
  ROOT %c = f32[64,64] add(%tt, %x)
}
ENTRY %main (x: f32[64,64]) -> (f32[64,64], f32[64,64]) {
  %x = f32[64,64] parameter(0)
  %ft = f32[64,64] fusion(%x), kind=kLoop, calls=%f_t
  %fc = f32[64,64] fusion(%ft, %x), kind=kLoop, calls=%f_c
  ROOT %out = (f32[64,64], f32[64,64]) tuple(%ft, %fc)
}
)";
  bool changed = true;
  auto m = MergeAndCompare(kBroadcast, ProducerConsumer(), &changed);
  EXPECT_FALSE(changed) << m->ToString();
  // d reads t and comes before c, which reads d: merged at c's place, t would come after d.
  constexpr std::string_view kEarlierReader = R"(
HloModule pc
%f_t (a: f32[4096]) -> f32[4096] {
  %a = f32[4096] parameter(0)
  ROOT %t = f32[4096] exponential(%a)
}
%f_d (t: f32[4096]) -> f32[4096] {
  %t = f32[4096] parameter(0)
  ROOT %d = f32[4096] reverse(%t), dimensions={0}
}
%f_c (t: f32[4096], d: f32[4096]) -> f32[4096] {
  %t = f32[4096] parameter(0)
  %d = f32[4096] parameter(1)
  ROOT %c = f32[4096] add(%t, %d)
}
ENTRY %main (x: f32[4096]) -> f32[4096] {
  %x = f32[4096] parameter(0)
  %ft = f32[4096] fusion(%x), kind=kLoop, calls=%f_t
  %fd = f32[4096] fusion(%ft), kind=kLoop, calls=%f_d
  ROOT %fc = f32[4096] fusion(%ft, %fd), kind=kLoop, calls=%f_c
}
)";
  m = MergeAndCompare(kEarlierReader, ProducerConsumer(), &changed);
  EXPECT_FALSE(changed) << m->ToString();
}

}  // namespace
}  // namespace kiln
