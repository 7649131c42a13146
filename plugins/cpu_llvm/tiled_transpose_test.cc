// Kernels that read an operand transposed walk their output in 32 x 32 tiles
// (elemental_emitter.cc, TransposedRead): against the HLO evaluator for sizes that are not
// multiples of the tile, batched transposes, and outputs partitioned across threads; and the
// kernels that keep the plain loop nest.
#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/text_module_test_util.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;

// Runs `text` on `threads` threads and the evaluator; returns whether a kernel is tiled.
bool CompareWithEvaluator(const std::string& text, int threads) {
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return false;
  const HloModule& module = *c.module;
  const std::vector<Literal> args = codegen_testing::RandomArguments(module, 7).values;
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (want.ok() && got.ok()) ExpectClose(*got, *want, "tiled", "jit", 0);
  bool tiled = false;
  for (const llvm_emit::KernelSpec& k : c.exe->plan().kernels)
    tiled |= llvm_emit::TransposedRead(k);
  return tiled;
}

std::string TransposeAdd(int64_t rows, int64_t cols) {
  return fmt::format(R"(
HloModule t
ENTRY main {{
  x = f32[{0},{1}] parameter(0)
  y = f32[{1},{0}] parameter(1)
  t = f32[{0},{1}] transpose(y), dimensions={{1,0}}
  ROOT s = f32[{0},{1}] add(x, t)
}}
)",
                     rows, cols);
}

TEST(TiledTranspose, EdgesAndPartitionsMatchTheEvaluator) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(CompareWithEvaluator(TransposeAdd(70, 45), threads));
    EXPECT_TRUE(CompareWithEvaluator(TransposeAdd(32, 33), threads));
    // Large enough to be split across the pool by rows.
    EXPECT_TRUE(CompareWithEvaluator(TransposeAdd(700, 517), threads));
  }
}

TEST(TiledTranspose, BatchedAndReshapedTransposes) {
  const std::string batched = R"(
HloModule b
ENTRY main {
  x = f32[3,40,65] parameter(0)
  t = f32[3,65,40] transpose(x), dimensions={0,2,1}
  ROOT n = f32[3,65,40] negate(t)
}
)";
  EXPECT_TRUE(CompareWithEvaluator(batched, 2));
  // The transpose moves a leading dimension to the minor position under a reshape.
  const std::string reshaped = R"(
HloModule r
ENTRY main {
  x = f32[64,4,48] parameter(0)
  t = f32[4,48,64] transpose(x), dimensions={1,2,0}
  ROOT r = f32[192,64] reshape(t)
}
)";
  EXPECT_TRUE(CompareWithEvaluator(reshaped, 2));
}

// The tiles span the output dimension filled from the operand's minor one and the last:
// [e,d,t] -> [t,e,d] (an MoE's expert outputs per token; its second-to-last dimension too
// narrow for a tile) split across threads by t, and NHWC -> NCHW split by the batch.
TEST(TiledTranspose, TilesOverTheDimensionFromTheMinorOne) {
  const std::string tokens_first = R"(
HloModule e
ENTRY main {
  x = f32[8,40,70] parameter(0)
  t = f32[70,8,40] transpose(x), dimensions={2,0,1}
  ROOT n = f32[70,8,40] negate(t)
}
)";
  const std::string to_nchw = R"(
HloModule c
ENTRY main {
  x = f32[3,33,35,40] parameter(0)
  t = f32[3,40,33,35] transpose(x), dimensions={0,3,1,2}
  y = f32[3,40,33,35] parameter(1)
  ROOT s = f32[3,40,33,35] add(t, y)
}
)";
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(CompareWithEvaluator(tokens_first, threads));
    EXPECT_TRUE(CompareWithEvaluator(to_nchw, threads));
  }
}

// Reshapes that split and merge dimensions (elemental_emitter.cc, ReshapeByGroups): a pixel
// shuffle, and groups whose sizes do not line up one to one.
TEST(TiledTranspose, ReshapesSplitAndMergeByGroups) {
  const std::string shuffle = R"(
HloModule s
ENTRY main {
  x = f32[2,6,6,16] parameter(0)
  r = f32[2,6,6,4,2,2] reshape(x)
  t = f32[2,6,2,6,2,4] transpose(r), dimensions={0,1,4,2,5,3}
  ROOT o = f32[2,12,12,4] reshape(t)
}
)";
  CompareWithEvaluator(shuffle, 2);
  const std::string uneven = R"(
HloModule u
ENTRY main {
  x = f32[6,35] parameter(0)
  r = f32[2,3,5,7] reshape(x)
  t = f32[3,2,7,5] transpose(r), dimensions={1,0,3,2}
  n = f32[6,35] reshape(t)
  m = f32[1,10,21] reshape(n)
  ROOT o = f32[1,10,21] negate(m)
}
)";
  CompareWithEvaluator(uneven, 1);
}

// A transposed read under a narrow minor dimension runs the two minor dimensions as one loop
// (EmitMergedMinorLoopNest): batched, and rank 2 split across threads by rows.
TEST(TiledTranspose, NarrowMinorDimensionsMergedIntoOneLoop) {
  const std::string shuffle = R"(
HloModule s
ENTRY main {
  x = f32[8,64,64,64] parameter(0)
  r = f32[8,64,64,16,2,2] reshape(x)
  t = f32[8,64,2,64,2,16] transpose(r), dimensions={0,1,4,2,5,3}
  ROOT o = f32[8,128,128,16] reshape(t)
}
)";
  for (int threads : {1, 2}) EXPECT_FALSE(CompareWithEvaluator(shuffle, threads));
  const std::string narrow = R"(
