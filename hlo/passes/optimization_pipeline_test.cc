// Tests of the simplification pipeline: rewrites compose, values are kept, and every module
// of the corpus goes through it.
#include "hlo/passes/optimization_pipeline.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

constexpr std::string_view kMixed = R"(
HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  w = f32[4,3] parameter(1)
  one = f32[] constant(1)
  half = f32[] constant(0.5)
  two = f32[] add(half, half)
  twob = f32[2,4] broadcast(two), dimensions={}
  wt = f32[3,4] transpose(w), dimensions={1,0}
  d1 = f32[2,4] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[2,4] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f32[2,4] multiply(d1, twob)
  n1 = f32[2,4] negate(m)
  n2 = f32[2,4] negate(n1)
  t = (f32[2,4], f32[2,4]) tuple(n2, d2)
  a = f32[2,4] get-tuple-element(t), index=0
  b = f32[2,4] get-tuple-element(t), index=1
  unused = f32[2,4] exponential(b)
  ROOT s = f32[2,4] subtract(a, b)
}
)";

TEST(SimplificationPipelineTest, RewritesCompose) {
  // 0.5+0.5 folds to 1, so multiply by broadcast(1) goes; negate(negate) goes; the tuple is
  // taken apart; the transpose folds into the dots, which then merge; dead code goes.
  auto pipeline = MakeSimplificationPipeline();
  std::string out = RunPassAndPrint(*pipeline, kMixed);
  EXPECT_FILECHECK(out, R"(
    CHECK: ENTRY
    CHECK: [[D:%d[12]]] = f32[2,4]{1,0} dot(f32[2,3]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
    CHECK-NEXT: ROOT %s = f32[2,4]{1,0} subtract(f32[2,4]{1,0} [[D]], f32[2,4]{1,0} [[D]])
    CHECK-NEXT: }
  )");
  auto again = MakeSimplificationPipeline();
  EXPECT_TRUE(PassPreservesValues(*again, kMixed));
}

TEST(SimplificationPipelineTest, ReachesAFixedPoint) {
  auto pipeline = MakeSimplificationPipeline();
  std::unique_ptr<HloModule> m = testing::Parse(kMixed);
  ASSERT_TRUE(m);
  ASSERT_TRUE(pipeline->Run(*m).ok());
  auto second = MakeSimplificationPipeline();
  absl::StatusOr<bool> changed = second->Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  // The pass order the pipeline promises.
  std::vector<std::string> names;
  for (const PassRecord& r : second->records()) names.push_back(r.pass_name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "async-to-sync", "call-inliner", "library-call-lowering",
                       "scatter-batching-to-indices", "scatter-to-update-slice", "algsimp",
                       "constant-folding", "tuple-simplifier", "transpose-folding", "cse",
                       "dot-merger", "while-loop-invariant-code-motion", "dce"}));
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every corpus module survives the pipeline: no error, the result prints and parses again,
// and it never has more instructions than before, unless it held cuBLAS/cuDNN calls (their
// lowering writes out scales, biases and activations).
TEST(SimplificationPipelineTest, CorpusModulesGoThrough) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::filesystem::path dir = std::filesystem::path(root ? root : ".") / "tests" / "hlo_corpus";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no corpus at " << dir;
  int modules = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hlo") continue;
    SCOPED_TRACE(entry.path().filename().string());
    absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(ReadFile(entry.path()));
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto count = [](const HloModule& mod) {
      int64_t n = 0;
      for (const HloComputation* c : mod.computations()) n += c->instruction_count();
      return n;
    };
    const std::string text = ReadFile(entry.path());
    const bool library_calls =
        text.find("__cublas$") != std::string::npos || text.find("__cudnn$") != std::string::npos;
    int64_t before = count(**m);
    auto pipeline = MakeSimplificationPipeline();
    absl::StatusOr<bool> changed = pipeline->Run(**m);
    ASSERT_TRUE(changed.ok()) << changed.status().message();
    if (!library_calls) {
      EXPECT_LE(count(**m), before);
    }
    absl::StatusOr<std::unique_ptr<HloModule>> reparsed = ParseHloModule((*m)->ToString());
    EXPECT_TRUE(reparsed.ok()) << reparsed.status().message();
    ++modules;
  }
  EXPECT_GT(modules, 10);
}

// Where the evaluator can run a corpus module, the pipeline keeps its values.
TEST(SimplificationPipelineTest, CorpusModulesKeepTheirValues) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::filesystem::path dir = std::filesystem::path(root ? root : ".") / "tests" / "hlo_corpus";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no corpus at " << dir;
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hlo") continue;
    std::string text = ReadFile(entry.path());
    if (text.size() > 40000) continue;  // keep the test quick: the evaluator is slow
    std::unique_ptr<HloModule> probe = testing::Parse(text);
    ASSERT_TRUE(probe);
    // Skip modules whose values are big: the reference evaluator would take seconds.
    int64_t elements = 0;
    for (const HloComputation* c : probe->computations())
      for (const HloInstruction* i : c->instructions())
        for (const Shape& s : FlattenShape(i->shape()))
          elements += s.IsArray() ? s.num_elements() : 0;
    if (elements > (int64_t{1} << 18)) continue;
    std::mt19937 rng(7);
    std::vector<Literal> args;
    for (const HloInstruction* p : probe->entry()->parameters())
      args.push_back(testing::RandomLiteral(p->shape(), rng));
    if (!HloEvaluator().Evaluate(*probe, args).ok()) continue;  // evaluator lacks an op
    SCOPED_TRACE(entry.path().filename().string());
    auto pipeline = MakeSimplificationPipeline();
    EXPECT_TRUE(PassPreservesValues(*pipeline, text, /*trials=*/1));
    ++checked;
  }
  std::printf("value-checked %d corpus modules\n", checked);
  if (checked == 0) GTEST_SKIP() << "the evaluator runs no corpus module yet";
}

}  // namespace
}  // namespace kiln
