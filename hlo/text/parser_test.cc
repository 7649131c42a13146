// Parser tests: each syntax feature with hand-checked structures and values, and located
// errors for bad input.
#include "hlo/text/parser.h"

#include <cmath>
#include <complex>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "hlo/float16.h"

namespace kiln {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  return std::move(*m);
}

std::string ParseError(std::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_FALSE(m.ok()) << "parsed unexpectedly";
  return m.ok() ? "" : std::string(m.status().message());
}

// The single constant of a module whose entry root is `constant(...)` of `shape`.
std::optional<Literal> ParseConstant(std::string_view shape, std::string_view value) {
  std::string text = "HloModule m\nENTRY e {\n  ROOT c = " + std::string(shape) + " constant(" +
                     std::string(value) + ")\n}\n";
  auto m = Parse(text);
  if (!m) return std::nullopt;
  return m->entry()->root()->attrs().literal;
}

TEST(Parser, BareStyleModule) {
  auto m = Parse(
      R"(HloModule add_mod, entry_computation_layout={(f32[2,3]{1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}, is_scheduled=false

ENTRY main.4 {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[2,3]{1,0} parameter(1)
  ROOT add.3 = f32[2,3]{1,0} add(a, b)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "add_mod");
  ASSERT_EQ(m->attributes().size(), 2u);
  EXPECT_EQ(m->attributes()[0].first, "entry_computation_layout");
  EXPECT_EQ(m->attributes()[0].second, "{(f32[2,3]{1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}");
  EXPECT_EQ(m->attributes()[1].first, "is_scheduled");
  EXPECT_EQ(m->attributes()[1].second, "false");
  HloComputation* e = m->entry();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name(), "main.4");
  EXPECT_EQ(e->num_parameters(), 2);
  EXPECT_EQ(e->parameter(0)->name(), "a");
  EXPECT_EQ(e->parameter(1)->parameter_number(), 1);
  HloInstruction* root = e->root();
  EXPECT_EQ(root->name(), "add.3");
  EXPECT_EQ(root->opcode(), HloOpcode::kAdd);
  ASSERT_EQ(root->operand_count(), 2);
  EXPECT_EQ(root->operand(0), e->parameter(0));
  EXPECT_EQ(root->operand(1), e->parameter(1));
  EXPECT_EQ(root->shape().element_type(), PrimitiveType::F32);
  EXPECT_EQ(root->shape().dimensions(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(root->shape().layout().minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(e->parameter(0)->users().size(), 1u);
}

TEST(Parser, PercentStyleWithTypedOperands) {
  auto m = Parse(R"(HloModule m
ENTRY %main (a: f32[2,3], b: f32[2,3]) -> f32[2,3] {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[2,3]{1,0} parameter(1)
  ROOT %add.3 = f32[2,3]{1,0} add(f32[2,3]{1,0} %a, f32[2,3]{1,0} %b)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->name(), "main");
  EXPECT_EQ(m->entry()->root()->name(), "add.3");
  EXPECT_EQ(m->entry()->root()->operand(1)->name(), "b");
}

TEST(Parser, OperandTypeMustMatch) {
  std::string err = ParseError(R"(HloModule m
ENTRY %main {
  %a = f32[2,3]{1,0} parameter(0)
  ROOT %n = f32[2,3]{1,0} negate(f32[3,2]{1,0} %a)
}
)");
  EXPECT_EQ(err,
            "t.hlo:4:34: operand 'a' is written with shape f32[3,2]{1,0} but has shape "
            "f32[2,3]{1,0}");
}

TEST(Parser, WrappedLinesAndComments) {
  auto m = Parse(R"(// leading comment
/* block
   comment */ HloModule a_inference_f.8,
entry_computation_layout={(f32[10,20]{1,0})->(f32[10,20]{1,0}, /*index=1*/f32[]) }

ENTRY %f (arg0.1: f32[10,20]) ->
(f32[10,20], /*index=1*/f32[]) {
  %arg0.1 = f32[10,20]{1,0} parameter(0), parameter_replication={false},
  metadata={op_name="XLA_Args"}
  %c = f32[] constant(1) // trailing comment
  %add.4 = f32[10,20]{1,0} add(f32[10,20]{1,0} %arg0.1, f32[10,20]{1,0}
  %arg0.1), metadata={op_type="AddV2" op_name="add"
  source_file="x.py" source_line=4}
  ROOT %t = (f32[10,20]{1,0}, /*index=1*/f32[]) tuple(f32[10,20]{1,0} %add.4,
     /*index=1*/f32[] %c)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "a_inference_f.8");
  EXPECT_EQ(m->attributes()[0].second, "{(f32[10,20]{1,0})->(f32[10,20]{1,0}, /*index=1*/f32[]) }");
  HloInstruction* add = m->entry()->FindInstruction("add.4");
  ASSERT_NE(add, nullptr);
  // Line wrapping inside a value becomes one space.
  EXPECT_EQ(*add->attrs().FindExtra("metadata"),
            "{op_type=\"AddV2\" op_name=\"add\" source_file=\"x.py\" source_line=4}");
  EXPECT_EQ(*m->entry()->parameter(0)->attrs().FindExtra("metadata"), "{op_name=\"XLA_Args\"}");
  EXPECT_EQ(m->entry()->root()->operand_count(), 2);
}

TEST(Parser, EntryAndRootDefaultToLast) {
  auto m = Parse(R"(HloModule m
first {
  p = f32[] parameter(0)
}
second {
  p = f32[] parameter(0)
  n = f32[] negate(p)
  e = f32[] exponential(p)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->name(), "second");
  EXPECT_EQ(m->entry()->root()->name(), "e");
}

TEST(Parser, RootNeedNotBeLast) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
  x = f32[] exponential(p)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->name(), "n");
}

TEST(Parser, CalledComputationsInPositionalOrder) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0)
  z = f32[] constant(0)
  r = f32[] reduce(p, z), dimensions={0}, to_apply=add
  t = (f32[]) tuple(r)
  w = (f32[]) while(t), body=body, condition=cond
  pr = pred[] constant(true)
  c = f32[] conditional(pr, r, r), false_computation=neg, true_computation=id
  i = s32[] constant(1)
  b = f32[] conditional(i, r, r, r), branch_computations={id, neg, id}
  f = f32[4]{0} fusion(p), kind=kLoop, calls=fused
  s = f32[4]{0} select-and-scatter(p, p, z), window={size=2 stride=2}, scatter=add, select=ge
  ROOT cc = f32[4]{0} custom-call(p), custom_call_target="foo", called_computations={id, neg}
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ge {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT g = pred[] compare(x, y), direction=GE
}
cond {
  t = (f32[]) parameter(0)
  ROOT k = pred[] constant(false)
}
body {
  ROOT t = (f32[]) parameter(0)
}
id {
  ROOT x = f32[] parameter(0)
}
neg {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}
fused {
  x = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(x)
}
)");
  ASSERT_TRUE(m);
  HloComputation* e = m->entry();
  EXPECT_EQ(e->name(), "e");
  auto called = [&](std::string_view name) {
    std::vector<std::string> out;
    for (HloComputation* c : e->FindInstruction(name)->called_computations())
      out.push_back(c->name());
    return out;
  };
  EXPECT_EQ(called("r"), (std::vector<std::string>{"add"}));
  EXPECT_EQ(called("w"), (std::vector<std::string>{"cond", "body"}));
  EXPECT_EQ(called("c"), (std::vector<std::string>{"id", "neg"}));
  EXPECT_EQ(called("b"), (std::vector<std::string>{"id", "neg", "id"}));
  EXPECT_EQ(called("f"), (std::vector<std::string>{"fused"}));
  EXPECT_EQ(called("s"), (std::vector<std::string>{"ge", "add"}));
  EXPECT_EQ(called("cc"), (std::vector<std::string>{"id", "neg"}));
  EXPECT_TRUE(m->FindComputation("fused")->is_fusion_computation());
  EXPECT_FALSE(m->FindComputation("add")->is_fusion_computation());
  EXPECT_EQ(e->FindInstruction("f")->attrs().fusion_kind, FusionKind::kLoop);
}

TEST(Parser, SortComparator) {
  auto m = Parse(R"(HloModule m
%cmp (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(f32[] %a, f32[] %b), direction=LT, type=TOTALORDER
}
ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[8]{0} sort(f32[8]{0} %p), dimensions={0}, is_stable=true, to_apply=%cmp
}
)");
  ASSERT_TRUE(m);
  HloInstruction* s = m->entry()->root();
  EXPECT_EQ(s->to_apply()->name(), "cmp");
  EXPECT_TRUE(s->attrs().is_stable);
  EXPECT_EQ(s->dimensions(), (std::vector<int64_t>{0}));
  HloInstruction* lt = m->FindComputation("cmp")->root();
  EXPECT_EQ(lt->attrs().comparison_direction, ComparisonDirection::kLt);
  EXPECT_EQ(lt->attrs().comparison_type, ComparisonType::kFloatTotalOrder);
}

