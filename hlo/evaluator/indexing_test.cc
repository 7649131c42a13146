// Tests of gather and scatter against hand-computed values (each checked against the
// equivalent NumPy indexing expression noted beside it).
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/computation.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_test_util.h"

namespace kiln::eval {
namespace {

using testing::ExpectValues;
using testing::F32;
using testing::Lit;

constexpr PrimitiveType kF32 = PrimitiveType::F32;
constexpr PrimitiveType kS32 = PrimitiveType::S32;

const CallFn kNoCall = [](const HloComputation& c, Operands) -> absl::StatusOr<Literal> {
  return absl::InternalError("unexpected call of " + c.name());
};

std::unique_ptr<HloComputation> Computation(int nparams, PrimitiveType t, HloOpcode root_op,
                                            int root_param = -1) {
  auto c = std::make_unique<HloComputation>("update");
  std::vector<HloInstruction*> ps;
  for (int i = 0; i < nparams; ++i)
    ps.push_back(c->AddInstruction(
        HloInstruction::CreateParameter(i, Shape::Scalar(t), "p" + std::to_string(i))));
  if (root_param >= 0) {
    c->set_root(ps[root_param]);
  } else if (root_op == HloOpcode::kConstant) {
    c->set_root(c->AddInstruction(HloInstruction::CreateConstant(Literal::Scalar(t, 0))));
  } else {
    c->set_root(
        c->AddInstruction(HloInstruction::CreateBinary(root_op, Shape::Scalar(t), ps[0], ps[1])));
  }
  return c;
}

// operand[i, j] = 10*i + j, shape [5,3].
Literal Table() {
  std::vector<double> v;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) v.push_back(10 * i + j);
  return F32({5, 3}, v);
}

// Embedding lookup: table[[4, 0, 2, 4]] with index_vector_dim == rank(indices).
TEST(GatherTest, EmbeddingLookup) {
  Literal table = Table();
  Literal ids = Lit(kS32, {4}, {4, 0, 2, 4});
  HloInstruction g(HloOpcode::kGather, Shape(kF32, {4, 3}));
  g.mutable_attrs().gather_dimension_numbers = GatherDimensionNumbers{{1}, {0}, {0}, 1, {}, {}};
  g.mutable_attrs().gather_slice_sizes = {1, 3};
  auto r = EvalIndexing(g, std::vector<const Literal*>{&table, &ids}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {4, 3}, {40, 41, 42, 0, 1, 2, 20, 21, 22, 40, 41, 42});
}

// TF gather_nd style with index_vector_dim = 0: indices [[0, 4], [1, 2]] hold the vectors
// (0,1) and (4,2) in their columns -> table[0,1], table[4,2].
TEST(GatherTest, IndexVectorDimZero) {
  Literal table = Table();
  Literal idx = Lit(kS32, {2, 2}, {0, 4, 1, 2});
  HloInstruction g(HloOpcode::kGather, Shape(kF32, {2}));
  g.mutable_attrs().gather_dimension_numbers =
      GatherDimensionNumbers{{}, {0, 1}, {0, 1}, 0, {}, {}};
  g.mutable_attrs().gather_slice_sizes = {1, 1};
  auto r = EvalIndexing(g, std::vector<const Literal*>{&table, &idx}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2}, {1, 42});
}

// 2x2 slices; start (4, 2) clamps to (3, 1); start (-1, 0) clamps to (0, 0).
TEST(GatherTest, ClampsStartIndices) {
  Literal table = Table();
  Literal idx = Lit(kS32, {2, 2}, {4, 2, -1, 0});
  HloInstruction g(HloOpcode::kGather, Shape(kF32, {2, 2, 2}));
  g.mutable_attrs().gather_dimension_numbers =
      GatherDimensionNumbers{{1, 2}, {}, {0, 1}, 1, {}, {}};
  g.mutable_attrs().gather_slice_sizes = {2, 2};
  auto r = EvalIndexing(g, std::vector<const Literal*>{&table, &idx}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 2, 2}, {31, 32, 41, 42, 0, 1, 10, 11});
}

// Batching dims: operand [2,5] (batch 0), indices [2,1] (batch 0) -> out[b] = op[b, idx[b]].
TEST(GatherTest, BatchingDims) {
  Literal op = F32({2, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14});
  Literal idx = Lit(kS32, {2, 1}, {3, 1});
  HloInstruction g(HloOpcode::kGather, Shape(kF32, {2}));
  g.mutable_attrs().gather_dimension_numbers = GatherDimensionNumbers{{}, {1}, {1}, 1, {0}, {0}};
  g.mutable_attrs().gather_slice_sizes = {1, 1};
  auto r = EvalIndexing(g, std::vector<const Literal*>{&op, &idx}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2}, {3, 11});
}

