// while / conditional / call compiled natively (sub-plans driven by the step runner),
// against the HLO evaluator; and a check that no control flow falls back to the evaluator.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "hlo/computation.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

std::shared_ptr<const HloModule> Parse(const std::string& text, const std::string& name) {
  auto parsed = ParseHloModule(text, name);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  return std::shared_ptr<const HloModule>(std::move(*parsed));
}

// Control-flow instructions of every planned computation that run on the evaluator.
std::vector<std::string> ControlFlowOnEvaluator(const Plan& plan) {
  std::vector<std::string> out;
  auto scan = [&](const ComputationPlan& p) {
    for (const auto& [h, d] : p.dispositions) {
      bool control = h->opcode() == HloOpcode::kWhile || h->opcode() == HloOpcode::kConditional ||
                     h->opcode() == HloOpcode::kCall;
      if (control && d != Disposition::kControlFlow) out.push_back(h->name());
    }
  };
  scan(plan);
  for (const ComputationPlan& p : plan.called) scan(p);
  return out;
}

// Compiles `text`, checks that nothing in it runs on the evaluator, and compares runs on
// each argument set with the evaluator.
void CompareRuns(const std::string& text, const std::string& name,
                 const std::vector<std::vector<Literal>>& arg_sets, int evaluator_steps = 0) {
  std::shared_ptr<const HloModule> module = Parse(text, name);
  ASSERT_NE(module, nullptr);
  auto compiler = CpuCompiler::Create();
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << name << ": " << exe.status();
  EXPECT_EQ(EvaluatorStepCount((*exe)->plan()), evaluator_steps) << PlanToString((*exe)->plan());
  EXPECT_EQ(ControlFlowOnEvaluator((*exe)->plan()), std::vector<std::string>());
  EXPECT_FALSE((*exe)->plan().called.empty());
  for (size_t i = 0; i < arg_sets.size(); ++i) {
    HloEvaluator evaluator;
    auto want = evaluator.Evaluate(*module, arg_sets[i]);
    ASSERT_TRUE(want.ok()) << name << ": " << want.status();
    auto got = (*exe)->Run(arg_sets[i]);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    ExpectClose(*got, *want, name + " args " + std::to_string(i), "jit", 2e-4);
  }
}

std::vector<std::vector<Literal>> RandomArgs(const std::string& text, int sets) {
  std::shared_ptr<const HloModule> module = Parse(text, "args");
  std::mt19937 rng(77);
  std::vector<std::vector<Literal>> out(sets);
  for (auto& args : out)
    for (const HloInstruction* p : module->entry()->parameters())
      args.push_back(RandomLiteral(p->shape(), rng));
  return out;
}

constexpr const char* kAdd = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

