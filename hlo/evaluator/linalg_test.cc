// Tests of dot, convolution, cholesky and triangular-solve against NumPy-computed values.
#include <chrono>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_test_util.h"

namespace kiln::eval {
namespace {

using testing::ExpectValues;
using testing::F32;
using testing::Lit;

std::vector<double> Ramp(int64_t n, int64_t mul, int64_t mod, int64_t sub) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * mul) % mod - sub);
  return v;
}

absl::StatusOr<Literal> RunLinalg(const HloInstruction& instr, std::vector<const Literal*> ops) {
  return EvalLinalg(instr, ops);
}

// lhs = (arange(24).reshape(2,3,4) % 7 - 3), rhs = (arange(30).reshape(2,5,3) % 5 - 2);
// expected = np.einsum('bkm,bnk->bmn', lhs, rhs).
TEST(DotTest, BatchAndTransposedContracting) {
  for (PrimitiveType t :
       {PrimitiveType::F32, PrimitiveType::S32, PrimitiveType::BF16, PrimitiveType::F64}) {
    Literal lhs = Lit(t, {2, 3, 4}, Ramp(24, 1, 7, 3));
    Literal rhs = Lit(t, {2, 5, 3}, Ramp(30, 1, 5, 2));
    HloInstruction dot(HloOpcode::kDot, Shape(t, {2, 4, 5}));
    dot.mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {0}, {1}, {2}};
    auto r = RunLinalg(dot, {&lhs, &rhs});
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectValues(*r, {2, 4, 5},
                 {5,  3,  1, -6, -3, 2,  4, 1,  -7, 0,  -1, 5, 1, -8, 3,  3, -8, 1, 5,  -1,
                  -3, -6, 1, 3,  5,  -6, 9, -6, 9,  -6, 5,  3, 1, -6, -3, 2, 4,  1, -7, 0});
  }
}

TEST(DotTest, MixedResultTypeAndVectorDot) {
  // s8 x s8 -> s32 (preferred element type): 100*100*3 overflows s8 but not s32.
  Literal a = Lit(PrimitiveType::S8, {3}, {100, 100, 100});
  HloInstruction dot(HloOpcode::kDot, Shape(PrimitiveType::S32, {}));
  dot.mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {0}, {0}};
  auto r = RunLinalg(dot, {&a, &a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {}, {30000});
}

TEST(DotTest, RejectsMismatchedContractingSizes) {
  Literal a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  HloInstruction dot(HloOpcode::kDot, Shape(PrimitiveType::F32, {2, 2}));
  dot.mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {1}};
  EXPECT_TRUE(RunLinalg(dot, {&a, &a}).ok());
  dot.mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  EXPECT_FALSE(RunLinalg(dot, {&a, &a}).ok());
}

TEST(DotTest, LargeF32DotIsFastAndAccurate) {
  // 256x784 times 784x512 of ones-and-twos: each result is a sum of known small integers.
  const int64_t M = 256, K = 784, N = 512;
  std::vector<double> av(M * K), bv(K * N);
  for (int64_t i = 0; i < M * K; ++i) av[i] = 1.0 + (i % 2);
  for (int64_t i = 0; i < K * N; ++i) bv[i] = 1.0;
  Literal a = F32({M, K}, av), b = F32({K, N}, bv);
  HloInstruction dot(HloOpcode::kDot, Shape(PrimitiveType::F32, {M, N}));
  dot.mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  auto start = std::chrono::steady_clock::now();
  auto r = RunLinalg(dot, {&a, &b});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status();
  // Row m holds K/2 ones and K/2 twos: sum = 1.5 * K = 1176.
  EXPECT_EQ(r->GetAsDouble(0), 1176.0);
  EXPECT_EQ(r->GetAsDouble(M * N - 1), 1176.0);
  EXPECT_LT(secs, 5.0);
}

