// Tests of the convolution -> im2col + dot rewrite: the rewritten module verifies, holds a dot
// and no convolution, and gives the evaluator's values on random inputs.
#include "hlo/passes/convolution_to_gemm.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

void ExpectRewritten(std::string_view hlo) {
  ConvolutionToGemm pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("convolution("), std::string::npos) << out;
  EXPECT_NE(out.find(" dot("), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, hlo));
}

TEST(ConvolutionToGemmTest, NhwcStridedSamePadding) {
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  x = f32[2,9,9,3] parameter(0)
  w = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,5,5,4] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
)");
}

TEST(ConvolutionToGemmTest, NchwWithDilationsReversalAndUnevenPadding) {
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  a = f64[2,3,7,8] parameter(0)
  aw = f64[4,3,3,2] parameter(1)
  ROOT c = f64[2,4,3,15] convolution(a, aw), window={size=3x2 stride=2x1 pad=1_2x0_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=bf01_oi01->bf01
}
)");
}

TEST(ConvolutionToGemmTest, OneDimensionalNegativePaddingAndOddLayout) {
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  x = f32[5,2,12] parameter(0)
  w = f32[5,4,3] parameter(1)
  ROOT c = f32[4,2,3] convolution(x, w), window={size=4 stride=2 pad=-1_-1}, dim_labels=fb0_i0o->0bf
}
)");
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A filter gradient as TF and JAX write it: the window is (nearly) the whole image and the
// output is the kernel's few positions. The patch matrix comes from one slice per output
// position (18 here), not one per tap (300), with stride, window dilation and reversal.
TEST(ConvolutionToGemmTest, FilterGradientSlicesPerOutputPosition) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[3,24,21,2] parameter(0)
  dy = f32[15,20,3,4] parameter(1)
  ROOT c = f32[2,6,3,4] convolution(x, dy), window={size=15x20 stride=2x1 pad=1_0x0_1 rhs_dilate=1x1 rhs_reversal=1x0}, dim_labels=f01b_01io->b01f
}
)";
  ExpectRewritten(hlo);
  ConvolutionToGemm pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_EQ(Count(out, " slice("), 18u) << out;
  const char* dilated = R"(
HloModule m
ENTRY main {
  x = f32[2,17,9,3] parameter(0)
  dy = f32[6,4,2,5] parameter(1)
  ROOT c = f32[3,7,2,5] convolution(x, dy), window={size=6x4 stride=1x2 rhs_dilate=2x2}, dim_labels=f01b_01io->b01f
}
)";
  ExpectRewritten(dilated);
}

// Past kMaxPatchSlices slices either way the convolution stays as it is.
TEST(ConvolutionToGemmTest, ConvolutionsNeedingTooManySlicesStay) {
  ConvolutionToGemm pass;
  bool changed = true;
  RunPassAndPrint(pass, R"(
HloModule m
ENTRY main {
  x = f32[1,140,140,1] parameter(0)
  w = f32[70,70,1,1] parameter(1)
  ROOT c = f32[1,71,71,1] convolution(x, w), window={size=70x70}, dim_labels=b01f_01io->b01f
}
)",
                  &changed);
  EXPECT_FALSE(changed);
}

TEST(ConvolutionToGemmTest, GroupedAndIntegerConvolutionsStay) {
  ConvolutionToGemm pass;
  bool changed = true;
  RunPassAndPrint(pass, R"(
HloModule m
ENTRY main {
  g = f32[2,6,6,4] parameter(0)
  gw = f32[3,3,2,6] parameter(1)
  cg = f32[2,6,6,6] convolution(g, gw), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  i = s32[2,9,2] parameter(2)
  iw = s32[3,2,3] parameter(3)
  ci = s32[2,4,3] convolution(i, iw), window={size=3 stride=2}, dim_labels=b0f_0io->b0f
  ROOT t = (f32[2,6,6,6], s32[2,4,3]) tuple(cg, ci)
}
)",
                  &changed);
  EXPECT_FALSE(changed);
}

TEST(ConvolutionToGemmTest, IntegerConvolutionsWhenAskedFor) {
  // s8 x s8 -> s32 (a quantized CNN's) and u8 -> s32: an integer dot, the operands'
  // type kept for the patches; the float convolution stays (integer rewrites only).
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x = s8[2,9,9,3] parameter(0)
  w = s8[3,3,3,4] parameter(1)
  c = s32[2,5,5,4] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f
  u = u8[2,8,3] parameter(2)
  uw = u8[3,3,2] parameter(3)
  cu = s32[2,4,2] convolution(u, uw), window={size=3 stride=2 pad=0_1}, dim_labels=b0f_0io->b0f
  f = f32[2,9,9,3] parameter(4)
  fw = f32[3,3,3,4] parameter(5)
  cf = f32[2,7,7,4] convolution(f, fw), window={size=3x3}, dim_labels=b01f_01io->b01f
  ROOT t = (s32[2,5,5,4], s32[2,4,2], f32[2,7,7,4]) tuple(c, cu, cf)
}
)";
  ConvolutionToGemm pass(0, int64_t{1} << 30, /*integer=*/true);
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("s32[50,4]{1,0} dot(s8[50,27]"), std::string::npos) << out;
  EXPECT_NE(out.find("s32[8,2]{1,0} dot(u8[8,9]"), std::string::npos) << out;
  EXPECT_NE(out.find("f32[2,7,7,4]{3,2,1,0} convolution("), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(ConvolutionToGemmTest, SmallConvolutionsStayBelowTheThreshold) {
  ConvolutionToGemm pass(/*min_work=*/int64_t{1} << 20);
  bool changed = true;
  RunPassAndPrint(pass, R"(
HloModule m
ENTRY main {
  x = f32[2,9,9,3] parameter(0)
  w = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,7,7,4] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f
}
)",
                  &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
