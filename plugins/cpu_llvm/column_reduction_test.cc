// Column reductions accumulated row by row (KernelSpec::accumulate_columns): which kernels
// the planner marks, and their results against the evaluator: sums and maxima over the
// leading dimensions, with an epilogue, several kept dimensions, f64, a column reduction
// inside another one's input, NaN and infinity, and the shapes that must stay elemental.
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

int ColumnKernels(const Plan& plan) {
  int n = 0;
  for (const llvm_emit::KernelSpec& k : plan.kernels) n += k.accumulate_columns;
  return n;
}

int PartedColumnKernels(const Plan& plan) {
  int n = 0;
  for (const llvm_emit::KernelSpec& k : plan.kernels) n += k.accumulate_columns && k.reduce_parts;
  return n;
}

int PartitionedColumnKernels(const Plan& plan) {
  int n = 0;
  for (const llvm_emit::KernelSpec& k : plan.kernels)
    n += k.accumulate_columns && k.partition_outer;
  return n;
}

// The module: `body` in an entry computation of `params` and `result`, after the reducers
// add, addd, max, addi, mini, minf and maxu.
std::string ModuleText(const std::string& params, const std::string& result,
                       const std::string& body) {
  return "HloModule columns\n\n%add (a: f32[], b: f32[]) -> f32[] {\n"
         "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
         "  ROOT %s = f32[] add(%a, %b)\n}\n\n"
         "%addd (a: f64[], b: f64[]) -> f64[] {\n"
         "  %a = f64[] parameter(0)\n  %b = f64[] parameter(1)\n"
         "  ROOT %s = f64[] add(%a, %b)\n}\n\n"
         "%max (a: f32[], b: f32[]) -> f32[] {\n"
         "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
         "  ROOT %m = f32[] maximum(%a, %b)\n}\n\n"
         "%addi (a: s32[], b: s32[]) -> s32[] {\n"
         "  %a = s32[] parameter(0)\n  %b = s32[] parameter(1)\n"
         "  ROOT %s = s32[] add(%a, %b)\n}\n\n"
         "%mini (a: s32[], b: s32[]) -> s32[] {\n"
         "  %a = s32[] parameter(0)\n  %b = s32[] parameter(1)\n"
         "  ROOT %m = s32[] minimum(%a, %b)\n}\n\n"
         "%minf (a: f32[], b: f32[]) -> f32[] {\n"
         "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
         "  ROOT %m = f32[] minimum(%a, %b)\n}\n\n"
         "%maxu (a: u64[], b: u64[]) -> u64[] {\n"
         "  %a = u64[] parameter(0)\n  %b = u64[] parameter(1)\n"
         "  ROOT %m = u64[] maximum(%a, %b)\n}\n\n"
         "ENTRY %main (" +
         params + ") -> " + result + " {\n" + body + "}\n";
}

// The optimized LLVM IR of the module.
std::string OptimizedIr(const std::string& params, const std::string& result,
                        const std::string& body) {
  CompileOptions options;
  options.keep_ir = true;
  auto compiler = CpuCompiler::Create(options);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  if (!compiler.ok()) return "";
  auto parsed = ParseHloModule(ModuleText(params, result, body), "columns");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return "";
  auto exe = (*compiler)->Compile(std::shared_ptr<const HloModule>(std::move(*parsed)));
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? (*exe)->llvm_ir() : "";
}

// Compiles `body` (an entry computation's instructions after `params`), expects `marked`
// column-accumulating kernels (`partitioned` of them split along dimension 0 and `parted`
// reduced in parts of it, when given), and compares a run with the evaluator on random
// arguments, or on `args` when given.
void Check(const std::string& params, const std::string& result, const std::string& body,
           int marked, std::vector<Literal> args = {}, int partitioned = -1, int parted = -1) {
  const std::string text = ModuleText(params, result, body);
  auto parsed = ParseHloModule(text, "columns");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  std::shared_ptr<const HloModule> module(std::move(*parsed));
  auto compiler = CpuCompiler::Create();
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ(ColumnKernels((*exe)->plan()), marked) << PlanToString((*exe)->plan());
  if (parted >= 0) {
    EXPECT_EQ(PartedColumnKernels((*exe)->plan()), parted) << PlanToString((*exe)->plan());
  }
  if (partitioned >= 0) {
    EXPECT_EQ(PartitionedColumnKernels((*exe)->plan()), partitioned)
        << PlanToString((*exe)->plan());
  }
  if (args.empty()) {
    std::mt19937 rng(7);
    for (const HloInstruction* p : module->entry()->parameters())
      args.push_back(RandomLiteral(p->shape(), rng));
  }
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = (*exe)->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "columns", "jit", 1e-4);
}