ConvolutionDimensionNumbers Nhwc() {
  ConvolutionDimensionNumbers dn;  // b01f_01io->b01f
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = 3;
  dn.input_spatial_dimensions = {1, 2};
  dn.kernel_spatial_dimensions = {0, 1};
  dn.kernel_input_feature_dimension = 2;
  dn.kernel_output_feature_dimension = 3;
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = 3;
  dn.output_spatial_dimensions = {1, 2};
  return dn;
}

// x = ((arange(240)*7) % 11 - 5).reshape(2,5,6,4); k = ((arange(108)*5) % 9 - 4)
// .reshape(3,3,2,6); expected from an explicit NumPy loop (dilate input, pad, reverse
// kernel, strided dilated window, feature group g = o // 3 reads input features 2g..2g+1).
TEST(ConvolutionTest, NhwcStridePadDilationFeatureGroups) {
  Literal x = F32({2, 5, 6, 4}, Ramp(240, 7, 11, 5));
  Literal k = F32({3, 3, 2, 6}, Ramp(108, 5, 9, 4));
  HloInstruction conv(HloOpcode::kConvolution, Shape(PrimitiveType::F32, {2, 3, 4, 6}));
  conv.mutable_attrs().convolution_dimension_numbers = Nhwc();
  conv.mutable_attrs().feature_group_count = 2;
  Window w;
  w.dimensions = {WindowDimension{3, 2, 1, 1, 1, 1, false},
                  WindowDimension{3, 1, 2, 0, 2, 1, false}};
  conv.mutable_attrs().window = w;
  auto r = RunLinalg(conv, {&x, &k});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(
      *r, {2, 3, 4, 6},
      {-41, 5,   -48, 8,  -35, 3,  13,  17,  21,  -7,  16, 3,   22, 17,  12, -32, 5,   -39,
       5,   -32, 12,  17, 22,  27, -20, 32,  -15, -20, 20, -12, 6,  6,   6,  -4,  -8,  -12,
       18,  -9,  18,  14, 28,  24, 20,  -44, 18,  -6,  15, -9,  -4, 1,   6,  13,  -19, 3,
       17,  13,  9,   -2, 32,  3,  2,   -29, 12,  3,   3,  -6,  18, -12, 12, 19,  -13, 27,
       17,  13,  9,   -2, 32,  3,  5,   -41, 12,  5,   -5, 3,   18, -12, 12, 19,  -13, 27,
       -54, 27,  -54, 2,  -29, -6, 12,  -33, 21,  20,  16, 21,  5,  7,   9,  -8,  -1,  -12,
       -54, 30,  -48, 30, -54, 24, -19, 28,  -15, -12, 21, -9,  -1, -2,  -3, -30, 15,  -30,
       -2,  -1,  0,   43, -55, 36, -13, 19,  -21, -12, 18, -6,  3,  3,   12, -29, 2,   -39});
}

