// Verifier tests: a well-formed module passes, and each class of defect produces its message
// naming the computation and instruction. Defects that HLO text can express are written as
// text; the ones the parser itself rejects (or cannot express: cycles, cross-computation
// edges) are built in C++. Last, every module of the real-world corpus must verify.
#include "hlo/verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "hlo/hlo_test_builder.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using testing::CompBuilder;
using testing::ScalarReducer;
using O = HloOpcode;

void ExpectOk(const HloModule& m) {
  absl::Status s = VerifyModule(m);
  EXPECT_TRUE(s.ok()) << s.message();
}

void ExpectMessage(const HloModule& m, std::string_view want) {
  absl::Status s = VerifyModule(m);
  ASSERT_FALSE(s.ok()) << "module verified but should fail with: " << want;
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()), std::string(want));
}

// cond: i < 10; body: i + 1.
std::unique_ptr<HloComputation> LoopCond(std::string name, std::string_view shape = "s32[]") {
  CompBuilder b(name);
  auto* i = b.Param(shape, name + ".i");
  auto* ten = b.Constant(Literal::Scalar(PrimitiveType::S32, 10), name + ".ten");
  auto* lt = b.Add(O::kCompare, "pred[]", {i, ten}, name + ".lt");
  lt->mutable_attrs().comparison_direction = ComparisonDirection::kLt;
  return b.Build(lt);
}
std::unique_ptr<HloComputation> LoopBody(std::string name) {
  CompBuilder b(name);
  auto* i = b.Param("s32[]", name + ".i");
  auto* one = b.Constant(Literal::Scalar(PrimitiveType::S32, 1), name + ".one");
  return b.Build(b.Add(O::kAdd, "s32[]", {i, one}, name + ".next"));
}

// A module that uses most checked features; tests break one thing at a time.
std::unique_ptr<HloModule> GoodModule() {
  auto m = std::make_unique<HloModule>("good");
  HloComputation* add = m->AddComputation(ScalarReducer("add", "f32"));
  HloComputation* cond = m->AddComputation(LoopCond("cond"));
  HloComputation* body = m->AddComputation(LoopBody("body"));
  CompBuilder fb("fused");
  auto* fx = fb.Param("f32[2]", "fused.x");
  HloComputation* fused =
      m->AddComputation(fb.Build(fb.Add(O::kNegate, "f32[2]", {fx}, "fused.neg")));

  CompBuilder b("main");
  auto* x = b.Param("f32[2,3]", "x");
  auto* w = b.Param("f32[3,4]", "w");
  auto* dot = b.Add(O::kDot, "f32[2,4]", {x, w}, "dot.3");
  dot->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  auto* zero = b.Constant(Literal::Scalar(PrimitiveType::F32, 0), "zero");
  auto* red = b.Add(O::kReduce, "f32[2]{0}", {dot, zero}, "reduce.4");
  red->mutable_attrs().dimensions = {1};
  red->AppendCalledComputation(add);
  auto* fusion = b.Add(O::kFusion, "f32[2]", {red}, "fusion.5");
  fusion->AppendCalledComputation(fused);
  auto* start = b.Constant(Literal::Scalar(PrimitiveType::S32, 0), "start");
  auto* loop = b.Add(O::kWhile, "s32[]", {start}, "while.6");
  loop->AppendCalledComputation(cond);
  loop->AppendCalledComputation(body);
  b.Add(O::kTuple, "(f32[2], s32[])", {fusion, loop}, "tuple.7");
  m->AddComputation(b.Build(), /*is_entry=*/true);
  return m;
}

HloInstruction* Find(const HloModule& m, std::string_view comp, std::string_view name) {
  return m.FindComputation(comp)->FindInstruction(name);
}

TEST(VerifierTest, WellFormedModulePasses) { ExpectOk(*GoodModule()); }

TEST(VerifierTest, MissingEntry) {
  auto m = GoodModule();
  m->set_entry(nullptr);
  ExpectMessage(*m, "verifier: module good has no entry computation");
}

TEST(VerifierTest, MissingRoot) {
  auto m = GoodModule();
  m->FindComputation("body")->set_root(nullptr);
  ExpectMessage(*m, "verifier: in %body: computation has no root instruction");
}

