// Sibling kernels merged after kernel-fusion (PlanOptions::merge_sibling_kernels): two
// elementwise loops over one state, as a round of JAX's threefry writes its two halves,
// become one kernel with two outputs, against hand-computed u32 values; a sibling that is a
// row reduction stays a kernel of its own (its loop is not the elementwise one), but row
// reductions over the same rows (a standardization's sum and sum of squares) are one kernel,
// against a double reference. Producer-consumer merging: an Adam step's new moments, read by
// the update and returned, are computed in the update's kernel.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

// out0 = (a + b) + k, out1 = ((a + b) ^ rotl(b, r[0])) + k: the cone a + b is read by both.
constexpr char kRound[] = R"(HloModule round
ENTRY main {
  a = u32[4096] parameter(0)
  b = u32[4096] parameter(1)
  r = u32[4] parameter(2)
  k = u32[] parameter(3)
  s = u32[1] slice(r), slice={[0:1]}
  sh = u32[] reshape(s)
  c32 = u32[] constant(32)
  rsh = u32[] subtract(c32, sh)
  shb = u32[4096] broadcast(sh), dimensions={}
  rshb = u32[4096] broadcast(rsh), dimensions={}
  kb = u32[4096] broadcast(k), dimensions={}
  ab = u32[4096] add(a, b)
  left = u32[4096] shift-left(b, shb)
  right = u32[4096] shift-right-logical(b, rshb)
  rot = u32[4096] or(left, right)
  x = u32[4096] xor(ab, rot)
  out0 = u32[4096] add(ab, kb)
  out1 = u32[4096] add(x, kb)
  ROOT t = (u32[4096], u32[4096]) tuple(out0, out1)
})";

Literal U32(std::vector<int64_t> dims, uint32_t seed) {
  Literal l = Literal::Uninitialized(Shape(PrimitiveType::U32, std::move(dims)));
  uint32_t v = seed;
  for (uint32_t& e : l.data<uint32_t>()) e = v = v * 1664525u + 1013904223u;
  return l;
}

// Kernels over arrays (the scalar set-up of shift amounts has kernels of its own).
std::vector<const llvm_emit::KernelSpec*> ArrayKernels(const CpuExecutable& exe) {
  std::vector<const llvm_emit::KernelSpec*> found;
  for (const llvm_emit::KernelSpec& k : exe.plan().kernels)
    if (k.outputs[0]->shape().num_elements() > 1) found.push_back(&k);
  return found;
}

size_t KernelCount(const std::string& text, bool merge) {
  CompileOptions opts;
  opts.plan.merge_sibling_kernels = merge;
  const testing::CompiledText c = testing::CompileText(text, opts);
  return c.exe == nullptr ? 0 : ArrayKernels(*c.exe).size();
}

TEST(SiblingFusion, ThreefryRoundHalvesAreOneKernel) {
  EXPECT_EQ(KernelCount(kRound, false), 2u);
  EXPECT_EQ(KernelCount(kRound, true), 1u);
  CompileOptions opts;
  ASSERT_TRUE(opts.plan.merge_sibling_kernels) << "cpu-llvm merges by default";
  const testing::CompiledText c = testing::CompileText(kRound, opts);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_EQ(ArrayKernels(*c.exe).size(), 1u);
  EXPECT_EQ(ArrayKernels(*c.exe)[0]->outputs.size(), 2u);
  Literal a = U32({4096}, 1), b = U32({4096}, 2);
  Literal r = Literal::Uninitialized(Shape(PrimitiveType::U32, {4}));
  r.data<uint32_t>()[0] = 13;
  Literal k = Literal::Uninitialized(Shape(PrimitiveType::U32, {}));
  k.data<uint32_t>()[0] = 466688986u;
  const std::vector<Literal> args = {a, b, r, k};
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < 4096; ++i) {
    const uint32_t ai = a.data<uint32_t>()[i], bi = b.data<uint32_t>()[i];
    const uint32_t ab = ai + bi, rot = (bi << 13) | (bi >> 19);
    ASSERT_EQ(got->element(0).data<uint32_t>()[i], ab + 466688986u) << i;
    ASSERT_EQ(got->element(1).data<uint32_t>()[i], (ab ^ rot) + 466688986u) << i;
  }
}

