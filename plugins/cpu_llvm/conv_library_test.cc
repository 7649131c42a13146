// Convolutions routed to the library (oneDNN's direct convolution, else im2col + GEMM) against
// the HLO evaluator, over dimension orders, strides, padding, lhs/rhs dilation, reversal,
// 1-D/3-D windows, feature groups and pools of 1 to 3 threads (batch and feature slices); and
// the cases that must stay off the library path.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/onednn_conv.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

Literal Random(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(s.num_elements());
  for (double& x : v) x = dist(rng);
  return Literal::FromDoubles(s, v);
}

struct ConvCase {
  std::string name, lhs, rhs, out, attrs;
};

std::vector<ConvCase> Cases() {
  return {
      {"nhwc_same", "f32[2,9,9,3]", "f32[3,3,3,5]", "f32[2,9,9,5]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      {"nchw_stride2_valid", "f32[2,4,11,10]", "f32[6,4,3,2]", "f32[2,6,5,5]",
       "window={size=3x2 stride=2x2}, dim_labels=bf01_oi01->bf01"},
      {"rhs_dilation_asym_pad", "f32[1,12,12,2]", "f32[3,3,2,4]", "f32[1,11,9,4]",
       "window={size=3x3 pad=2_1x0_1 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f"},
      {"lhs_dilation_transposed_conv", "f32[2,5,5,3]", "f32[3,3,3,2]", "f32[2,11,11,2]",
       "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f"},
      {"reversal", "f32[1,7,7,2]", "f32[3,3,2,3]", "f32[1,5,5,3]",
       "window={size=3x3 rhs_reversal=1x1}, dim_labels=b01f_01io->b01f"},
      {"output_fb01", "f32[3,8,8,4]", "f32[2,2,4,5]", "f32[5,3,7,7]",
       "window={size=2x2}, dim_labels=b01f_01io->fb01"},
      {"conv1d", "f32[4,30,6]", "f32[5,6,7]", "f32[4,26,7]",
       "window={size=5}, dim_labels=b0f_0io->b0f"},
      {"conv3d", "f32[1,6,6,6,2]", "f32[3,3,3,2,3]", "f32[1,4,4,4,3]",
       "window={size=3x3x3}, dim_labels=b012f_012io->b012f"},
      // A ResNet block's shape: oneDNN cuts the batch across the pool.
      {"resnet_3x3", "f32[8,16,16,16]", "f32[3,3,16,16]", "f32[8,16,16,16]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      // One image: cut into bands of output rows.
      {"one_image_features", "f32[1,10,10,8]", "f32[3,3,8,40]", "f32[1,8,8,40]",
       "window={size=3x3}, dim_labels=b01f_01io->b01f"},
      {"strided_1x1", "f32[4,16,16,16]", "f32[1,1,16,32]", "f32[4,8,8,32]",
       "window={size=1x1 stride=2x2}, dim_labels=b01f_01io->b01f"},
      // The gradients JAX writes for a stride-2 3x3 convolution: by its input (lhs dilation,
      // kernel flipped by a reverse before it) and by its kernel (a window as large as the
      // output gradient, batch and feature roles swapped).
      {"input_gradient", "f32[3,4,4,6]", "f32[3,3,4,6]", "f32[3,8,8,4]",
       "window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f"},
      {"kernel_gradient", "f32[5,8,8,3]", "f32[5,4,4,6]", "f32[3,3,3,6]",
       "window={size=4x4 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf"},
      {"kernel_gradient_dilated", "f32[2,10,9,3]", "f32[2,7,7,4]", "f32[3,3,3,4]",
       "window={size=7x7 stride=2x2 pad=1_0x1_1}, dim_labels=f01b_i01o->01bf"},
      // Feature groups (ResNeXt's): a GEMM per group, on NHWC and NCHW.
      {"grouped_g4", "f32[2,8,8,32]", "f32[3,3,8,32]", "f32[2,8,8,32]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4"},
      {"grouped_nchw", "f32[2,16,6,6]", "f32[16,8,3,3]", "f32[2,16,4,4]",
       "window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2"},
      // bf16 and f16 operands: an f32 convolution of converted operands (narrow-dot-upcast).
      {"bf16_operands", "bf16[2,8,8,16]", "bf16[3,3,16,8]", "f32[2,8,8,8]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      {"f16_operands", "f16[2,8,8,16]", "f16[3,3,16,8]", "f32[2,4,4,8]",
       "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      // f64 (JAX with x64): im2col and dgemm, none of oneDNN's kernels.
      {"f64_nhwc_same", "f64[2,9,9,3]", "f64[3,3,3,5]", "f64[2,9,9,5]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
      {"f64_nchw_grouped", "f64[2,16,6,6]", "f64[16,8,3,3]", "f64[2,16,4,4]",
       "window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2"},
      {"f64_kernel_gradient", "f64[5,8,8,3]", "f64[5,4,4,6]", "f64[3,3,3,6]",
       "window={size=4x4 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf"},
  };
}

std::string Module(const ConvCase& c, const std::string& extra = "") {
  return fmt::format(R"(
HloModule conv
ENTRY %main (x: {0}, w: {1}) -> {2} {{
  %x = {0} parameter(0)
  %w = {1} parameter(1)
  ROOT %c = {2} convolution(%x, %w), {3}{4}
}}
)",
                     c.lhs, c.rhs, c.out, c.attrs, extra);
}

TEST(ConvLibrary, MatchesEvaluator) {
  for (int threads : {1, 2, 3})
    for (const ConvCase& c : Cases()) {
      SCOPED_TRACE(c.name + " on " + std::to_string(threads) + " threads");
      auto parsed = ParseHloModule(Module(c), c.name);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      std::shared_ptr<HloModule> module = std::move(*parsed);
      CompileOptions opts;
      opts.plan.blas_min_mnk = 0;  // every case goes to the library
      opts.threads = threads;
      auto compiler = CpuCompiler::Create(opts);
      ASSERT_TRUE(compiler.ok()) << compiler.status();
      auto exe = (*compiler)->Compile(module);
      ASSERT_TRUE(exe.ok()) << exe.status();
      bool library = false;
      for (const Step& s : (*exe)->plan().steps) library |= s.kind == Disposition::kLibrary;
      ASSERT_EQ(library, HaveBlas());

      const HloComputation* entry = module->entry();
      std::vector<Literal> args = {Random(entry->parameter(0)->shape(), 1),
                                   Random(entry->parameter(1)->shape(), 2)};
      auto got = (*exe)->Run(args);
      ASSERT_TRUE(got.ok()) << got.status();
      HloEvaluator evaluator;
      auto want = evaluator.Evaluate(*module, args);
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_EQ(got->element_count(), want->element_count());
      const double tol = c.out.starts_with("f64") ? 1e-12 : 1e-4;
      for (int64_t i = 0; i < want->element_count(); ++i)
        ASSERT_NEAR(got->GetAsDouble(i), want->GetAsDouble(i), tol) << "element " << i;
    }
}

// Which convolutions oneDNN takes: the common layouts and the gradients, on any pool that
// each slice fills; not window reversal (im2col computes it).
TEST(ConvLibrary, OneDnnTakesTheCommonLayouts) {
  if (!HaveOneDnn()) GTEST_SKIP() << "built without oneDNN";
  const auto implementation = [](const std::string& name, int threads) {
    for (const ConvCase& c : Cases()) {
      if (c.name != name) continue;
      auto parsed = ParseHloModule(Module(c), c.name);
      EXPECT_TRUE(parsed.ok()) << parsed.status();
      std::optional<ConvGemm> g = MatchLibraryConv(*(*parsed)->entry()->root(), 0);
      EXPECT_TRUE(g.has_value());
      return g ? OneDnnConvImplementation(*g, threads) : std::string();
    }
    ADD_FAILURE() << "no case " << name;
    return std::string();
  };
  // By images, or (fewer images than threads) each image by bands of output rows.
  for (int threads : {1, 2, 4})
    for (const char* name : {"nhwc_same", "rhs_dilation_asym_pad", "conv3d", "conv1d", "resnet_3x3",
                             "one_image_features", "strided_1x1"})
      EXPECT_NE(implementation(name, threads), "") << name << " on " << threads;
  EXPECT_NE(implementation("nchw_stride2_valid", 2), "");
  EXPECT_EQ(implementation("reversal", 1), "");
  // A band of rows of an NCHW image is not a layout oneDNN has kernels for: im2col.
  EXPECT_EQ(implementation("nchw_stride2_valid", 4), "");
  // 8 rows of one image: no band for a ninth thread.
  EXPECT_EQ(implementation("one_image_features", 9), "");
}

TEST(ConvLibrary, DepthwiseOneChannelAndSmallStayOffTheLibrary) {
  const auto why_not = [](const ConvCase& c, int64_t min_work) {
    auto parsed = ParseHloModule(Module(c), c.name);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    std::string why;
    EXPECT_FALSE(MatchLibraryConv(*(*parsed)->entry()->root(), min_work, &why).has_value());
    return why;
  };
  const std::string no_blas = "built without a BLAS library";
  // Two features per group; one (depthwise); a one-channel filter (jnp.convolve's).
  EXPECT_EQ(why_not({"grouped", "f32[1,8,8,4]", "f32[3,3,2,4]", "f32[1,6,6,4]",
                     "window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2"},
                    0),
            HaveBlas() ? "grouped convolution with few features per group" : no_blas);
  EXPECT_EQ(why_not({"depthwise", "f32[2,8,8,16]", "f32[3,3,1,16]", "f32[2,6,6,16]",
                     "window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=16"},
                    0),
            HaveBlas() ? "grouped convolution with few features per group" : no_blas);
  EXPECT_EQ(why_not({"filter", "f32[1,1,4096]", "f32[1,1,65]", "f32[1,1,4096]",
                     "window={size=65 pad=32_32}, dim_labels=bf0_oi0->bf0"},
                    0),
            HaveBlas() ? "one-channel filter" : no_blas);
  EXPECT_EQ(why_not(Cases()[0], int64_t{1} << 40),
            HaveBlas() ? "too small for a library call" : no_blas);
}

// A quantized CNN's s8 x s8 -> s32 convolution runs as im2col and the integer GEMM (the
// emitted convolution loop took 12x XLA:CPU's time), exactly, on one to three threads.
TEST(ConvLibrary, IntegerConvolutionRunsOnTheIntegerGemm) {
  const std::string text = R"(
HloModule int8_conv
ENTRY main {
  x = s8[4,16,16,32] parameter(0)
  w = s8[3,3,32,48] parameter(1)
  ROOT c = s32[4,16,16,48] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
)";
  for (int threads : {1, 2, 3}) testing::CompareTextWithEvaluator(text, threads, 0);
  if (!HaveBlas()) GTEST_SKIP() << "no integer GEMM without a BLAS library";
  const testing::CompiledText c = testing::CompileText(text);
  ASSERT_NE(c.exe, nullptr);
  int library = 0;
  for (const auto& [h, d] : c.exe->plan().dispositions)
    library += d == kernel_plan::Disposition::kLibrary && h->opcode() == HloOpcode::kDot;
  EXPECT_EQ(library, 1);
}

}  // namespace
}  // namespace kiln::cpu