TEST(ParseShape, Arrays) {
  auto s = ParseShape("f32[2,3]{0,1}");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->element_type(), PrimitiveType::F32);
  EXPECT_EQ(s->dimensions(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s->layout().minor_to_major, (std::vector<int64_t>{0, 1}));

  s = ParseShape("bf16[8,128]{1,0:T(8,128)(2,1)}");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->element_type(), PrimitiveType::BF16);
  EXPECT_EQ(s->layout().minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(s->layout().suffix, ":T(8,128)(2,1)");

  s = ParseShape("s32[<=10,3]");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->is_dynamic_dimension(0));
  EXPECT_FALSE(s->is_dynamic_dimension(1));
  EXPECT_EQ(s->dimensions(0), 10);
  // No layout written: the default row-major one.
  EXPECT_EQ(s->layout().minor_to_major, (std::vector<int64_t>{1, 0}));

  s = ParseShape("c128[]");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->element_type(), PrimitiveType::C128);
  EXPECT_EQ(s->rank(), 0);
}

TEST(ParseShape, TuplesAndTokens) {
  auto s = ParseShape("(f32[], (s32[4]{0}, token[]), c64[2,2]{1,0})");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->IsTuple());
  ASSERT_EQ(s->tuple_size(), 3);
  EXPECT_EQ(s->tuple_shapes(0).element_type(), PrimitiveType::F32);
  ASSERT_TRUE(s->tuple_shapes(1).IsTuple());
  EXPECT_EQ(s->tuple_shapes(1).tuple_shapes(0).dimensions(0), 4);
  EXPECT_TRUE(s->tuple_shapes(1).tuple_shapes(1).IsToken());
  EXPECT_EQ(s->tuple_shapes(2).element_type(), PrimitiveType::C64);
  s = ParseShape("()");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->IsTuple());
  EXPECT_EQ(s->tuple_size(), 0);
}

TEST(ParseShape, Errors) {
  EXPECT_EQ(ParseShape("f32[2,3]{0,0}").status().message(),
            "<shape>:1:9: layout is not a permutation of the 2 dimensions of f32[2,3]");
  EXPECT_EQ(ParseShape("f33[2]").status().message(), "<shape>:1:1: unknown element type 'f33'");
  EXPECT_EQ(ParseShape("f32[2").status().message(),
            "<shape>:1:6: expected ',' or ']' in the dimensions, found end of input");
  EXPECT_EQ(ParseShape("f32[2] x").status().message(),
            "<shape>:1:8: expected the end of the shape, found 'x'");
  EXPECT_EQ(ParseShape("f32[9223372036854775807,2]").status().message(),
            "<shape>:1:1: shape is too large (its byte size overflows 64 bits)");
  // Nesting deeper than the limit is an error, not a stack overflow.
  std::string deep(100000, '(');
  EXPECT_FALSE(ParseShape(deep).ok());
}

