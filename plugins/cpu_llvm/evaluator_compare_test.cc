// JIT output against the reference HLO evaluator on the example modules and on focused HLO
// snippets, with random inputs, within the tolerance of each element type.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

using PT = PrimitiveType;

// Compiles `text` (with and without grouping unfused instructions into shared kernels),
// runs it on random inputs and compares with the evaluator. Returns the kernel count, or
// kEvaluatorMissing when the evaluator cannot run the module yet (it is written in parallel).
constexpr int kEvaluatorMissing = -2;
int CompareWithEvaluator(const std::string& text, const std::string& name) {
  auto parsed = ParseHloModule(text, name);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return -1;
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  std::mt19937 rng(1234);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  if (!want.ok() && want.status().code() == absl::StatusCode::kUnimplemented) {
    std::printf("[ SKIPPED  ] %s: %s\n", name.c_str(),
                std::string(want.status().message()).c_str());
    return kEvaluatorMissing;
  }
  EXPECT_TRUE(want.ok()) << name << ": " << want.status();
  if (!want.ok()) return -1;
  int kernels = -1;
  for (bool fuse : {true, false}) {
    CompileOptions opts;
    opts.plan.fuse_unfused = fuse;
    auto compiler = CpuCompiler::Create(opts);
    EXPECT_TRUE(compiler.ok()) << compiler.status();
    if (!compiler.ok()) return -1;
    auto exe = (*compiler)->Compile(module);
    EXPECT_TRUE(exe.ok()) << name << ": " << exe.status();
    if (!exe.ok()) return -1;
    auto got = (*exe)->Run(args);
    EXPECT_TRUE(got.ok()) << name << ": " << got.status();
    if (!got.ok()) return -1;
    ExpectClose(*got, *want, name + (fuse ? " (grouped)" : " (per instruction)"), "jit", 2e-4);
    if (fuse) kernels = (*exe)->kernel_count();
  }
  return kernels;
}

std::string SourceRoot() {
  const char* r = std::getenv("KILN_SOURCE_ROOT");
  return r ? r : ".";
}

TEST(CpuLlvmVsEvaluator, ExampleModules) {
  int checked = 0, total = 0;
  for (const char* dir : {"/examples/hlo", "/tests/numpy_e2e/modules"}) {
    std::filesystem::path d = SourceRoot() + dir;
    ASSERT_TRUE(std::filesystem::exists(d)) << d;
    for (const auto& entry : std::filesystem::directory_iterator(d)) {
      if (entry.path().extension() != ".hlo") continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      SCOPED_TRACE(entry.path().filename().string());
      ++total;
      if (CompareWithEvaluator(ss.str(), entry.path().filename().string()) != kEvaluatorMissing)
        ++checked;
    }
  }
  EXPECT_GE(total, 4);
  if (checked == 0) GTEST_SKIP() << "the evaluator runs none of the example modules yet";
  std::printf("compared %d of %d example modules\n", checked, total);
}

// Skips the test when the evaluator cannot run the module yet.
#define KILN_COMPARE(expected_kernels, text, name)     \
  do {                                                 \
    int k = CompareWithEvaluator(text, name);          \
    if (k == kEvaluatorMissing) {                      \
      GTEST_SKIP() << "evaluator cannot run " << name; \
    }                                                  \
    if ((expected_kernels) >= 0) {                     \
      EXPECT_EQ(k, expected_kernels);                  \
    }                                                  \
  } while (0)

TEST(CpuLlvmVsEvaluator, ElementwiseChain) {
  KILN_COMPARE(1, (R"(
HloModule chain
ENTRY %main (x: f32[33,17], y: f32[33,17]) -> f32[33,17] {
  %x = f32[33,17]{1,0} parameter(0)
  %y = f32[33,17]{1,0} parameter(1)
  %e = f32[33,17]{1,0} exponential(%x)
  %l = f32[33,17]{1,0} logistic(%y)
  %m = f32[33,17]{1,0} multiply(%e, %l)
  %t = f32[33,17]{1,0} tanh(%m)
  %c = f32[] constant(0.25)
  %cb = f32[33,17]{1,0} broadcast(%c), dimensions={}
  %mx = f32[33,17]{1,0} maximum(%t, %cb)
  %er = f32[33,17]{1,0} erf(%mx)
  %p = f32[33,17]{1,0} power(%e, %y)
  ROOT %r = f32[33,17]{1,0} add(%er, %p)
})"),
               "chain");
}

// Reshapes that only add or drop size-1 dimensions map indices directly (no division by
// the dimensions in the loop); others go through the linear index. Both inside one kernel.
TEST(CpuLlvmVsEvaluator, DegenerateAndGeneralReshapes) {
  KILN_COMPARE(1, (R"(
HloModule reshapes
ENTRY %main (c: f32[3,5,7], y: f32[5,1,7], z: f32[7,5]) -> f32[5,7] {
  %c = f32[3,5,7]{2,1,0} parameter(0)
  %y = f32[5,1,7]{2,1,0} parameter(1)
  %z = f32[7,5]{1,0} parameter(2)
  %c1 = f32[1,5,7]{2,1,0} slice(%c), slice={[1:2], [0:5], [0:7]}
  %r1 = f32[5,7]{1,0} reshape(%c1)
  %r2 = f32[5,7]{1,0} reshape(%y)
  %r3 = f32[5,7]{1,0} reshape(%z)
  %s = f32[5,7]{1,0} add(%r1, %r2)
  %t = f32[5,7]{1,0} tanh(%s)
  ROOT %r = f32[5,7]{1,0} multiply(%t, %r3)
})"),
               "reshapes");
}

