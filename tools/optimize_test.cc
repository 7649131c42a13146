// Tests of the `kiln opt` pipeline driver: pass lists, per-pass records, counts, dumps.
#include "core/optimize.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

// reduce_sum(x + y*z): one input fusion after the standard pipeline (hand-checked).
constexpr const char* kModelFn = R"(HloModule model_fn

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[1024], y: f32[1024], z: f32[1024]) -> f32[] {
  %x = f32[1024]{0} parameter(0)
  %y = f32[1024]{0} parameter(1)
  %z = f32[1024]{0} parameter(2)
  %yz = f32[1024]{0} multiply(f32[1024]{0} %y, f32[1024]{0} %z)
  %s = f32[1024]{0} add(f32[1024]{0} %x, f32[1024]{0} %yz)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[1024]{0} %s, f32[] %zero), dimensions={0}, to_apply=%add_f32
}
)";

std::unique_ptr<HloModule> Parse(const char* text) {
  absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(OptimizeTest, StandardPipelineFusesModelFnIntoOneFusion) {
  auto m = Parse(kModelFn);
  ASSERT_NE(m, nullptr);
  ModuleCounts before = CountModule(*m);
  EXPECT_EQ(before.entry_instructions, 7);
  EXPECT_EQ(before.fusions, 0);
  auto passes = MakeOptimizationPasses("");
  ASSERT_TRUE(passes.ok());
  ASSERT_EQ(passes->size(), 2u);
  absl::StatusOr<OptimizeResult> r = OptimizeModule(*m, std::move(*passes), {});
  ASSERT_TRUE(r.ok()) << r.status();
  ModuleCounts after = CountModule(*m);
  EXPECT_EQ(after.fusions, 1);
  EXPECT_EQ(after.input_fusions, 1);       // a reduce-rooted fusion
  EXPECT_EQ(after.entry_instructions, 4);  // three parameters and the fusion
  bool fusion_changed = false;
  for (const PassSummary& p : r->passes) {
    EXPECT_GE(p.runs, 1);
    if (p.pass == "fusion") {
      EXPECT_EQ(p.pipeline, "fusion-pipeline");
      fusion_changed = p.changed_runs > 0;
    }
  }
  EXPECT_TRUE(fusion_changed);
  EXPECT_EQ(r->dumps, 0);
}

TEST(OptimizeTest, NamedPassesRunInOrderAndOnlyChangedOnesAreDumped) {
  auto m = Parse(kModelFn);
  ASSERT_NE(m, nullptr);
  auto passes = MakeOptimizationPasses("dce, fusion,cse");
  ASSERT_TRUE(passes.ok()) << passes.status();
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_optimize_test";
  std::filesystem::remove_all(dir);
  OptimizeOptions o;
  o.dump_dir = dir.string();
  absl::StatusOr<OptimizeResult> r = OptimizeModule(*m, std::move(*passes), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->passes.size(), 3u);
  EXPECT_EQ(r->passes[0].pass, "dce");
  EXPECT_EQ(r->passes[0].changed_runs, 0);
  EXPECT_EQ(r->passes[1].pass, "fusion");
  EXPECT_EQ(r->passes[1].changed_runs, 1);
  EXPECT_EQ(r->passes[2].pass, "cse");
  EXPECT_EQ(r->dumps, 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "model_fn.00.fusion.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "model_fn.00.dce.txt"));
  std::filesystem::remove_all(dir);
}

TEST(OptimizeTest, DumpRegexFiltersAndBadRegexFails) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_optimize_test_re";
  std::filesystem::remove_all(dir);
  {
    auto m = Parse(kModelFn);
    ASSERT_NE(m, nullptr);
    OptimizeOptions o;
    o.dump_dir = dir.string();
    o.dump_pass_regex = "^cse$";
    absl::StatusOr<OptimizeResult> r = OptimizeModule(*m, *MakeOptimizationPasses(""), o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->dumps, 0);  // cse never changes this module
    EXPECT_EQ(CountModule(*m).fusions, 1);
  }
  {
    auto m = Parse(kModelFn);
    ASSERT_NE(m, nullptr);
    OptimizeOptions o;
    o.dump_dir = dir.string();
    o.dump_pass_regex = "([";
    absl::StatusOr<OptimizeResult> r = OptimizeModule(*m, *MakeOptimizationPasses(""), o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(std::string(r.status().message()).find("(["), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(OptimizeTest, UnknownPassNameIsAnError) {
  auto passes = MakeOptimizationPasses("dce,fuse");
  ASSERT_FALSE(passes.ok());
  EXPECT_NE(std::string(passes.status().message()).find("'fuse'"), std::string::npos);
  EXPECT_FALSE(MakeOptimizationPasses(",").ok());
}

}  // namespace
}  // namespace kiln