// Siblings of different element types over an array large enough to be split across the
// pool: one kernel, one loop nest over [512, 1024] storing both outputs.
constexpr char kLargeSiblings[] = R"(HloModule large
ENTRY main {
  x = f32[512,1024] parameter(0)
  y = f32[512,1024] parameter(1)
  p = f32[512,1024] multiply(x, y)
  c = f32[] constant(0.25)
  cb = f32[512,1024] broadcast(c), dimensions={}
  out0 = f32[512,1024] add(p, cb)
  z = f32[] constant(0)
  zb = f32[512,1024] broadcast(z), dimensions={}
  gt = pred[512,1024] compare(p, zb), direction=GT
  one = s32[] constant(1)
  oneb = s32[512,1024] broadcast(one), dimensions={}
  zi = s32[] constant(0)
  zib = s32[512,1024] broadcast(zi), dimensions={}
  out1 = s32[512,1024] select(gt, oneb, zib)
  ROOT t = (f32[512,1024], s32[512,1024]) tuple(out0, out1)
})";

TEST(SiblingFusion, LargeSiblingsOfTwoTypesShareOnePartitionedKernel) {
  CompileOptions opts;
  opts.threads = 2;
  const testing::CompiledText c = testing::CompileText(kLargeSiblings, opts);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_EQ(ArrayKernels(*c.exe).size(), 1u);
  EXPECT_TRUE(ArrayKernels(*c.exe)[0]->partition_outer);
  Literal x = Literal::Uninitialized(Shape(PrimitiveType::F32, {512, 1024}));
  Literal y = Literal::Uninitialized(Shape(PrimitiveType::F32, {512, 1024}));
  for (int64_t i = 0; i < 512 * 1024; ++i) {
    x.data<float>()[i] = static_cast<float>(i % 97) - 48.0f;
    y.data<float>()[i] = static_cast<float>(i % 13) * 0.5f - 3.0f;
  }
  const std::vector<Literal> args = {x, y};
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < 512 * 1024; ++i) {
    const float p = x.data<float>()[i] * y.data<float>()[i];
    ASSERT_EQ(got->element(0).data<float>()[i], p + 0.25f) << i;
    ASSERT_EQ(got->element(1).data<int32_t>()[i], p > 0 ? 1 : 0) << i;
  }
}

// The sum of each row of x * x beside x * x + 1: one reads the other's cone, but a row
// reduction's kernel is not a plain loop over the output, so the two stay apart.
constexpr char kReduceSibling[] = R"(HloModule rows
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  sq = f32[64,256] multiply(x, x)
  z = f32[] constant(0)
  rows = f32[64] reduce(sq, z), dimensions={1}, to_apply=add
  one = f32[] constant(1)
  oneb = f32[64,256] broadcast(one), dimensions={}
  e = f32[64,256] add(sq, oneb)
  ROOT t = (f32[64], f32[64,256]) tuple(rows, e)
})";

TEST(SiblingFusion, RowReductionSiblingStaysApart) {
  EXPECT_EQ(KernelCount(kReduceSibling, true), KernelCount(kReduceSibling, false));
  EXPECT_EQ(KernelCount(kReduceSibling, true), 2u);
}

// Each row's sum, sum of squares and maximum |x| of f32[512,1024] (large enough to be split
// across the pool), and the sum over the columns (not a row reduction: stays apart).
constexpr char kRowStatistics[] = R"(HloModule stats
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
max {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT m = f32[] maximum(p, q)
}
ENTRY main {
  x = f32[512,1024] parameter(0)
  z = f32[] constant(0)
  sum = f32[512] reduce(x, z), dimensions={1}, to_apply=add
  sq = f32[512,1024] multiply(x, x)
  sumsq = f32[512] reduce(sq, z), dimensions={1}, to_apply=add
  ax = f32[512,1024] abs(x)
  ninf = f32[] constant(-inf)
  amax = f32[512] reduce(ax, ninf), dimensions={1}, to_apply=max
  cols = f32[1024] reduce(x, z), dimensions={0}, to_apply=add
  ROOT t = (f32[512], f32[512], f32[512], f32[1024]) tuple(sum, sumsq, amax, cols)
})";

TEST(SiblingFusion, RowReductionsOverTheSameRowsAreOneKernel) {
  EXPECT_EQ(KernelCount(kRowStatistics, false), 4u);
  EXPECT_EQ(KernelCount(kRowStatistics, true), 2u);
  const testing::CompiledText c = testing::CompileText(kRowStatistics, CompileOptions());
  ASSERT_NE(c.exe, nullptr);
  Literal x = Literal::Uninitialized(Shape(PrimitiveType::F32, {512, 1024}));
  uint32_t v = 7;
  for (float& e : x.data<float>()) {
    v = v * 1664525u + 1013904223u;
    e = static_cast<float>(v >> 8) / static_cast<float>(1 << 24) * 4.0f - 2.0f;
  }
  std::vector<Literal> args;
  args.push_back(std::move(x));
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  const float* in = args[0].data<float>().data();
  for (int r = 0; r < 512; ++r) {
    double sum = 0, sumabs = 0, sumsq = 0, amax = 0;
    for (int k = 0; k < 1024; ++k) {
      const double e = in[r * 1024 + k];
      sum += e;
      sumabs += std::abs(e);
      sumsq += e * e;
      amax = std::max(amax, std::abs(e));
    }
    // f32 sums in some order: within a few float roundings of the summed magnitudes.
    ASSERT_NEAR(got->element(0).data<float>()[r], sum, 1e-5 * sumabs) << r;
    ASSERT_NEAR(got->element(1).data<float>()[r], sumsq, 1e-5 * sumsq) << r;
    ASSERT_EQ(got->element(2).data<float>()[r], static_cast<float>(amax)) << r;
  }
  for (int k = 0; k < 1024; ++k) {
    double cols = 0, colsabs = 0;
    for (int r = 0; r < 512; ++r) {
      cols += in[r * 1024 + k];
      colsabs += std::abs(in[r * 1024 + k]);
    }
    ASSERT_NEAR(got->element(3).data<float>()[k], cols, 1e-5 * colsabs) << k;
  }
}