TEST(VerifierTest, ParameterNumbersMustBeContiguousAndUnique) {
  {
    auto m = std::make_unique<HloModule>("gap");
    CompBuilder b("main");
    auto* a = b.comp()->AddInstruction(
        HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {}), "a"));
    auto* c = b.comp()->AddInstruction(
        HloInstruction::CreateParameter(2, Shape(PrimitiveType::F32, {}), "c"));
    m->AddComputation(b.Build(b.Add(O::kAdd, "f32[]", {a, c}, "sum")), true);
    ExpectMessage(*m,
                  "verifier: in %main: parameter numbers are not contiguous: 1 is missing "
                  "(highest is 2)");
  }
  {
    auto m = std::make_unique<HloModule>("dup");
    CompBuilder b("main");
    auto* a = b.comp()->AddInstruction(
        HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {}), "a"));
    auto* c = b.comp()->AddInstruction(
        HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {}), "c"));
    m->AddComputation(b.Build(b.Add(O::kAdd, "f32[]", {a, c}, "sum")), true);
    ExpectMessage(*m, "verifier: in %main, %c: parameter: parameter number 0 is also used by %a");
  }
}

TEST(VerifierTest, OperandCount) {
  auto m = std::make_unique<HloModule>("count");
  CompBuilder b("main");
  auto* a = b.Param("f32[2]", "a");
  b.Add(O::kAdd, "f32[2]", {a}, "add.1");
  m->AddComputation(b.Build(), true);
  ExpectMessage(*m, "verifier: in %main, %add.1: add: expects 2 operands but has 1 operand");
}

TEST(VerifierTest, VariadicOperandCounts) {
  auto m = std::make_unique<HloModule>("count");
  HloComputation* add = m->AddComputation(ScalarReducer("add", "f32"));
  CompBuilder b("main");
  auto* a = b.Param("f32[2]", "a");
  auto* z = b.Param("f32[]", "z");
  auto* r = b.Add(O::kReduce, "f32[]", {a, z, a}, "reduce.2");
  r->mutable_attrs().dimensions = {0};
  r->AppendCalledComputation(add);
  m->AddComputation(b.Build(), true);
  ExpectMessage(*m,
                "verifier: in %main, %reduce.2: reduce: expects 2N operands (N inputs, then "
                "N init values) but has 3 operands");
}

TEST(VerifierTest, DeclaredShapeMustMatchInferred) {
  auto m = GoodModule();
  *Find(*m, "main", "dot.3")->mutable_shape() = Shape(PrimitiveType::F32, {4, 2});
  ExpectMessage(*m,
                "verifier: in %main, %dot.3: dot: declared shape f32[4,2] does not match "
                "inferred shape f32[2,4]");
}

TEST(VerifierTest, ElementTypeMismatchIsReported) {
  auto m = GoodModule();
  *Find(*m, "main", "fusion.5")->mutable_shape() = Shape(PrimitiveType::F64, {2});
  ExpectMessage(*m,
                "verifier: in %main, %fusion.5: fusion: declared shape f64[2] does not match "
                "inferred shape f32[2]");
}

TEST(VerifierTest, LayoutsAndDynamicDimensionsAreTolerated) {
  auto m = GoodModule();
  HloInstruction* dot = Find(*m, "main", "dot.3");
  Shape s = dot->shape();
  s.set_layout(Layout{{0, 1}, ""});
  *dot->mutable_shape() = s;
  ExpectOk(*m);

  auto d = std::make_unique<HloModule>("dyn");
  CompBuilder b("main");
  auto* x = b.Param("f32[<=8,3]", "x");
  b.Add(O::kNegate, "f32[<=8,3]", {x}, "neg");
  auto* r = b.Add(O::kReshape, "f32[<=24]", {x}, "flat");
  d->AddComputation(b.Build(r), true);
  ExpectOk(*d);
}

TEST(VerifierTest, InferenceErrorsAreWrapped) {
  auto m = GoodModule();
  *Find(*m, "main", "w")->mutable_shape() = Shape(PrimitiveType::F32, {4, 4});
  ExpectMessage(*m,
                "verifier: in %main, %dot.3: dot: lhs contracting dimension 1 has size 3 but "
                "rhs contracting dimension 0 has size 4");
}