TEST(ColumnReduction, BiasGradientWithAnEpilogue) {
  // The SGD update of a bias: b - lr * sum over (batch, rows, columns) of x * y.
  Check("x: f32[8,32,32,16], y: f32[8,32,32,16], b: f32[16]", "f32[16]",
        "  %x = f32[8,32,32,16] parameter(0)\n  %y = f32[8,32,32,16] parameter(1)\n"
        "  %b = f32[16] parameter(2)\n"
        "  %m = f32[8,32,32,16] multiply(%x, %y)\n  %z = f32[] constant(0)\n"
        "  %r = f32[16] reduce(%m, %z), dimensions={0,1,2}, to_apply=%add\n"
        "  %lr = f32[] constant(0.01)\n  %l = f32[16] broadcast(%lr), dimensions={}\n"
        "  %u = f32[16] multiply(%r, %l)\n  ROOT %o = f32[16] subtract(%b, %u)\n",
        1);
}

TEST(ColumnReduction, SeveralKeptDimensionsAndMaximum) {
  Check("x: f32[64,32,8,16]", "f32[8,16]",
        "  %x = f32[64,32,8,16] parameter(0)\n  %z = f32[] constant(-inf)\n"
        "  ROOT %r = f32[8,16] reduce(%x, %z), dimensions={1,0}, to_apply=%max\n",
        1);
}

TEST(ColumnReduction, Double) {
  Check("x: f64[4096,24]", "f64[24]",
        "  %x = f64[4096,24] parameter(0)\n  %z = f64[] constant(0)\n"
        "  ROOT %r = f64[24] reduce(%x, %z), dimensions={0}, to_apply=%addd\n",
        1);
}

TEST(ColumnReduction, Integers) {
  // Exact in any order: a wrapping s32 sum, a u64 maximum over two dimensions, and an arg-min
  // over dimension 0 as arg-reduce-split writes it (the index of the first row holding the
  // column's minimum), whose index reduce was a strided walk per column (12 ms at 4096x1024).
  Check("x: s32[4096,24]", "s32[24]",
        "  %x = s32[4096,24] parameter(0)\n  %z = s32[] constant(0)\n"
        "  ROOT %r = s32[24] reduce(%x, %z), dimensions={0}, to_apply=%addi\n",
        1);
  Check("x: u64[64,32,16]", "u64[16]",
        "  %x = u64[64,32,16] parameter(0)\n  %z = u64[] constant(0)\n"
        "  ROOT %r = u64[16] reduce(%x, %z), dimensions={0,1}, to_apply=%maxu\n",
        1);
  Check(
      "x: f32[2048,96]", "s32[96]",
      "  %x = f32[2048,96] parameter(0)\n  %inf = f32[] constant(inf)\n"
      "  %m = f32[96] reduce(%x, %inf), dimensions={0}, to_apply=%minf\n"
      "  %mb = f32[2048,96] broadcast(%m), dimensions={1}\n"
      "  %eq = pred[2048,96] compare(%x, %mb), direction=EQ\n"
      "  %i = s32[2048,96] iota(), iota_dimension=0\n"
      "  %big = s32[] constant(2147483647)\n  %bigb = s32[2048,96] broadcast(%big), dimensions={}\n"
      "  %s = s32[2048,96] select(%eq, %i, %bigb)\n"
      "  ROOT %r = s32[96] reduce(%s, %big), dimensions={0}, to_apply=%mini\n",
      2);
}

TEST(ColumnReduction, MeanThenVariance) {
  // Sum over rows of (x - column mean)^2: the mean's kernel feeds the variance's, each
  // accumulated by columns.
  Check("x: f32[2048,32]", "f32[32]",
        "  %x = f32[2048,32] parameter(0)\n  %z = f32[] constant(0)\n"
        "  %s = f32[32] reduce(%x, %z), dimensions={0}, to_apply=%add\n"
        "  %n = f32[] constant(0.00048828125)\n  %nb = f32[32] broadcast(%n), dimensions={}\n"
        "  %mean = f32[32] multiply(%s, %nb)\n"
        "  %mb = f32[2048,32] broadcast(%mean), dimensions={1}\n"
        "  %d = f32[2048,32] subtract(%x, %mb)\n  %d2 = f32[2048,32] multiply(%d, %d)\n"
        "  ROOT %v = f32[32] reduce(%d2, %z), dimensions={0}, to_apply=%add\n",
        2);
}