TEST(CpuLlvmVsEvaluator, BroadcastTranspose) {
  KILN_COMPARE(1, (R"(
HloModule bt
ENTRY %main (x: f32[8,5,3], b: f32[5]) -> f32[3,8,5] {
  %x = f32[8,5,3]{2,1,0} parameter(0)
  %b = f32[5]{0} parameter(1)
  %t = f32[3,8,5]{2,1,0} transpose(%x), dimensions={2,0,1}
  %bb = f32[3,8,5]{2,1,0} broadcast(%b), dimensions={2}
  ROOT %s = f32[3,8,5]{2,1,0} subtract(%t, %bb)
})"),
               "bt");
}

constexpr const char* kAdd = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

TEST(CpuLlvmVsEvaluator, ReduceLastAxis) {
  KILN_COMPARE(1, std::string("HloModule r1\n") + kAdd + R"(
ENTRY %main (x: f32[64,100]) -> f32[64] {
  %x = f32[64,100]{1,0} parameter(0)
  %sq = f32[64,100]{1,0} multiply(%x, %x)
  %z = f32[] constant(0)
  ROOT %r = f32[64]{0} reduce(%sq, %z), dimensions={1}, to_apply=%add
})",
               "reduce_last");
}

TEST(CpuLlvmVsEvaluator, ReduceFirstAxis) {
  KILN_COMPARE(1, std::string("HloModule r0\n") + kAdd + R"(
ENTRY %main (x: f32[64,100]) -> f32[100] {
  %x = f32[64,100]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[100]{0} reduce(%x, %z), dimensions={0}, to_apply=%add
})",
               "reduce_first");
}

TEST(CpuLlvmVsEvaluator, F16AndBf16) {
  KILN_COMPARE(-1, R"(
HloModule half
%addh (a: f16[], b: f16[]) -> f16[] {
  %a = f16[] parameter(0)
  %b = f16[] parameter(1)
  ROOT %s = f16[] add(%a, %b)
}
ENTRY %main (x: f16[16,8], y: bf16[16,8]) -> (f16[16], bf16[16,8]) {
  %x = f16[16,8]{1,0} parameter(0)
  %y = bf16[16,8]{1,0} parameter(1)
  %e = f16[16,8]{1,0} exponential(%x)
  %z = f16[] constant(0)
  %r = f16[16]{0} reduce(%e, %z), dimensions={1}, to_apply=%addh
  %yc = f32[16,8]{1,0} convert(%y)
  %ys = f32[16,8]{1,0} sqrt(%yc)
  %xc = f32[16,8]{1,0} convert(%x)
  %s = f32[16,8]{1,0} add(%ys, %xc)
  %sb = bf16[16,8]{1,0} convert(%s)
  ROOT %t = (f16[16]{0}, bf16[16,8]{1,0}) tuple(%r, %sb)
})",
               "half");
}

TEST(CpuLlvmVsEvaluator, LoopFusionAndMultiOutputFusion) {
  KILN_COMPARE(2, (std::string("HloModule fused\n") + kAdd + R"(
%fused_ew (p0: f32[10,20], p1: f32[20]) -> f32[10,20] {
  %p0 = f32[10,20]{1,0} parameter(0)
  %p1 = f32[20]{0} parameter(1)
  %b = f32[10,20]{1,0} broadcast(%p1), dimensions={1}
  %m = f32[10,20]{1,0} multiply(%p0, %b)
  ROOT %n = f32[10,20]{1,0} negate(%m)
}
%fused_red (q0: f32[10,20]) -> (f32[10], f32[10,20]) {
  %q0 = f32[10,20]{1,0} parameter(0)
  %ab = f32[10,20]{1,0} abs(%q0)
  %z = f32[] constant(0)
  %r = f32[10]{0} reduce(%ab, %z), dimensions={1}, to_apply=%add
  ROOT %t = (f32[10]{0}, f32[10,20]{1,0}) tuple(%r, %ab)
}
ENTRY %main (x: f32[10,20], v: f32[20]) -> (f32[10], f32[10,20]) {
  %x = f32[10,20]{1,0} parameter(0)
  %v = f32[20]{0} parameter(1)
  %f1 = f32[10,20]{1,0} fusion(%x, %v), kind=kLoop, calls=%fused_ew
  ROOT %f2 = (f32[10]{0}, f32[10,20]{1,0}) fusion(%f1), kind=kInput, calls=%fused_red
})"),
               "fused");
}

