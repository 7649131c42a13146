// cpu-llvm's topk (top_k_library.h) against the HLO evaluator, bit for bit: the largest and
// the smallest, f32, bf16, f64 and s32, rows of rank 1 to 3, k of 1, 8, 64 (insertion), 100 and
// the whole row (partial sort), rows full of ties (the lower index first), NaNs of both signs,
// infinities and signed zeros, one and two threads; plus a hand-computed case.
#include "plugins/cpu_llvm/top_k_library.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

std::string TopKModule(const std::string& type, const std::string& dims, const std::string& out,
                       int64_t k, bool largest) {
  return fmt::format(
      "HloModule t\nENTRY main {{\n  x = {0}[{1}] parameter(0)\n"
      "  ROOT t = ({0}[{2}], s32[{2}]) topk(x), k={3}, largest={4}\n}}\n",
      type, dims, out, k, largest ? "true" : "false");
}

// Values drawn from a few (ties) or many; floats sprinkled with NaN, -NaN, +-inf, +-0.
void Fill(Literal& x, bool ties, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> few(-3, 3), special(0, 19);
  std::normal_distribution<double> many(0, 10);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            0.0f,
                            -0.0f};
  const bool is_float = IsFloating(x.shape().element_type());
  for (int64_t e = 0; e < x.element_count(); ++e) {
    double v = ties ? few(rng) : many(rng);
    const int s = special(rng);
    if (is_float && s < 6) v = specials[s];
    if (IsUnsignedInt(x.shape().element_type())) v = std::abs(std::round(v));
    x.SetFromDouble(e, v);
  }
}

// Compiles and runs `text` on `threads` and on the evaluator; expects identical bits and the
// topk to run on the library (not the evaluator).
void Check(const std::string& text, int threads, bool ties, uint32_t seed) {
  SCOPED_TRACE(text);
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  ASSERT_NE(c.exe, nullptr);
  bool library = false;
  for (const kernel_plan::Step& s : c.exe->plan().steps)
    library |=
        s.instr->opcode() == HloOpcode::kTopK && s.kind == kernel_plan::Disposition::kLibrary;
  EXPECT_TRUE(library) << "the topk is not a library step";
  std::vector<Literal> args;
  args.emplace_back(c.module->entry()->parameter(0)->shape());
  Fill(args[0], ties, seed);
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int i = 0; i < 2; ++i) {
    const Literal &g = got->element(i), &w = want->element(i);
    ASSERT_EQ(g.shape(), w.shape());
    EXPECT_EQ(std::memcmp(g.untyped_data(), w.untyped_data(), g.shape().byte_size()), 0)
        << "output " << i << " differs from the evaluator's";
  }
}

TEST(TopKLibrary, MatchesTheEvaluatorBitForBit) {
  for (int threads : {1, 2}) {
    for (bool largest : {true, false}) {
      for (bool ties : {false, true}) {
        SCOPED_TRACE(fmt::format("threads {} largest {} ties {}", threads, largest, ties));
        Check(TopKModule("f32", "256,1000", "256,8", 8, largest), threads, ties, 1);
        Check(TopKModule("f32", "300", "1", 1, largest), threads, ties, 2);
        Check(TopKModule("f32", "4,3,517", "4,3,64", 64, largest), threads, ties, 3);
        Check(TopKModule("f32", "70,400", "70,100", 100, largest), threads, ties, 4);
        Check(TopKModule("f32", "9,33", "9,33", 33, largest), threads, ties, 5);
        Check(TopKModule("bf16", "128,777", "128,5", 5, largest), threads, ties, 6);
        Check(TopKModule("f64", "100,300", "100,10", 10, largest), threads, ties, 7);
        Check(TopKModule("s32", "200,1000", "200,16", 16, largest), threads, ties, 8);
        // f16, and integers of other widths (Fill keeps unsigned values non-negative).
        Check(TopKModule("f16", "64,500", "64,8", 8, largest), threads, ties, 9);
        for (const char* t : {"s8", "u8", "s16", "u16", "u32", "s64"})
          Check(TopKModule(t, "64,700", "64,12", 12, largest), threads, ties, 10);
      }
    }
  }
}

TEST(TopKLibrary, HandComputed) {
  const testing::CompiledText c = testing::CompileText(TopKModule("f32", "2,20", "2,3", 3, true));
  ASSERT_NE(c.exe, nullptr);
  std::vector<Literal> args;
  args.emplace_back(c.module->entry()->parameter(0)->shape());
  float* x = args[0].data<float>().data();
  for (int e = 0; e < 40; ++e) x[e] = static_cast<float>(e % 5);  // 0 1 2 3 4 0 1 ...
  x[23] = std::numeric_limits<float>::quiet_NaN();                // row 1, index 3
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  const float* v = got->element(0).data<float>().data();
  const int32_t* i = got->element(1).data<int32_t>().data();
  // Row 0: the 4s at 4, 9, 14 (ties: lower index first).
  EXPECT_EQ(v[0], 4.0f);
  EXPECT_EQ(v[1], 4.0f);
  EXPECT_EQ(v[2], 4.0f);
  EXPECT_EQ(i[0], 4);
  EXPECT_EQ(i[1], 9);
  EXPECT_EQ(i[2], 14);
  // Row 1: NaN above everything, then the 4s at 4 and 9.
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(i[3], 3);
  EXPECT_EQ(i[4], 4);
  EXPECT_EQ(i[5], 9);
}

}  // namespace
}  // namespace kiln::cpu