// x <- 1.5 * x + 1, n times (n from a parameter, clamped to [0, 6]).
constexpr const char* kCounterLoop = R"(HloModule counter
%cond (s: (s32[], s32[], f32[16])) -> pred[] {
  %s = (s32[], s32[], f32[16]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], s32[], f32[16])) -> (s32[], s32[], f32[16]) {
  %s = (s32[], s32[], f32[16]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  %x = f32[16]{0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %k = f32[] constant(1.5)
  %kb = f32[16]{0} broadcast(%k), dimensions={}
  %c = f32[] constant(1)
  %cb = f32[16]{0} broadcast(%c), dimensions={}
  %m = f32[16]{0} multiply(%x, %kb)
  %x1 = f32[16]{0} add(%m, %cb)
  ROOT %t = (s32[], s32[], f32[16]{0}) tuple(%i1, %n, %x1)
}
ENTRY %main (x: f32[16], n: s32[]) -> (f32[16], s32[]) {
  %x = f32[16]{0} parameter(0)
  %n = s32[] parameter(1)
  %lo = s32[] constant(0)
  %hi = s32[] constant(6)
  %nc = s32[] clamp(%lo, %n, %hi)
  %init = (s32[], s32[], f32[16]{0}) tuple(%lo, %nc, %x)
  %w = (s32[], s32[], f32[16]{0}) while(%init), condition=%cond, body=%body
  %r = f32[16]{0} get-tuple-element(%w), index=2
  %i = s32[] get-tuple-element(%w), index=0
  ROOT %o = (f32[16]{0}, s32[]) tuple(%r, %i)
})";

TEST(CpuLlvmControlFlow, CounterLoop) {
  std::vector<std::vector<Literal>> sets;
  std::mt19937 rng(5);
  for (int n : {0, 1, 4, 9}) {
    std::vector<Literal> args;
    args.push_back(RandomLiteral(Shape(PrimitiveType::F32, {16}), rng));
    args.push_back(Literal::Scalar<int32_t>(PrimitiveType::S32, n));
    sets.push_back(std::move(args));
  }
  CompareRuns(kCounterLoop, "counter", sets);
}

// Each iteration adds the row sums of x*x to acc and scales x; the loop-invariant w is
// passed through untouched.
const std::string kReductionLoop = std::string("HloModule reduction_loop\n") + kAdd + R"(
%cond (s: (s32[], f32[8,32], f32[8], f32[8,32])) -> pred[] {
  %s = (s32[], f32[8,32]{1,0}, f32[8]{0}, f32[8,32]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8,32], f32[8], f32[8,32])) -> (s32[], f32[8,32], f32[8], f32[8,32]) {
  %s = (s32[], f32[8,32]{1,0}, f32[8]{0}, f32[8,32]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8,32]{1,0} get-tuple-element(%s), index=1
  %acc = f32[8]{0} get-tuple-element(%s), index=2
  %w = f32[8,32]{1,0} get-tuple-element(%s), index=3
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %sq = f32[8,32]{1,0} multiply(%x, %x)
  %z = f32[] constant(0)
  %rs = f32[8]{0} reduce(%sq, %z), dimensions={1}, to_apply=%add
  %acc1 = f32[8]{0} add(%acc, %rs)
  %x1 = f32[8,32]{1,0} multiply(%x, %w)
  ROOT %t = (s32[], f32[8,32]{1,0}, f32[8]{0}, f32[8,32]{1,0}) tuple(%i1, %x1, %acc1, %w)
}
ENTRY %main (x: f32[8,32], w: f32[8,32]) -> f32[8] {
  %x = f32[8,32]{1,0} parameter(0)
  %w = f32[8,32]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %z = f32[] constant(0)
  %acc = f32[8]{0} broadcast(%z), dimensions={}
  %init = (s32[], f32[8,32]{1,0}, f32[8]{0}, f32[8,32]{1,0}) tuple(%zero, %x, %acc, %w)
  %loop = (s32[], f32[8,32]{1,0}, f32[8]{0}, f32[8,32]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[8]{0} get-tuple-element(%loop), index=2
})";

TEST(CpuLlvmControlFlow, LoopWithReductionInBody) {
  CompareRuns(kReductionLoop, "reduction_loop", RandomArgs(kReductionLoop, 2));
}

// An outer loop of 3 iterations runs an inner loop of 4 that adds exp(-|x|) to an
// accumulator; the inner counter restarts each outer iteration.
constexpr const char* kNestedLoops = R"(HloModule nested
%icond (s: (s32[], f32[4,8], f32[4,8])) -> pred[] {
  %s = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %m = s32[] constant(4)
  ROOT %lt = pred[] compare(%j, %m), direction=LT
}
%ibody (s: (s32[], f32[4,8], f32[4,8])) -> (s32[], f32[4,8], f32[4,8]) {
  %s = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %acc = f32[4,8]{1,0} get-tuple-element(%s), index=1
  %x = f32[4,8]{1,0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %j1 = s32[] add(%j, %one)
  %a = f32[4,8]{1,0} abs(%x)
  %na = f32[4,8]{1,0} negate(%a)
  %e = f32[4,8]{1,0} exponential(%na)
  %acc1 = f32[4,8]{1,0} add(%acc, %e)
  ROOT %t = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) tuple(%j1, %acc1, %x)
}
%ocond (s: (s32[], f32[4,8], f32[4,8])) -> pred[] {
  %s = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%obody (s: (s32[], f32[4,8], f32[4,8])) -> (s32[], f32[4,8], f32[4,8]) {
  %s = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %acc = f32[4,8]{1,0} get-tuple-element(%s), index=1
  %x = f32[4,8]{1,0} get-tuple-element(%s), index=2
  %zero = s32[] constant(0)
  %init = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) tuple(%zero, %acc, %x)
  %inner = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) while(%init), condition=%icond, body=%ibody
  %acc1 = f32[4,8]{1,0} get-tuple-element(%inner), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %h = f32[] constant(0.5)
  %hb = f32[4,8]{1,0} broadcast(%h), dimensions={}
  %x1 = f32[4,8]{1,0} multiply(%x, %hb)
  ROOT %t = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) tuple(%i1, %acc1, %x1)
}
ENTRY %main (x: f32[4,8]) -> (s32[], f32[4,8]) {
  %x = f32[4,8]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %z = f32[] constant(0)
  %acc = f32[4,8]{1,0} broadcast(%z), dimensions={}
  %init = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) tuple(%zero, %acc, %x)
  %w = (s32[], f32[4,8]{1,0}, f32[4,8]{1,0}) while(%init), condition=%ocond, body=%obody
  %i = s32[] get-tuple-element(%w), index=0
  %r = f32[4,8]{1,0} get-tuple-element(%w), index=1
  ROOT %o = (s32[], f32[4,8]{1,0}) tuple(%i, %r)
})";