TEST(Literals, Scalars) {
  auto l = ParseConstant("f32[]", "1.5");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->data<float>()[0], 1.5f);
  l = ParseConstant("f32[]", "-inf");
  EXPECT_EQ(l->data<float>()[0], -std::numeric_limits<float>::infinity());
  l = ParseConstant("f64[]", "inf");
  EXPECT_EQ(l->data<double>()[0], std::numeric_limits<double>::infinity());
  l = ParseConstant("f32[]", "nan");
  EXPECT_TRUE(std::isnan(l->data<float>()[0]));
  EXPECT_EQ(FloatBits(l->data<float>()[0]), 0x7fc00000u);
  l = ParseConstant("f32[]", "-nan(0x1)");
  EXPECT_EQ(FloatBits(l->data<float>()[0]), 0xff800001u);
  l = ParseConstant("f32[]", "1e-05");
  EXPECT_EQ(l->data<float>()[0], 1e-05f);
  // Decimal straight to float (not through double): 0.1f exactly.
  l = ParseConstant("f32[]", "0.1");
  EXPECT_EQ(l->data<float>()[0], 0.1f);
  l = ParseConstant("s32[]", "-2147483648");
  EXPECT_EQ(l->data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  l = ParseConstant("u64[]", "18446744073709551615");
  EXPECT_EQ(l->data<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
  l = ParseConstant("s64[]", "9223372036854775807");
  EXPECT_EQ(l->data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  l = ParseConstant("pred[]", "true");
  EXPECT_TRUE(l->data<bool>()[0]);
  l = ParseConstant("pred[]", "false");
  EXPECT_FALSE(l->data<bool>()[0]);
  // bf16 0.1 rounds to 0x3dcd; f16 0.1 to 0x2e66.
  l = ParseConstant("bf16[]", "0.1");
  EXPECT_EQ(l->data<bfloat16>()[0].bits, 0x3dcd);
  l = ParseConstant("f16[]", "0.1");
  EXPECT_EQ(l->data<half>()[0].bits, 0x2e66);
  l = ParseConstant("f16[]", "-inf");
  EXPECT_EQ(l->data<half>()[0].bits, 0xfc00);
  l = ParseConstant("c64[]", "(1, -2.5)");
  EXPECT_EQ(l->data<std::complex<float>>()[0], std::complex<float>(1, -2.5f));
}

TEST(Literals, Arrays) {
  auto l = ParseConstant("s32[2,3]{1,0}", "{ { 1, 2, 3 }, {4,5,6} }");
  ASSERT_TRUE(l);
  auto d = l->data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(d.begin(), d.end()), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  l = ParseConstant("f32[2,1,2]{2,1,0}", "{ { {1, 2} }, { {3, 4.5} } }");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->data<float>()[3], 4.5f);
  l = ParseConstant("c128[2]{0}", "{(1, 2), (3, -4)}");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->data<std::complex<double>>()[1], std::complex<double>(3, -4));
  l = ParseConstant("pred[3]{0}", "{true, false, true}");
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->data<bool>()[1]);
  l = ParseConstant("f32[0,3]{1,0}", "{}");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->element_count(), 0);
  l = ParseConstant("f32[2,0]{1,0}", "{ {}, {} }");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->element_count(), 0);
}

TEST(Literals, Tuples) {
  auto l = ParseConstant("(f32[], s32[2]{0})", "(1.5, {7, 8})");
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->IsTuple());
  EXPECT_EQ(l->element(0).data<float>()[0], 1.5f);
  EXPECT_EQ(l->element(1).data<int32_t>()[1], 8);
  // Element shapes may be written before the values.
  l = ParseConstant("(f32[], s32[2]{0})", "(f32[] 2, s32[2] {3, 4})");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->element(0).data<float>()[0], 2.0f);
  EXPECT_EQ(l->element(1).data<int32_t>()[0], 3);
}

TEST(Literals, ElidedValueParsesWithoutLiteral) {
  auto m = Parse("HloModule m\nENTRY e {\n  ROOT c = f32[1000,2]{1,0} constant({...})\n}\n");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->entry()->root()->attrs().literal.has_value());
}

