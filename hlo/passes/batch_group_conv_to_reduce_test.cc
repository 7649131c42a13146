// Tests of batch-group-convolution-to-reduce: depthwise filter gradients (JAX's form, with
// strides and kernel dilation, 1-D with reversal and other layouts) become reduces that give
// the evaluator's values on random inputs; other batch-grouped convolutions stay.
#include "hlo/passes/batch_group_conv_to_reduce.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::Agreement;
using testing::PassPreservesValues;
using testing::RunPassAndPrint;

void ExpectRewritten(std::string_view hlo) {
  BatchGroupConvToReduce pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("convolution("), std::string::npos) << out;
  EXPECT_NE(out.find(" reduce("), std::string::npos) << out;
  for (unsigned seed : {1u, 2u, 3u})
    EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, Agreement::kToRounding)) << hlo;
}

// jax.grad of a 3x3 SAME depthwise convolution's weights (NHWC, HWIO), as JAX lowers it.
TEST(BatchGroupConvToReduce, JaxDepthwiseFilterGradient) {
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  x = f32[2,6,6,4] parameter(0)
  g = f32[2,6,6,4] parameter(1)
  ROOT c = f32[3,3,1,4] convolution(x, g), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=4
}
)");
}

// The filter gradient of a stride-2 depthwise convolution (the kernel dilated by the
// stride), uneven padding, and a strided window.
TEST(BatchGroupConvToReduce, DilatedAndStridedWindows) {
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  x = f32[2,7,7,3] parameter(0)
  g = f32[2,4,4,3] parameter(1)
  ROOT c = f32[2,2,1,3] convolution(x, g), window={size=4x4 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, batch_group_count=3
}
)");
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  x = f32[3,9,8,5] parameter(0)
  g = f32[3,3,2,5] parameter(1)
  ROOT c = f32[4,4,1,5] convolution(x, g), window={size=3x2 stride=2x2 pad=1_0x0_1}, dim_labels=f01b_i01o->01bf, batch_group_count=5
}
)");
}

// One spatial dimension, f64, a reversed window and dimension orders of another kind.
TEST(BatchGroupConvToReduce, OneDimensionalReversedOtherLayout) {
  ExpectRewritten(R"(
HloModule m
ENTRY main {
  x = f64[3,10,2] parameter(0)
  w = f64[8,2,3] parameter(1)
  ROOT c = f64[1,3,3] convolution(x, w), window={size=8 rhs_reversal=1}, dim_labels=b0f_0io->b0f, batch_group_count=3
}
)");
}

// Two kernel outputs per group (a channel multiplier), a feature-grouped convolution and
// an output with more positions than kMaxPositions stay convolutions.
TEST(BatchGroupConvToReduce, OtherConvolutionsStay) {
  const char* texts[] = {R"(
HloModule m
ENTRY main {
  x = f32[2,6,6,4] parameter(0)
  g = f32[2,6,6,8] parameter(1)
  ROOT c = f32[3,3,1,8] convolution(x, g), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=4
}
)",
                         R"(
HloModule m
ENTRY main {
  x = f32[2,6,6,4] parameter(0)
  w = f32[3,3,1,4] parameter(1)
  ROOT c = f32[2,6,6,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4
}
)",
                         R"(
HloModule m
ENTRY main {
  x = f32[2,20,20,4] parameter(0)
  g = f32[2,11,11,4] parameter(1)
  ROOT c = f32[10,10,1,4] convolution(x, g), window={size=11x11}, dim_labels=f01b_i01o->01bf, batch_group_count=4
}
)"};
  BatchGroupConvToReduce pass;
  for (const char* text : texts) {
    bool changed = true;
    const std::string out = RunPassAndPrint(pass, text, &changed);
    EXPECT_FALSE(changed) << out;
    EXPECT_NE(out.find("convolution("), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace kiln
