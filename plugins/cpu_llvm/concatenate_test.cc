// Kernels whose output is a concatenation write each operand's part with a loop nest of its
// own when there are many or they split the minor dimension
// (KernelEmitter::EmitConcatenateByOperand): against the HLO evaluator along the first
// dimension (the one the pool splits, parts crossing the threads' ranges), a middle and the
// minor one, with computed and empty parts, on one to three threads; and a concatenation of
// many operands inside a kernel, each element's operand found by halving.
#include <set>
#include <string>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

using testing::CompareTextWithEvaluator;

TEST(Concatenate, AlongTheFirstDimensionAcrossThreadRanges) {
  // 1333 rows of 256 (2^18 and more elements: split across the pool), five parts (more than
  // kMaxBranchedConcatOperands), some computed inline, one empty.
  const std::string text = R"(
HloModule k
ENTRY main {
  a = f32[300,256] parameter(0)
  b = f32[1000,256] parameter(1)
  c = f32[13,256] parameter(2)
  e = f32[0,256] parameter(3)
  f = f32[20,256] parameter(4)
  na = f32[300,256] negate(a)
  eb = f32[1000,256] exponential(b)
  ROOT r = f32[1333,256] concatenate(na, e, eb, c, f), dimensions={0}
}
)";
  for (int threads : {1, 2, 3}) CompareTextWithEvaluator(text, threads);
}

TEST(Concatenate, ManyPartsAndALaterDimension) {
  std::string parts, names;
  for (int i = 0; i < 20; ++i) {
    parts += fmt::format("  x{} = f32[64,60] parameter({})\n", i, i);
    names += fmt::format("{}x{}", i ? ", " : "", i);
  }
  // One computed part makes it a kernel (parameters alone are copied without one).
  const std::string many = "HloModule k\nENTRY main {\n" + parts +
                           "  n = f32[64,60] negate(x0)\n"
                           "  ROOT r = f32[1344,60] concatenate(" +
                           names + ", n), dimensions={0}\n}\n";
  for (int threads : {1, 2}) {
    // Choosing the operand per element, the vectorized loop read every operand with masked
    // loads (166 of them, and 81 branches).
    const std::string ir = CompareTextWithEvaluator(many, threads);
    EXPECT_EQ(ir.find("masked."), std::string::npos) << ir;
  }
  // Along the minor dimension (the rows before it shared by the parts) and along a middle one
  // with six parts.
  const std::string minor = R"(
HloModule k
ENTRY main {
  a = f32[512,8,100] parameter(0)
  b = f32[512,8,28] parameter(1)
  t = f32[512,8,28] tanh(b)
  ROOT r = f32[512,8,128] concatenate(a, t), dimensions={2}
}
)";
  for (int threads : {1, 2, 3}) CompareTextWithEvaluator(minor, threads);
  const std::string middle = R"(
HloModule k
ENTRY main {
  a = f32[512,3,100] parameter(0)
  b = f32[512,5,100] parameter(1)
  t = f32[512,5,100] tanh(b)
  ROOT r = f32[512,24,100] concatenate(a, t, a, t, t, a), dimensions={1}
}
)";
  for (int threads : {1, 2, 3}) CompareTextWithEvaluator(middle, threads);
}

// A 3x3 convolution's patches as the core's im2col writes them: 9 parts of 32 int8s per
// output row, each read from the padded input. Each part's run is left to the loop vectorizer
// (one vector per run, its padding a mask); unrolled first, the SLP vectorizer made runs of
// 16, 8 and 4 lanes with branches between them, and took 190 ms to optimize the kernel.
TEST(Concatenate, PatchRunsAreWholeVectors) {
  std::string parts, names;
  for (int i = 0; i < 9; ++i) {
    parts += fmt::format(
        "  s{0} = s8[8,32,32,32] slice(pad), slice={{[0:8], [{1}:{2}], [{3}:{4}], [0:32]}}\n"
        "  r{0} = s8[8192,32] reshape(s{0})\n",
        i, i / 3, i / 3 + 32, i % 3, i % 3 + 32);
    names += fmt::format("{}r{}", i ? ", " : "", i);
  }
  const std::string text =
      "HloModule k\nENTRY main {\n  x = s8[8,32,32,32] parameter(0)\n"
      "  zero = s8[] constant(0)\n"
      "  pad = s8[8,34,34,32] pad(x, zero), padding=0_0x1_1x1_1x0_0\n" +
      parts + "  ROOT c = s8[8192,288] concatenate(" + names + "), dimensions={1}\n}\n";
  for (int threads : {1, 2}) {
    const std::string ir = CompareTextWithEvaluator(text, threads);
    // Every vector store of the parts has the same number of lanes.
    std::set<std::string> widths;
    for (size_t at = ir.find("store <"); at != std::string::npos; at = ir.find("store <", at + 1))
      widths.insert(ir.substr(at + 7, ir.find('>', at) - at - 7));
    EXPECT_EQ(widths.size(), 1u) << fmt::format("{}", fmt::join(widths, "; "));
  }
}

// Overlapping frames of a signal stacked, windowed and padded for an FFT (a log-mel
// spectrogram's framing): a concatenation inside the kernel, each element finding its operand
// by halving the operands (a chain of one test per operand took 7 ns an element for 98
// frames). Odd and even operand counts, and empty operands among them.
TEST(Concatenate, ManyFramesInsideAKernel) {
  for (int frames : {2, 7, 33, 98}) {
    std::string parts, names;
    for (int i = 0; i < frames; ++i) {
      // Every fifth operand is an empty frame: the search must step over it.
      const int width = i % 5 == 4 ? 0 : 1;
      parts += fmt::format(
          "  s{0} = f32[4,{1}] slice(x), slice={{[0:4], [{2}:{3}]}}\n"
          "  f{0} = f32[4,{4},40] reshape(s{0})\n",
          i, width ? 40 : 0, i * 16, i * 16 + (width ? 40 : 0), width);
      names += fmt::format("{}f{}", i ? ", " : "", i);
    }
    const int kept = frames - frames / 5;
    const std::string text = fmt::format(
        "HloModule k\nENTRY main {{\n  x = f32[4,{0}] parameter(0)\n  w = f32[40] parameter(1)\n"
        "{1}  c = f32[4,{2},40] concatenate({3}), dimensions={{1}}\n"
        "  wb = f32[4,{2},40] broadcast(w), dimensions={{2}}\n"
        "  m = f32[4,{2},40] multiply(c, wb)\n  z = f32[] constant(0)\n"
        "  ROOT p = f32[4,{2},64] pad(m, z), padding=0_0x0_0x0_24\n}}\n",
        frames * 16 + 40, parts, kept, names);
    for (int threads : {1, 2}) CompareTextWithEvaluator(text, threads);
  }
}

}  // namespace
}  // namespace kiln::cpu
