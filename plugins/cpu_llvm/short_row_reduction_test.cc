// Short contiguous reductions inside an output loop (KernelEmitter::kMinVectorRun to
// kMaxVectorRun elements): a mixture's per-component distances, each a sum over 16 elements
// of a row. Unrolled whole, the reduction left LLVM the output's loop to vectorize, reading
// the runs with gathers; kept a loop, each run is a vector load. Checked against the
// evaluator on one and two threads: f32 sums over 4, 8, 17, 40 and 100 elements and over the
// last two dimensions, an f32 maximum with NaN, f64, and an integer sum (not reassociated);
// and the mixture kernel's IR has no gather.
#include <cmath>
#include <limits>
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
%addd (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %s = f64[] add(%a, %b)
}
%addi (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
)";

// Distances of `n` points to `k` centers over `d` coordinates of type `t`, reduced by
// `reducer` from `init`: r[i,j] = reduce_c (x[i,c] - mu[j,c])^2.
std::string Distances(int n, int k, int d, const std::string& t = "f32",
                      const std::string& reducer = "add", const std::string& init = "0") {
  auto sh = [&](std::initializer_list<int> dims) {
    std::string s = t + "[";
    bool first = true;
    for (int x : dims) s += (first ? "" : ",") + std::to_string(x), first = false;
    return s + "]";
  };
  const std::string x = sh({n, d}), mu = sh({k, d}), big = sh({n, k, d}), out = sh({n, k});
  return std::string("HloModule distances\n") + kReducers + "ENTRY %main (x: " + x + ", mu: " + mu +
         ") -> " + out + " {\n  %x = " + x + " parameter(0)\n  %mu = " + mu +
         " parameter(1)\n  %xb = " + big + " broadcast(%x), dimensions={0,2}\n  %mb = " + big +
         " broadcast(%mu), dimensions={1,2}\n  %df = " + big +
         " subtract(%xb, %mb)\n  %d2 = " + big + " multiply(%df, %df)\n  %z = " + t +
         "[] constant(" + init + ")\n  ROOT %r = " + out +
         " reduce(%d2, %z), dimensions={2}, to_apply=%" + reducer + "\n}\n";
}

// Compiles `text`, runs it on `args` (random when empty) on 1 and 2 threads against the
// evaluator; returns the optimized IR.
std::string Check(const std::string& text, std::vector<Literal> args = {}) {
  auto parsed = ParseHloModule(text, "short_rows");
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  if (!parsed.ok()) return "";
  std::shared_ptr<const HloModule> module(std::move(*parsed));
  if (args.empty()) {
    std::mt19937 rng(5);
    for (const HloInstruction* p : module->entry()->parameters())
      args.push_back(RandomLiteral(p->shape(), rng));
  }
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  if (!want.ok()) return "";
  std::string ir;
  for (int threads : {1, 2}) {
    CompileOptions options;
    options.threads = threads;
    options.keep_ir = true;
    auto compiler = CpuCompiler::Create(options);
    EXPECT_TRUE(compiler.ok()) << compiler.status();
    if (!compiler.ok()) return "";
    auto exe = (*compiler)->Compile(module);
    EXPECT_TRUE(exe.ok()) << exe.status();
    if (!exe.ok()) return "";
    auto got = (*exe)->Run(args);
    EXPECT_TRUE(got.ok()) << got.status();
    if (got.ok()) ExpectClose(*got, *want, "threads " + std::to_string(threads), "jit", 1e-5);
    ir = (*exe)->llvm_ir();
  }
  return ir;
}

TEST(ShortRowReduction, MixtureDistancesReadRunsWithoutGathers) {
  const std::string ir = Check(Distances(512, 32, 16));
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
}

TEST(ShortRowReduction, RunLengths) {
  for (int d : {8, 17, 40}) Check(Distances(256, 24, d));
  Check(Distances(256, 24, 4));   // below kMinVectorRun: unrolled as before
  Check(Distances(128, 8, 100));  // above kMaxVectorRun: vectorized along the run as before
}

TEST(ShortRowReduction, DoubleAndInteger) {
  Check(Distances(256, 16, 16, "f64", "addd"));
  Check(Distances(256, 16, 16, "s32", "addi"));
}

TEST(ShortRowReduction, MaximumPropagatesNaN) {
  auto parsed = ParseHloModule(Distances(64, 8, 16, "f32", "max", "-inf"), "nan");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::mt19937 rng(2);
  std::vector<Literal> args;
  for (const HloInstruction* p : (*parsed)->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  // One coordinate of point 3 and one of center 5: row 3 and column 5 are NaN.
  args[0].data<float>()[3 * 16 + 9] = std::numeric_limits<float>::quiet_NaN();
  args[1].data<float>()[5 * 16 + 15] = std::numeric_limits<float>::quiet_NaN();
  Check(Distances(64, 8, 16, "f32", "max", "-inf"), std::move(args));
}

TEST(ShortRowReduction, OverTheLastTwoDimensions) {
  Check(std::string("HloModule two\n") + kReducers + R"(
ENTRY %main (x: f32[128,8,4,16]) -> f32[128,8] {
  %x = f32[128,8,4,16] parameter(0)
  %e = f32[128,8,4,16] exponential(%x)
  %z = f32[] constant(0)
  ROOT %r = f32[128,8] reduce(%e, %z), dimensions={2,3}, to_apply=%add
}
)");
}

// Strided windows over a contiguous run of the minor dimension, inside the input: a moving
// average of 64 every 16 (jax.lax.reduce_window, VALID) and a maximum of 33 every 8. Unrolled
// whole, each window left the vectorizer the output's loop, reading with gathers.
std::string Window(const std::string& reducer, const std::string& init, int size, int stride,
                   const std::string& pad = "0_0x0_0") {
  const int in = 1024, out = (in - size) / stride + 1;
  const std::string o = pad == "0_0x0_0" ? std::to_string(out) : std::to_string(in / stride);
  return std::string("HloModule window\n") + kReducers +
         "ENTRY %main (x: f32[32,1024]) -> f32[32," + o +
         "] {\n  %x = f32[32,1024] parameter(0)\n" + "  %z = f32[] constant(" + init +
         ")\n  ROOT %r = f32[32," + o + "] reduce-window(%x, %z), window={size=1x" +
         std::to_string(size) + " stride=1x" + std::to_string(stride) + " pad=" + pad +
         "}, to_apply=%" + reducer + "\n}\n";
}

TEST(ShortRowReduction, WindowsAlongTheMinorDimensionReadWithoutGathers) {
  std::string ir = Check(Window("add", "0", 64, 16));
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  ir = Check(Window("max", "-inf", 33, 8));
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  Check(Window("max", "-inf", 33, 1));  // stride 1: vectorized across the outputs, as before
  // Padded (positions outside the input skipped): the bounds-tested form, as before.
  Check(Window("add", "0", 16, 1, "0_0x7_8"));
  Check(Window("add", "0", 4, 2));  // below kMinVectorRun
}

}  // namespace
}  // namespace kiln::cpu