// Two kernels: the s32 and s64 results both read %a and merge (sibling elementwise loops).
TEST(CpuLlvmVsEvaluator, IntegerAndPredOps) {
  KILN_COMPARE(2, R"(
HloModule ints
ENTRY %main (a: s32[40], b: s32[40], u: u8[40]) -> (s32[40], u8[40], s64[40]) {
  %a = s32[40]{0} parameter(0)
  %b = s32[40]{0} parameter(1)
  %u = u8[40]{0} parameter(2)
  %d = s32[40]{0} divide(%a, %b)
  %r = s32[40]{0} remainder(%a, %b)
  %gt = pred[40]{0} compare(%a, %b), direction=GT
  %sel = s32[40]{0} select(%gt, %d, %r)
  %i = s32[40]{0} iota(), iota_dimension=0
  %x = s32[40]{0} xor(%sel, %i)
  %us = u8[40]{0} shift-right-logical(%u, %u)
  %um = u8[40]{0} multiply(%u, %u)
  %uo = u8[40]{0} or(%us, %um)
  %c = s64[40]{0} convert(%a)
  %cm = s64[40]{0} multiply(%c, %c)
  ROOT %t = (s32[40]{0}, u8[40]{0}, s64[40]{0}) tuple(%x, %uo, %cm)
})",
               "ints");
}

// Integer division and remainder by divisors that are not constants (computed through a
// double quotient for 32 bits and narrower) against the evaluator, over the extremes: the
// type's minimum and maximum, division by zero (XLA: x / 0 = -1, x % 0 = x), INT_MIN / -1,
// quotients just below an integer, and random pairs across the whole range; s32, u32, s16, u8,
// and s64 (still integer division).
TEST(CpuLlvmVsEvaluator, IntegerDivisionByVectors) {
  struct Case {
    const char* type;
    double lo, hi;
  };
  for (const Case& c : {Case{"s32", -2147483648.0, 2147483647.0}, Case{"u32", 0, 4294967295.0},
                        Case{"s16", -32768, 32767}, Case{"u8", 0, 255},
                        Case{"s64", -9007199254740992.0, 9007199254740992.0}}) {
    SCOPED_TRACE(c.type);
    std::vector<double> a = {c.lo, c.hi, c.lo, c.hi, -7, 7, 0, c.hi - 1, c.hi, c.lo + 1};
    std::vector<double> b = {-1, -1, 1, 1, 2, -2, 0, c.hi, c.hi - 1, 0};
    std::mt19937_64 rng(77);
    std::uniform_real_distribution<double> any(c.lo, c.hi), small(-40, 40);
    for (int i = 0; i < 4000; ++i) {
      double x = std::floor(any(rng)), y = std::floor(i % 2 ? any(rng) : small(rng));
      if (c.lo == 0) y = std::abs(y);
      a.push_back(x);
      b.push_back(y);
    }
    for (size_t i = 0; i < a.size(); ++i) {  // unsigned and narrow: keep to the range
      a[i] = std::clamp(a[i], c.lo, c.hi);
      b[i] = std::clamp(b[i], c.lo, c.hi);
    }
    const int64_t n = static_cast<int64_t>(a.size());
    const std::string text = fmt::format(R"(
HloModule div
ENTRY %main (a: {0}[{1}], b: {0}[{1}]) -> ({0}[{1}], {0}[{1}]) {{
  %a = {0}[{1}] parameter(0)
  %b = {0}[{1}] parameter(1)
  %d = {0}[{1}] divide(%a, %b)
  %r = {0}[{1}] remainder(%a, %b)
  ROOT %t = ({0}[{1}], {0}[{1}]) tuple(%d, %r)
}})",
                                         c.type, n);
    auto module = ParseHloModule(text, "div");
    ASSERT_TRUE(module.ok()) << module.status();
    std::shared_ptr<const HloModule> m = std::move(*module);
    const Shape shape = m->entry()->parameter(0)->shape();
    std::vector<Literal> args;
    args.push_back(Literal::FromDoubles(shape, a));
    args.push_back(Literal::FromDoubles(shape, b));
    HloEvaluator evaluator;
    auto want = evaluator.Evaluate(*m, args);
    ASSERT_TRUE(want.ok()) << want.status();
    auto compiler = CpuCompiler::Create(CompileOptions{});
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    auto exe = (*compiler)->Compile(m);
    ASSERT_TRUE(exe.ok()) << exe.status();
    auto got = (*exe)->Run(args);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(*got, *want, "integer division", "jit", 0);
  }
}

// Gathers generated element by element: an embedding lookup (jnp.take), starts over two
// operand dimensions with index_vector_dim first, a fused consumer, and one per row with
// batching dimensions (jnp.take_along_axis); small operands make
// the random indices (-4..7) fall before and past the ends: XLA's clamping.
TEST(CpuLlvmVsEvaluator, Gathers) {
  KILN_COMPARE(-1, std::string("HloModule gathers\n") + kAdd + R"(
ENTRY %main (table: f32[5,16], ids: s32[7,3], img: f32[4,5,4], st: s64[2,5], rows: f32[6,9], pick: s32[6,4,1]) -> (f32[7,3,16], f32[5,3,2,4], f32[7,3], f32[6,4]) {
  %table = f32[5,16]{1,0} parameter(0)
  %ids = s32[7,3]{1,0} parameter(1)
  %img = f32[4,5,4]{2,1,0} parameter(2)
  %st = s64[2,5]{1,0} parameter(3)
  %rows = f32[6,9]{1,0} parameter(4)
  %pick = s32[6,4,1]{2,1,0} parameter(5)
  %along = f32[6,4]{1,0} gather(%rows, %pick), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}
  %emb = f32[7,3,16]{2,1,0} gather(%table, %ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}
  %win = f32[5,3,2,4]{3,2,1,0} gather(%img, %st), offset_dims={1,2,3}, collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=0, slice_sizes={3,2,4}
  %e = f32[7,3,16]{2,1,0} exponential(%emb)
  %z = f32[] constant(0)
  %s = f32[7,3]{1,0} reduce(%e, %z), dimensions={2}, to_apply=%add
  ROOT %t = (f32[7,3,16]{2,1,0}, f32[5,3,2,4]{3,2,1,0}, f32[7,3]{1,0}, f32[6,4]{1,0}) tuple(%emb, %win, %s, %along)
})",
               "gathers");
}

