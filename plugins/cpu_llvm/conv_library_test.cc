// Convolutions routed to the GEMM library (im2col) against the HLO evaluator, over dimension
// orders, strides, padding, lhs/rhs dilation, reversal and 1-D/3-D windows; and the cases
// that must stay off the library path.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"

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
  for (const ConvCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto parsed = ParseHloModule(Module(c), c.name);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::shared_ptr<HloModule> module = std::move(*parsed);
    CompileOptions opts;
    opts.plan.blas_min_mnk = 0;  // every case goes to the library
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
    for (int64_t i = 0; i < want->element_count(); ++i)
      ASSERT_NEAR(got->GetAsDouble(i), want->GetAsDouble(i), 1e-4) << "element " << i;
  }
}

TEST(ConvLibrary, GroupedAndSmallStayOffTheLibrary) {
  ConvCase grouped{"grouped", "f32[1,8,8,4]", "f32[3,3,2,4]", "f32[1,6,6,4]",
                   "window={size=3x3}, dim_labels=b01f_01io->b01f"};
  auto parsed = ParseHloModule(Module(grouped, ", feature_group_count=2"), "g");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::string why;
  const HloInstruction* conv = (*parsed)->entry()->root();
  EXPECT_FALSE(MatchLibraryConv(*conv, 0, &why).has_value());
  EXPECT_EQ(why, HaveBlas() ? "grouped convolution" : "built without a BLAS library");

  auto small = ParseHloModule(Module(Cases()[0]), "s");
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(MatchLibraryConv(*(*small)->entry()->root(), int64_t{1} << 40).has_value());
}

}  // namespace
}  // namespace kiln::cpu