TEST(Literals, NegativeU64WrapsAsXlaReadsIt) {
  auto m = Parse("HloModule m\nENTRY e {\n  ROOT c = u64[2] constant({-1, 7})\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->literal().data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(m->entry()->root()->literal().data<uint64_t>()[1], 7u);
}

TEST(Literals, Errors) {
  auto wrap = [](std::string_view shape, std::string_view value) {
    return "HloModule m\nENTRY e {\n  ROOT c = " + std::string(shape) + " constant(" +
           std::string(value) + ")\n}\n";
  };
  EXPECT_EQ(ParseError(wrap("u8[]", "256")), "t.hlo:3:26: value 256 is out of range for u8");
  // A finite float that rounds past the type's largest value, as XLA's parser tests write it;
  // the largest value itself and infinity spelled out are fine.
  EXPECT_EQ(ParseError(wrap("f16[]", "-65520")),
            "t.hlo:3:27: value -65520 is out of range for f16");
  EXPECT_EQ(ParseError(wrap("bf16[]", "1e100")),
            "t.hlo:3:28: value 1e100 is out of range for bf16");
  EXPECT_EQ(ParseError(wrap("c64[]", "(1e100, 0)")),
            "t.hlo:3:28: value 1e100 is out of range for c64");
  EXPECT_EQ(ParseError(wrap("f64[]", "1.8e308")),
            "t.hlo:3:27: value 1.8e308 is out of range for f64");
  for (auto [shape, ok] : {std::pair{"f16[]", "65504"}, std::pair{"f16[]", "-inf"},
                           std::pair{"f32[]", "3.40282347e+38"}}) {
    auto m = ParseHloModule(wrap(shape, ok), "t.hlo");
    EXPECT_TRUE(m.ok()) << ok << ": " << m.status();
  }
  EXPECT_EQ(ParseError(wrap("u32[]", "-1")), "t.hlo:3:27: expected a u32 value, found '-1'");
  EXPECT_EQ(ParseError(wrap("s32[2]{0}", "{1, 2, 3}")),
            "t.hlo:3:38: literal of s32[2]{0} has more than 2 elements in dimension 0");
  EXPECT_EQ(ParseError(wrap("s32[3]{0}", "{1, 2}")),
            "t.hlo:3:36: literal of s32[3]{0} has 2 elements in dimension 0, expected 3");
  EXPECT_EQ(ParseError(wrap("f32[]", "abc")), "t.hlo:3:27: expected a f32 value, found 'abc'");
  EXPECT_EQ(ParseError(wrap("pred[]", "2")),
            "t.hlo:3:28: expected a pred value (true or false), found '2'");
  EXPECT_EQ(ParseError(wrap("s32[2,2]{1,0}", "{1, 2, 3, 4}")),
            "t.hlo:3:36: expected '{' for dimension 1 of the literal, found '1'");
  // A shape far larger than the text cannot be filled; refused before allocating.
  EXPECT_EQ(ParseError(wrap("f32[100000000000]{0}", "{1}")),
            "t.hlo:3:42: literal of f32[100000000000]{0} needs 100000000000 elements, more "
            "than the text holds");
}

TEST(Attributes, DataMovement) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[4,6]{1,0} parameter(0)
  i = s32[] parameter(1)
  t = (f32[4,6]{1,0}, s32[]) tuple(p, i)
  g = s32[] get-tuple-element(t), index=1
  io = s32[5]{0} iota(), iota_dimension=0
  s = f32[2,3]{1,0} slice(p), slice={[0:4:2], [1:4]}
  ds = f32[2,2]{1,0} dynamic-slice(p, i, i), dynamic_slice_sizes={2,2}
  z = f32[] constant(0)
  pd = f32[7,14]{1,0} pad(p, z), padding=1_2x-1_3_2
  b = f32[4,6,2]{2,1,0} broadcast(p), dimensions={0,1}
  ROOT tr = f32[6,4]{1,0} transpose(p), dimensions={1,0}
}
)");
  ASSERT_TRUE(m);
  HloComputation* e = m->entry();
  EXPECT_EQ(e->FindInstruction("g")->tuple_index(), 1);
  EXPECT_EQ(e->FindInstruction("io")->attrs().iota_dimension, 0);
  const auto& s = e->FindInstruction("s")->attrs();
  EXPECT_EQ(s.slice_starts, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.slice_limits, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(s.slice_strides, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(e->FindInstruction("ds")->attrs().dynamic_slice_sizes, (std::vector<int64_t>{2, 2}));
  const PaddingConfig& pc = e->FindInstruction("pd")->attrs().padding_config;
  ASSERT_EQ(pc.size(), 2u);
  EXPECT_EQ(pc[0], (PaddingDimension{1, 2, 0}));
  EXPECT_EQ(pc[1], (PaddingDimension{-1, 3, 2}));
  EXPECT_EQ(e->FindInstruction("b")->dimensions(), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(e->FindInstruction("b")->attrs().has_dimensions);
  EXPECT_EQ(e->root()->dimensions(), (std::vector<int64_t>{1, 0}));
}

TEST(Attributes, DotAndConvolution) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[8,2,3]{2,1,0} parameter(0)
  b = f32[8,3,5]{2,1,0} parameter(1)
  d = f32[8,2,5]{2,1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  x = f32[1,4,9,9]{3,2,1,0} parameter(2)
  k = f32[2,2,4,6]{3,2,1,0} parameter(3)
  ROOT c = f32[1,6,5,5]{3,2,1,0} convolution(x, k), window={size=2x2 stride=2x2 pad=1_0x0_1 lhs_dilate=1x1 rhs_dilate=1x2 rhs_reversal=0x1}, dim_labels=bf01_01io->bf01, feature_group_count=2, batch_group_count=3
}
)");
  ASSERT_TRUE(m);
  const auto& dd = *m->entry()->FindInstruction("d")->attrs().dot_dimension_numbers;
  EXPECT_EQ(dd.lhs_batch_dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(dd.lhs_contracting_dimensions, (std::vector<int64_t>{2}));
  EXPECT_EQ(dd.rhs_batch_dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(dd.rhs_contracting_dimensions, (std::vector<int64_t>{1}));
  const auto& ca = m->entry()->root()->attrs();
  ASSERT_EQ(ca.window->dimensions.size(), 2u);
  EXPECT_EQ(ca.window->dimensions[0], (WindowDimension{2, 2, 1, 0, 1, 1, false}));
  EXPECT_EQ(ca.window->dimensions[1], (WindowDimension{2, 2, 0, 1, 2, 1, true}));
  const auto& cd = *ca.convolution_dimension_numbers;
  EXPECT_EQ(cd.input_batch_dimension, 0);
  EXPECT_EQ(cd.input_feature_dimension, 1);
  EXPECT_EQ(cd.input_spatial_dimensions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(cd.kernel_spatial_dimensions, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(cd.kernel_input_feature_dimension, 2);
  EXPECT_EQ(cd.kernel_output_feature_dimension, 3);
  EXPECT_EQ(cd.output_batch_dimension, 0);
  EXPECT_EQ(cd.output_feature_dimension, 1);
  EXPECT_EQ(cd.output_spatial_dimensions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ca.feature_group_count, 2);
  EXPECT_EQ(ca.batch_group_count, 3);
}

TEST(Attributes, DimLabelsWithPermutedLayout) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[1,9,9,4]{3,2,1,0} parameter(0)
  k = f32[6,4,2,2]{3,2,1,0} parameter(1)
  ROOT c = f32[1,8,8,6]{3,2,1,0} convolution(x, k), window={size=2x2}, dim_labels=b01f_oi01->b01f
}
)");
  ASSERT_TRUE(m);
  const auto& cd = *m->entry()->root()->attrs().convolution_dimension_numbers;
  EXPECT_EQ(cd.input_feature_dimension, 3);
  EXPECT_EQ(cd.input_spatial_dimensions, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(cd.kernel_output_feature_dimension, 0);
  EXPECT_EQ(cd.kernel_input_feature_dimension, 1);
  EXPECT_EQ(cd.kernel_spatial_dimensions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m->entry()->root()->attrs().window->dimensions[0].stride, 1);
}

TEST(Attributes, GatherAndScatter) {
  auto m = Parse(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  op = f32[5,4]{1,0} parameter(0)
  idx = s32[3,1]{1,0} parameter(1)
  g = f32[3,4]{1,0} gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true, operand_batching_dims={}, start_indices_batching_dims={}
  ROOT s = f32[5,4]{1,0} scatter(op, idx, g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add, unique_indices=true, input_batching_dims={}, scatter_indices_batching_dims={}
}
)");
  ASSERT_TRUE(m);
  const auto& g = m->entry()->FindInstruction("g")->attrs();
  EXPECT_EQ(g.gather_dimension_numbers->offset_dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(g.gather_dimension_numbers->collapsed_slice_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(g.gather_dimension_numbers->start_index_map, (std::vector<int64_t>{0}));
  EXPECT_EQ(g.gather_dimension_numbers->index_vector_dim, 1);
  EXPECT_EQ(g.gather_slice_sizes, (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(g.indices_are_sorted);
  const auto& s = m->entry()->root()->attrs();
  EXPECT_EQ(s.scatter_dimension_numbers->update_window_dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(s.scatter_dimension_numbers->inserted_window_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.scatter_dimension_numbers->scatter_dims_to_operand_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.scatter_dimension_numbers->index_vector_dim, 1);
  EXPECT_TRUE(s.unique_indices);
  EXPECT_FALSE(s.indices_are_sorted);
  EXPECT_EQ(m->entry()->root()->to_apply()->name(), "add");
}

TEST(Attributes, OpcodeSpecific) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  rp = f32[2,3]{1,0} reduce-precision(p), exponent_bits=5, mantissa_bits=10
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[2,3]{1,0} rng(lo, hi), distribution=rng_normal
  st = u64[2]{0} parameter(1)
  bg = (u64[2]{0}, u32[4]{0}) rng-bit-generator(st), algorithm=rng_philox
  sc = f32[3]{0} parameter(2)
  bn = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(p, sc, sc), epsilon=0.001, feature_index=1
  tk = (f32[2,2]{1,0}, s32[2,2]{1,0}) topk(p), k=2, largest=false
  a = f32[3,3]{1,0} parameter(3)
  ts = f32[3,3]{1,0} triangular-solve(a, a), left_side=true, lower=true, unit_diagonal=false, transpose_a=ADJOINT
  ch = f32[3,3]{1,0} cholesky(a), lower=true
  c = c64[4,8]{1,0} parameter(4)
  f = c64[4,8]{1,0} fft(c), fft_type=IFFT, fft_length={8}
  ROOT cc = f32[2,3]{1,0} custom-call(p), custom_call_target="my\"target\\x", api_version=API_VERSION_TYPED_FFI, backend_config="{\"a\":1}"
}
)");
  ASSERT_TRUE(m);
  HloComputation* e = m->entry();
  EXPECT_EQ(e->FindInstruction("rp")->attrs().exponent_bits, 5);
  EXPECT_EQ(e->FindInstruction("rp")->attrs().mantissa_bits, 10);
  EXPECT_EQ(e->FindInstruction("r")->attrs().distribution, RandomDistribution::kNormal);
  EXPECT_EQ(e->FindInstruction("bg")->attrs().rng_algorithm, RandomAlgorithm::kPhilox);
  EXPECT_EQ(e->FindInstruction("bn")->attrs().epsilon, 0.001f);
  EXPECT_EQ(e->FindInstruction("bn")->attrs().feature_index, 1);
  EXPECT_EQ(e->FindInstruction("tk")->attrs().k, 2);
  EXPECT_FALSE(e->FindInstruction("tk")->attrs().largest);
  const auto& ts = e->FindInstruction("ts")->attrs();
  EXPECT_TRUE(ts.left_side);
  EXPECT_TRUE(ts.lower);
  EXPECT_FALSE(ts.unit_diagonal);
  EXPECT_EQ(ts.transpose_a, TriangularSolveTranspose::kAdjoint);
  EXPECT_TRUE(e->FindInstruction("ch")->attrs().lower);
  EXPECT_EQ(e->FindInstruction("f")->attrs().fft_type, FftType::kIfft);
  EXPECT_EQ(e->FindInstruction("f")->attrs().fft_length, (std::vector<int64_t>{8}));
  const auto& cc = e->root()->attrs();
  EXPECT_EQ(cc.custom_call_target, "my\"target\\x");
  ASSERT_EQ(cc.extra.size(), 2u);
  EXPECT_EQ(cc.extra[0],
            (std::pair<std::string, std::string>{"api_version", "API_VERSION_TYPED_FFI"}));
  EXPECT_EQ(cc.extra[1],
            (std::pair<std::string, std::string>{"backend_config", "\"{\\\"a\\\":1}\""}));
}

TEST(Attributes, UnknownAttributesKeptVerbatimInOrder) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0), sharding={devices=[2]0,1}, parameter_replication={false}
  ROOT a = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add, metadata={op_name="x, y" source_line=3}, frontend_attributes={_xla="}{"}
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
)");
  ASSERT_TRUE(m);
  const auto& extra = m->entry()->root()->attrs().extra;
  ASSERT_EQ(extra.size(), 5u);
  EXPECT_EQ(extra[0].first, "channel_id");
  EXPECT_EQ(extra[0].second, "1");
  EXPECT_EQ(extra[1].second, "{{0,1},{2,3}}");
  EXPECT_EQ(extra[2].first, "use_global_device_ids");
  EXPECT_EQ(extra[3].second, "{op_name=\"x, y\" source_line=3}");
  EXPECT_EQ(extra[4].second, "{_xla=\"}{\"}");
  EXPECT_EQ(*m->entry()->parameter(0)->attrs().FindExtra("sharding"), "{devices=[2]0,1}");
}

// Verbatim attributes whose values XLA's parser checks: a custom-call's api_version, and
// result_accuracy, which only the unary transcendental ops take.
TEST(Attributes, VerbatimAttributesCheckedAsXlaDoes) {
  auto module = [](std::string_view root) {
    return "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = " + std::string(root) +
           "\n}\n";
  };
  for (const char* ok :
       {"f32[] custom-call(p), custom_call_target=\"t\", api_version=API_VERSION_TYPED_FFI",
        "f32[] exponential(p), result_accuracy={mode=highest}",
        "f32[] tanh(p), result_accuracy={tolerance={rtol=0.5, atol=1.0, ulps=2}}"}) {
    auto m = ParseHloModule(module(ok), "t.hlo");
    EXPECT_TRUE(m.ok()) << ok << ": " << m.status();
  }
  EXPECT_EQ(ParseError(module("f32[] custom-call(p), custom_call_target=\"t\", "
                              "api_version=API_VERSION_THAT_DOESNT_EXIST")),
            "t.hlo:4:70: unknown custom-call api_version 'API_VERSION_THAT_DOESNT_EXIST' "
            "(API_VERSION_UNSPECIFIED, API_VERSION_ORIGINAL, API_VERSION_STATUS_RETURNING, "
            "API_VERSION_STATUS_RETURNING_UNIFIED or API_VERSION_TYPED_FFI)");
  EXPECT_EQ(ParseError(module("f32[] negate(p), result_accuracy={mode=highest}")),
            "t.hlo:4:45: 'negate' does not take result_accuracy= (only the unary transcendental "
            "ops do)");
  EXPECT_EQ(ParseError(module("f32[] exponential(p), result_accuracy={mode=high}")),
            "t.hlo:4:50: result_accuracy must be {mode=default|highest} or "
            "{tolerance={atol=..,rtol=..,ulps=..}}, found '{mode=high}'");
  EXPECT_NE(ParseError(module("f32[] exponential(p), result_accuracy={foo=10.0}")), "");
  EXPECT_EQ(ParseError("HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
                       "  ROOT s = f32[] add(x, y)\n}\nENTRY e {\n  p = f32[8] parameter(0)\n"
                       "  ROOT r = f32[8] all-reduce(p), replica_groups={}, "
                       "use_global_device_ids=true, to_apply=add\n}\n"),
            "t.hlo:9:53: use_global_device_ids=true needs a channel_id");
}

TEST(Attributes, CustomCallLiteralIsAShapeThenAValue) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  c = f32[1]{0} constant({1})
  a = f32[2] custom-call(c), custom_call_target="t", literal=s32[2]{0} {1, 2}, api_version=API_VERSION_ORIGINAL
  ROOT b = f32[2] custom-call(a), custom_call_target="u", literal=f32[] 0.1
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m->entry()->root()->operand(0)->attrs().FindExtra("literal"), "s32[2]{0} {1, 2}");
  EXPECT_EQ(*m->entry()->root()->attrs().FindExtra("literal"), "f32[] 0.1");
  auto again = Parse(m->ToString());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->ToString(), m->ToString());
}