TEST(VerifierTest, ReducerSignature) {
  {
    auto m = GoodModule();
    // A reducer with three parameters.
    HloComputation* add = m->FindComputation("add");
    add->AddInstruction(HloInstruction::CreateParameter(2, Shape(PrimitiveType::F32, {}), "add.c"));
    ExpectMessage(*m,
                  "verifier: in %main, %reduce.4: reduce: reducer %add must take 2 scalar "
                  "parameters but takes 3");
  }
  {
    auto m = GoodModule();
    HloComputation* add = m->FindComputation("add");
    *add->parameter(1)->mutable_shape() = Shape(PrimitiveType::F32, {2});
    *add->root()->mutable_shape() = Shape(PrimitiveType::F32, {2});
    ExpectMessage(*m,
                  "verifier: in %add, %add.r: add: operand shapes f32[] and f32[2] have "
                  "different dimensions");
  }
  {
    auto m = std::make_unique<HloModule>("r");
    HloComputation* add = m->AddComputation(ScalarReducer("add", "s32"));
    CompBuilder b("main");
    auto* a = b.Param("f32[2]", "a");
    auto* z = b.Param("f32[]", "z");
    auto* r = b.Add(O::kReduce, "f32[]", {a, z}, "reduce.1");
    r->mutable_attrs().dimensions = {0};
    r->AppendCalledComputation(add);
    m->AddComputation(b.Build(), true);
    ExpectMessage(*m,
                  "verifier: in %main, %reduce.1: reduce: reducer %add parameter 0 must be "
                  "f32[] but is s32[]");
  }
}

TEST(VerifierTest, WhileSignatures) {
  {
    auto m = GoodModule();
    // Condition returning s32[] instead of pred[].
    HloComputation* cond = m->FindComputation("cond");
    cond->set_root(cond->parameter(0));
    ExpectMessage(*m,
                  "verifier: in %main, %while.6: while: condition %cond must return pred[] "
                  "but returns s32[]");
  }
  {
    auto m = GoodModule();
    HloComputation* body = m->FindComputation("body");
    auto* c = body->AddInstruction(
        HloInstruction::CreateConstant(Literal::Scalar(PrimitiveType::F32, 1)));
    c->set_name("body.f");
    body->set_root(c);
    ExpectMessage(*m,
                  "verifier: in %main, %while.6: while: body %body returns f32[] but the loop "
                  "state is s32[]");
  }
  {
    auto m = GoodModule();
    *m->FindComputation("body")->parameter(0)->mutable_shape() = Shape(PrimitiveType::S64, {});
    // The body's own add is checked first (computations are verified in order).
    absl::Status s = VerifyModule(*m);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(),
              "verifier: in %body, %body.next: add: operand element types s64 and "
              "s32 differ");
  }
}

TEST(VerifierTest, ConditionalBranches) {
  auto build = [](std::string_view branch1_param, std::string_view branch1_result) {
    auto m = std::make_unique<HloModule>("cond");
    CompBuilder t("on_true");
    auto* tx = t.Param("f32[2]", "t.x");
    HloComputation* tc = m->AddComputation(t.Build(t.Add(O::kNegate, "f32[2]", {tx}, "t.neg")));
    CompBuilder f("on_false");
    auto* fx = f.Param(branch1_param, "f.x");
    HloComputation* fc =
        m->AddComputation(f.Build(f.Add(O::kConvert, branch1_result, {fx}, "f.cvt")));
    CompBuilder b("main");
    auto* p = b.Param("pred[]", "p");
    auto* a = b.Param("f32[2]", "a");
    auto* c = b.Param("s32[2]", "c");
    auto* cond = b.Add(O::kConditional, "f32[2]", {p, a, c}, "conditional.1");
    cond->AppendCalledComputation(tc);
    cond->AppendCalledComputation(fc);
    m->AddComputation(b.Build(), true);
    return m;
  };
  ExpectOk(*build("s32[2]", "f32[2]"));
  ExpectMessage(*build("f32[2]", "f32[2]"),
                "verifier: in %main, %conditional.1: conditional: branch 1 %on_false parameter 0 "
                "is f32[2] but operand 0 is s32[2]");
  ExpectMessage(*build("s32[2]", "f64[2]"),
                "verifier: in %main, %conditional.1: conditional: branch 1 %on_false returns "
                "f64[2] but branch 0 %on_true returns f32[2]");
}

