// Tests of reduce, reduce-window, select-and-scatter, map, sort and topk against NumPy or
// hand-computed values. Called computations are built as real HLO (so the fast paths can
// recognize them); the CallFn is a C++ lambda with the same meaning, standing in for the
// evaluator driver.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/computation.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_test_util.h"
#include "hlo/text/parser.h"

namespace kiln::eval {
namespace {

using testing::ExpectValues;
using testing::F32;
using testing::Lit;

constexpr PrimitiveType kF32 = PrimitiveType::F32;
constexpr PrimitiveType kS32 = PrimitiveType::S32;

// (p0, p1) -> op(p0, p1) on scalars of type t.
std::unique_ptr<HloComputation> Binary(HloOpcode op, PrimitiveType t) {
  auto c = std::make_unique<HloComputation>("binary");
  auto* a = c->AddInstruction(HloInstruction::CreateParameter(0, Shape::Scalar(t), "a"));
  auto* b = c->AddInstruction(HloInstruction::CreateParameter(1, Shape::Scalar(t), "b"));
  c->set_root(c->AddInstruction(HloInstruction::CreateBinary(op, Shape::Scalar(t), a, b)));
  return c;
}
// n scalar parameters whose root is compare(p[lhs], p[rhs], dir).
std::unique_ptr<HloComputation> Comparator(std::vector<PrimitiveType> types, int lhs, int rhs,
                                           ComparisonDirection dir) {
  auto c = std::make_unique<HloComputation>("cmp");
  std::vector<HloInstruction*> ps;
  for (size_t i = 0; i < types.size(); ++i)
    ps.push_back(c->AddInstruction(
        HloInstruction::CreateParameter(i, Shape::Scalar(types[i]), "p" + std::to_string(i))));
  auto* cmp = c->AddInstruction(HloInstruction::CreateBinary(
      HloOpcode::kCompare, Shape::Scalar(PrimitiveType::PRED), ps[lhs], ps[rhs]));
  cmp->mutable_attrs().comparison_direction = dir;
  c->set_root(cmp);
  return c;
}
// A computation the fast paths cannot recognize (root is a tuple or a parameter-less op);
// its meaning comes from the test's CallFn.
std::unique_ptr<HloComputation> Opaque(std::vector<PrimitiveType> types) {
  auto c = std::make_unique<HloComputation>("opaque");
  for (size_t i = 0; i < types.size(); ++i)
    c->AddInstruction(
        HloInstruction::CreateParameter(i, Shape::Scalar(types[i]), "p" + std::to_string(i)));
  c->set_root(c->AddInstruction(HloInstruction::CreateConstant(Literal::Scalar(kF32, 0))));
  return c;
}

const CallFn kNoCall = [](const HloComputation& c, Operands) -> absl::StatusOr<Literal> {
  return absl::InternalError("unexpected call of " + c.name());
};

// x = ((arange(24)*5) % 13 - 6).reshape(2,3,4); expected x.sum(axis=(0,2)).
TEST(ReduceTest, SumOverTwoDimensionsFastPath) {
  Literal x = F32({2, 3, 4}, {-6, -1, 4,  -4, 1,  6, -2, 3,  -5, 0,  5, -3,
                              2,  -6, -1, 4,  -4, 1, 6,  -2, 3,  -5, 0, 5});
  Literal zero = Literal::Scalar(kF32, 0);
  auto add = Binary(HloOpcode::kAdd, kF32);
  HloInstruction red(HloOpcode::kReduce, Shape(kF32, {3}));
  red.mutable_attrs().dimensions = {0, 2};
  red.AppendCalledComputation(add.get());
  auto r = EvalReduction(red, std::vector<const Literal*>{&x, &zero}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3}, {-8, 9, 0});
  // Same through the general path: the CallFn adds.
  auto opaque = Opaque({kF32, kF32});
  red.set_called_computation(0, opaque.get());
  CallFn adder = [](const HloComputation&, Operands a) -> absl::StatusOr<Literal> {
    return Literal::Scalar(kF32, a[0]->GetAsDouble(0) + a[1]->GetAsDouble(0));
  };
  r = EvalReduction(red, std::vector<const Literal*>{&x, &zero}, adder);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3}, {-8, 9, 0});
}