TEST(CpuLlvmVsEvaluator, SliceConcatPadReshapeReverse) {
  KILN_COMPARE(1, R"(
HloModule dm
ENTRY %main (x: f32[6,8], y: f32[6,4]) -> f32[12,10] {
  %x = f32[6,8]{1,0} parameter(0)
  %y = f32[6,4]{1,0} parameter(1)
  %s = f32[6,4]{1,0} slice(%x), slice={[0:6], [1:8:2]}
  %c = f32[6,8]{1,0} concatenate(%s, %y), dimensions={1}
  %rv = f32[6,8]{1,0} reverse(%c), dimensions={0,1}
  %r = f32[8,6]{1,0} reshape(%rv)
  %z = f32[] constant(-3)
  %p = f32[12,10]{1,0} pad(%r, %z), padding=1_3_0x0_-1_1
  ROOT %o = f32[12,10]{1,0} sine(%p)
})",
               "dm");
}

// dynamic-slice and dynamic-update-slice generated in the kernel, with start indices of
// several integer types that XLA clamps into range (negative, past the end, in range, and
// one from a parameter).
TEST(CpuLlvmVsEvaluator, DynamicSliceAndUpdateSlice) {
  KILN_COMPARE(-1, R"(
HloModule dyn
ENTRY %main (x: f32[9,12], u: f32[4,5], k: s32[]) -> (f32[3,4], f32[9,12], f32[2,5]) {
  %x = f32[9,12] parameter(0)
  %u = f32[4,5] parameter(1)
  %k = s32[] parameter(2)
  %neg = s32[] constant(-3)
  %big = u8[] constant(200)
  %mid = s64[] constant(4)
  %one = s32[] constant(1)
  %e = f32[9,12] exponential(%x)
  %ds = f32[3,4] dynamic-slice(%e, %neg, %big), dynamic_slice_sizes={3,4}
  %dus = f32[9,12] dynamic-update-slice(%e, %u, %mid, %big)
  %t = f32[9,12] tanh(%dus)
  %dk = f32[2,5] dynamic-slice(%t, %k, %one), dynamic_slice_sizes={2,5}
  ROOT %r = (f32[3,4], f32[9,12], f32[2,5]) tuple(%ds, %t, %dk)
})",
               "dyn");
}

// Convolutions the GEMM library does not take are emitted: f64 with every window feature
// (strides, padding, lhs and rhs dilation, reversal) in an NCHW layout, feature groups,
// batch groups, bf16 and a 1-D s32 convolution, all with few features per group (every tap
// visited at a clamped position), and an f64 one with 6 (per-position tap ranges).
TEST(CpuLlvmVsEvaluator, EmittedConvolutions) {
  KILN_COMPARE(-1, R"(
HloModule convs
ENTRY %main (a: f64[2,3,7,8], aw: f64[4,3,3,2], g: f32[2,6,6,4], gw: f32[3,3,2,6], bg: f32[4,5,5,3], bgw: f32[3,3,3,2], h: bf16[1,5,5,3], hw: bf16[3,3,3,2], i: s32[2,9,2], iw: s32[3,2,3], wd: f64[1,7,6,6], wdw: f64[3,3,6,2]) -> (f64[2,4,3,15], f32[2,6,6,6], f32[2,3,3,2], bf16[1,3,3,2], s32[2,4,3], f64[1,4,3,2]) {
  %a = f64[2,3,7,8] parameter(0)
  %aw = f64[4,3,3,2] parameter(1)
  %ca = f64[2,4,3,15] convolution(%a, %aw), window={size=3x2 stride=2x1 pad=1_2x0_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=bf01_oi01->bf01
  %g = f32[2,6,6,4] parameter(2)
  %gw = f32[3,3,2,6] parameter(3)
  %cg = f32[2,6,6,6] convolution(%g, %gw), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  %bg = f32[4,5,5,3] parameter(4)
  %bgw = f32[3,3,3,2] parameter(5)
  %cb = f32[2,3,3,2] convolution(%bg, %bgw), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
  %h = bf16[1,5,5,3] parameter(6)
  %hw = bf16[3,3,3,2] parameter(7)
  %ch = bf16[1,3,3,2] convolution(%h, %hw), window={size=3x3}, dim_labels=b01f_01io->b01f
  %i = s32[2,9,2] parameter(8)
  %iw = s32[3,2,3] parameter(9)
  %ci = s32[2,4,3] convolution(%i, %iw), window={size=3 stride=2}, dim_labels=b0f_0io->b0f
  %wd = f64[1,7,6,6] parameter(10)
  %wdw = f64[3,3,6,2] parameter(11)
  %cw = f64[1,4,3,2] convolution(%wd, %wdw), window={size=3x3 stride=2x2 pad=1_1x1_0}, dim_labels=b01f_01io->b01f
  ROOT %r = (f64[2,4,3,15], f32[2,6,6,6], f32[2,3,3,2], bf16[1,3,3,2], s32[2,4,3], f64[1,4,3,2]) tuple(%ca, %cg, %cb, %ch, %ci, %cw)
})",
               "convs");
}