HloModule n
ENTRY main {
  x = f32[7,40001] parameter(0)
  t = f32[40001,7] transpose(x), dimensions={1,0}
  ROOT n = f32[40001,7] negate(t)
}
)";
  for (int threads : {1, 2, 3}) EXPECT_FALSE(CompareWithEvaluator(narrow, threads));
}

// Lines of optimized LLVM IR for `text` (one thread), its values checked as well.
size_t OptimizedIrLines(const std::string& text) {
  CompileOptions opts;
  opts.threads = 1;
  opts.keep_ir = true;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return 0;
  CompareWithEvaluator(text, 1);
  return std::count(c.exe->llvm_ir().begin(), c.exe->llvm_ir().end(), '\n');
}

// The loops over tiles, the rows of a tile and a merged minor pair stay loops: unrolled whole
// by LLVM, ViT's head transpose [8,196,6,64] -> [8,6,64,196] became 1,400 lines of IR (a
// vectorized copy of the column loop per tile; 850 now) and an FFT's output fused with a
// narrow transpose 1,600 (256 gathers in a row; 480 now): 240-310 ms of compile each, for no
// faster kernel.
TEST(TiledTranspose, TileAndMergedLoopsStayLoops) {
  const std::string heads = R"(
HloModule h
ENTRY main {
  p = f32[8,196,384] parameter(0)
  r = f32[8,196,6,64] reshape(p)
  ROOT t = f32[8,6,64,196] transpose(r), dimensions={0,2,3,1}
}
)";
  EXPECT_LT(OptimizedIrLines(heads), 1000u);
  const std::string narrow = R"(
HloModule n
ENTRY main {
  p = c64[8,32,64,33] parameter(0)
  t = c64[8,64,33,32] transpose(p), dimensions={0,2,3,1}
  s = c64[8,16,16,32] slice(t), slice={[0:8], [0:16], [0:16], [0:32]}
  r = f32[8,16,16,32] real(s)
  ROOT o = f32[16,16,32,8] transpose(r), dimensions={1,2,3,0}
}
)";
  EXPECT_LT(OptimizedIrLines(narrow), 800u);
}

// Whole tiles (the minor dimension a multiple of 32): a tile's row is a loop the loop
// vectorizer takes, not one LLVM unrolls first and the SLP vectorizer puts back together (the
// loop vectorizer names its gathers wide.masked.gather; the SLP vectorizer's are unnamed). That
// cost 60-90 ms of optimization per kernel. Where the target gathers (AVX-512, AVX2), every
// gather is the loop vectorizer's; values against the evaluator.
TEST(TiledTranspose, WholeTileRowsAreVectorizedAsLoops) {
  const std::string swap = R"(
HloModule s
ENTRY main {
  x = f32[4,128,96] parameter(0)
  t = f32[4,96,128] transpose(x), dimensions={0,2,1}
  two = f32[] constant(2)
  b = f32[4,96,128] broadcast(two), dimensions={}
  ROOT m = f32[4,96,128] multiply(t, b)
}
)";
  for (int threads : {1, 2}) {
    CompileOptions opts;
    opts.threads = threads;
    opts.keep_ir = true;
    const testing::CompiledText c = testing::CompileText(swap, opts);
    ASSERT_NE(c.exe, nullptr);
    const std::string& ir = c.exe->llvm_ir();
    size_t gathers = 0, by_loops = 0;
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("call <") == std::string::npos ||
          line.find("@llvm.masked.gather") == std::string::npos)
        continue;
      ++gathers;
      by_loops += line.rfind("  %wide.masked.gather", 0) == 0;
    }
    EXPECT_EQ(by_loops, gathers) << ir;
    EXPECT_TRUE(CompareWithEvaluator(swap, threads));
  }
}

TEST(TiledTranspose, OtherKernelsKeepThePlainLoopNest) {
  // The minor dimension stays minor: contiguous reads, no tiles.
  const std::string minor_kept = R"(
HloModule k
ENTRY main {
  x = f32[40,64,48] parameter(0)
  t = f32[64,40,48] transpose(x), dimensions={1,0,2}
  ROOT n = f32[64,40,48] negate(t)
}
)";
  EXPECT_FALSE(CompareWithEvaluator(minor_kept, 2));
  // Too narrow for a tile.
  EXPECT_FALSE(CompareWithEvaluator(TransposeAdd(200, 8), 2));
}

TEST(TiledTranspose, MergedHeadsLoopOverTheTransposesDimensions) {
  // Attention's heads merged after the transpose: the kernel loops over [b,s,h,d], whose
  // innermost run is contiguous; over the merged h*d it read with a gather per vector.
  const std::string heads = R"(
HloModule k
ENTRY main {
  x = f32[4,8,32,16] parameter(0)
  t = f32[4,32,8,16] transpose(x), dimensions={0,2,1,3}
  ROOT r = f32[4,32,128] reshape(t)
}
)";
  for (int threads : {1, 2, 3}) {
    CompileOptions opts;
    opts.threads = threads;
    opts.keep_ir = true;
    const testing::CompiledText c = testing::CompileText(heads, opts);
    ASSERT_NE(c.exe, nullptr);
    EXPECT_EQ(c.exe->llvm_ir().find("masked.gather"), std::string::npos) << c.exe->llvm_ir();
    EXPECT_FALSE(CompareWithEvaluator(heads, threads));
  }
  // A reshape that changes dimension 0 (the one the pool splits) keeps the root's loops.
  const std::string regrouped = R"(
HloModule k
ENTRY main {
  x = f32[4,8,32,16] parameter(0)
  t = f32[4,32,8,16] transpose(x), dimensions={0,2,1,3}
  ROOT r = f32[128,128] reshape(t)
}
)";
  for (int threads : {1, 2, 3}) EXPECT_FALSE(CompareWithEvaluator(regrouped, threads));
}

}  // namespace
}  // namespace kiln::cpu