TEST(ReduceTest, MaxPropagatesNaNAndBf16AccumulatesInF32) {
  Literal x = F32({4}, {1, NAN, 3, 2});
  Literal init = Literal::Scalar(kF32, -INFINITY);
  auto mx = Binary(HloOpcode::kMaximum, kF32);
  HloInstruction red(HloOpcode::kReduce, Shape(kF32, {}));
  red.mutable_attrs().dimensions = {0};
  red.AppendCalledComputation(mx.get());
  auto r = EvalReduction(red, std::vector<const Literal*>{&x, &init}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {}, {NAN});
  // 256 + 1 + 1 + ... (8 ones) in bf16: per-step bf16 rounding would stay at 256
  // (256+1 rounds to 256), f32 accumulation gives 264 (exactly representable in bf16).
  std::vector<double> v = {256, 1, 1, 1, 1, 1, 1, 1, 1};
  Literal xb = Lit(PrimitiveType::BF16, {9}, v);
  Literal zb = Literal::Scalar(PrimitiveType::BF16, 0);
  auto addb = Binary(HloOpcode::kAdd, PrimitiveType::BF16);
  HloInstruction redb(HloOpcode::kReduce, Shape(PrimitiveType::BF16, {}));
  redb.mutable_attrs().dimensions = {0};
  redb.AppendCalledComputation(addb.get());
  r = EvalReduction(redb, std::vector<const Literal*>{&xb, &zb}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {}, {264});
}

// Variadic argmax: reduce (values, iota) over dim 1 with a reducer that keeps the larger
// value and, on ties, the smaller index. Hand-computed.
TEST(ReduceTest, VariadicArgmax) {
  Literal v = F32({2, 4}, {3, 7, 7, 1, -2, -5, 0, -1});
  Literal idx = Lit(kS32, {2, 4}, {0, 1, 2, 3, 0, 1, 2, 3});
  Literal vinit = Literal::Scalar(kF32, -INFINITY);
  Literal iinit = Literal::Scalar(kS32, 0);
  auto reducer = Opaque({kF32, kS32, kF32, kS32});
  CallFn argmax = [](const HloComputation&, Operands a) -> absl::StatusOr<Literal> {
    EXPECT_EQ(a.size(), 4u);
    double av = a[0]->GetAsDouble(0), ai = a[1]->GetAsDouble(0);
    double bv = a[2]->GetAsDouble(0), bi = a[3]->GetAsDouble(0);
    bool take_b = bv > av || (bv == av && bi < ai);
    std::vector<Literal> out;
    out.push_back(Literal::Scalar(kF32, take_b ? bv : av));
    out.push_back(Literal::Scalar(kS32, take_b ? bi : ai));
    return Literal::MakeTuple(std::move(out));
  };
  HloInstruction red(HloOpcode::kReduce, Shape::Tuple({Shape(kF32, {2}), Shape(kS32, {2})}));
  red.mutable_attrs().dimensions = {1};
  red.AppendCalledComputation(reducer.get());
  auto r = EvalReduction(red, std::vector<const Literal*>{&v, &idx, &vinit, &iinit}, argmax);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->IsTuple());
  ExpectValues(r->element(0), {2}, {7, 0});
  ExpectValues(r->element(1), {2}, {1, 2});
}

TEST(ReduceTest, RejectsBadDimension) {
  Literal x = F32({2}, {1, 2});
  Literal zero = Literal::Scalar(kF32, 0);
  auto add = Binary(HloOpcode::kAdd, kF32);
  HloInstruction red(HloOpcode::kReduce, Shape(kF32, {}));
  red.mutable_attrs().dimensions = {1};
  red.AppendCalledComputation(add.get());
  EXPECT_FALSE(EvalReduction(red, std::vector<const Literal*>{&x, &zero}, kNoCall).ok());
}