// Same inputs; stride (1,2), padding ((-1,2),(1,-2)), lhs dilation (2,1), kernel reversed
// along H.
TEST(ConvolutionTest, NegativePaddingBaseDilationReversal) {
  Literal x = F32({2, 5, 6, 4}, Ramp(240, 7, 11, 5));
  Literal k = F32({3, 3, 2, 6}, Ramp(108, 5, 9, 4));
  HloInstruction conv(HloOpcode::kConvolution, Shape(PrimitiveType::F32, {2, 8, 2, 6}));
  conv.mutable_attrs().convolution_dimension_numbers = Nhwc();
  conv.mutable_attrs().feature_group_count = 2;
  Window w;
  w.dimensions = {WindowDimension{3, 1, -1, 2, 1, 2, true},
                  WindowDimension{3, 2, 1, -2, 1, 1, false}};
  conv.mutable_attrs().window = w;
  auto r = RunLinalg(conv, {&x, &k});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(
      *r, {2, 8, 2, 6},
      {-28, 25,  -21, 6,   18,  3,   -1,  19,  3,   -18, 36,  -18, -4,  -2,  0,   11,  13,  6,
       35,  1,   39,  1,   35,  -3,  24,  -27, 21,  5,   -5,  3,   36,  -18, 36,  19,  -1,  15,
       23,  -29, 18,  9,   -33, 6,   43,  -40, 39,  31,  -28, 30,  -1,  -2,  -3,  4,   -28, 3,
       7,   -22, 3,   12,  -27, 15,  -27, 21,  -30, -26, -13, -27, -26, -4,  -27, 28,  -25, 30,
       -26, 23,  -27, -30, 15,  -30, -33, 18,  -30, 16,  2,   15,  -26, 23,  -27, -30, 15,  -30,
       -33, 18,  -30, 16,  2,   15,  23,  -26, 24,  1,   2,   3,   30,  -12, 36,  24,  -39, 15,
       21,  -27, 24,  1,   -19, 6,   9,   -6,  6,   30,  -60, 30,  -2,  -1,  0,   0,   -21, 3,
       -21, 6,   -30, 6,   -21, 15,  -29, 23,  -24, 10,  -10, 6,   -60, 30,  -60, -6,  9,   -3,
       -27, 24,  -24, 10,  11,  3,   -39, 24,  -30, -12, 30,  -18, -2,  -4,  -6,  8,   43,  6,
       3,   0,   6,   -31, 34,  -36, 25,  -28, 18,  -2,  32,  3,   42,  -24, 36,  -19, 4,   -18,
       25,  -28, 18,  -2,  32,  3,   42,  -24, 36,  -19, 4,   -18});
}

// batch_group_count=2 (the weight-gradient form): input batch 4 splits into 2 groups of 2;
// output feature o uses group o // 1. 1-D, no spatial extent beyond 1: out[n, o] =
// sum_c x[g*2 + n, c] * k[c, o]. Hand-computed.
TEST(ConvolutionTest, BatchGroupCount) {
  ConvolutionDimensionNumbers dn;  // bf_io->bf, no spatial dims
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = 1;
  dn.kernel_input_feature_dimension = 0;
  dn.kernel_output_feature_dimension = 1;
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = 1;
  Literal x = F32({4, 1}, {1, 2, 3, 4});
  Literal k = F32({1, 2}, {10, 100});
  HloInstruction conv(HloOpcode::kConvolution, Shape(PrimitiveType::F32, {2, 2}));
  conv.mutable_attrs().convolution_dimension_numbers = dn;
  conv.mutable_attrs().batch_group_count = 2;
  auto r = RunLinalg(conv, {&x, &k});
  ASSERT_TRUE(r.ok()) << r.status();
  // o=0 (group 0, batches 0,1): 1*10, 2*10; o=1 (group 1, batches 2,3): 3*100, 4*100.
  ExpectValues(*r, {2, 2}, {10, 300, 20, 400});
}

// A = [[4,2,-2],[2,10,4],[-2,4,9]]; L = np.linalg.cholesky(A).
TEST(CholeskyTest, LowerAndUpper) {
  Literal a = F32({3, 3}, {4, 2, -2, 2, 10, 4, -2, 4, 9});
  HloInstruction chol(HloOpcode::kCholesky, Shape(PrimitiveType::F32, {3, 3}));
  chol.mutable_attrs().lower = true;
  auto r = RunLinalg(chol, {&a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3, 3}, {2, 0, 0, 1, 3, 0, -1, 1.6666666666666665, 2.2852182001336816}, 1e-6);
  chol.mutable_attrs().lower = false;
  r = RunLinalg(chol, {&a});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3, 3}, {2, 1, -1, 0, 3, 1.6666666666666665, 0, 0, 2.2852182001336816}, 1e-6);
  // Not positive definite: NaN everywhere.
  Literal bad = F32({2, 2}, {1, 2, 2, 1});
  chol.mutable_attrs().lower = true;
  *chol.mutable_shape() = Shape(PrimitiveType::F32, {2, 2});
  r = RunLinalg(chol, {&bad});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 2}, {NAN, NAN, NAN, NAN});
}

