// Tests of reduce-minor-first: reduces over minor and outer dimensions become a reduce of the
// minor run and one of the outer dimensions, with the evaluator's values on random inputs;
// reducers whose order or initial value matters, narrow float sums, other layouts, short
// runs and reduces the caller keeps whole stay as they are.
#include "hlo/passes/reduce_minor_first.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::Agreement;
using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// A module reducing p0 (`in`) over `dims` with `op` from `init` to `out`.
std::string Module(const std::string& type, const std::string& in, const std::string& out,
                   const std::string& dims, const std::string& op, const std::string& init) {
  return "HloModule m\nf {\n  a = " + type + "[] parameter(0)\n  b = " + type +
         "[] parameter(1)\n  ROOT r = " + type + "[] " + op +
         "(a, b)\n}\nENTRY main {\n  x = " + type + in + " parameter(0)\n  i = " + type +
         "[] constant(" + init + ")\n  ROOT y = " + type + out + " reduce(x, i), dimensions={" +
         dims + "}, to_apply=f\n}\n";
}

void ExpectSplit(ReduceMinorFirst& pass, const std::string& hlo, Agreement agreement) {
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed) << out;
  EXPECT_FILECHECK(out, R"(
CHECK: [[INNER:%[a-z.0-9]+]] = {{.*}} reduce(
CHECK-SAME: dimensions={
CHECK: ROOT {{.*}} reduce({{.*}}[[INNER]]
)");
  for (unsigned seed : {1u, 2u}) EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, agreement));
}

void ExpectKept(ReduceMinorFirst& pass, const std::string& hlo) {
  bool changed = true;
  RunPassAndPrint(pass, hlo, &changed);
  EXPECT_FALSE(changed) << hlo;
}

// jnp.min(x, (0, 3)) of an NHWC batch: the channel run, then the batch.
TEST(ReduceMinorFirst, MinimumOverBatchAndChannels) {
  ReduceMinorFirst pass;
  const std::string hlo = Module("f32", "[3,4,5,16]", "[4,5]", "0,3", "minimum", "inf");
  ExpectSplit(pass, hlo, Agreement::kExact);
  EXPECT_FILECHECK(RunPassAndPrint(pass, hlo), R"(
CHECK: f32[3,4,5]{2,1,0} reduce({{.*}}), dimensions={3}
CHECK: ROOT {{.*}} f32[4,5]{1,0} reduce({{.*}}), dimensions={0}
)");
}

// Sums (rounding aside), products, maxima of integers, several minor and outer dimensions
// given in any order, and and/or of pred.
TEST(ReduceMinorFirst, OrderFreeReducersWithTheirIdentities) {
  ReduceMinorFirst pass;
  ExpectSplit(pass, Module("f32", "[2,3,4,5,6]", "[4]", "4,0,3,1", "add", "0"),
              Agreement::kToRounding);
  ExpectSplit(pass, Module("f64", "[3,2,9]", "[2]", "0,2", "multiply", "1"),
              Agreement::kToRounding);
  ExpectSplit(pass, Module("s32", "[4,3,8]", "[3]", "2,0", "maximum", "-2147483648"),
              Agreement::kExact);
  ExpectSplit(pass, Module("pred", "[4,3,8]", "[3]", "0,2", "and", "true"), Agreement::kExact);
  ExpectSplit(pass, Module("pred", "[4,3,8]", "[3]", "0,2", "or", "false"), Agreement::kExact);
  // bf16 maxima are exact in any grouping.
  ExpectSplit(pass, Module("bf16", "[4,3,8]", "[3]", "0,2", "maximum", "-inf"), Agreement::kExact);
}

// An initial value that is not the identity would be applied twice; a reducer that is not
// order-free; a 16-bit float sum would round its partial sums.
TEST(ReduceMinorFirst, OtherReducersStay) {
  ReduceMinorFirst pass;
  ExpectKept(pass, Module("f32", "[4,3,8]", "[3]", "0,2", "add", "1"));
  ExpectKept(pass, Module("f32", "[4,3,8]", "[3]", "0,2", "maximum", "0"));
  ExpectKept(pass, Module("f32", "[4,3,8]", "[3]", "0,2", "subtract", "0"));
  ExpectKept(pass, Module("bf16", "[4,3,8]", "[3]", "0,2", "add", "0"));
  ExpectKept(pass, Module("s32", "[4,3,8]", "[3]", "0,2", "and", "-1"));
}

// Row reductions (no outer dimension), column reductions (no minor one), runs shorter than
// the minimum, a transposed layout and what the caller keeps whole stay.
TEST(ReduceMinorFirst, OtherShapesStay) {
  ReduceMinorFirst pass;
  ExpectKept(pass, Module("f32", "[4,3,8]", "[4]", "1,2", "add", "0"));
  ExpectKept(pass, Module("f32", "[4,3,8]", "[8]", "0,1", "add", "0"));
  ExpectKept(pass, Module("f32", "[4,3,4]", "[3]", "0,2", "add", "0"));
  ExpectKept(pass, Module("f32", "[4,3,8]{0,1,2}", "[3]", "0,2", "add", "0"));
  ReduceMinorFirst keep_all([](const HloInstruction&) { return true; });
  ExpectKept(keep_all, Module("f32", "[4,3,8]", "[3]", "0,2", "add", "0"));
  ReduceMinorFirst long_runs(nullptr, 16);
  ExpectKept(long_runs, Module("f32", "[4,3,8]", "[3]", "0,2", "add", "0"));
}

}  // namespace
}  // namespace kiln