// y = ((arange(20)*7) % 17 - 8).reshape(4,5); numpy: pad rows (1,0), cols (1,1) with -inf,
// 2x3 windows, strides (2,1), max.
TEST(ReduceWindowTest, MaxWithPadding) {
  Literal y = F32({4, 5}, {-8, -1, 6, -4, 3, -7, 0, 7, -3, 4, -6, 1, 8, -2, 5, -5, 2, -8, -1, 6});
  Literal init = Literal::Scalar(kF32, -INFINITY);
  auto mx = Binary(HloOpcode::kMaximum, kF32);
  HloInstruction rw(HloOpcode::kReduceWindow, Shape(kF32, {2, 5}));
  Window w;
  w.dimensions = {WindowDimension{2, 2, 1, 0, 1, 1, false},
                  WindowDimension{3, 1, 1, 1, 1, 1, false}};
  rw.mutable_attrs().window = w;
  rw.AppendCalledComputation(mx.get());
  auto r = EvalReduction(rw, std::vector<const Literal*>{&y, &init}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 5}, {-1, 6, 6, 6, 3, 1, 8, 8, 8, 5});
}

// Same y; base dilation 2 on dim 1 (zeros inserted), window 2x2 with window dilation 2 on
// dim 0, sum; numpy over the explicitly dilated array.
TEST(ReduceWindowTest, SumWithBaseAndWindowDilation) {
  Literal y = F32({4, 5}, {-8, -1, 6, -4, 3, -7, 0, 7, -3, 4, -6, 1, 8, -2, 5, -5, 2, -8, -1, 6});
  Literal zero = Literal::Scalar(kF32, 0);
  auto add = Binary(HloOpcode::kAdd, kF32);
  HloInstruction rw(HloOpcode::kReduceWindow, Shape(kF32, {2, 8}));
  Window w;
  w.dimensions = {WindowDimension{2, 1, 0, 0, 2, 1, false},
                  WindowDimension{2, 1, 0, 0, 1, 2, false}};
  rw.mutable_attrs().window = w;
  rw.AppendCalledComputation(add.get());
  auto r = EvalReduction(rw, std::vector<const Literal*>{&y, &zero}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 8}, {-14, 0, 0, 14, 14, -6, -6, 8, -12, 2, 2, -1, -1, -4, -4, 10});
}

// Max-pool gradient: 4x4 operand, 2x2 windows stride 2; each source value lands on its
// window's maximum (first maximum in row-major order on ties). Hand-computed.
TEST(SelectAndScatterTest, MaxPoolGradient) {
  Literal x = F32({4, 4}, {1, 5, 2, 2, 3, 4, 2, 0, 9, 0, 1, 8, 0, 9, 7, 3});
  Literal src = F32({2, 2}, {10, 20, 30, 40});
  Literal zero = Literal::Scalar(kF32, 0);
  auto ge = Comparator({kF32, kF32}, 0, 1, ComparisonDirection::kGe);
  auto add = Binary(HloOpcode::kAdd, kF32);
  HloInstruction sas(HloOpcode::kSelectAndScatter, Shape(kF32, {4, 4}));
  Window w;
  w.dimensions = {WindowDimension{2, 2, 0, 0, 1, 1, false},
                  WindowDimension{2, 2, 0, 0, 1, 1, false}};
  sas.mutable_attrs().window = w;
  sas.AppendCalledComputation(ge.get());
  sas.AppendCalledComputation(add.get());
  const std::vector<double> expected = {0, 10, 20, 0, 0, 0, 0, 0, 30, 0, 0, 40, 0, 0, 0, 0};
  auto r = EvalReduction(sas, std::vector<const Literal*>{&x, &src, &zero}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {4, 4}, expected);
  // General path: the same semantics through CallFn.
  auto sel = Opaque({kF32, kF32});
  auto sc = Opaque({kF32, kF32});
  sas.set_called_computation(0, sel.get());
  sas.set_called_computation(1, sc.get());
  CallFn fn = [&](const HloComputation& c, Operands a) -> absl::StatusOr<Literal> {
    if (&c == sel.get())
      return Literal::Scalar(PrimitiveType::PRED, a[0]->GetAsDouble(0) >= a[1]->GetAsDouble(0));
    return Literal::Scalar(kF32, a[0]->GetAsDouble(0) + a[1]->GetAsDouble(0));
  };
  r = EvalReduction(sas, std::vector<const Literal*>{&x, &src, &zero}, fn);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {4, 4}, expected);
}