TEST(CpuLlvmControlFlow, NestedWhile) {
  CompareRuns(kNestedLoops, "nested", RandomArgs(kNestedLoops, 2));
}

// pred-selected: true runs the first branch (exp of x), false the second (row sums).
const std::string kPredConditional = std::string("HloModule pred_cond\n") + kAdd + R"(
%on_true (a: f32[4,6]) -> f32[4] {
  %a = f32[4,6]{1,0} parameter(0)
  %e = f32[4,6]{1,0} exponential(%a)
  %z = f32[] constant(0)
  ROOT %m = f32[4]{0} reduce(%e, %z), dimensions={1}, to_apply=%add
}
%on_false (b: (f32[4], f32[4])) -> f32[4] {
  %b = (f32[4]{0}, f32[4]{0}) parameter(0)
  %u = f32[4]{0} get-tuple-element(%b), index=0
  %v = f32[4]{0} get-tuple-element(%b), index=1
  ROOT %d = f32[4]{0} subtract(%u, %v)
}
ENTRY %main (p: pred[], x: f32[4,6], u: f32[4], v: f32[4]) -> f32[4] {
  %p = pred[] parameter(0)
  %x = f32[4,6]{1,0} parameter(1)
  %u = f32[4]{0} parameter(2)
  %v = f32[4]{0} parameter(3)
  %uv = (f32[4]{0}, f32[4]{0}) tuple(%u, %v)
  ROOT %c = f32[4]{0} conditional(%p, %x, %uv), true_computation=%on_true, false_computation=%on_false
})";

TEST(CpuLlvmControlFlow, PredConditional) {
  std::vector<std::vector<Literal>> sets = RandomArgs(kPredConditional, 2);
  sets[0][0] = Literal::Scalar<bool>(PrimitiveType::PRED, true);
  sets[1][0] = Literal::Scalar<bool>(PrimitiveType::PRED, false);
  CompareRuns(kPredConditional, "pred_cond", sets);
}

// s32-selected with three branches; out-of-range indices run the last branch. Arrays of 100
// (above ConditionalToSelect::kMaxElements), so it stays a conditional the runner drives.
constexpr const char* kIndexedConditional = R"(HloModule indexed_cond
%b0 (a: f32[100]) -> f32[100] {
  %a = f32[100]{0} parameter(0)
  ROOT %n = f32[100]{0} negate(%a)
}
%b1 (a: f32[100]) -> f32[100] {
  %a = f32[100]{0} parameter(0)
  ROOT %s = f32[100]{0} sine(%a)
}
%b2 (a: f32[100]) -> f32[100] {
  %a = f32[100]{0} parameter(0)
  ROOT %m = f32[100]{0} multiply(%a, %a)
}
ENTRY %main (i: s32[], x: f32[100]) -> f32[100] {
  %i = s32[] parameter(0)
  %x = f32[100]{0} parameter(1)
  ROOT %c = f32[100]{0} conditional(%i, %x, %x, %x), branch_computations={%b0, %b1, %b2}
})";

TEST(CpuLlvmControlFlow, IndexedConditional) {
  std::vector<std::vector<Literal>> sets = RandomArgs(kIndexedConditional, 5);
  int selectors[] = {0, 1, 2, 7, -1};
  for (int k = 0; k < 5; ++k)
    sets[k][0] = Literal::Scalar<int32_t>(PrimitiveType::S32, selectors[k]);
  CompareRuns(kIndexedConditional, "indexed_cond", sets);
}

