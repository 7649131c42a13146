// Verifier tests on modules built in C++: a well-formed module passes, and each class of
// defect produces its message naming the computation and instruction.
#include "hlo/verifier.h"

#include <gtest/gtest.h>

#include "hlo/hlo_test_builder.h"

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
  HloComputation* fused = m->AddComputation(fb.Build(fb.Add(O::kNegate, "f32[2]", {fx}, "fused.neg")));

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
    auto* a = b.comp()->AddInstruction(HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {}), "a"));
    auto* c = b.comp()->AddInstruction(HloInstruction::CreateParameter(2, Shape(PrimitiveType::F32, {}), "c"));
    m->AddComputation(b.Build(b.Add(O::kAdd, "f32[]", {a, c}, "sum")), true);
    ExpectMessage(*m, "verifier: in %main: parameter numbers are not contiguous: 1 is missing "
                      "(highest is 2)");
  }
  {
    auto m = std::make_unique<HloModule>("dup");
    CompBuilder b("main");
    auto* a = b.comp()->AddInstruction(HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {}), "a"));
    auto* c = b.comp()->AddInstruction(HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {}), "c"));
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
  ExpectMessage(*m, "verifier: in %main, %reduce.2: reduce: expects 2N operands (N inputs, then "
                    "N init values) but has 3 operands");
}

TEST(VerifierTest, DeclaredShapeMustMatchInferred) {
  auto m = GoodModule();
  *Find(*m, "main", "dot.3")->mutable_shape() = Shape(PrimitiveType::F32, {4, 2});
  ExpectMessage(*m, "verifier: in %main, %dot.3: dot: declared shape f32[4,2] does not match "
                    "inferred shape f32[2,4]");
}

TEST(VerifierTest, ElementTypeMismatchIsReported) {
  auto m = GoodModule();
  *Find(*m, "main", "fusion.5")->mutable_shape() = Shape(PrimitiveType::F64, {2});
  ExpectMessage(*m, "verifier: in %main, %fusion.5: fusion: declared shape f64[2] does not match "
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
  ExpectMessage(*m, "verifier: in %main, %dot.3: dot: lhs contracting dimension 1 has size 3 but "
                    "rhs contracting dimension 0 has size 4");
}

TEST(VerifierTest, ReducerSignature) {
  {
    auto m = GoodModule();
    // A reducer with three parameters.
    HloComputation* add = m->FindComputation("add");
    add->AddInstruction(HloInstruction::CreateParameter(2, Shape(PrimitiveType::F32, {}), "add.c"));
    ExpectMessage(*m, "verifier: in %main, %reduce.4: reduce: reducer %add must take 2 scalar "
                      "parameters but takes 3");
  }
  {
    auto m = GoodModule();
    HloComputation* add = m->FindComputation("add");
    *add->parameter(1)->mutable_shape() = Shape(PrimitiveType::F32, {2});
    *add->root()->mutable_shape() = Shape(PrimitiveType::F32, {2});
    ExpectMessage(*m, "verifier: in %add, %add.r: add: operand shapes f32[] and f32[2] have "
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
    ExpectMessage(*m, "verifier: in %main, %reduce.1: reduce: reducer %add parameter 0 must be "
                      "f32[] but is s32[]");
  }
}

TEST(VerifierTest, WhileSignatures) {
  {
    auto m = GoodModule();
    // Condition returning s32[] instead of pred[].
    HloComputation* cond = m->FindComputation("cond");
    cond->set_root(cond->parameter(0));
    ExpectMessage(*m, "verifier: in %main, %while.6: while: condition %cond must return pred[] "
                      "but returns s32[]");
  }
  {
    auto m = GoodModule();
    HloComputation* body = m->FindComputation("body");
    auto* c = body->AddInstruction(HloInstruction::CreateConstant(Literal::Scalar(PrimitiveType::F32, 1)));
    c->set_name("body.f");
    body->set_root(c);
    ExpectMessage(*m, "verifier: in %main, %while.6: while: body %body returns f32[] but the loop "
                      "state is s32[]");
  }
  {
    auto m = GoodModule();
    *m->FindComputation("body")->parameter(0)->mutable_shape() = Shape(PrimitiveType::S64, {});
    // The body's own add is checked first (computations are verified in order).
    absl::Status s = VerifyModule(*m);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "verifier: in %body, %body.next: add: operand element types s64 and "
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
  ExpectMessage(*m, "verifier: in %main, %fusion.5: fusion: fused computation %fused parameter 0 "
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
  ExpectMessage(*m, "verifier: in %main, %sort.1: sort: comparator %less must take 4 scalar "
                    "parameters but takes 2");
}

TEST(VerifierTest, CalledComputationCount) {
  auto m = GoodModule();
  Find(*m, "main", "while.6")->set_called_computation(1, m->FindComputation("cond"));
  // cond as body: takes s32[] but returns pred[].
  ExpectMessage(*m, "verifier: in %main, %while.6: while: body %cond returns pred[] but the loop "
                    "state is s32[]");
  auto m2 = GoodModule();
  Find(*m2, "main", "tuple.7")->AppendCalledComputation(m2->FindComputation("add"));
  ExpectMessage(*m2, "verifier: in %main, %tuple.7: tuple: expects 0 called computations but has 1");
}

TEST(VerifierTest, CalleeOutsideModule) {
  auto m = GoodModule();
  HloComputation stray("stray");
  Find(*m, "main", "reduce.4")->set_called_computation(0, &stray);
  ExpectMessage(*m, "verifier: in %main, %reduce.4: reduce: calls %stray which is not part of the "
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
  ExpectMessage(*m, "verifier: in %body, %stray.neg: negate: operand 0 %x belongs to "
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
  ExpectMessage(*m, "verifier: in %main, %x: parameter: user %late.neg belongs to another "
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
  Find(*m, "body", "body.next")->set_name("dot.3");
  ExpectMessage(*m, "verifier: in %main, %dot.3: dot: instruction name is already used in %body");
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
  ExpectMessage(*m, "verifier: in %main, %sas.1: select-and-scatter: select %ge must return "
                    "pred[] but returns f32[]");
  Find(*m, "main", "sas.1")->set_called_computation(0, m->FindComputation("add"));
  ExpectMessage(*m, "verifier: in %main, %sas.1: select-and-scatter: select %add must return "
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
  ExpectMessage(*m, "verifier: in %main, %map.2: map: to_apply %add takes 2 parameters but is "
                    "given 1 operands");
}

}  // namespace
}  // namespace kiln