// The typed path (a plain compare and add: whole windows by fixed offsets, border windows by
// the general walk) against the general path through CallFn, on a 9x11 operand of small
// integers (many ties) with 3x2 windows, strides 2x3, padding and a window dilation.
TEST(SelectAndScatterTest, TypedPathMatchesTheGeneralOne) {
  std::vector<double> xv(9 * 11), sv;
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<double>((i * 7 + i / 5) % 4);
  Window w;
  w.dimensions = {WindowDimension{3, 2, 1, 2, 1, 1, false},
                  WindowDimension{2, 3, 0, 1, 2, 1, false}};
  // Windows: (9 + 3 - 3) / 2 + 1 = 5 along rows, (11 + 1 - 3) / 3 + 1 = 4 along columns.
  for (int i = 0; i < 5 * 4; ++i) sv.push_back(i + 1);
  Literal x = F32({9, 11}, xv), src = F32({5, 4}, sv), zero = Literal::Scalar(kF32, 0);
  auto ge = Comparator({kF32, kF32}, 0, 1, ComparisonDirection::kGe);
  auto add = Binary(HloOpcode::kAdd, kF32);
  HloInstruction sas(HloOpcode::kSelectAndScatter, Shape(kF32, {9, 11}));
  sas.mutable_attrs().window = w;
  sas.AppendCalledComputation(ge.get());
  sas.AppendCalledComputation(add.get());
  auto typed = EvalReduction(sas, std::vector<const Literal*>{&x, &src, &zero}, kNoCall);
  ASSERT_TRUE(typed.ok()) << typed.status();
  auto sel = Opaque({kF32, kF32});
  auto sc = Opaque({kF32, kF32});
  sas.set_called_computation(0, sel.get());
  sas.set_called_computation(1, sc.get());
  CallFn fn = [&](const HloComputation& c, Operands a) -> absl::StatusOr<Literal> {
    if (&c == sel.get())
      return Literal::Scalar(PrimitiveType::PRED, a[0]->GetAsDouble(0) >= a[1]->GetAsDouble(0));
    return Literal::Scalar(kF32, a[0]->GetAsDouble(0) + a[1]->GetAsDouble(0));
  };
  auto general = EvalReduction(sas, std::vector<const Literal*>{&x, &src, &zero}, fn);
  ASSERT_TRUE(general.ok()) << general.status();
  double total = 0;
  for (int64_t i = 0; i < 9 * 11; ++i) {
    EXPECT_EQ(typed->GetAsDouble(i), general->GetAsDouble(i)) << "element " << i;
    total += typed->GetAsDouble(i);
  }
  EXPECT_EQ(total, 20 * 21 / 2);  // every source value lands once
}

// Overlapping padded windows (size 3, stride 1, padding 1) on a 1-D operand: hand-computed.
TEST(SelectAndScatterTest, OverlappingPaddedWindows) {
  Literal x = F32({4}, {1, 3, 2, 0});
  Literal src = F32({4}, {1, 2, 4, 8});
  Literal zero = Literal::Scalar(kF32, 0);
  auto ge = Comparator({kF32, kF32}, 0, 1, ComparisonDirection::kGe);
  auto add = Binary(HloOpcode::kAdd, kF32);
  HloInstruction sas(HloOpcode::kSelectAndScatter, Shape(kF32, {4}));
  Window w;
  w.dimensions = {WindowDimension{3, 1, 1, 1, 1, 1, false}};
  sas.mutable_attrs().window = w;
  sas.AppendCalledComputation(ge.get());
  sas.AppendCalledComputation(add.get());
  // Windows: {1,3}->3, {1,3,2}->3, {3,2,0}->3, {2,0}->2.
  auto r = EvalReduction(sas, std::vector<const Literal*>{&x, &src, &zero}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {4}, {0, 7, 8, 0});
}