// A depthwise convolution's filter gradient as jax.grad writes it (batch groups, one per
// input batch slice and kernel output), planned as one reduce kernel per output position
// (nine) and one that stacks them.
TEST(CpuLlvmVsEvaluator, DepthwiseFilterGradient) {
  KILN_COMPARE(10, R"(
HloModule depthwise_grad
ENTRY %main (x: f32[2,10,10,16], g: f32[2,5,5,16]) -> f32[3,3,1,16] {
  %x = f32[2,10,10,16] parameter(0)
  %g = f32[2,5,5,16] parameter(1)
  ROOT %c = f32[3,3,1,16] convolution(%x, %g), window={size=5x5 pad=1_0x1_0 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, batch_group_count=16
})",
               "depthwise_grad");
}

// Pooling: max and sum windows with padding, strides, lhs/rhs dilation, a non-identity init
// (positions outside the input are skipped, as the evaluator does), an integer reducer, and
// a computed input (relu) read at clamped positions.
TEST(CpuLlvmVsEvaluator, ReduceWindows) {
  KILN_COMPARE(-1, R"(
HloModule windows
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%maxi (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %m = s32[] maximum(%a, %b)
}
ENTRY %main (x: f32[2,9,10,3], y: f32[4,11], z: s32[13]) -> (f32[2,5,5,3], f32[4,11], f32[6,3], s32[7]) {
  %x = f32[2,9,10,3] parameter(0)
  %zero = f32[] constant(0)
  %zb = f32[2,9,10,3] broadcast(%zero), dimensions={}
  %relu = f32[2,9,10,3] maximum(%x, %zb)
  %ninf = f32[] constant(-inf)
  %pool = f32[2,5,5,3] reduce-window(%relu, %ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=%max
  %y = f32[4,11] parameter(1)
  %sum = f32[4,11] reduce-window(%y, %zero), window={size=2x3 pad=1_0x1_1}, to_apply=%add
  %one = f32[] constant(1)
  %dil = f32[6,3] reduce-window(%y, %one), window={size=2x2 stride=1x3 lhs_dilate=2x1 rhs_dilate=1x2}, to_apply=%add
  %z = s32[13] parameter(2)
  %imin = s32[] constant(-2147483648)
  %zi = s32[7] reduce-window(%z, %imin), window={size=3 stride=2 pad=1_1}, to_apply=%maxi
  ROOT %r = (f32[2,5,5,3], f32[4,11], f32[6,3], s32[7]) tuple(%pool, %sum, %dil, %zi)
})",
               "windows");
}

// Long windows, whose f32/f64 add and multiply reducers are reassociated so the window loop
// vectorizes: a moving average with padding on both sides (positions outside are skipped
// lanes of the conditional reduction), a dilated window, and an f64 product.
TEST(CpuLlvmVsEvaluator, LongReassociatedWindows) {
  KILN_COMPARE(-1, R"(
HloModule long_windows
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%mul (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %p = f64[] multiply(%a, %b)
}
ENTRY %main (x: f32[3,300], y: f64[2,200]) -> (f32[3,18], f32[3,5], f64[2,33]) {
  %x = f32[3,300] parameter(0)
  %zero = f32[] constant(0)
  %avg = f32[3,18] reduce-window(%x, %zero), window={size=1x64 stride=1x16 pad=0_0x20_30}, to_apply=%add
  %half = f32[] constant(0.5)
  %dil = f32[3,5] reduce-window(%x, %half), window={size=1x33 stride=1x50 rhs_dilate=1x3}, to_apply=%add
  %y = f64[2,200] parameter(1)
  %tenth = f64[] constant(0.1)
  %tb = f64[2,200] broadcast(%tenth), dimensions={}
  %one = f64[] constant(1)
  %ob = f64[2,200] broadcast(%one), dimensions={}
  %small = f64[2,200] multiply(%y, %tb)
  %near1 = f64[2,200] add(%ob, %small)
  %prod = f64[2,33] reduce-window(%near1, %one), window={size=1x40 stride=1x5 pad=0_0x0_1}, to_apply=%mul
  ROOT %r = (f32[3,18], f32[3,5], f64[2,33]) tuple(%avg, %dil, %prod)
})",
               "long_windows");
}

constexpr const char* kMax = R"(
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] minimum(%a, %b)
}
)";