TEST(Attributes, ControlPredecessors) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[] parameter(0)
  a = f32[] negate(p)
  b = f32[] exponential(p)
  ROOT c = f32[] add(a, b), control-predecessors={a, b}
}
)");
  ASSERT_TRUE(m);
  const auto& preds = m->entry()->root()->control_predecessors();
  ASSERT_EQ(preds.size(), 2u);
  EXPECT_EQ(preds[0]->name(), "a");
  EXPECT_EQ(preds[1]->name(), "b");
}

TEST(Parser, StackFrameTablesKeptVerbatim) {
  const std::string tables =
      "FileNames\n1 \"a.py\"\n\nFunctionNames\n1 \"main\"\n\nFileLocations\n"
      "1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=2 end_column=7}\n\n"
      "StackFrames\n1 {file_location_id=1 parent_frame_id=1}";
  auto m = Parse("HloModule m, entry_computation_layout={()->pred[]}\n\n" + tables +
                 "\n\n\nENTRY %c () -> pred[] {\n  ROOT %k = pred[] constant(true), "
                 "metadata={stack_frame_id=1}\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->stack_frame_tables(), tables);
}

TEST(Parser, AsyncShorthandKeepsWrappedOpcode) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  s = ((f32[8]{0}), f32[8]{0}) all-to-all-start(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}
  ROOT d = f32[8]{0} all-to-all-done(s)
}
)");
  ASSERT_TRUE(m);
  HloInstruction* s = m->entry()->FindInstruction("s");
  EXPECT_EQ(s->opcode(), HloOpcode::kAsyncStart);
  EXPECT_EQ(s->attrs().async_wrapped_opcode, HloOpcode::kAllToAll);
  EXPECT_EQ(s->dimensions(), (std::vector<int64_t>{0}));
  EXPECT_EQ(m->entry()->root()->opcode(), HloOpcode::kAsyncDone);
  EXPECT_EQ(m->entry()->root()->attrs().async_wrapped_opcode, HloOpcode::kAllToAll);
}