TEST(ColumnReduction, NanAndInfinityPropagate) {
  std::vector<double> v(1024 * 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3;
  v[5 * 20 + 3] = std::numeric_limits<double>::quiet_NaN();   // column 3: NaN
  v[900 * 20 + 7] = std::numeric_limits<double>::infinity();  // column 7: +inf
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {1024, 20}), v));
  Check("x: f32[1024,20]", "f32[20]",
        "  %x = f32[1024,20] parameter(0)\n  %z = f32[] constant(-inf)\n"
        "  ROOT %r = f32[20] reduce(%x, %z), dimensions={0}, to_apply=%max\n",
        1, std::move(args));
}

TEST(ColumnReduction, ReducedDimensionsBetweenKeptOnesAccumulateToo) {
  // x.mean(axis=1) of a [B, T, D] array: a middle dimension reduced.
  Check("x: f32[64,64,16]", "f32[64,16]",
        "  %x = f32[64,64,16] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[64,16] reduce(%x, %z), dimensions={1}, to_apply=%add\n",
        1);
  // A group norm's statistics: groups of 32 channels in a reshaped NHWC array, reduced over
  // H, W and the channels of a group (a trailing reduced dimension widens the accumulator),
  // the plain sum and the sum of squares about the mean.
  Check("x: f32[4,16,16,256], m: f32[4,8]", "f32[4,8]",
        "  %x = f32[4,16,16,256] parameter(0)\n  %m = f32[4,8] parameter(1)\n"
        "  %g = f32[4,16,16,8,32] reshape(%x)\n  %z = f32[] constant(0)\n"
        "  %s = f32[4,8] reduce(%g, %z), dimensions={1,2,4}, to_apply=%add\n"
        "  %mb = f32[4,16,16,8,32] broadcast(%m), dimensions={0,3}\n"
        "  %d = f32[4,16,16,8,32] subtract(%g, %mb)\n"
        "  %q = f32[4,16,16,8,32] multiply(%d, %d)\n"
        "  %v = f32[4,8] reduce(%q, %z), dimensions={1,2,4}, to_apply=%add\n"
        "  ROOT %r = f32[4,8] add(%s, %v)\n",
        1);
  // A maximum over the leading and a trailing dimension.
  Check("x: f32[32,24,48]", "f32[24]",
        "  %x = f32[32,24,48] parameter(0)\n  %z = f32[] constant(-inf)\n"
        "  ROOT %r = f32[24] reduce(%x, %z), dimensions={0,2}, to_apply=%max\n",
        1);
}

TEST(ColumnReduction, KeptLeadingDimensionSplitsAcrossThreads) {
  // x.mean(axis=1) of f32[64,512,256]: a [64,256] result, too large for one accumulator on
  // one thread, accumulated in parts of dimension 0 (each its own slice of accumulators).
  Check("x: f32[64,512,256]", "f32[64,256]",
        "  %x = f32[64,512,256] parameter(0)\n  %z = f32[] constant(0)\n"
        "  %s = f32[64,256] reduce(%x, %z), dimensions={1}, to_apply=%add\n"
        "  %n = f32[] constant(0.001953125)\n  %nb = f32[64,256] broadcast(%n), dimensions={}\n"
        "  ROOT %m = f32[64,256] multiply(%s, %nb)\n",
        1, {}, 1);
  // Two reductions of one input (a sum and a maximum over a middle and a trailing
  // dimension) combined elementwise; f64; an odd leading extent.
  Check("x: f32[7,300,16,4]", "f32[7,16]",
        "  %x = f32[7,300,16,4] parameter(0)\n  %z = f32[] constant(0)\n"
        "  %ninf = f32[] constant(-inf)\n"
        "  %s = f32[7,16] reduce(%x, %z), dimensions={1,3}, to_apply=%add\n"
        "  %m = f32[7,16] reduce(%x, %ninf), dimensions={1,3}, to_apply=%max\n"
        "  ROOT %r = f32[7,16] subtract(%s, %m)\n",
        1, {}, 1);
  Check("x: f64[9,2000,40]", "f64[9,40]",
        "  %x = f64[9,2000,40] parameter(0)\n  %z = f64[] constant(0)\n"
        "  ROOT %r = f64[9,40] reduce(%x, %z), dimensions={1}, to_apply=%addd\n",
        1, {}, 1);
  // Read through a transpose: the reduction is a kernel of its own, split, the transpose
  // another.
  Check("x: f32[32,512,32]", "f32[32,32]",
        "  %x = f32[32,512,32] parameter(0)\n  %z = f32[] constant(0)\n"
        "  %s = f32[32,32] reduce(%x, %z), dimensions={1}, to_apply=%add\n"
        "  ROOT %t = f32[32,32] transpose(%s), dimensions={1,0}\n",
        1, {}, 1);
}