// m' = 0.9 m + 0.1 g, v' = 0.999 v + 0.001 g^2, p' = p - 0.01 m' / (sqrt(v') + 1e-8), all
// returned. Kernel-fusion computes m' and v' into memory (the update reads them and they are
// outputs), sibling merging puts them in one kernel (both read g), and producer-consumer
// merging computes that kernel inside the update's: one kernel writing three outputs.
constexpr char kAdam[] = R"(HloModule adam
ENTRY main {
  p = f32[256,256] parameter(0)
  g = f32[256,256] parameter(1)
  m = f32[256,256] parameter(2)
  v = f32[256,256] parameter(3)
  b1 = f32[256,256] broadcast(f32[] constant(0.9)), dimensions={}
  c1 = f32[256,256] broadcast(f32[] constant(0.1)), dimensions={}
  b2 = f32[256,256] broadcast(f32[] constant(0.999)), dimensions={}
  c2 = f32[256,256] broadcast(f32[] constant(0.001)), dimensions={}
  lr = f32[256,256] broadcast(f32[] constant(0.01)), dimensions={}
  eps = f32[256,256] broadcast(f32[] constant(1e-08)), dimensions={}
  m1 = f32[256,256] add(f32[256,256] multiply(b1, m), f32[256,256] multiply(c1, g))
  gg = f32[256,256] multiply(g, g)
  v1 = f32[256,256] add(f32[256,256] multiply(b2, v), f32[256,256] multiply(c2, gg))
  den = f32[256,256] add(f32[256,256] sqrt(v1), eps)
  step = f32[256,256] divide(f32[256,256] multiply(lr, m1), den)
  p1 = f32[256,256] subtract(p, step)
  ROOT t = (f32[256,256], f32[256,256], f32[256,256]) tuple(p1, m1, v1)
})";

TEST(ProducerConsumerFusion, AdamMomentsAreComputedInTheUpdateKernel) {
  EXPECT_EQ(KernelCount(kAdam, false), 3u);
  CompileOptions siblings_only;
  siblings_only.plan.merge_producer_kernels = false;
  const testing::CompiledText apart = testing::CompileText(kAdam, siblings_only);
  ASSERT_NE(apart.exe, nullptr);
  EXPECT_EQ(ArrayKernels(*apart.exe).size(), 2u);
  CompileOptions opts;
  opts.threads = 2;
  const testing::CompiledText c = testing::CompileText(kAdam, opts);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_EQ(ArrayKernels(*c.exe).size(), 1u);
  EXPECT_EQ(ArrayKernels(*c.exe)[0]->outputs.size(), 3u);
  std::vector<Literal> args;
  for (int a = 0; a < 4; ++a) {
    args.push_back(Literal::Uninitialized(Shape(PrimitiveType::F32, {256, 256})));
    for (int64_t i = 0; i < 256 * 256; ++i)
      args.back().data<float>()[i] =
          a == 3 ? static_cast<float>((i * 7 + 3) % 101) * 0.01f
                 : static_cast<float>((i * (a + 5) + a) % 89) * 0.02f - 0.9f;
  }
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < 256 * 256; ++i) {
    const double p = args[0].data<float>()[i], g = args[1].data<float>()[i];
    const double m = 0.9 * args[2].data<float>()[i] + 0.1 * g;
    const double v = 0.999 * args[3].data<float>()[i] + 0.001 * g * g;
    const double want[] = {p - 0.01 * m / (std::sqrt(v) + 1e-8), m, v};
    for (int o = 0; o < 3; ++o)
      ASSERT_NEAR(got->element(o).data<float>()[i], want[o], 1e-5 * (1 + std::fabs(want[o])))
          << "output " << o << " element " << i;
  }
}

}  // namespace
}  // namespace kiln::cpu
