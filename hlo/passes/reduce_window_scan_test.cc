// Tests of the running-reduction rewrite: forward and reverse scans of every reducer kind,
// along any dimension, with an init that is not the reducer's identity, and wide max/min
// windows by doubling, give the evaluator's values; other windows stay.
#include "hlo/passes/reduce_window_scan.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

std::string Module(const std::string& type, const std::string& op, const std::string& dims,
                   const std::string& window, const std::string& init) {
  return "HloModule m\nred {\n  a = " + type + "[] parameter(0)\n  b = " + type +
         "[] parameter(1)\n  ROOT r = " + type + "[] " + op +
         "(a, b)\n}\nENTRY main {\n  x = " + type + "[" + dims + "] parameter(0)\n  i = " + type +
         "[] constant(" + init + ")\n  ROOT w = " + type + "[" + dims +
         "] reduce-window(x, i), window={" + window + "}, to_apply=red\n}\n";
}

void ExpectScan(const std::string& hlo) {
  ReduceWindowScan pass(/*min_length=*/2);
  bool changed = false;
  std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed) << hlo;
  EXPECT_EQ(out.find("reduce-window("), std::string::npos) << out;
  // The scan adds in another order than the window: floating-point results agree to rounding.
  EXPECT_TRUE(PassPreservesValues(pass, hlo, 3, 3, testing::Agreement::kToRounding)) << hlo;
}

TEST(ReduceWindowScanTest, EveryKindForwardAndReverse) {
  // cumsum over the last dimension (17: not a power of two), as jnp.cumsum writes it.
  ExpectScan(Module("f32", "add", "3,17", "size=1x17 pad=0_0x16_0", "0"));
  // reverse, over the first dimension, with an init that is not 0 (added once).
  ExpectScan(Module("f32", "add", "9,4", "size=9x1 pad=0_8x0_0", "2.5"));
  ExpectScan(Module("f32", "maximum", "5,12", "size=1x12 pad=0_0x11_0", "-inf"));
  ExpectScan(Module("s32", "minimum", "12,5", "size=12x1 pad=11_0x0_0", "3"));
  ExpectScan(Module("f32", "multiply", "2,8", "size=1x8 pad=0_0x0_7", "1"));
  ExpectScan(Module("pred", "or", "4,33", "size=1x33 pad=0_0x32_0", "false"));
  ExpectScan(Module("s32", "add", "40", "size=40 pad=39_0", "0"));
}

TEST(ReduceWindowScanTest, ReducersOfSeveralElementwiseOps) {
  // jax.lax.cumlogsumexp's reducer (logaddexp, as JAX lowers it), forward and reverse.
  const std::string logaddexp = R"(HloModule m
lae {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  d = f32[] subtract(a, b)
  nan = pred[] compare(d, d), direction=NE
  s = f32[] add(a, b)
  m = f32[] maximum(a, b)
  ad = f32[] abs(d)
  n = f32[] negate(ad)
  e = f32[] exponential(n)
  l = f32[] log-plus-one(e)
  r = f32[] add(m, l)
  ROOT o = f32[] select(nan, s, r)
}
ENTRY main {
  x = f32[3,40] parameter(0)
  i = f32[] constant(-inf)
  ROOT w = f32[3,40] reduce-window(x, i), window={size=1x40 pad=0_0xPAD}, to_apply=lae
}
)";
  for (const char* pad : {"39_0", "0_39"}) {
    std::string hlo = logaddexp;
    hlo.replace(hlo.find("PAD"), 3, pad);
    ExpectScan(hlo);
  }
  // A constant in the reducer: a + b + 1 (associative), broadcast on the arrays.
  ExpectScan(R"(HloModule m
r {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  one = s32[] constant(1)
  s = s32[] add(a, b)
  ROOT t = s32[] add(s, one)
}
ENTRY main {
  x = s32[2,20] parameter(0)
  i = s32[] constant(0)
  ROOT w = s32[2,20] reduce-window(x, i), window={size=1x20 pad=0_0x19_0}, to_apply=r
}
)");
}

TEST(ReduceWindowScanTest, WideMaxAndMinWindowsByDoubling) {
  // A centred sliding maximum (jax reduce_window 'SAME'), a valid one, a power-of-two size,
  // a minimum with an init that is not its identity, one over dimension 0, and windows
  // that only see padding at the edges.
  ExpectScan(Module("f32", "maximum", "3,100", "size=1x33 pad=0_0x16_16", "-inf"));
  std::string valid = Module("f32", "maximum", "2,50", "size=1x33", "-inf");
  valid.replace(valid.find("ROOT w = f32[2,50]"), 18, "ROOT w = f32[2,18]");
  ExpectScan(valid);
  ExpectScan(Module("f32", "maximum", "2,40", "size=1x32 pad=0_0x31_0", "-inf"));
  ExpectScan(Module("f32", "minimum", "2,40", "size=1x20 pad=0_0x3_16", "0.5"));
  ExpectScan(Module("s32", "maximum", "30,3", "size=17x1 pad=16_0x0_0", "-5"));
  ExpectScan(Module("f32", "minimum", "2,10", "size=1x24 pad=0_0x20_3", "inf"));
}

TEST(ReduceWindowScanTest, OtherWindowsStay) {
  std::string strided = Module("f32", "maximum", "3,40", "size=1x17 stride=1x2 pad=0_0x8_8", "0");
  strided.replace(strided.find("ROOT w = f32[3,40]"), 18, "ROOT w = f32[3,20]");
  for (const std::string& hlo :
       {strided, Module("f32", "add", "3,17", "size=1x5 pad=0_0x4_0", "0"),  // a sliding window
        Module("f32", "add", "3,17", "size=1x17 pad=0_0x8_8", "0"),          // centred
        Module("f32", "add", "3,17", "size=2x17 pad=1_0x16_0", "0"),         // two dimensions
        Module("f32", "subtract", "3,17", "size=1x17 pad=0_0x16_0", "0"),    // not associative
        Module("f32", "maximum", "8,40", "size=2x17 pad=1_0x16_0", "0"),     // a 2-D max window
        // a reducer that is not elementwise
        std::string(
            "HloModule m\nred {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  t = (f32[], f32[]) tuple(a, b)\n  ROOT g = f32[] get-tuple-element(t), index=0\n}\n"
            "ENTRY main {\n  x = f32[3,17] parameter(0)\n  i = f32[] constant(0)\n  ROOT w = "
            "f32[3,17] reduce-window(x, i), window={size=1x17 pad=0_0x16_0}, to_apply=red\n}\n")}) {
    ReduceWindowScan pass(/*min_length=*/2);
    bool changed = true;
    RunPassAndPrint(pass, hlo, &changed);
    EXPECT_FALSE(changed) << hlo;
  }
}

}  // namespace
}  // namespace kiln