TEST(VerifierTest, FusionParameters) {
  auto m = GoodModule();
  *m->FindComputation("fused")->parameter(0)->mutable_shape() = Shape(PrimitiveType::F32, {3});
  *m->FindComputation("fused")->root()->mutable_shape() = Shape(PrimitiveType::F32, {3});
  ExpectMessage(*m,
                "verifier: in %main, %fusion.5: fusion: fused computation %fused parameter 0 "
                "is f32[3] but operand 0 is f32[2]");
}

TEST(VerifierTest, SortComparator) {
  auto m = std::make_unique<HloModule>("sort");
  CompBuilder cb("less");
  auto* a = cb.Param("f32[]", "less.a");
  auto* c = cb.Param("f32[]", "less.b");
  auto* lt = cb.Add(O::kCompare, "pred[]", {a, c}, "less.lt");
  lt->mutable_attrs().comparison_direction = ComparisonDirection::kLt;
  HloComputation* less = m->AddComputation(cb.Build());
  CompBuilder b("main");
  auto* k = b.Param("f32[5]", "k");
  auto* v = b.Param("s32[5]", "v");
  auto* s = b.Add(O::kSort, "(f32[5], s32[5])", {k, v}, "sort.1");
  s->mutable_attrs().dimensions = {0};
  s->AppendCalledComputation(less);
  m->AddComputation(b.Build(), true);
  ExpectMessage(*m,
                "verifier: in %main, %sort.1: sort: comparator %less must take 4 scalar "
                "parameters but takes 2");
}

TEST(VerifierTest, CalledComputationCount) {
  auto m = GoodModule();
  Find(*m, "main", "while.6")->set_called_computation(1, m->FindComputation("cond"));
  // cond as body: takes s32[] but returns pred[].
  ExpectMessage(*m,
                "verifier: in %main, %while.6: while: body %cond returns pred[] but the loop "
                "state is s32[]");
  auto m2 = GoodModule();
  Find(*m2, "main", "tuple.7")->AppendCalledComputation(m2->FindComputation("add"));
  ExpectMessage(*m2,
                "verifier: in %main, %tuple.7: tuple: expects 0 called computations but has 1");
}

TEST(VerifierTest, CalleeOutsideModule) {
  auto m = GoodModule();
  HloComputation stray("stray");
  Find(*m, "main", "reduce.4")->set_called_computation(0, &stray);
  ExpectMessage(*m,
                "verifier: in %main, %reduce.4: reduce: calls %stray which is not part of the "
                "module");
}

TEST(VerifierTest, OperandFromAnotherComputation) {
  auto m = GoodModule();
  HloInstruction* x = Find(*m, "main", "x");
  HloComputation* body = m->FindComputation("body");
  HloInstruction* neg = body->AddInstruction(
      HloInstruction::CreateUnary(O::kNegate, Shape(PrimitiveType::F32, {2, 3}), x));
  neg->set_name("stray.neg");
  // Computations are checked in order: %body (where the use is) comes before %main.
  ExpectMessage(*m,
                "verifier: in %body, %stray.neg: negate: operand 0 %x belongs to "
                "computation %main");
}

TEST(VerifierTest, UserInAnotherComputation) {
  auto m = GoodModule();
  CompBuilder b("late");
  auto* y = b.Param("f32[2,3]", "late.y");
  b.Add(O::kNegate, "f32[2,3]", {y}, "late.neg");
  HloComputation* late = m->AddComputation(b.Build());
  late->FindInstruction("late.neg")->ReplaceOperandWith(0, Find(*m, "main", "x"));
  // %main is checked before %late, so the bad edge is seen from the used side.
  ExpectMessage(*m,
                "verifier: in %main, %x: parameter: user %late.neg belongs to another "
                "computation");
}

TEST(VerifierTest, RootFromAnotherComputation) {
  auto m = GoodModule();
  m->FindComputation("body")->set_root(Find(*m, "main", "x"));
  ExpectMessage(*m, "verifier: in %body: root %x belongs to another computation");
}