TEST(MapTest, AppliesComputationElementwise) {
  Literal a = F32({3}, {1, 2, 3});
  Literal b = F32({3}, {10, 20, 30});
  auto fn = Opaque({kF32, kF32});
  HloInstruction map(HloOpcode::kMap, Shape(kF32, {3}));
  map.AppendCalledComputation(fn.get());
  CallFn call = [](const HloComputation&, Operands x) -> absl::StatusOr<Literal> {
    return Literal::Scalar(kF32, x[0]->GetAsDouble(0) * 2 + x[1]->GetAsDouble(0));
  };
  auto r = EvalReduction(map, std::vector<const Literal*>{&a, &b}, call);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {3}, {12, 24, 36});
}

// Key/value sort along dim 1 of [2,5]; stable: equal keys keep their order. Hand-computed.
TEST(SortTest, KeyValueFastAndGeneralPaths) {
  Literal keys = F32({2, 5}, {3, 1, 2, 1, 0, 5, 5, -1, 7, 5});
  Literal vals = Lit(kS32, {2, 5}, {0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  auto lt = Comparator({kF32, kF32, kS32, kS32}, 0, 1, ComparisonDirection::kLt);
  HloInstruction sort(HloOpcode::kSort, Shape::Tuple({Shape(kF32, {2, 5}), Shape(kS32, {2, 5})}));
  sort.mutable_attrs().dimensions = {1};
  sort.mutable_attrs().is_stable = true;
  sort.AppendCalledComputation(lt.get());
  auto r = EvalReduction(sort, std::vector<const Literal*>{&keys, &vals}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 5}, {0, 1, 1, 2, 3, -1, 5, 5, 5, 7});
  ExpectValues(r->element(1), {2, 5}, {4, 1, 3, 2, 0, 2, 0, 1, 4, 3});
  // General path: descending by key, then descending by value.
  auto opaque = Opaque({kF32, kF32, kS32, kS32});
  sort.set_called_computation(0, opaque.get());
  CallFn desc = [](const HloComputation&, Operands a) -> absl::StatusOr<Literal> {
    double k0 = a[0]->GetAsDouble(0), k1 = a[1]->GetAsDouble(0);
    double v0 = a[2]->GetAsDouble(0), v1 = a[3]->GetAsDouble(0);
    return Literal::Scalar(PrimitiveType::PRED, k0 > k1 || (k0 == k1 && v0 > v1));
  };
  r = EvalReduction(sort, std::vector<const Literal*>{&keys, &vals}, desc);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 5}, {3, 2, 1, 1, 0, 7, 5, 5, 5, -1});
  ExpectValues(r->element(1), {2, 5}, {0, 2, 3, 1, 4, 3, 4, 1, 0, 2});
}

TEST(SortTest, SingleOperandAlongDim0WithTotalOrder) {
  Literal x = F32({3, 2}, {2, NAN, -0.0, 1, -1, -INFINITY});
  auto lt = Comparator({kF32, kF32}, 0, 1, ComparisonDirection::kLt);
  lt->root()->mutable_attrs().comparison_type = ComparisonType::kFloatTotalOrder;
  HloInstruction sort(HloOpcode::kSort, Shape(kF32, {3, 2}));
  sort.mutable_attrs().dimensions = {0};
  sort.AppendCalledComputation(lt.get());
  auto r = EvalReduction(sort, std::vector<const Literal*>{&x}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  // Column 0: {2, -0, -1} -> {-1, -0, 2}; column 1: {NaN, 1, -inf} -> {-inf, 1, NaN}.
  ExpectValues(*r, {3, 2}, {-1, -INFINITY, -0.0, 1, 2, NAN});
}

TEST(TopKTest, LargestAndSmallestWithTies) {
  Literal x = F32({2, 5}, {1, 4, 4, 2, 9, -1, -3, 0, -3, 5});
  HloInstruction topk(HloOpcode::kTopK, Shape::Tuple({Shape(kF32, {2, 3}), Shape(kS32, {2, 3})}));
  topk.mutable_attrs().k = 3;
  topk.mutable_attrs().largest = true;
  auto r = EvalReduction(topk, std::vector<const Literal*>{&x}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 3}, {9, 4, 4, 5, 0, -1});
  ExpectValues(r->element(1), {2, 3}, {4, 1, 2, 4, 2, 0});
  topk.mutable_attrs().largest = false;
  r = EvalReduction(topk, std::vector<const Literal*>{&x}, kNoCall);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 3}, {1, 2, 4, -3, -3, -1});
  ExpectValues(r->element(1), {2, 3}, {0, 3, 1, 1, 3, 0});
}