// Empty operands: a zero-size slice gives an empty result (XLA's ZeroSizeSlice shape), and a
// collapsed slice dimension of size 0 gives a non-empty result with nothing to read, which is
// zeros as XLA's simplifier makes it (this read past the empty operand before).
TEST(GatherTest, EmptyOperand) {
  Literal empty = F32({0, 2}, {});
  Literal idx = Lit(kS32, {3, 1}, {0, 1, -1});
  HloInstruction g(HloOpcode::kGather, Shape(kF32, {3, 0, 2}));
  g.mutable_attrs().gather_dimension_numbers = GatherDimensionNumbers{{1, 2}, {}, {0}, 1, {}, {}};
  g.mutable_attrs().gather_slice_sizes = {0, 2};
  auto r = EvalIndexing(g, std::vector<const Literal*>{&empty, &idx}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3, 0, 2}, {});

  HloInstruction c(HloOpcode::kGather, Shape(kF32, {3, 2}));
  c.mutable_attrs().gather_dimension_numbers = GatherDimensionNumbers{{1}, {0}, {0}, 1, {}, {}};
  c.mutable_attrs().gather_slice_sizes = {0, 2};
  r = EvalIndexing(c, std::vector<const Literal*>{&empty, &idx}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3, 2}, {0, 0, 0, 0, 0, 0});
}

// np.add.at(operand, [1, 4, 1, -1], updates) except out-of-bounds rows (4, -1) are skipped.
TEST(ScatterTest, AddSkipsOutOfBounds) {
  Literal op = F32({4, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
  Literal idx = Lit(kS32, {4, 1}, {1, 4, 1, -1});
  Literal upd = F32({4, 2}, {1, 2, 100, 200, 10, 20, 1000, 2000});
  auto add = Computation(2, kF32, HloOpcode::kAdd);
  HloInstruction s(HloOpcode::kScatter, Shape(kF32, {4, 2}));
  s.mutable_attrs().scatter_dimension_numbers = ScatterDimensionNumbers{{1}, {0}, {0}, 1, {}, {}};
  s.AppendCalledComputation(add.get());
  auto r = EvalIndexing(s, std::vector<const Literal*>{&op, &idx, &upd}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {4, 2}, {0, 0, 11, 22, 0, 0, 0, 0});
}

// A segment sum: 50 rows of 20 (two blocks of 8 and a tail of 4) added into 6 segments with
// repeats and two ids out of range (skipped); the expectation is the plain loop.
TEST(ScatterTest, SegmentSumOfLongRows) {
  const int64_t n = 50, w = 20, segments = 6;
  std::vector<double> ids, rows;
  for (int64_t i = 0; i < n; ++i) ids.push_back(i == 7 ? 6 : i == 9 ? -1 : (i * 7) % segments);
  for (int64_t i = 0; i < n * w; ++i) rows.push_back(0.25 * static_cast<double>(i % 37) - 3);
  std::vector<double> want(segments * w, 1);
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] >= 0 && ids[i] < segments)
      for (int64_t j = 0; j < w; ++j) want[ids[i] * w + j] += rows[i * w + j];
  Literal op = F32({segments, w}, std::vector<double>(segments * w, 1));
  Literal idx = Lit(kS32, {n}, ids);
  Literal upd = F32({n, w}, rows);
  auto add = Computation(2, kF32, HloOpcode::kAdd);
  HloInstruction s(HloOpcode::kScatter, Shape(kF32, {segments, w}));
  s.mutable_attrs().scatter_dimension_numbers = ScatterDimensionNumbers{{1}, {0}, {0}, 1, {}, {}};
  s.AppendCalledComputation(add.get());
  auto r = EvalIndexing(s, std::vector<const Literal*>{&op, &idx, &upd}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {segments, w}, want);
}