TEST(ParserErrors, LocatedMessages) {
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT x = f32[] "
                       "frobnicate(p)\n}\n"),
            "t.hlo:4:18: unknown opcode 'frobnicate'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT x = f32[] negate(q)\n}\n"),
            "t.hlo:3:25: operand 'q' of 'x' is not defined earlier in computation 'e'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT x = f32[2 parameter(0)\n}\n"),
            "t.hlo:3:18: expected ',' or ']' in the dimensions, found 'parameter'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT r = f32[4]{0} "
                       "reverse(p), dimensions={0,x}\n}\n"),
            "t.hlo:4:48: expected an integer in dimensions, found 'x'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT r = f32[2]{0} "
                       "reduce-window(p, p), window={size=2 strid=2}, to_apply=e\n}\n"),
            "t.hlo:4:58: unknown window field 'strid' (expected size, stride, pad, lhs_dilate, "
            "rhs_dilate or rhs_reversal)");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT x = f32[] "
                       "add(p)\n}\n"),
            "t.hlo:4:18: 'add' takes 2 operands, found 1");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT x = f32[] "
                       "map(p), dimensions={}\n}\n"),
            "t.hlo:4:18: 'map' needs to_apply=");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT x = f32[] "
                       "call(p), to_apply=nowhere\n}\n"),
            "t.hlo:4:36: unknown computation 'nowhere'");
  EXPECT_EQ(
      ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  p = f32[] negate(p)\n}\n"),
      "t.hlo:4:3: instruction 'p' is defined twice in computation 'e'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(1)\n}\n"),
            "t.hlo:2:1: computation 'e' has no parameter(0) but has parameter(1)");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0) /* open\n}\n"),
            "t.hlo:3:26: unterminated '/*' comment");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0), metadata={{{x}\n}\n"),
            "t.hlo:3:36: '{' in attribute value is never closed");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0), sharding=\n}\n"),
            "t.hlo:3:36: expected a value for attribute 'sharding', found end of line");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0), a=1, a=2\n}\n"),
            "t.hlo:3:32: attribute 'a' given twice");
  EXPECT_EQ(ParseError("module m\n"),
            "t.hlo:1:1: expected 'HloModule' at the start of the module, found 'module'");
  EXPECT_EQ(ParseError("HloModule m\n"), "t.hlo:2:1: module has no computations");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n"),
            "t.hlo:2:1: computation 'e' is never closed with '}'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT c = "
                       "f32[2]{0} compare(p, p), direction=BAD\n}\n"),
            "t.hlo:4:47: expected a comparison direction (EQ, NE, GE, GT, LE, LT), found 'BAD'");
  EXPECT_EQ(
      ParseError(
          "HloModule m\nENTRY e (p: f32[2]) -> f32[3] {\n  ROOT p = f32[2]{0} parameter(0)\n}\n"),
      "t.hlo:2:24: signature gives result shape f32[3], but the root 'p' is f32[2]");
}

TEST(ParserErrors, CallCyclesAreRejected) {
  EXPECT_EQ(ParseError(R"(HloModule m
a {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=b
}
b {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=a
}
ENTRY e {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=a
}
)"),
            "t.hlo:8:36: computation 'a' calls itself through 'b'");
}

// Truncations and byte mutations of a real module must give a result or an error, never
// a crash or a hang; what parses must print to a fixed point.
TEST(ParserRobustness, TruncatedAndMutatedInputs) {
  const std::string text = R"(HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0), metadata={op_name="p" source_line=1}
  %c = f32[2,2]{1,0} constant({ {1, 2.5}, {-inf, nan} })
  %k = s32[] constant(3)
  %t = (f32[4]{0}, s32[]) tuple(f32[4]{0} %p, s32[] %k), /*index=1*/ sharding={replicated}
  %z = f32[] constant(0)
  %r = f32[] reduce(f32[4]{0} %p, f32[] %z), dimensions={0}, to_apply=%add
  ROOT %b = f32[4]{0} broadcast(f32[] %r), dimensions={}
}
)";
  for (size_t n = 0; n <= text.size(); ++n) {
    auto m = ParseHloModule(std::string_view(text).substr(0, n), "cut.hlo");
    if (m.ok()) {
      std::string p1 = (*m)->ToString();
      auto m2 = ParseHloModule(p1, "cut2.hlo");
      ASSERT_TRUE(m2.ok()) << m2.status();
      EXPECT_EQ((*m2)->ToString(), p1);
    }
  }
  const char replacements[] = {'{', '}', '(', ')', ',', '%',  '"', '/', '*', '[', ']',
                               '=', '0', '9', 'x', ' ', '\n', '<', '-', ':', '\0'};
  uint32_t seed = 12345;
  int parsed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string mutated = text;
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % mutated.size();
      seed = seed * 1103515245u + 12345u;
      mutated[pos] = replacements[(seed >> 8) % sizeof(replacements)];
    }
    auto m = ParseHloModule(mutated, "mut.hlo");
    if (!m.ok()) continue;
    ++parsed;
    std::string p1 = (*m)->ToString();
    auto m2 = ParseHloModule(p1, "mut2.hlo");
    ASSERT_TRUE(m2.ok()) << m2.status() << "\n" << mutated;
    EXPECT_EQ((*m2)->ToString(), p1) << mutated;
  }
  EXPECT_GT(parsed, 0);
}