// A call whose callee calls another computation and returns a tuple.
constexpr const char* kCall = R"(HloModule calls
%inner (a: f32[5,3]) -> f32[5,3] {
  %a = f32[5,3]{1,0} parameter(0)
  ROOT %t = f32[5,3]{1,0} tanh(%a)
}
%outer (x: f32[5,3], y: f32[3]) -> (f32[5,3], f32[3]) {
  %x = f32[5,3]{1,0} parameter(0)
  %y = f32[3]{0} parameter(1)
  %yb = f32[5,3]{1,0} broadcast(%y), dimensions={1}
  %s = f32[5,3]{1,0} add(%x, %yb)
  %c = f32[5,3]{1,0} call(%s), to_apply=%inner
  ROOT %t = (f32[5,3]{1,0}, f32[3]{0}) tuple(%c, %y)
}
ENTRY %main (x: f32[5,3], y: f32[3]) -> (f32[5,3], f32[3]) {
  %x = f32[5,3]{1,0} parameter(0)
  %y = f32[3]{0} parameter(1)
  %c = (f32[5,3]{1,0}, f32[3]{0}) call(%x, %y), to_apply=%outer
  %r = f32[5,3]{1,0} get-tuple-element(%c), index=0
  %q = f32[3]{0} get-tuple-element(%c), index=1
  %e = f32[5,3]{1,0} exponential(%r)
  ROOT %o = (f32[5,3]{1,0}, f32[3]{0}) tuple(%e, %q)
})";

TEST(CpuLlvmControlFlow, Call) { CompareRuns(kCall, "calls", RandomArgs(kCall, 1)); }

// A loop whose body mixes a conditional (on the counter's parity) with an f16 reduce-precision
// the emitter cannot do (an evaluator step inside the sub-plan).
constexpr const char* kMixedBody = R"(HloModule mixed
%double (v: f32[12]) -> f32[12] {
  %v = f32[12]{0} parameter(0)
  ROOT %d = f32[12]{0} add(%v, %v)
}
%shift (v: f32[12]) -> f32[12] {
  %v = f32[12]{0} parameter(0)
  %c = f32[] constant(-0.75)
  %cb = f32[12]{0} broadcast(%c), dimensions={}
  ROOT %s = f32[12]{0} add(%v, %cb)
}
%cond (s: (s32[], f32[12])) -> pred[] {
  %s = (s32[], f32[12]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[12])) -> (s32[], f32[12]) {
  %s = (s32[], f32[12]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = f32[12]{0} get-tuple-element(%s), index=1
  %two = s32[] constant(2)
  %r = s32[] remainder(%i, %two)
  %z = s32[] constant(0)
  %even = pred[] compare(%r, %z), direction=EQ
  %c = f32[12]{0} conditional(%even, %v, %v), true_computation=%double, false_computation=%shift
  %h = f16[12]{0} convert(%c)
  %hr = f16[12]{0} reduce-precision(%h), exponent_bits=5, mantissa_bits=3
  %rounded = f32[12]{0} convert(%hr)
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[12]{0}) tuple(%i1, %rounded)
}
ENTRY %main (v: f32[12]) -> f32[12] {
  %v = f32[12]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[12]{0}) tuple(%zero, %v)
  %w = (s32[], f32[12]{0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[12]{0} get-tuple-element(%w), index=1
})";

TEST(CpuLlvmControlFlow, LoopBodyWithConditionalAndEvaluatorStep) {
  CompareRuns(kMixedBody, "mixed", RandomArgs(kMixedBody, 2), /*evaluator_steps=*/1);
}

// The repository's modules with while/conditional/call: none of them on the evaluator.
TEST(CpuLlvmControlFlow, RepositoryModulesPlanControlFlowNatively) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::string src = root ? root : ".";
  int found = 0;
  for (const char* dir : {"/examples/hlo", "/tests/numpy_e2e/modules", "/tests/hlo_corpus"}) {
    for (const auto& entry : std::filesystem::directory_iterator(src + dir)) {
      if (entry.path().extension() != ".hlo") continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      if (text.find(" while(") == std::string::npos && text.find(" call(") == std::string::npos &&
          text.find(" conditional(") == std::string::npos)
        continue;
      auto parsed = ParseHloModule(text, entry.path().filename().string());
      if (!parsed.ok()) continue;  // the corpus suite reports parse failures
      ++found;
      Plan plan = MakePlan(**parsed, {});
      EXPECT_EQ(ControlFlowOnEvaluator(plan), std::vector<std::string>())
          << entry.path().filename() << "\n"
          << PlanToString(plan);
    }
  }
  EXPECT_GE(found, 3);  // while_power, the two corpus modules with call
}

}  // namespace
}  // namespace kiln::cpu
