// Row statistics whose costly values the output reads again (StashableRowStatistic): which
// kernels stash them in the output row, and their results against the evaluator on one and
// two threads: softmax over the last dimension and over the last two, a softmax followed by
// more elementwise work, and the kernels that must not stash (log-softmax, whose output never
// reads the exp; a reversed read; a cheap value).
#include <random>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

constexpr char kReducers[] = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
)";

// Compiles the module (kReducers, then `entry`), expects `stashed` kernels with a stashed
// row statistic, and compares runs on 1 and 2 threads with the evaluator.
void Check(const std::string& entry, int stashed) {
  auto parsed = ParseHloModule(std::string("HloModule stash\n") + kReducers + entry, "stash");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module(std::move(*parsed));
  std::mt19937 rng(3);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  for (int threads : {1, 2}) {
    CompileOptions options;
    options.threads = threads;
    auto compiler = CpuCompiler::Create(options);
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    auto exe = (*compiler)->Compile(module);
    ASSERT_TRUE(exe.ok()) << exe.status();
    int n = 0;
    for (const llvm_emit::KernelSpec& k : (*exe)->plan().kernels)
      n += llvm_emit::StashableRowStatistic(k) != nullptr;
    EXPECT_EQ(n, stashed) << PlanToString((*exe)->plan());
    auto got = (*exe)->Run(args);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(*got, *want, "threads " + std::to_string(threads), "jit", 1e-5);
  }
}

TEST(StashedRowStatistic, Softmax) {
  Check(R"(
ENTRY %main (x: f32[512,300]) -> f32[512,300] {
  %x = f32[512,300] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[512] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[512,300] broadcast(%m), dimensions={0}
  %d = f32[512,300] subtract(%x, %mb)
  %e = f32[512,300] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[512] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %sb = f32[512,300] broadcast(%s), dimensions={0}
  ROOT %y = f32[512,300] divide(%e, %sb)
}
)",
        1);
}

TEST(StashedRowStatistic, OverTheLastTwoDimensionsThenMore) {
  // Rows of 8 x 70: the statistic covers a block of the output's rows; after the division,
  // a multiply and an add still read the stashed value's quotient at the same index.
  Check(R"(
ENTRY %main (x: f32[64,8,70], g: f32[64,8,70]) -> f32[64,8,70] {
  %x = f32[64,8,70] parameter(0)
  %g = f32[64,8,70] parameter(1)
  %e = f32[64,8,70] exponential(%x)
  %zero = f32[] constant(0)
  %s = f32[64] reduce(%e, %zero), dimensions={1,2}, to_apply=%add
  %sb = f32[64,8,70] broadcast(%s), dimensions={0}
  %p = f32[64,8,70] divide(%e, %sb)
  %q = f32[64,8,70] multiply(%p, %g)
  ROOT %y = f32[64,8,70] add(%q, %e)
}
)",
        1);
}

TEST(StashedRowStatistic, NotWhereTheOutputDoesNotReadTheValueAtItsIndex) {
  // log-softmax: the output is x - max - log(sum exp), never the exp itself.
  Check(R"(
ENTRY %main (x: f32[256,128]) -> f32[256,128] {
  %x = f32[256,128] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[256] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[256,128] broadcast(%m), dimensions={0}
  %d = f32[256,128] subtract(%x, %mb)
  %e = f32[256,128] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[256] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %l = f32[256] log(%s)
  %lb = f32[256,128] broadcast(%l), dimensions={0}
  ROOT %y = f32[256,128] subtract(%d, %lb)
}
)",
        0);
  // The exp read reversed along the row: another index than the output's.
  Check(R"(
ENTRY %main (x: f32[256,128]) -> f32[256,128] {
  %x = f32[256,128] parameter(0)
  %e = f32[256,128] exponential(%x)
  %zero = f32[] constant(0)
  %s = f32[256] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %sb = f32[256,128] broadcast(%s), dimensions={0}
  %r = f32[256,128] reverse(%e), dimensions={1}
  ROOT %y = f32[256,128] divide(%r, %sb)
}
)",
        0);
  // A cheap value (a difference) is computed again rather than stored and loaded.
  Check(R"(
ENTRY %main (x: f32[256,128], c: f32[256,128]) -> f32[256,128] {
  %x = f32[256,128] parameter(0)
  %c = f32[256,128] parameter(1)
  %d = f32[256,128] subtract(%x, %c)
  %zero = f32[] constant(0)
  %s = f32[256] reduce(%d, %zero), dimensions={1}, to_apply=%add
  %sb = f32[256,128] broadcast(%s), dimensions={0}
  ROOT %y = f32[256,128] divide(%d, %sb)
}
)",
        0);
}

}  // namespace
}  // namespace kiln::cpu