// Both of top-k's paths (k <= 64: one pass with insertion; larger k: a partial sort) agree
// with a reference sorted here: values in order, ties by lower index, on rows with many ties.
TEST(TopKTest, SmallAndLargeKMatchASortedReference) {
  const int64_t rows = 3, len = 300;
  std::vector<double> v(rows * len);
  for (int64_t i = 0; i < rows * len; ++i) v[i] = static_cast<double>((i * 37 + 11) % 53) - 20;
  Literal x = F32({rows, len}, v);
  for (int64_t k : {1, 5, 64, 65, 200}) {
    for (bool largest : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "k=" << k << " largest=" << largest);
      std::vector<double> want_v, want_i;
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> perm(len);
        for (int64_t i = 0; i < len; ++i) perm[i] = i;
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
          return largest ? v[r * len + a] > v[r * len + b] : v[r * len + a] < v[r * len + b];
        });
        for (int64_t j = 0; j < k; ++j) {
          want_v.push_back(v[r * len + perm[j]]);
          want_i.push_back(static_cast<double>(perm[j]));
        }
      }
      HloInstruction topk(HloOpcode::kTopK,
                          Shape::Tuple({Shape(kF32, {rows, k}), Shape(kS32, {rows, k})}));
      topk.mutable_attrs().k = k;
      topk.mutable_attrs().largest = largest;
      auto r = EvalReduction(topk, std::vector<const Literal*>{&x}, kNoCall);
      ASSERT_TRUE(r.ok()) << r.status();
      ExpectValues(r->element(0), {rows, k}, want_v);
      ExpectValues(r->element(1), {rows, k}, want_i);
    }
  }
}

// jnp.sort / jnp.argsort's comparator (keys with -0 made +0 and NaNs made one NaN, then a
// total-order compare) takes the typed path: the order, by hand, with stable ties between
// -0 and +0 and between NaNs of either sign.
TEST(EvalSort, JaxFloatComparator) {
  for (const char* dir : {"LT", "GT"}) {
    SCOPED_TRACE(dir);
    const std::string module = std::string(R"(
HloModule s
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  az = pred[] compare(a, zero), direction=EQ
  a0 = f32[] select(az, zero, a)
  an = pred[] compare(a, a), direction=NE
  ac = f32[] select(an, nan, a0)
  bz = pred[] compare(b, zero), direction=EQ
  b0 = f32[] select(bz, zero, b)
  bn = pred[] compare(b, b), direction=NE
  bc = f32[] select(bn, nan, b0)
  ROOT lt = pred[] compare(ac, bc), direction=)") +
                               dir + R"(, type=TOTALORDER
}
ENTRY main {
  x = f32[8] parameter(0)
  iota = s32[8] iota(), iota_dimension=0
  ROOT s = (f32[8], s32[8]) sort(x, iota), dimensions={0}, is_stable=true, to_apply=cmp
}
)";
    auto parsed = ParseHloModule(module, "s");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    Literal x = Lit(PrimitiveType::F32, {8}, {3, nan, -0.0, 0.0, -inf, 3, -nan, 1});
    HloEvaluator evaluator;
    absl::StatusOr<Literal> r = evaluator.Evaluate(**parsed, std::vector<Literal>{x});
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<int> want = std::string(dir) == "LT"
                                      ? std::vector<int>{4, 2, 3, 7, 0, 5, 1, 6}
                                      : std::vector<int>{1, 6, 0, 5, 7, 2, 3, 4};
    for (int k = 0; k < 8; ++k) EXPECT_EQ(r->elements()[1].GetAsDouble(k), want[k]) << k;
    EXPECT_TRUE(std::signbit(r->elements()[0].GetAsDouble(std::string(dir) == "LT" ? 1 : 5)));
  }
}

}  // namespace
}  // namespace kiln::eval
