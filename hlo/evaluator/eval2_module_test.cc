// Whole-module tests, written as XLA HLO text, of the eval2 families (dot, convolution,
// reduce, reduce-window, select-and-scatter, sort, topk, gather, scatter, batch-norm,
// cholesky, triangular-solve, rng-bit-generator) through the parser and evaluator driver.
// Reducers and comparators here are the multi-instruction kinds JAX emits, so they take
// the general (called-computation) paths. Expected values are hand-computed or from NumPy
// as noted.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/kernel_test_util.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using eval::testing::ExpectValues;
using eval::testing::F32;
using eval::testing::Lit;

absl::StatusOr<Literal> RunText(const std::string& text, std::vector<Literal> args) {
  auto module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  HloEvaluator evaluator;
  return evaluator.Evaluate(**module, args);
}

// JAX's argmax: variadic reduce whose reducer picks by compare/select (NaN-aware, ties to
// the lower index). Rows: [3,7,7,1] -> (7, 1); [-2,-5,0,-1] -> (0, 2).
TEST(Eval2ModuleTest, ArgmaxReduceWithJaxStyleReducer) {
  const char* text = R"(
HloModule argmax
%argmax_reducer (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %gt = pred[] compare(%a, %b), direction=GT
  %eq = pred[] compare(%a, %b), direction=EQ
  %lt_i = pred[] compare(%ai, %bi), direction=LT
  %tie = pred[] and(%eq, %lt_i)
  %keep = pred[] or(%gt, %tie)
  %v = f32[] select(%keep, %a, %b)
  %i = s32[] select(%keep, %ai, %bi)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
ENTRY %main (x: f32[2,4]) -> (f32[2], s32[2]) {
  %x = f32[2,4] parameter(0)
  %iota = s32[2,4] iota(), iota_dimension=1
  %ninf = f32[] constant(-inf)
  %zero = s32[] constant(0)
  ROOT %r = (f32[2], s32[2]) reduce(%x, %iota, %ninf, %zero), dimensions={1}, to_apply=%argmax_reducer
}
)";
  std::vector<Literal> args;
  args.push_back(F32({2, 4}, {3, 7, 7, 1, -2, -5, 0, -1}));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2}, {7, 0});
  ExpectValues(r->element(1), {2}, {1, 2});
}

// Max-pool forward (reduce-window) and backward (select-and-scatter) of a 4x4 input.
TEST(Eval2ModuleTest, MaxPoolForwardAndBackward) {
  const char* text = R"(
HloModule pool
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4,4], g: f32[2,2]) -> (f32[2,2], f32[4,4]) {
  %x = f32[4,4] parameter(0)
  %g = f32[2,2] parameter(1)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %fwd = f32[2,2] reduce-window(%x, %ninf), window={size=2x2 stride=2x2}, to_apply=%max
  %bwd = f32[4,4] select-and-scatter(%x, %g, %zero), window={size=2x2 stride=2x2}, select=%ge, scatter=%add
  ROOT %t = (f32[2,2], f32[4,4]) tuple(%fwd, %bwd)
}
)";
  std::vector<Literal> args;
  args.push_back(F32({4, 4}, {1, 5, 2, 2, 3, 4, 2, 0, 9, 0, 1, 8, 0, 9, 7, 3}));
  args.push_back(F32({2, 2}, {10, 20, 30, 40}));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 2}, {5, 2, 9, 8});
  ExpectValues(r->element(1), {4, 4}, {0, 10, 20, 0, 0, 0, 0, 0, 30, 0, 0, 40, 0, 0, 0, 0});
}

// Batched matmul then a 1-D conv with padding, in text syntax. Hand-computed:
// dot: [[1,2],[3,4]] @ [[1,0],[1,1]] = [[3,2],[7,4]] (batch 0); batch 1 is 2*I @ B = 2*B.
// conv: x=[1,2,3], k=[1,1] pad 1_1 -> [1,3,5,3].
TEST(Eval2ModuleTest, DotAndConvolutionText) {
  const char* text = R"(
HloModule linalg
ENTRY %main (a: f32[2,2,2], b: f32[2,2,2], x: f32[1,3,1], k: f32[2,1,1]) -> (f32[2,2,2], f32[1,4,1]) {
  %a = f32[2,2,2] parameter(0)
  %b = f32[2,2,2] parameter(1)
  %x = f32[1,3,1] parameter(2)
  %k = f32[2,1,1] parameter(3)
  %d = f32[2,2,2] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %c = f32[1,4,1] convolution(%x, %k), window={size=2 pad=1_1}, dim_labels=b0f_0io->b0f
  ROOT %t = (f32[2,2,2], f32[1,4,1]) tuple(%d, %c)
}
)";
  std::vector<Literal> args;
  args.push_back(F32({2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 2}));
  args.push_back(F32({2, 2, 2}, {1, 0, 1, 1, 1, 0, 1, 1}));
  args.push_back(F32({1, 3, 1}, {1, 2, 3}));
  args.push_back(F32({2, 1, 1}, {1, 1}));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 2, 2}, {3, 2, 7, 4, 2, 0, 2, 2});
  ExpectValues(r->element(1), {1, 4, 1}, {1, 3, 5, 3});
}