// Layernorm + GELU(tanh) as in benchmarks/cpu_workloads.py: both row statistics are
// generated inside the one output kernel, once per row.
TEST(CpuLlvmVsEvaluator, LayernormGeluOneKernel) {
  KILN_COMPARE(1, std::string("HloModule ln\n") + kAdd + R"(
ENTRY %main (x: f32[37,96]) -> f32[37,96] {
  %x = f32[37,96] parameter(0)
  %zero = f32[] constant(0)
  %invn = f32[] constant(0.010416666666666666)
  %invnb = f32[37] broadcast(%invn), dimensions={}
  %sum = f32[37] reduce(%x, %zero), dimensions={1}, to_apply=%add
  %mean = f32[37] multiply(%sum, %invnb)
  %meanb = f32[37,96] broadcast(%mean), dimensions={0}
  %xc = f32[37,96] subtract(%x, %meanb)
  %sq = f32[37,96] multiply(%xc, %xc)
  %ss = f32[37] reduce(%sq, %zero), dimensions={1}, to_apply=%add
  %var = f32[37] multiply(%ss, %invnb)
  %eps = f32[] constant(1e-05)
  %epsb = f32[37] broadcast(%eps), dimensions={}
  %ve = f32[37] add(%var, %epsb)
  %rs = f32[37] rsqrt(%ve)
  %rsb = f32[37,96] broadcast(%rs), dimensions={0}
  %y = f32[37,96] multiply(%xc, %rsb)
  %half = f32[] constant(0.5)
  %one = f32[] constant(1)
  %k = f32[] constant(0.797884583)
  %a = f32[] constant(0.044715)
  %halfb = f32[37,96] broadcast(%half), dimensions={}
  %oneb = f32[37,96] broadcast(%one), dimensions={}
  %kb = f32[37,96] broadcast(%k), dimensions={}
  %ab = f32[37,96] broadcast(%a), dimensions={}
  %y2 = f32[37,96] multiply(%y, %y)
  %y3 = f32[37,96] multiply(%y2, %y)
  %ay3 = f32[37,96] multiply(%ab, %y3)
  %in = f32[37,96] add(%y, %ay3)
  %kin = f32[37,96] multiply(%kb, %in)
  %t = f32[37,96] tanh(%kin)
  %ot = f32[37,96] add(%oneb, %t)
  %hy = f32[37,96] multiply(%halfb, %y)
  ROOT %g = f32[37,96] multiply(%hy, %ot)
})",
               "layernorm_gelu");
}

// Softmax over the last axis of a rank-3 array: statistics indexed by two outer loops.
TEST(CpuLlvmVsEvaluator, Softmax3dRowStatistics) {
  KILN_COMPARE(1, std::string("HloModule sm3\n") + kAdd + kMax + R"(
ENTRY %main (x: f32[4,6,33]) -> f32[4,6,33] {
  %x = f32[4,6,33] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[4,6] reduce(%x, %ninf), dimensions={2}, to_apply=%max
  %mb = f32[4,6,33] broadcast(%m), dimensions={0,1}
  %d = f32[4,6,33] subtract(%x, %mb)
  %e = f32[4,6,33] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[4,6] reduce(%e, %zero), dimensions={2}, to_apply=%add
  %sb = f32[4,6,33] broadcast(%s), dimensions={0,1}
  ROOT %y = f32[4,6,33] divide(%e, %sb)
})",
               "softmax3d");
}

// A column statistic would be needed at every element of the inner loop: it stays a kernel.
TEST(CpuLlvmVsEvaluator, ColumnStatisticStaysMaterialized) {
  KILN_COMPARE(2, std::string("HloModule col\n") + kAdd + R"(
ENTRY %main (x: f32[40,24]) -> f32[40,24] {
  %x = f32[40,24] parameter(0)
  %zero = f32[] constant(0)
  %c = f32[24] reduce(%x, %zero), dimensions={0}, to_apply=%add
  %cb = f32[40,24] broadcast(%c), dimensions={1}
  ROOT %d = f32[40,24] subtract(%x, %cb)
})",
               "column_stat");
}

// Row statistics inside a fusion, one of them read under a concatenate's branch (generated
// there, not hoisted out of the branch) and a scalar statistic under a clamp.
TEST(CpuLlvmVsEvaluator, FusedRowStatisticsUnderBranches) {
  KILN_COMPARE(1, std::string("HloModule fr\n") + kAdd + kMax + R"(
%fused (p: f32[12,20], q: f32[12,5]) -> f32[12,25] {
  %p = f32[12,20] parameter(0)
  %q = f32[12,5] parameter(1)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %m = f32[12] reduce(%p, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[12,20] broadcast(%m), dimensions={0}
  %d = f32[12,20] subtract(%p, %mb)
  %total = f32[] reduce(%q, %zero), dimensions={0,1}, to_apply=%add
  %lo = f32[] negate(%total)
  %cl = f32[12,5] clamp(%lo, %q, %total)
  %s = f32[12] reduce(%cl, %zero), dimensions={1}, to_apply=%add
  %sb = f32[12,5] broadcast(%s), dimensions={0}
  %qs = f32[12,5] multiply(%cl, %sb)
  ROOT %c = f32[12,25] concatenate(%d, %qs), dimensions={1}
}
ENTRY %main (x: f32[12,20], y: f32[12,5]) -> f32[12,25] {
  %x = f32[12,20] parameter(0)
  %y = f32[12,5] parameter(1)
  ROOT %f = f32[12,25] fusion(%x, %y), kind=kLoop, calls=%fused
})",
               "fused_rows");
}