TEST(ParserRobustness, DeepNestingIsAnErrorNotACrash) {
  std::string deep_tuple = "HloModule m\nENTRY e {\n  ROOT p = " + std::string(50000, '(') +
                           "f32[]" + std::string(50000, ')') + " parameter(0)\n}\n";
  EXPECT_NE(ParseError(deep_tuple).find("nested too deeply"), std::string::npos);
  std::string deep_braces =
      "HloModule m\nENTRY e {\n  p = f32[] parameter(0), metadata=" + std::string(50000, '{') +
      std::string(50000, '}') + "\n}\n";
  EXPECT_TRUE(ParseHloModule(deep_braces).ok());
  std::string deep_literal = "HloModule m\nENTRY e {\n  ROOT c = f32[1]{0} constant(" +
                             std::string(50000, '{') + "1" + std::string(50000, '}') + ")\n}\n";
  EXPECT_FALSE(ParseHloModule(deep_literal).ok());
  // A long chain of instructions (no recursion in parsing or printing).
  std::string chain = "HloModule m\nENTRY e {\n  v0 = f32[] parameter(0)\n";
  for (int i = 1; i < 20000; ++i)
    chain += "  v" + std::to_string(i) + " = f32[] negate(v" + std::to_string(i - 1) + ")\n";
  chain += "}\n";
  auto m = ParseHloModule(chain);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->entry()->instruction_count(), 20000);
  EXPECT_FALSE((*m)->ToString().empty());
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Forms current XLA writes (issue #16 item 1).
TEST(Parser, SplatConstantFillsTheArray) {
  std::optional<Literal> l = ParseConstant("f32[2,3]", "1.5");
  ASSERT_TRUE(l.has_value());
  ASSERT_EQ(l->element_count(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(l->GetAsDouble(i), 1.5) << i;
  std::optional<Literal> p = ParseConstant("pred[4]", "true");
  ASSERT_TRUE(p.has_value());
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(p->GetAsDouble(i), 1) << i;
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT c = f32[100000,100000,100] constant(0)\n}\n")
                .find("would take more than"),
            std::string::npos);
}

TEST(Parser, ShapeLeftOutIsInferred) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = s32[] parameter(1)
  s = add(a, a)
  ROOT t = tuple(s, b)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->root()->shape().ToString(false), "(f32[2,3], s32[])");
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT c = constant(1)\n}\n")
                .find("'c' needs its shape written before the opcode"),
            std::string::npos);
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"
                       "  b = f32[3] parameter(1)\n  ROOT s = add(a, b)\n}\n")
                .find("'s' is written without a shape, and it cannot be inferred"),
            std::string::npos);
}