TEST(VerifierTest, Cycle) {
  auto m = std::make_unique<HloModule>("cyc");
  CompBuilder b("main");
  auto* p = b.Param("f32[2]", "p");
  auto* a = b.Add(O::kAdd, "f32[2]", {p, p}, "a");
  auto* n = b.Add(O::kNegate, "f32[2]", {a}, "n");
  a->ReplaceOperandWith(1, n);
  m->AddComputation(b.Build(n), true);
  ExpectMessage(*m, "verifier: in %main, %a: add: is part of a cycle (reached again through %n)");
}

TEST(VerifierTest, DuplicateNames) {
  auto m = GoodModule();
  Find(*m, "main", "reduce.4")->set_name("dot.3");
  ExpectMessage(*m,
                "verifier: in %main, %dot.3: reduce: instruction name is already used in %main");
  auto m2 = GoodModule();
  m2->FindComputation("cond")->set_name("body");
  ExpectMessage(*m2, "verifier: in %body: computation name is used by more than one computation");
}

TEST(VerifierTest, MapAndSelectAndScatterSignatures) {
  auto m = std::make_unique<HloModule>("sas");
  HloComputation* add = m->AddComputation(ScalarReducer("add", "f32"));
  HloComputation* ge = m->AddComputation(ScalarReducer("ge", "f32", O::kMaximum));
  CompBuilder b("main");
  auto* a = b.Param("f32[4]", "a");
  auto* src = b.Param("f32[2]", "src");
  auto* z = b.Param("f32[]", "z");
  auto* sas = b.Add(O::kSelectAndScatter, "f32[4]", {a, src, z}, "sas.1");
  WindowDimension d{2, 2};
  sas->mutable_attrs().window = Window{{d}};
  sas->AppendCalledComputation(ge);  // returns f32[], not pred[]
  sas->AppendCalledComputation(add);
  auto* map = b.Add(O::kMap, "f32[4]", {a}, "map.2");
  map->AppendCalledComputation(add);
  m->AddComputation(b.Build(map), true);
  ExpectMessage(*m,
                "verifier: in %main, %sas.1: select-and-scatter: select %ge must return "
                "pred[] but returns f32[]");
  Find(*m, "main", "sas.1")->set_called_computation(0, m->FindComputation("add"));
  ExpectMessage(*m,
                "verifier: in %main, %sas.1: select-and-scatter: select %add must return "
                "pred[] but returns f32[]");
}

TEST(VerifierTest, MapArity) {
  auto m = std::make_unique<HloModule>("map");
  HloComputation* add = m->AddComputation(ScalarReducer("add", "f32"));
  CompBuilder b("main");
  auto* a = b.Param("f32[4]", "a");
  auto* map = b.Add(O::kMap, "f32[4]", {a}, "map.2");
  map->AppendCalledComputation(add);
  m->AddComputation(b.Build(), true);
  ExpectMessage(*m,
                "verifier: in %main, %map.2: map: to_apply %add takes 2 parameters but is "
                "given 1 operands");
}

// ---- modules written as HLO text ---------------------------------------------------------

std::unique_ptr<HloModule> Parse(std::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return std::make_unique<HloModule>("unparsed");
  return std::move(*m);
}

// A module with reduce, while, conditional, call, fusion, sort and map; each text test below
// replaces one line of it.
constexpr std::string_view kGoodText = R"(HloModule good

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

cond {
  i = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}

body {
  j = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(j, one)
}

neg_branch {
  x0 = f32[2] parameter(0)
  ROOT n0 = f32[2] negate(x0)
}

cvt_branch {
  x1 = s32[2] parameter(0)
  ROOT c1 = f32[2] convert(x1)
}

fused {
  fp = f32[2,4] parameter(0)
  ROOT fe = f32[2,4] exponential(fp)
}

less {
  la = f32[] parameter(0)
  lb = f32[] parameter(1)
  lc = s32[] parameter(2)
  ld = s32[] parameter(3)
  ROOT llt = pred[] compare(la, lb), direction=LT
}