// Max/min reductions give NaN for rows holding a NaN (log of the negative inputs) and the
// extreme value elsewhere; rows of three leave about one row in eight NaN-free.
TEST(CpuLlvmVsEvaluator, MaxMinReductionsPropagateNaN) {
  KILN_COMPARE(-1, std::string("HloModule nan\n") + kMax + R"(
ENTRY %main (x: f32[64,3], y: f64[64,3]) -> (f32[64], f32[64], f64[64]) {
  %x = f32[64,3] parameter(0)
  %l = f32[64,3] log(%x)
  %ninf = f32[] constant(-inf)
  %inf = f32[] constant(inf)
  %mx = f32[64] reduce(%l, %ninf), dimensions={1}, to_apply=%max
  %mn = f32[64] reduce(%l, %inf), dimensions={1}, to_apply=%min
  %y = f64[64,3] parameter(1)
  %ly = f64[64,3] log(%y)
  %ninfd = f64[] constant(-inf)
  %mxd = f64[64] reduce(%ly, %ninfd), dimensions={1}, to_apply=%maxd
  ROOT %t = (f32[64], f32[64], f64[64]) tuple(%mx, %mn, %mxd)
}
%maxd (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %m = f64[] maximum(%a, %b)
})",
               "nan_minmax");
}

// The same in bf16 and f16 (computed widened to f32, rounded once at the end), over rows of
// 3 (many hold a NaN) and of 1000 (the vectorized loop), as a bf16 softmax's row max is.
TEST(CpuLlvmVsEvaluator, NarrowMaxMinReductionsPropagateNaN) {
  KILN_COMPARE(-1, R"(
HloModule nan16
%maxb (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %m = bf16[] maximum(%a, %b)
}
%minh (a: f16[], b: f16[]) -> f16[] {
  %a = f16[] parameter(0)
  %b = f16[] parameter(1)
  ROOT %m = f16[] minimum(%a, %b)
}
ENTRY %main (x: f32[64,3], y: f32[16,1000]) -> (bf16[64], f16[64], bf16[16], f16[16]) {
  %x = f32[64,3] parameter(0)
  %l = f32[64,3] log(%x)
  %lb = bf16[64,3] convert(%l)
  %lh = f16[64,3] convert(%l)
  %ninf = bf16[] constant(-inf)
  %inf = f16[] constant(inf)
  %mx = bf16[64] reduce(%lb, %ninf), dimensions={1}, to_apply=%maxb
  %mn = f16[64] reduce(%lh, %inf), dimensions={1}, to_apply=%minh
  %y = f32[16,1000] parameter(1)
  %ly = f32[16,1000] log(%y)
  %yb = bf16[16,1000] convert(%ly)
  %yh = f16[16,1000] convert(%ly)
  %my = bf16[16] reduce(%yb, %ninf), dimensions={1}, to_apply=%maxb
  %ny = f16[16] reduce(%yh, %inf), dimensions={1}, to_apply=%minh
  ROOT %t = (bf16[64], f16[64], bf16[16], f16[16]) tuple(%mx, %mn, %my, %ny)
})",
               "nan_minmax_16");
}

// The f32 polynomial math over a wide range (inputs scaled to [-60, 60]; log of |x|); the
// five results all read %w and are one kernel (sibling elementwise loops merged).
TEST(CpuLlvmVsEvaluator, FastMathWideRange) {
  KILN_COMPARE(1, R"(
HloModule wide
ENTRY %main (x: f32[4096]) -> (f32[4096], f32[4096], f32[4096], f32[4096], f32[4096]) {
  %x = f32[4096] parameter(0)
  %c = f32[] constant(60)
  %cb = f32[4096] broadcast(%c), dimensions={}
  %w = f32[4096] multiply(%x, %cb)
  %e = f32[4096] exponential(%w)
  %a = f32[4096] abs(%w)
  %l = f32[4096] log(%a)
  %t = f32[4096] tanh(%w)
  %r = f32[4096] erf(%w)
  %g = f32[4096] logistic(%w)
  ROOT %o = (f32[4096], f32[4096], f32[4096], f32[4096], f32[4096]) tuple(%e, %l, %t, %r, %g)
})",
               "wide");
}

// Reductions to a scalar large enough to run in two stages (16 parts, then a combine), and
// one whose dimension 0 is shorter than the part count.
TEST(CpuLlvmVsEvaluator, TwoStageScalarReductions) {
  KILN_COMPARE(3, std::string("HloModule two\n") + kAdd + kMax + R"(
ENTRY %main (x: f32[300,257], y: f32[5,20000]) -> (f32[], f32[], f32[]) {
  %x = f32[300,257] parameter(0)
  %y = f32[5,20000] parameter(1)
  %zero = f32[] constant(0)
  %ninf = f32[] constant(-inf)
  %s = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%add
  %m = f32[] reduce(%x, %ninf), dimensions={0,1}, to_apply=%max
  %sy = f32[] reduce(%y, %zero), dimensions={0,1}, to_apply=%add
  ROOT %t = (f32[], f32[], f32[]) tuple(%s, %m, %sy)
})",
               "two_stage");
}