// Rows of a 2x3 window at two-component indices, max combiner: operand [3,4,3] of zeros,
// windows at (0, 0), (2, 2) and (1, 3), the last running past dimension 1 (skipped); NumPy:
// o[0, 0:2] = max(o[0, 0:2], w0); o[2, 2:4] = max(o[2, 2:4], w1).
TEST(ScatterTest, MaxRowsOfTwoDimensionalWindows) {
  Literal op = F32({3, 4, 3}, std::vector<double>(36, 0));
  Literal idx = Lit(kS32, {3, 2}, {0, 0, 2, 2, 1, 3});
  std::vector<double> u = {1, -1, 2, 3, 0, -5, 4, 5, 6, 7, 8, 9};
  u.resize(18, 100);
  Literal upd = F32({3, 2, 3}, u);
  auto max = Computation(2, kF32, HloOpcode::kMaximum);
  HloInstruction s(HloOpcode::kScatter, Shape(kF32, {3, 4, 3}));
  s.mutable_attrs().scatter_dimension_numbers =
      ScatterDimensionNumbers{{1, 2}, {0}, {0, 1}, 1, {}, {}};
  s.AppendCalledComputation(max.get());
  auto r = EvalIndexing(s, std::vector<const Literal*>{&op, &idx, &upd}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> want(36, 0);
  const double w0[] = {1, 0, 2, 3, 0, 0}, w1[] = {4, 5, 6, 7, 8, 9};
  for (int i = 0; i < 6; ++i) {
    want[i] = w0[i];           // o[0, 0:2, :]
    want[24 + 6 + i] = w1[i];  // o[2, 2:4, :]
  }
  ExpectValues(*r, {3, 4, 3}, want);
}

// A window that would run past the end is skipped whole: 1-D operand [5], windows of 2.
TEST(ScatterTest, AssignSkipsPartiallyOutOfBoundsWindow) {
  Literal op = F32({5}, {0, 0, 0, 0, 0});
  Literal idx = Lit(kS32, {2}, {4, 1});
  Literal upd = F32({2, 2}, {7, 8, 5, 6});
  auto assign = Computation(2, kF32, HloOpcode::kParameter, /*root_param=*/1);
  HloInstruction s(HloOpcode::kScatter, Shape(kF32, {5}));
  s.mutable_attrs().scatter_dimension_numbers = ScatterDimensionNumbers{{1}, {}, {0}, 1, {}, {}};
  s.AppendCalledComputation(assign.get());
  auto r = EvalIndexing(s, std::vector<const Literal*>{&op, &idx, &upd}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {5}, {0, 5, 6, 0, 0});
}

// Variadic scatter through the general path: two operands, the update keeps the pair with
// the larger first component (an argmax-style scatter).
TEST(ScatterTest, VariadicGeneralPath) {
  Literal v = F32({3}, {0, 0, 0});
  Literal i = Lit(kS32, {3}, {-1, -1, -1});
  Literal idx = Lit(kS32, {3, 1}, {2, 0, 2});
  Literal uv = F32({3}, {5, 1, 9});
  Literal ui = Lit(kS32, {3}, {0, 1, 2});
  auto fn = Computation(4, kF32, HloOpcode::kConstant);
  HloInstruction s(HloOpcode::kScatter, Shape::Tuple({Shape(kF32, {3}), Shape(kS32, {3})}));
  s.mutable_attrs().scatter_dimension_numbers = ScatterDimensionNumbers{{}, {0}, {0}, 1, {}, {}};
  s.AppendCalledComputation(fn.get());
  CallFn call = [](const HloComputation&, Operands a) -> absl::StatusOr<Literal> {
    bool take = a[2]->GetAsDouble(0) > a[0]->GetAsDouble(0);
    std::vector<Literal> out;
    out.push_back(Literal::Scalar(kF32, (take ? a[2] : a[0])->GetAsDouble(0)));
    out.push_back(Literal::Scalar(kS32, (take ? a[3] : a[1])->GetAsDouble(0)));
    return Literal::MakeTuple(std::move(out));
  };
  auto r = EvalIndexing(s, std::vector<const Literal*>{&v, &i, &idx, &uv, &ui}, call);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {3}, {1, 0, 9});
  ExpectValues(r->element(1), {3}, {1, -1, 2});
}

// Batching dims in scatter: operand [2,3], indices [2,1]: operand[b, idx[b]] += upd[b].
TEST(ScatterTest, BatchingDims) {
  Literal op = F32({2, 3}, {0, 0, 0, 0, 0, 0});
  Literal idx = Lit(kS32, {2, 1}, {2, 0});
  Literal upd = F32({2}, {5, 7});
  auto add = Computation(2, kF32, HloOpcode::kAdd);
  HloInstruction s(HloOpcode::kScatter, Shape(kF32, {2, 3}));
  s.mutable_attrs().scatter_dimension_numbers = ScatterDimensionNumbers{{}, {1}, {1}, 1, {0}, {0}};
  s.AppendCalledComputation(add.get());
  auto r = EvalIndexing(s, std::vector<const Literal*>{&op, &idx, &upd}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 3}, {0, 0, 5, 7, 0, 0});
}

}  // namespace
}  // namespace kiln::eval
