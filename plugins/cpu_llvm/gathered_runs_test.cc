// Kernels that gather short runs along their output's minor dimension (a bilateral grid's 12
// coefficients per pixel) keep that dimension's loop (GathersMinorRuns in the emitter): the
// runs are read contiguously, not element by element with gathers across 16 pixels. So do
// elementwise kernels over rows of 8 to 63 elements (KeepsMinorLoop). Against the HLO
// evaluator on one and two threads.
#include <string>

#include "gtest/gtest.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

using testing::CompareTextWithEvaluator;

TEST(GatheredRuns, BilateralGridSliceReadsEachPixelsRunContiguously) {
  // Two lookups of a [2,4,4,8,12] grid per pixel of a 2x32x32 image, at cells given per pixel
  // (in range: a gather clamps its starts, and the evaluator does too), blended by a weight.
  const std::string text = R"(
HloModule k
ENTRY main {
  grid = f32[2,4,4,8,12] parameter(0)
  i0 = s32[2,32,32,4] parameter(1)
  i1 = s32[2,32,32,4] parameter(2)
  w = f32[2,32,32] parameter(3)
  g0 = f32[2,32,32,12] gather(grid, i0), offset_dims={3}, collapsed_slice_dims={0,1,2,3}, start_index_map={0,1,2,3}, index_vector_dim=3, slice_sizes={1,1,1,1,12}
  g1 = f32[2,32,32,12] gather(grid, i1), offset_dims={3}, collapsed_slice_dims={0,1,2,3}, start_index_map={0,1,2,3}, index_vector_dim=3, slice_sizes={1,1,1,1,12}
  wb = f32[2,32,32,12] broadcast(w), dimensions={0,1,2}
  d = f32[2,32,32,12] subtract(g1, g0)
  m = f32[2,32,32,12] multiply(d, wb)
  ROOT r = f32[2,32,32,12] add(g0, m)
}
)";
  for (int threads : {1, 2}) {
    const std::string ir = CompareTextWithEvaluator(text, threads, 1e-5);
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  }
}

// NMF's update w * n / (d + eps) over f32[512,16], with a row vector added, and two outputs
// of one kernel over rows of 12: each row is loaded and stored as a vector, not gathered and
// scattered with the rows' loop vectorized around an unrolled one (4-5x slower).
TEST(GatheredRuns, ElementwiseKernelsOverNarrowRowsReadRowsContiguously) {
  const std::string update = R"(
HloModule update
ENTRY main {
  w = f32[512,16] parameter(0)
  n = f32[512,16] parameter(1)
  d = f32[512,16] parameter(2)
  s = f32[16] parameter(3)
  m = f32[512,16] multiply(w, n)
  sb = f32[512,16] broadcast(s), dimensions={1}
  e = f32[] constant(4)
  eb = f32[512,16] broadcast(e), dimensions={}
  de = f32[512,16] add(d, eb)
  q = f32[512,16] divide(m, de)
  ROOT r = f32[512,16] add(q, sb)
}
)";
  const std::string pair = R"(
HloModule pair
ENTRY main {
  a = f32[1024,12] parameter(0)
  b = f32[1024,12] parameter(1)
  x = f32[1024,12] multiply(a, b)
  y = f32[1024,12] subtract(a, b)
  ROOT t = (f32[1024,12], f32[1024,12]) tuple(x, y)
}
)";
  for (const std::string& text : {update, pair})
    for (int threads : {1, 2}) {
      const std::string ir = CompareTextWithEvaluator(text, threads, 1e-5);
      EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
      EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
    }
}

}  // namespace
}  // namespace kiln::cpu