ENTRY main {
  x = f32[2,3] parameter(0)
  w = f32[3,4] parameter(1)
  p = pred[] parameter(2)
  k = s32[2] parameter(3)
  dot.3 = f32[2,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  fusion.4 = f32[2,4] fusion(dot.3), kind=kLoop, calls=fused
  zero = f32[] constant(0)
  reduce.5 = f32[2] reduce(fusion.4, zero), dimensions={1}, to_apply=add
  start = s32[] constant(0)
  while.6 = s32[] while(start), condition=cond, body=body
  conditional.7 = f32[2] conditional(p, reduce.5, k), branch_computations={neg_branch, cvt_branch}
  sort.8 = (f32[2], s32[2]) sort(conditional.7, k), dimensions={0}, to_apply=less
  map.9 = f32[2] map(reduce.5, conditional.7), dimensions={0}, to_apply=add
  call.10 = f32[] call(zero, zero), to_apply=add
  ROOT tuple.11 = (f32[2], s32[], (f32[2], s32[2]), f32[2], f32[]) tuple(reduce.5, while.6, sort.8, map.9, call.10)
}
)";

// kGoodText with the line containing `from` replaced by `to`.
std::unique_ptr<HloModule> Variant(std::string_view from, std::string_view to) {
  std::string text(kGoodText);
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return Parse(text);
  text.replace(at, from.size(), to);
  return Parse(text);
}

TEST(VerifierText, WellFormedModulePasses) { ExpectOk(*Parse(kGoodText)); }

TEST(VerifierText, DeclaredShapeMismatch) {
  ExpectMessage(*Variant("dot.3 = f32[2,4] dot(x, w)", "dot.3 = f32[4,2] dot(x, w)"),
                "verifier: in %main, %dot.3: dot: declared shape f32[4,2] does not match "
                "inferred shape f32[2,4]");
  ExpectMessage(*Variant("ROOT n0 = f32[2] negate(x0)", "ROOT n0 = f64[2] negate(x0)"),
                "verifier: in %neg_branch, %n0: negate: declared shape f64[2] does not match "
                "inferred shape f32[2]");
}

TEST(VerifierText, ShapeInferenceErrorIsReported) {
  ExpectMessage(*Variant("w = f32[3,4] parameter(1)", "w = f32[4,4] parameter(1)"),
                "verifier: in %main, %dot.3: dot: lhs contracting dimension 1 has size 3 but rhs "
                "contracting dimension 0 has size 4");
  ExpectMessage(*Variant("dimensions={1}, to_apply=add", "dimensions={2}, to_apply=add"),
                "verifier: in %main, %reduce.5: reduce: reduced dimension 2 is out of range for "
                "rank 2");
}

TEST(VerifierText, ReducerSignature) {
  ExpectMessage(*Variant("ROOT r = f32[] add(a, b)", "ROOT r = f32[] parameter(2)"),
                "verifier: in %main, %reduce.5: reduce: reducer %add must take 2 scalar "
                "parameters but takes 3");
  ExpectMessage(*Variant("  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)",
                         "  b = s32[] parameter(1)\n  ROOT r = f32[] convert(b)"),
                "verifier: in %main, %reduce.5: reduce: reducer %add parameter 1 must be f32[] "
                "but is s32[]");
}

TEST(VerifierText, WhileSignature) {
  ExpectMessage(
      *Variant("ROOT lt = pred[] compare(i, ten), direction=LT", "ROOT lt = s32[] add(i, ten)"),
      "verifier: in %main, %while.6: while: condition %cond must return pred[] but "
      "returns s32[]");
  ExpectMessage(*Variant("ROOT next = s32[] add(j, one)", "ROOT next = f32[] convert(j)"),
                "verifier: in %main, %while.6: while: body %body returns f32[] but the loop "
                "state is s32[]");
}

TEST(VerifierText, ConditionalBranches) {
  ExpectMessage(*Variant("x1 = s32[2] parameter(0)\n  ROOT c1 = f32[2] convert(x1)",
                         "x1 = f32[2] parameter(0)\n  ROOT c1 = f32[2] negate(x1)"),
                "verifier: in %main, %conditional.7: conditional: branch 1 %cvt_branch "
                "parameter 0 is f32[2] but operand 0 is s32[2]");
  ExpectMessage(*Variant("ROOT c1 = f32[2] convert(x1)", "ROOT c1 = f64[2] convert(x1)"),
                "verifier: in %main, %conditional.7: conditional: branch 1 %cvt_branch returns "
                "f64[2] but branch 0 %neg_branch returns f32[2]");
}