TEST(Parser, ExecutionThreadAfterTheBody) {
  auto m = Parse(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}, execution_thread="main"

ENTRY %e (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4] parameter(0)
}, execution_thread="main"
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->name(), "e");
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}, colour=\"x\"\n")
                .find("unknown computation attribute 'colour'"),
            std::string::npos);
}

TEST(Parser, NestedOperandsBecomeInstructionsBeforeTheirUser) {
  auto m = Parse(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  q = f32[4] parameter(1)
  c = f32[4] convert(s8[4] parameter(0))
  s = f32[] reduce(f32[4] multiply(c, q), f32[] constant(0)), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[4]) tuple(s, f32[4] broadcast(s), dimensions={})
}
)");
  ASSERT_NE(m, nullptr);
  const HloComputation* e = m->entry();
  const HloInstruction* c = e->FindInstruction("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->operand(0)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(c->operand(0)->name(), "c.operand0");
  const HloInstruction* s = e->FindInstruction("s");
  EXPECT_EQ(s->operand(0)->opcode(), HloOpcode::kMultiply);
  EXPECT_EQ(s->operand(1)->opcode(), HloOpcode::kConstant);
  // The nested broadcast's attribute stays with it; the tuple has two operands.
  const HloInstruction* t = e->root();
  ASSERT_EQ(t->operand_count(), 2);
  EXPECT_EQ(t->operand(1)->opcode(), HloOpcode::kBroadcast);
  EXPECT_EQ(t->operand(1)->shape().ToString(false), "f32[4]");
  // Printed flat, and printing that again is a fixed point.
  const std::string once = m->ToString();
  auto again = Parse(once);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->ToString(), once);
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT c = f32[4] convert(s8[4] parameter(0)\n}\n")
                .find("t.hlo:4:1: expected ',' or ')' after an operand"),
            std::string::npos);
}

TEST(Parser, InlineComputationsAreComputationsOfTheirOwn) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  z = f32[] constant(0)
  r = f32[] reduce(p, z), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT s = f32[] add(a, b)
  }
  ROOT m = f32[] reduce(p, z), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT x = f32[] maximum(a, b)
  }
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* r = m->entry()->FindInstruction("r");
  ASSERT_NE(r->to_apply(), nullptr);
  EXPECT_EQ(r->to_apply()->name(), "r.to_apply");
  EXPECT_EQ(r->to_apply()->root()->opcode(), HloOpcode::kAdd);
  EXPECT_EQ(m->entry()->root()->to_apply()->root()->opcode(), HloOpcode::kMaximum);
  // A call written without a shape takes its callee's result shape (the callee inline).
  auto call = Parse(R"(HloModule m
ENTRY e {
  p = f32[3] parameter(0)
  ROOT c = call(p), to_apply={
    x = f32[3] parameter(0)
    ROOT t = (f32[3], f32[3]) tuple(x, x)
  }
}
)");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->entry()->root()->shape().ToString(false), "(f32[3], f32[3])");
  // Names inside the inline bodies are their own: `a` and `b` twice is fine.
  const std::string once = m->ToString();
  auto again = Parse(once);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->ToString(), once);
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n  z = f32[] "
                       "constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={\n"
                       "    a = f32[] parameter(0)\n    ROOT s = f32[] add(a, q)\n  }\n}\n")
                .find("t.hlo:7:27: operand 'q' of 's' is not defined earlier in computation "
                      "'r.to_apply'"),
            std::string::npos);
}

TEST(Parser, ValueOnTheNextLineAndBufferTypes) {
  // XLA's tests break the line after `condition=`; an empty value before the next
  // instruction stays empty.
  auto m = Parse(R"(HloModule m
c {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
b {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[]) tuple(j)
}
ENTRY e {
  z = s32[] constant(0)
  t = (s32[]) tuple(z)
  ROOT w = (s32[]) while(t), condition=
    c, body=b
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->root()->while_condition()->name(), "c");
  EXPECT_EQ(m->entry()->root()->while_body()->name(), "b");
  // b(f32[16]): XLA's buffer type, kept as the array it holds.
  auto buf = Parse(R"(HloModule m
ENTRY e {
  d = f32[16] parameter(0)
  ROOT p = b(f32[16]) negate(d)
}
)");
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(buf->entry()->root()->shape().ToString(false), "f32[16]");
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT p = b((f32[2])) parameter(0)\n}\n")
                .find("holds an array shape"),
            std::string::npos);
}

TEST(Parser, ModuleNameColonAndLayoutAfterASpace) {
  // Older XLA tests end the module name with ':' and put a space before a layout.
  auto m = Parse(R"(HloModule m:
ENTRY e {
  p0 = f32[3, 6, 2] parameter(0)
  ROOT b = f32[3, 2, 6] {1, 2, 0} bitcast(p0)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name(), "m");
  const Shape& s = m->entry()->root()->shape();
  ASSERT_TRUE(s.has_layout());
  EXPECT_EQ(s.layout().minor_to_major, (std::vector<int64_t>{1, 2, 0}));
  // A layout that is not a permutation is still refused there.
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[2,3] {0,0} parameter(0)\n}\n")
                .find("layout"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