TEST(ColumnReduction, SiblingsOverTheSameRowsShareOnePass) {
  // A Dice loss: p = softmax over 4 classes, sums over the pixels of p * t, p and t into
  // [B, 4], then one scalar. The three sums (and a maximum beside them) accumulate in one pass
  // over the pixels, each into its own accumulator from its own init value. The [B, 4]
  // quotient is computed into memory before its sum, so that the pass splits along B.
  Check("x: f32[4,64,64,4], t: f32[4,64,64,4]", "f32[]",
        "  %x = f32[4,64,64,4] parameter(0)\n  %t = f32[4,64,64,4] parameter(1)\n"
        "  %z = f32[] constant(0)\n  %ninf = f32[] constant(-inf)\n"
        "  %mx = f32[4,64,64] reduce(%x, %ninf), dimensions={3}, to_apply=%max\n"
        "  %mb = f32[4,64,64,4] broadcast(%mx), dimensions={0,1,2}\n"
        "  %d = f32[4,64,64,4] subtract(%x, %mb)\n  %e = f32[4,64,64,4] exponential(%d)\n"
        "  %se = f32[4,64,64] reduce(%e, %z), dimensions={3}, to_apply=%add\n"
        "  %sb = f32[4,64,64,4] broadcast(%se), dimensions={0,1,2}\n"
        "  %p = f32[4,64,64,4] divide(%e, %sb)\n"
        "  %pt = f32[4,64,64,4] multiply(%p, %t)\n"
        "  %inter = f32[4,4] reduce(%pt, %z), dimensions={1,2}, to_apply=%add\n"
        "  %sp = f32[4,4] reduce(%p, %z), dimensions={1,2}, to_apply=%add\n"
        "  %st = f32[4,4] reduce(%t, %z), dimensions={1,2}, to_apply=%add\n"
        "  %mt = f32[4,4] reduce(%t, %ninf), dimensions={1,2}, to_apply=%max\n"
        "  %spt = f32[4,4] add(%sp, %st)\n  %den = f32[4,4] add(%spt, %mt)\n"
        "  %q = f32[4,4] divide(%inter, %den)\n"
        "  ROOT %r = f32[] reduce(%q, %z), dimensions={0,1}, to_apply=%add\n",
        1, {}, 1);
}

TEST(ColumnReduction, LargeReductionsOfDimensionZeroRunInParts) {
  // x.mean(axis=0) of f32[8192,64]: 16 parts of the rows, each into its own accumulator,
  // folded in order, then the epilogue.
  Check("x: f32[8192,64]", "f32[64]",
        "  %x = f32[8192,64] parameter(0)\n  %z = f32[] constant(0)\n"
        "  %s = f32[64] reduce(%x, %z), dimensions={0}, to_apply=%add\n"
        "  %n = f32[] constant(0.0001220703125)\n  %nb = f32[64] broadcast(%n), dimensions={}\n"
        "  ROOT %m = f32[64] multiply(%s, %nb)\n",
        1, {}, 0, 1);
  // Fewer rows than parts, a trailing reduced dimension, a maximum.
  Check("x: f32[5,20000,6,4]", "f32[6]",
        "  %x = f32[5,20000,6,4] parameter(0)\n  %z = f32[] constant(-inf)\n"
        "  ROOT %r = f32[6] reduce(%x, %z), dimensions={0,1,3}, to_apply=%max\n",
        1, {}, 0, 1);
  Check("x: f64[4099,100]", "f64[100]",
        "  %x = f64[4099,100] parameter(0)\n  %z = f64[] constant(0)\n"
        "  ROOT %r = f64[100] reduce(%x, %z), dimensions={0}, to_apply=%addd\n",
        1, {}, 0, 1);
  // A NaN in one part and an infinity in another reach their columns.
  std::vector<double> v(16384 * 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 11) - 5;
  v[7 * 20 + 3] = std::numeric_limits<double>::quiet_NaN();
  v[16000 * 20 + 9] = std::numeric_limits<double>::infinity();
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {16384, 20}), v));
  Check("x: f32[16384,20]", "f32[20]",
        "  %x = f32[16384,20] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[20] reduce(%x, %z), dimensions={0}, to_apply=%add\n",
        1, std::move(args), 0, 1);
}