// Gather rows then scatter-add them back (the embedding forward/backward pair).
TEST(Eval2ModuleTest, GatherAndScatterText) {
  const char* text = R"(
HloModule embed
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (t: f32[3,2], ids: s32[3]) -> (f32[3,2], f32[3,2]) {
  %t = f32[3,2] parameter(0)
  %ids = s32[3] parameter(1)
  %g = f32[3,2] gather(%t, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
  %z = f32[] constant(0)
  %zeros = f32[3,2] broadcast(%z), dimensions={}
  %s = f32[3,2] scatter(%zeros, %ids, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  ROOT %r = (f32[3,2], f32[3,2]) tuple(%g, %s)
}
)";
  std::vector<Literal> args;
  args.push_back(F32({3, 2}, {1, 2, 3, 4, 5, 6}));
  args.push_back(Lit(PrimitiveType::S32, {3}, {2, 0, 2}));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {3, 2}, {5, 6, 1, 2, 5, 6});
  ExpectValues(r->element(1), {3, 2}, {1, 2, 0, 0, 10, 12});
}

// Descending key/value sort with a two-level comparator, and topk.
TEST(Eval2ModuleTest, SortAndTopKText) {
  const char* text = R"(
HloModule sort
%cmp (a: f32[], b: f32[], ai: s32[], bi: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %ai = s32[] parameter(2)
  %bi = s32[] parameter(3)
  %gt = pred[] compare(%a, %b), direction=GT
  %eq = pred[] compare(%a, %b), direction=EQ
  %gti = pred[] compare(%ai, %bi), direction=GT
  %tie = pred[] and(%eq, %gti)
  ROOT %o = pred[] or(%gt, %tie)
}
ENTRY %main (k: f32[5], v: s32[5]) -> ((f32[5], s32[5]), (f32[2], s32[2])) {
  %k = f32[5] parameter(0)
  %v = s32[5] parameter(1)
  %s = (f32[5], s32[5]) sort(%k, %v), dimensions={0}, is_stable=true, to_apply=%cmp
  %t = (f32[2], s32[2]) topk(%k), k=2, largest=true
  ROOT %r = ((f32[5], s32[5]), (f32[2], s32[2])) tuple(%s, %t)
}
)";
  std::vector<Literal> args;
  args.push_back(F32({5}, {3, 1, 3, 0, 2}));
  args.push_back(Lit(PrimitiveType::S32, {5}, {0, 1, 2, 3, 4}));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0).element(0), {5}, {3, 3, 2, 1, 0});
  ExpectValues(r->element(0).element(1), {5}, {2, 0, 4, 1, 3});
  ExpectValues(r->element(1).element(0), {2}, {3, 3});
  ExpectValues(r->element(1).element(1), {2}, {0, 2});
}

// Cholesky then solving L L^T x = b with two triangular solves; A x = b with
// A = [[4,2,-2],[2,10,4],[-2,4,9]], b = A @ [1,2,3] = [2,34,33] (hand-computed).
TEST(Eval2ModuleTest, CholeskySolveText) {
  const char* text = R"(
HloModule solve
ENTRY %main (a: f64[3,3], b: f64[3,1]) -> f64[3,1] {
  %a = f64[3,3] parameter(0)
  %b = f64[3,1] parameter(1)
  %l = f64[3,3] cholesky(%a), lower=true
  %y = f64[3,1] triangular-solve(%l, %b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  ROOT %x = f64[3,1] triangular-solve(%l, %y), left_side=true, lower=true, transpose_a=TRANSPOSE
}
)";
  std::vector<Literal> args;
  args.push_back(Lit(PrimitiveType::F64, {3, 3}, {4, 2, -2, 2, 10, 4, -2, 4, 9}));
  args.push_back(Lit(PrimitiveType::F64, {3, 1}, {2, 34, 33}));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3, 1}, {1, 2, 3}, 1e-12);
}

// rng-bit-generator in text: zero three-fry state gives the Random123 zero vector first.
TEST(Eval2ModuleTest, RngBitGeneratorText) {
  const char* text = R"(
HloModule rng
ENTRY %main (s: u64[2]) -> (u64[2], u32[2]) {
  %s = u64[2] parameter(0)
  ROOT %r = (u64[2], u32[2]) rng-bit-generator(%s), algorithm=rng_three_fry
}
)";
  std::vector<Literal> args;
  args.push_back(Literal(Shape(PrimitiveType::U64, {2})));
  auto r = RunText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->element(1).data<uint32_t>()[0], 0x6b200159u);
  EXPECT_EQ(r->element(1).data<uint32_t>()[1], 0x99ba4efeu);
  EXPECT_EQ(r->element(0).data<uint64_t>()[1], 1u);
}

}  // namespace
}  // namespace kiln