// A mean of a large reduction to a scalar (a binary cross-entropy's): the reduction is a
// kernel of its own, run in parts across threads, and the division a second, scalar one. In
// one kernel with the division, the reduction ran on one thread.
TEST(CpuLlvmVsEvaluator, MeanOfALargeScalarReductionRunsInParts) {
  KILN_COMPARE(2, std::string("HloModule mean\n") + kAdd + R"(
ENTRY %main (x: f32[512,1024]) -> f32[] {
  %x = f32[512,1024] parameter(0)
  %a = f32[512,1024] abs(%x)
  %n = f32[512,1024] negate(%a)
  %e = f32[512,1024] exponential(%n)
  %l = f32[512,1024] log-plus-one(%e)
  %zero = f32[] constant(0)
  %s = f32[] reduce(%l, %zero), dimensions={0,1}, to_apply=%add
  %count = f32[] constant(524288)
  ROOT %m = f32[] divide(%s, %count)
})",
               "mean");
}

// A mean of per-row logsumexps: the scalar reduce reads 512 values, but a million
// exponentials are generated below it, so it is a kernel of its own, split into parts over the
// rows, instead of one thread's work inside the division's kernel.
TEST(CpuLlvmVsEvaluator, MeanOfRowReductionsRunsInParts) {
  KILN_COMPARE(2, std::string("HloModule mean_lse\n") + kAdd + kMax + R"(
ENTRY %main (x: f32[512,2048]) -> f32[] {
  %x = f32[512,2048] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[512] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mxb = f32[512,2048] broadcast(%mx), dimensions={0}
  %d = f32[512,2048] subtract(%x, %mxb)
  %e = f32[512,2048] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[512] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %l = f32[512] log(%s)
  %lse = f32[512] add(%l, %mx)
  %t = f32[] reduce(%lse, %zero), dimensions={0}, to_apply=%add
  %count = f32[] constant(512)
  ROOT %m = f32[] divide(%t, %count)
})",
               "mean_lse");
}

// A batch of 2x2 products (an associative scan of matrices): one emitted kernel, not a
// library call per matrix (kMinBatchedLibraryMnk).
TEST(CpuLlvmVsEvaluator, BatchOfTinyMatricesIsEmitted) {
  KILN_COMPARE(1, R"(
HloModule tiny
ENTRY %main (a: f32[2048,2,2], b: f32[2048,2,2]) -> f32[2048,2,2] {
  %a = f32[2048,2,2] parameter(0)
  %b = f32[2048,2,2] parameter(1)
  ROOT %d = f32[2048,2,2] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})",
               "tiny");
}

// reduce-precision is emitted for f32 and f64 (it ran on the host evaluator: 4.7 ms for 2^22
// values against XLA:CPU's 1.2), bit for bit as the evaluator computes it: ties rounding to
// even, carries into the exponent, overflow to infinity, underflow and denormals to zero,
// NaN kept while a mantissa bit is left.
TEST(CpuLlvmVsEvaluator, ReducePrecisionBitForBit) {
  const std::string text = R"(
HloModule rp
ENTRY %main (x: f32[4096], d: f64[4096]) -> (f32[4096], f32[4096], f32[4096], f32[4096], f64[4096], f64[4096]) {
  %x = f32[4096] parameter(0)
  %d = f64[4096] parameter(1)
  %a = f32[4096] reduce-precision(%x), exponent_bits=8, mantissa_bits=7
  %b = f32[4096] reduce-precision(%x), exponent_bits=5, mantissa_bits=10
  %c = f32[4096] reduce-precision(%x), exponent_bits=4, mantissa_bits=3
  %e = f32[4096] reduce-precision(%x), exponent_bits=2, mantissa_bits=0
  %f = f64[4096] reduce-precision(%d), exponent_bits=8, mantissa_bits=23
  %g = f64[4096] reduce-precision(%d), exponent_bits=11, mantissa_bits=4
  ROOT %t = (f32[4096], f32[4096], f32[4096], f32[4096], f64[4096], f64[4096]) tuple(%a, %b, %c, %e, %f, %g)
}
)";
  // Values across the exponent range, halfway cases, infinities, NaN, signed zeros and
  // denormals.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-150, 130);
  std::vector<double> v(4096);
  for (double& x : v) x = std::ldexp(mantissa(rng), exponent(rng)) * (rng() % 2 ? 1 : -1);
  const double specials[] = {
      0.0,    -0.0,  INFINITY, -INFINITY, NAN, 1.0 + 1.0 / 256, 1.0 + 3.0 / 256, 65504.0, 65520.0,
      6.1e-5, 1e-40, -1e-45,   3.4e38,    1.5, 2.0 - 1.0 / 1024};
  for (size_t i = 0; i < std::size(specials); ++i) v[i] = specials[i];
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PT::F32, {4096}), v));
  args.push_back(Literal::FromDoubles(Shape(PT::F64, {4096}), v));
  auto parsed = ParseHloModule(text, "rp");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto compiler = CpuCompiler::Create();
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_GE((*exe)->kernel_count(), 1);  // emitted, not left to the evaluator
  auto got = (*exe)->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int k = 0; k < 6; ++k) {
    const Literal& g = got->element(k);
    const Literal& w = want->element(k);
    const int64_t width = ByteSizeOf(g.shape().element_type());
    for (int64_t i = 0; i < 4096; ++i)
      ASSERT_EQ(std::memcmp(g.untyped_data() + i * width, w.untyped_data() + i * width, width), 0)
          << "output " << k << " element " << i << ": " << g.GetAsDouble(i) << " vs "
          << w.GetAsDouble(i) << " (input " << v[i] << ")";
  }
}

}  // namespace
}  // namespace kiln::cpu
