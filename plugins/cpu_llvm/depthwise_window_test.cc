// Depthwise convolutions with long windows: a Conformer's 31-tap 1-d depthwise convolution
// after a GLU. LLVM's own unroll threshold stopped short of 31 taps and vectorized the tap
// loop with a gather per tap (b8 t512 c256: 31 ms against 0.7 ms with the taps unrolled and
// the channels vectorized). Checked against the evaluator on one and two threads, with
// padding, stride and window reversal; the IR has no gather.
#include <string>

#include "gtest/gtest.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

// h = a * sigmoid(g) over f32[2,64,32] halves of x, then a `taps`-tap depthwise convolution
// giving `out` positions.
std::string GluDepthwise(int taps, const std::string& window, int out = 64) {
  const std::string w = "f32[" + std::to_string(taps) + ",1,32]";
  const std::string y = "f32[2," + std::to_string(out) + ",32]";
  return "HloModule glu_depthwise\nENTRY %main (x: f32[2,64,64], w: " + w + ") -> " + y +
         " {\n"
         "  %x = f32[2,64,64] parameter(0)\n  %w = " +
         w +
         " parameter(1)\n"
         "  %a = f32[2,64,32] slice(%x), slice={[0:2], [0:64], [0:32]}\n"
         "  %g = f32[2,64,32] slice(%x), slice={[0:2], [0:64], [32:64]}\n"
         "  %s = f32[2,64,32] logistic(%g)\n"
         "  %h = f32[2,64,32] multiply(%a, %s)\n"
         "  ROOT %c = " +
         y + " convolution(%h, %w), window={" + window +
         "}, dim_labels=b0f_0io->b0f, feature_group_count=32\n}\n";
}

// Runs `text` on 1 and 2 threads against the evaluator; returns the optimized IR.
std::string Check(const std::string& text) {
  std::string ir;
  for (int threads : {1, 2}) ir = testing::CompareTextWithEvaluator(text, threads, 1e-5, 3);
  return ir;
}

TEST(DepthwiseWindow, LongWindowUnrollsItsTapsWithoutGathers) {
  std::string ir = Check(GluDepthwise(31, "size=31 pad=15_15"));
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
}

TEST(DepthwiseWindow, StridedReversedPaddedAndDilatedWindows) {
  EXPECT_EQ(Check(GluDepthwise(31, "size=31 stride=2 pad=15_15 rhs_reversal=1", 32))
                .find("masked.gather"),
            std::string::npos);
  Check(GluDepthwise(9, "size=9 pad=2_6"));
  Check(GluDepthwise(5, "size=5 pad=4_4 rhs_dilate=2", 64));
  Check(GluDepthwise(64, "size=64 pad=40_23"));  // kClampedTapsMaxTaps taps
  Check(GluDepthwise(65, "size=65 pad=32_32"));  // past it: the tap-range loop, as before
}

}  // namespace
}  // namespace kiln::cpu