TEST(VerifierText, FusionParameters) {
  ExpectMessage(*Variant("fp = f32[2,4] parameter(0)\n  ROOT fe = f32[2,4] exponential(fp)",
                         "fp = f32[4,2] parameter(0)\n  ROOT fe = f32[2,4] transpose(fp), "
                         "dimensions={1,0}"),
                "verifier: in %main, %fusion.4: fusion: fused computation %fused parameter 0 is "
                "f32[4,2] but operand 0 is f32[2,4]");
}

TEST(VerifierText, SortComparator) {
  ExpectMessage(
      *Variant("ROOT llt = pred[] compare(la, lb), direction=LT", "ROOT llt = f32[] add(la, lb)"),
      "verifier: in %main, %sort.8: sort: comparator %less must return pred[] but "
      "returns f32[]");
  ExpectMessage(*Variant("lc = s32[] parameter(2)", "lc = f32[] parameter(2)"),
                "verifier: in %main, %sort.8: sort: comparator %less parameter 2 must be s32[] "
                "but is f32[]");
}

TEST(VerifierText, CallAndMapParameters) {
  ExpectMessage(*Variant("call.10 = f32[] call(zero, zero)", "call.10 = f32[] call(zero, start)"),
                "verifier: in %main, %call.10: call: to_apply %add parameter 1 is f32[] but "
                "operand 1 is s32[]");
  ExpectMessage(
      *Variant("map.9 = f32[2] map(reduce.5, conditional.7)", "map.9 = f32[2] map(reduce.5)"),
      "verifier: in %main, %map.9: map: to_apply %add takes 2 parameters but is given "
      "1 operands");
}

TEST(VerifierText, CopyOfATupleIsADeepCopyButKeepsItsShape) {
  ExpectOk(*Variant("ROOT tuple.11 = (f32[2], s32[], (f32[2], s32[2]), f32[2], f32[]) tuple(",
                    "copy.12 = (f32[2], s32[2]) copy(sort.8)\n  ROOT tuple.11 = (f32[2], s32[], "
                    "(f32[2], s32[2]), f32[2], f32[]) tuple("));
  ExpectMessage(
      *Variant("ROOT tuple.11 = (f32[2], s32[], (f32[2], s32[2]), f32[2], f32[]) tuple(",
               "copy.12 = (f32[2], s32[]) copy(sort.8)\n  ROOT tuple.11 = (f32[2], s32[], "
               "(f32[2], s32[2]), f32[2], f32[]) tuple("),
      "verifier: in %main, %copy.12: copy: declared shape (f32[2], s32[]) does not "
      "match inferred shape (f32[2], s32[2])");
}

TEST(VerifierText, InstructionNamesAreScopedPerComputation) {
  // Reducers in hand-written and dumped modules reuse `a`, `p0`, ... in every computation;
  // XLA's parser accepts that, and so do we.
  ExpectOk(*Variant("ROOT next = s32[] add(j, one)", "ROOT dot.3 = s32[] add(j, one)"));
}