// L from above (upper triangle filled with garbage the solve must ignore); B = [[1,2],[3,4],
// [5,6]]; expected np.linalg.solve(L, B), solve(L.T, B), B.T @ inv(L), B.T @ inv(L.T).
TEST(TriangularSolveTest, AllSidesAndTransposes) {
  const double l21 = 1.6666666666666665, l22 = 2.2852182001336816;
  Literal a = Lit(PrimitiveType::F64, {3, 3}, {2, 99, 99, 1, 3, 99, -1, l21, l22});
  Literal b = Lit(PrimitiveType::F64, {3, 2}, {1, 2, 3, 4, 5, 6});
  Literal bt = Lit(PrimitiveType::F64, {2, 3}, {1, 3, 5, 2, 4, 6});
  struct Case {
    bool left;
    TriangularSolveTranspose t;
    std::vector<double> expected;
  };
  std::vector<Case> cases = {
      {true,
       TriangularSolveTranspose::kNoTranspose,
       {0.5, 1, 0.8333333333333334, 1, 1.7990015618073663, 2.333839863966313}},
      {true,
       TriangularSolveTranspose::kTranspose,
       {1.701758234142103, 2.375443214303857, -0.21554159581578766, -0.12531658164561202,
        2.187974872468418, 2.625569846962102}},
      {true,
       TriangularSolveTranspose::kAdjoint,
       {1.701758234142103, 2.375443214303857, -0.21554159581578766, -0.12531658164561202,
        2.187974872468418, 2.625569846962102}},
      {false,
       TriangularSolveTranspose::kNoTranspose,
       {1.701758234142103, -0.21554159581578758, 2.187974872468418, 2.3754432143038566,
        -0.12531658164561188, 2.625569846962102}},
      {false,
       TriangularSolveTranspose::kTranspose,
       {0.5, 0.8333333333333334, 1.799001561807366, 1, 1, 2.333839863966313}},
  };
  for (const Case& c : cases) {
    HloInstruction ts(HloOpcode::kTriangularSolve,
                      Shape(PrimitiveType::F64,
                            c.left ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3}));
    ts.mutable_attrs().left_side = c.left;
    ts.mutable_attrs().lower = true;
    ts.mutable_attrs().transpose_a = c.t;
    auto r = RunLinalg(ts, {&a, c.left ? &b : &bt});
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectValues(*r, c.left ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3}, c.expected,
                 1e-12);
  }
  // Upper triangle of a = L^T (the lower part holds garbage): solving U X = B equals the
  // lower, transposed case above.
  Literal u = Lit(PrimitiveType::F64, {1, 3, 3}, {2, 1, -1, 77, 3, l21, 77, 77, l22});
  Literal b1 = Lit(PrimitiveType::F64, {1, 3, 2}, {1, 2, 3, 4, 5, 6});
  HloInstruction ts(HloOpcode::kTriangularSolve, Shape(PrimitiveType::F64, {1, 3, 2}));
  ts.mutable_attrs().left_side = true;
  ts.mutable_attrs().lower = false;
  auto r = RunLinalg(ts, {&u, &b1});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {1, 3, 2},
               {1.701758234142103, 2.375443214303857, -0.21554159581578766, -0.12531658164561202,
                2.187974872468418, 2.625569846962102},
               1e-12);
  // unit_diagonal: [[1,0],[3,1]] x = [1, 5] -> x = [1, 2] (hand-computed).
  Literal a2 = Lit(PrimitiveType::F32, {2, 2}, {42, 0, 3, 42});
  Literal b2 = Lit(PrimitiveType::F32, {2, 1}, {1, 5});
  HloInstruction ts2(HloOpcode::kTriangularSolve, Shape(PrimitiveType::F32, {2, 1}));
  ts2.mutable_attrs().left_side = true;
  ts2.mutable_attrs().lower = true;
  ts2.mutable_attrs().unit_diagonal = true;
  r = RunLinalg(ts2, {&a2, &b2});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 1}, {1, 2});
}

}  // namespace
}  // namespace kiln::eval
