// Kernels that write their output over an input (Step::output_over_sources): which inputs
// the planner offers (those read only at the output's own index), and runs against the
// evaluator where the runner takes a donated argument's buffer for the output (input_output
// alias honoured for an elementwise update such as W - lr * g) and where it must not: an
// argument the caller keeps, a transposed read, a row statistic, a stashed row.
#include <memory>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

struct Compiled {
  std::shared_ptr<const HloModule> module;
  std::shared_ptr<const CpuExecutable> exe;
};

Compiled Compile(const std::string& text) {
  auto parsed = ParseHloModule(text, "output_over_input");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  Compiled c;
  c.module = std::move(*parsed);
  auto compiler = CpuCompiler::Create();
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(c.module);
  EXPECT_TRUE(exe.ok()) << exe.status();
  c.exe = *exe;
  return c;
}

// Names of the entry values the root's kernel may write its output over.
std::set<std::string> Offered(const Plan& plan) {
  std::set<std::string> names;
  for (const Step& s : plan.steps) {
    if (s.instr != plan.computation->root()) continue;
    for (int i : s.output_over_sources) names.insert(s.sources[i]->name());
  }
  return names;
}

// Runs the module with argument `donated` given up by the caller (the others kept) and
// compares with the evaluator; returns whether the result lives in the donated memory.
bool RunDonating(const Compiled& c, int donated) {
  std::mt19937 rng(11);
  std::vector<Literal> args;
  for (const HloInstruction* p : c.module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  std::vector<std::shared_ptr<const Literal>> shared;
  std::vector<std::shared_ptr<const Literal>> kept;  // the caller's references
  const void* where = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    shared.push_back(std::make_shared<const Literal>(args[i]));
    if (static_cast<int>(i) == donated)
      where = shared.back()->untyped_data();
    else
      kept.push_back(shared.back());
  }
  auto got = c.exe->RunShared(std::move(shared));
  EXPECT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "donating argument " + std::to_string(donated), "jit", 1e-5);
  for (size_t i = 0, k = 0; i < args.size(); ++i) {
    if (static_cast<int>(i) == donated) continue;
    EXPECT_TRUE(*kept[k++] == args[i]) << "kept argument " << i << " was overwritten";
  }
  return got->shape().IsArray() && got->untyped_data() == where;
}

// An SGD update: the new weights are written where the donated old ones were; kept weights
// are left alone and the output gets a buffer of its own. Large enough to be partitioned.
constexpr const char* kSgd = R"(
HloModule sgd
ENTRY %main (w: f32[512,256], g: f32[512,256]) -> f32[512,256] {
  %w = f32[512,256] parameter(0)
  %g = f32[512,256] parameter(1)
  %lr = f32[] constant(0.1)
  %lrb = f32[512,256] broadcast(%lr), dimensions={}
  %s = f32[512,256] multiply(%lrb, %g)
  ROOT %u = f32[512,256] subtract(%w, %s)
}
)";

TEST(OutputOverInput, SgdUpdateIsWrittenOverTheDonatedWeights) {
  Compiled c = Compile(kSgd);
  EXPECT_EQ(Offered(c.exe->plan()), (std::set<std::string>{"w", "g"}))
      << PlanToString(c.exe->plan());
  EXPECT_TRUE(RunDonating(c, 0));
  EXPECT_TRUE(RunDonating(c, 1));
  EXPECT_FALSE(RunDonating(c, -1));  // nothing donated
  // Arguments the runner only borrows are never written.
  std::mt19937 rng(3);
  std::vector<Literal> args = {RandomLiteral(c.module->entry()->parameter(0)->shape(), rng),
                               RandomLiteral(c.module->entry()->parameter(1)->shape(), rng)};
  const std::vector<Literal> before = args;
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(args[0] == before[0] && args[1] == before[1]);
}

// A transposed read of w: writing over w would overwrite elements still to be read.
constexpr const char* kTransposed = R"(
HloModule transposed
ENTRY %main (w: f32[128,128], g: f32[128,128]) -> f32[128,128] {
  %w = f32[128,128] parameter(0)
  %g = f32[128,128] parameter(1)
  %t = f32[128,128] transpose(%w), dimensions={1,0}
  ROOT %u = f32[128,128] subtract(%t, %g)
}
)";

TEST(OutputOverInput, TransposedReadIsNotOffered) {
  Compiled c = Compile(kTransposed);
  EXPECT_EQ(Offered(c.exe->plan()), (std::set<std::string>{"g"})) << PlanToString(c.exe->plan());
  EXPECT_FALSE(RunDonating(c, 0));
  EXPECT_TRUE(RunDonating(c, 1));
}

// x minus its row maximum: the maximum reads the whole row, so x is not offered.
constexpr const char* kRowMax = R"(
HloModule row_max
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[64,300]) -> f32[64,300] {
  %x = f32[64,300] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[64] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[64,300] broadcast(%m), dimensions={0}
  ROOT %d = f32[64,300] subtract(%x, %mb)
}
)";

TEST(OutputOverInput, RowStatisticOfTheInputIsNotOffered) {
  Compiled c = Compile(kRowMax);
  EXPECT_TRUE(Offered(c.exe->plan()).empty()) << PlanToString(c.exe->plan());
  EXPECT_FALSE(RunDonating(c, 0));
}

// y times a softmax of x: the softmax's exp values are stashed in the output row before the
// output loop reads y, so y (read at its own index) is not offered either.
constexpr const char* kStashed = R"(
HloModule stashed
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[64,512], y: f32[64,512]) -> f32[64,512] {
  %x = f32[64,512] parameter(0)
  %y = f32[64,512] parameter(1)
  %e = f32[64,512] exponential(%x)
  %zero = f32[] constant(0)
  %s = f32[64] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %sb = f32[64,512] broadcast(%s), dimensions={0}
  %p = f32[64,512] divide(%e, %sb)
  ROOT %m = f32[64,512] multiply(%p, %y)
}
)";

TEST(OutputOverInput, KernelWithAStashedRowIsNotOffered) {
  Compiled c = Compile(kStashed);
  EXPECT_TRUE(Offered(c.exe->plan()).empty()) << PlanToString(c.exe->plan());
  EXPECT_FALSE(RunDonating(c, 1));
}

// w read by two kernels: only its last reader may take it, and the results stay right.
constexpr const char* kReadTwice = R"(
HloModule read_twice
ENTRY %main (w: f32[256,256], g: f32[256,256]) -> (f32[256,256], f32[256,256]) {
  %w = f32[256,256] parameter(0)
  %g = f32[256,256] parameter(1)
  %t = f32[256,256] transpose(%g), dimensions={1,0}
  %u = f32[256,256] subtract(%w, %t)
  %tw = f32[256,256] transpose(%w), dimensions={1,0}
  %v = f32[256,256] multiply(%tw, %w)
  ROOT %r = (f32[256,256], f32[256,256]) tuple(%u, %v)
}
)";

TEST(OutputOverInput, ValueReadAgainLaterIsNotTaken) {
  Compiled c = Compile(kReadTwice);
  for (int donated : {0, 1}) RunDonating(c, donated);  // compares with the evaluator
}

}  // namespace
}  // namespace kiln::cpu