// XLA's tests write forms its verifier accepts in layout-free HLO (its test base allows mixed
// precision) that Kiln's devices do not run: kXlaText accepts them, kExecutable does not.
TEST(VerifierText, XlaTextRulesAcceptWhatExecutionRulesRefuse) {
  struct Case {
    std::string body, executable_error;
  };
  const Case cases[] = {
      {"  a = f16[4] parameter(0)\n  b = f32[4] parameter(1)\n"
       "  ROOT m = f32[4] maximum(a, b)\n",
       "verifier: in %e, %m: maximum: operand element types f16 and f32 differ"},
      {"  a = f64[4] parameter(0)\n  ROOT t = f32[4] transpose(a), dimensions={0}\n",
       "verifier: in %e, %t: transpose: declared shape f32[4] does not match inferred shape "
       "f64[4]"},
      {"  a = s32[] parameter(0)\n  ROOT b = s32[32] bitcast(a)\n",
       "verifier: in %e, %b: bitcast: result s32[32] has 128 bytes but operand s32[] has 4"},
      {"  s = u64[2] parameter(0)\n"
       "  ROOT r = u32[8] rng-bit-generator(s), algorithm=rng_default\n",
       "verifier: in %e, %r: rng-bit-generator: result must be a (state, values) tuple but is "
       "u32[8]"},
      {"  a = c64[8] parameter(0)\n  ROOT f = c64[8] fft(a), fft_type=FFT, fft_length={32}\n",
       "verifier: in %e, %f: fft: operand dimension 0 has size 8 but fft_length={32} wants 32"},
  };
  for (const Case& c : cases) {
    std::unique_ptr<HloModule> m = Parse("HloModule m\nENTRY e {\n" + c.body + "}\n");
    ASSERT_NE(m, nullptr) << c.body;
    absl::Status text = VerifyModule(*m, ShapeRules::kXlaText);
    EXPECT_TRUE(text.ok()) << c.body << text.message();
    absl::Status run = VerifyModule(*m);
    EXPECT_EQ(std::string(run.message()), c.executable_error) << c.body;
  }
  // Mixed precision is about floating point only, and passing a value on keeps its type.
  std::unique_ptr<HloModule> ints = Parse(
      "HloModule m\nENTRY e {\n  a = s32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
      "  ROOT m = f32[4] add(a, b)\n}\n");
  EXPECT_FALSE(VerifyModule(*ints, ShapeRules::kXlaText).ok());
  std::unique_ptr<HloModule> gte = Parse(
      "HloModule m\nENTRY e {\n  a = (f32[4]) parameter(0)\n"
      "  ROOT g = bf16[4] get-tuple-element(a), index=0\n}\n");
  EXPECT_FALSE(VerifyModule(*gte, ShapeRules::kXlaText).ok());
}

// Both rule sets: after-all joins any values (XLA's token tests pass an f32), and all-to-all
// without a split dimension is the tuple form even of one array.
TEST(VerifierText, AfterAllAndTupleAllToAll) {
  ExpectOk(
      *Parse("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
             "  ROOT t = token[] after-all(a)\n}\n"));
  ExpectOk(
      *Parse("HloModule m\nENTRY e {\n  a = f32[4,2] parameter(0)\n"
             "  ROOT x = (f32[4,2]) all-to-all(a), replica_groups={}\n}\n"));
  ExpectMessage(*Parse("HloModule m\nENTRY e {\n  a = f32[4,2] parameter(0)\n"
                       "  ROOT x = f32[4,2] all-to-all(a), replica_groups={}\n}\n"),
                "verifier: in %e, %x: all-to-all: declared shape f32[4,2] does not match "
                "inferred shape (f32[4,2])");
}

// ---- the real-world corpus ---------------------------------------------------------------

// Corpus modules that must fail verification, with the message each fails with and why it
// is right to fail. Empty: every module in tests/hlo_corpus verifies.
const std::map<std::string, std::string> kCorpusExpectedFailures = {};

TEST(VerifierCorpus, EveryCorpusModuleVerifies) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::filesystem::path dir = std::filesystem::path(root ? root : ".") / "tests" / "hlo_corpus";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " is missing (set KILN_SOURCE_ROOT)";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".hlo") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 30u) << "corpus looks incomplete";
  int verified = 0, expected_failures = 0;
  for (const auto& path : files) {
    std::string name = path.filename().string();
    SCOPED_TRACE(name);
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto m = ParseHloModule(text.str(), name);
    ASSERT_TRUE(m.ok()) << m.status().message();
    absl::Status s = VerifyModule(**m);
    auto expected = kCorpusExpectedFailures.find(name);
    if (expected != kCorpusExpectedFailures.end()) {
      ASSERT_FALSE(s.ok()) << "verified; remove it from kCorpusExpectedFailures";
      EXPECT_EQ(std::string(s.message()), expected->second);
      ++expected_failures;
      continue;
    }
    EXPECT_TRUE(s.ok()) << s.message();
    if (s.ok()) ++verified;
  }
  std::printf("corpus: %d of %zu modules verify, %d expected failures\n", verified, files.size(),
              expected_failures);
  EXPECT_EQ(verified + expected_failures, static_cast<int>(files.size()));
}

}  // namespace
}  // namespace kiln