TEST(ColumnReduction, MinorRunFirstThenTheOuterDimensions) {
  // jnp.min(x, (0, 3)) of an NHWC batch: reduce-minor-first makes it a row reduction of the
  // channels inside a column reduction of the batch (whole, each result element walked 32
  // slices 2 MiB apart: 1.7 ms against 1.0 at 32x64x64x128).
  const std::string params = "x: f32[64,16,16,128]";
  const std::string body =
      "  %x = f32[64,16,16,128] parameter(0)\n  %z = f32[] constant(inf)\n"
      "  ROOT %r = f32[16,16] reduce(%x, %z), dimensions={0,3}, to_apply=%minf\n";
  Check(params, "f32[16,16]", body, 1, {}, -1, 1);
  // Its accumulators are set by one flat loop: a loop nest became 257 scatters, 3.5x the
  // program's compile time.
  const std::string ir = OptimizedIr(params, "f32[16,16]", body);
  EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
}

TEST(ColumnReduction, RunsShorterThanAVectorStayInRegisters) {
  // x.mean(1) of f32[1025,129,3]: each output row's 3 accumulators summed over 129 rows. Kept
  // as a loop, the run of 3 became masked loads and stores of the accumulators, which a store
  // does not forward to the next row's load (0.91 ms against 0.09 on one thread).
  const std::string params = "x: f32[1025,129,3]";
  const std::string body =
      "  %x = f32[1025,129,3] parameter(0)\n  %z = f32[] constant(0)\n"
      "  ROOT %r = f32[1025,3] reduce(%x, %z), dimensions={1}, to_apply=%add\n";
  Check(params, "f32[1025,3]", body, 1);
  const std::string ir = OptimizedIr(params, "f32[1025,3]", body);
  EXPECT_EQ(ir.find("masked.store"), std::string::npos) << ir;
}

TEST(ColumnReduction, TooManyColumnsLeadWithAKeptDimension) {
  // The mean over 200 steps of a scan's stacked [32,512] outputs: 16384 columns, too many
  // for one accumulator; reduce-kept-dimension-first reads it as [32,200,512] over {1}, a
  // column reduction split across threads along the 32 (reduced whole, each result element
  // walked 200 rows 64 KiB apart: 2.7 ms against 0.1).
  Check("x: f32[200,32,512]", "f32[32,512]",
        "  %x = f32[200,32,512] parameter(0)\n  %z = f32[] constant(0)\n"
        "  %s = f32[32,512] reduce(%x, %z), dimensions={0}, to_apply=%add\n"
        "  %n = f32[] constant(0.005)\n  %nb = f32[32,512] broadcast(%n), dimensions={}\n"
        "  ROOT %m = f32[32,512] multiply(%s, %nb)\n",
        1, {}, 1);
}

TEST(ColumnReduction, VectorTimesMatrixAndSmallInputsAccumulate) {
  // A minibatch SVM's gradient: a mask-weighted vector times the batch, v[64] . x[64,128],
  // below the GEMM library's size. As a dot (or a column reduction of fewer than 2^14
  // elements) each result walked a column of x and regenerated v: 16 us a step.
  Check("m: f32[64], x: f32[64,128]", "f32[128]",
        "  %m = f32[64] parameter(0)\n  %x = f32[64,128] parameter(1)\n"
        "  %one = f32[] constant(1)\n  %ones = f32[64] broadcast(%one), dimensions={}\n"
        "  %lt = pred[64] compare(%m, %ones), direction=LT\n"
        "  %w = f32[64] convert(%lt)\n  %v = f32[64] multiply(%w, %m)\n"
        "  ROOT %d = f32[128] dot(%v, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n",
        1);
  Check("x: f32[32,256]", "f32[256]",
        "  %x = f32[32,256] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[256] reduce(%x, %z), dimensions={0}, to_apply=%add\n",
        1);
}

TEST(ColumnReduction, OtherShapesStayElemental) {
  // Rows kept (a row reduction), a large result, a small input.
  Check("x: f32[256,512]", "f32[256]",
        "  %x = f32[256,512] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[256] reduce(%x, %z), dimensions={1}, to_apply=%add\n",
        0);
  // A middle dimension reduced, but a result too large even for a partitioned accumulator.
  Check("x: f32[16,8,8192]", "f32[16,8192]",
        "  %x = f32[16,8,8192] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[16,8192] reduce(%x, %z), dimensions={1}, to_apply=%add\n",
        0);
  Check("x: f32[16,8192]", "f32[8192]",
        "  %x = f32[16,8192] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[8192] reduce(%x, %z), dimensions={0}, to_apply=%add\n",
        0);
  Check("x: f32[64,16]", "f32[16]",
        "  %x = f32[64,16] parameter(0)\n  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[16] reduce(%x, %z), dimensions={0}, to_apply=%add\n",
        0);
}

}  // namespace
}  // namespace kiln::cpu
