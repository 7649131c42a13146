// Tests of vector-matrix-dot-to-reduce: v[k] . x[k,n] in either operand order becomes a column
// reduction of v broadcast times x with the evaluator's values on random inputs; dots with as
// many multiply-adds as the limit, matrix-vector products contracting x's minor dimension,
// batched and integer dots stay as they are.
#include "hlo/passes/vector_matrix_dot_to_reduce.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::Agreement;
using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// dot(a, b) of `a` and `b` (types with shapes) to `out` with the given contracting dimensions.
std::string Dot(const std::string& a, const std::string& b, const std::string& out,
                const std::string& dims) {
  return "HloModule m\nENTRY main {\n  a = " + a + " parameter(0)\n  b = " + b +
         " parameter(1)\n  ROOT d = " + out + " dot(a, b), " + dims + "\n}\n";
}

TEST(VectorMatrixDotToReduce, VectorTimesMatrixIsAColumnReduction) {
  VectorMatrixDotToReduce pass(1 << 14);
  const std::string hlo = Dot("f32[64]", "f32[64,128]", "f32[128]",
                              "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed) << out;
  EXPECT_FILECHECK(out, R"(
CHECK: [[V:%[a-z.0-9]+]] = f32[64,128]{1,0} broadcast({{.*}}%a), dimensions={0}
CHECK: [[P:%[a-z.0-9]+]] = f32[64,128]{1,0} multiply({{.*}}[[V]], {{.*}}%b)
CHECK: ROOT {{.*}} = f32[128]{0} reduce({{.*}}[[P]], {{.*}}), dimensions={0}, to_apply=
CHECK-NOT: dot(
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, Agreement::kToRounding));
}

TEST(VectorMatrixDotToReduce, MatrixFirstAndDoubles) {
  VectorMatrixDotToReduce pass(1 << 14);
  const std::string hlo =
      Dot("f64[32,8]", "f64[32]", "f64[8]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed) << out;
  EXPECT_FILECHECK(out, "CHECK: ROOT {{.*}} = f64[8]{0} reduce(");
  EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, 3, Agreement::kToRounding));
}

TEST(VectorMatrixDotToReduce, OthersStay) {
  VectorMatrixDotToReduce pass(1 << 14);
  auto expect_kept = [&](const std::string& hlo) {
    bool changed = true;
    RunPassAndPrint(pass, hlo, &changed);
    EXPECT_FALSE(changed) << hlo;
  };
  // As many multiply-adds as the limit: the backend's GEMM library takes it.
  expect_kept(Dot("f32[128]", "f32[128,128]", "f32[128]",
                  "lhs_contracting_dims={0}, rhs_contracting_dims={0}"));
  // The matrix's minor dimension contracted: each result reads a contiguous row already.
  expect_kept(Dot("f32[64,128]", "f32[128]", "f32[64]",
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  // Matrix times matrix, batched, integer, and mixed types.
  expect_kept(Dot("f32[4,64]", "f32[64,16]", "f32[4,16]",
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  expect_kept(Dot("f32[2,64]", "f32[2,64,16]", "f32[2,16]",
                  "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
                  "rhs_contracting_dims={1}"));
  expect_kept(Dot("s32[64]", "s32[64,16]", "s32[16]",
                  "lhs_contracting_dims={0}, rhs_contracting_dims={0}"));
  expect_kept(Dot("bf16[64]", "bf16[64,16]", "f32[16]",
                  "lhs_contracting_dims={0}, rhs_contracting_dims={0}"));
}

}  // namespace
}  // namespace kiln
