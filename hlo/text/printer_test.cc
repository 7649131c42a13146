// Printer tests: the canonical text of hand-written modules, exact literal printing, and
// printing of modules built in C++.
#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "hlo/module.h"
#include "hlo/text/literal_text.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

std::string Canonical(std::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return "";
  std::string printed = (*m)->ToString();
  // Printing is a fixed point.
  auto again = ParseHloModule(printed, "printed.hlo");
  EXPECT_TRUE(again.ok()) << again.status();
  if (again.ok()) {
    EXPECT_EQ((*again)->ToString(), printed);
  }
  return printed;
}

TEST(Printer, BareStyleBecomesCanonical) {
  EXPECT_EQ(Canonical(R"(HloModule m, is_scheduled=false
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2] reduce(p, z), to_apply=add, dimensions={1}, metadata={op_name="sum"}
}
)"),
            R"(HloModule m, is_scheduled=false

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[2,3]) -> f32[2] {
  %p = f32[2,3]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[2]{0} reduce(f32[2,3]{1,0} %p, f32[] %z), dimensions={1}, to_apply=%add, metadata={op_name="sum"}
}
)");
}

TEST(Printer, CalleesFirstEntryLastPostOrder) {
  // The entry comes first in the text and uses `b` after `a` is defined in text order; the
  // canonical text prints callees first and instructions operands-first.
  EXPECT_EQ(Canonical(R"(HloModule m
ENTRY e {
  p = f32[] parameter(0)
  n = f32[] negate(p)
  ROOT c = f32[] call(n), to_apply=callee
  dead = f32[] exponential(p)
}
callee {
  ROOT q = f32[] parameter(0)
}
)"),
            R"(HloModule m

%callee (q: f32[]) -> f32[] {
  ROOT %q = f32[] parameter(0)
}

ENTRY %e (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %n = f32[] negate(f32[] %p)
  ROOT %c = f32[] call(f32[] %n), to_apply=%callee
  %dead = f32[] exponential(f32[] %p)
}
)");
}

// '?' in dim_labels marks a position that is neither batch, feature nor spatial (XLA's parser
// test writes it in a custom-call); it reads as no label and prints back where it was.
TEST(Printer, DimLabelsWithUnnamedPositions) {
  std::string out = Canonical(R"(HloModule m
ENTRY e {
  ROOT r = f32[100]{0} custom-call(), window={size=2x2}, dim_labels=?b01f_0?1io->b01?f, custom_call_target="target"
}
)");
  EXPECT_NE(out.find("dim_labels=?b01f_0?1io->b01?f"), std::string::npos) << out;
  auto m = ParseHloModule(out, "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& d = *(*m)->entry()->root()->attrs().convolution_dimension_numbers;
  EXPECT_EQ(d.input_batch_dimension, 1);
  EXPECT_EQ(d.input_spatial_dimensions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(d.kernel_spatial_dimensions, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(d.output_feature_dimension, 4);
}

TEST(Printer, TypedAttributesInFixedOrder) {
  std::string out = Canonical(R"(HloModule m
ENTRY e {
  x = f32[1,4,9,9]{3,2,1,0} parameter(0)
  k = f32[2,2,4,6]{3,2,1,0} parameter(1)
  c = f32[1,6,5,5]{3,2,1,0} convolution(x, k), metadata={op_name="c"}, dim_labels=bf01_01io->bf01, window={stride=2x2 size=2x2 pad=1_0x0_1 rhs_reversal=0x1}
  a = f32[8,2,3]{2,1,0} parameter(2)
  b = f32[8,3,5]{2,1,0} parameter(3)
  d = f32[8,2,5]{2,1,0} dot(a, b), rhs_contracting_dims={1}, rhs_batch_dims={0}, lhs_contracting_dims={2}, lhs_batch_dims={0}
  s = f32[1,2,2,3]{3,2,1,0} slice(x), slice={[0:1], [0:4:2], [0:9:4], [1:4]}
  z = f32[] constant(0)
  pd = f32[1,4,12,9]{3,2,1,0} pad(x, z), padding=0_0x0_0x1_1_1x0_0
  ROOT t = (f32[1,6,5,5]{3,2,1,0}, f32[8,2,5]{2,1,0}, f32[1,2,2,3]{3,2,1,0}, f32[1,4,12,9]{3,2,1,0}) tuple(c, d, s, pd)
}
)");
  EXPECT_NE(out.find("convolution(f32[1,4,9,9]{3,2,1,0} %x, f32[2,2,4,6]{3,2,1,0} %k), "
                     "window={size=2x2 stride=2x2 pad=1_0x0_1 rhs_reversal=0x1}, "
                     "dim_labels=bf01_01io->bf01, metadata={op_name=\"c\"}\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("dot(f32[8,2,3]{2,1,0} %a, f32[8,3,5]{2,1,0} %b), lhs_batch_dims={0}, "
                     "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("slice={[0:1], [0:4:2], [0:9:4], [1:4]}\n"), std::string::npos) << out;
  EXPECT_NE(out.find("padding=0_0x0_0x1_1_1x0_0\n"), std::string::npos) << out;
}

TEST(Printer, OpcodeSpecificAttributes) {
  std::string out = Canonical(R"(HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  st = u64[2]{0} parameter(1)
  bg = (u64[2]{0}, u32[4]{0}) rng-bit-generator(st), algorithm=rng_three_fry
  sc = f32[3]{0} parameter(2)
  bn = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(p, sc, sc), feature_index=1, epsilon=0.001
  pr = pred[] parameter(3)
  c = f32[2,3]{1,0} conditional(pr, p, p), true_computation=id, false_computation=id
  cc = f32[2,3]{1,0} custom-call(p), custom_call_target="__cudnn$conv", backend_config="{\"a\":1}"
  ROOT t = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(c, cc)
}
id {
  ROOT x = f32[2,3]{1,0} parameter(0)
}
)");
  EXPECT_NE(out.find("rng-bit-generator(u64[2]{0} %st), algorithm=rng_three_fry\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("epsilon=0.001, feature_index=1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("true_computation=%id, false_computation=%id\n"), std::string::npos) << out;
  EXPECT_NE(out.find("custom_call_target=\"__cudnn$conv\", backend_config=\"{\\\"a\\\":1}\"\n"),
            std::string::npos)
      << out;
}

TEST(Printer, AsyncShorthandAndElidedConstantPrintBack) {
  std::string out = Canonical(R"(HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  k = f32[8]{0} constant({...})
  s = ((f32[8]{0}), f32[8]{0}) all-to-all-start(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}
  ROOT d = f32[8]{0} all-to-all-done(s)
}
)");
  EXPECT_NE(out.find("%k = f32[8]{0} constant({...})\n"), std::string::npos) << out;
  EXPECT_NE(out.find("all-to-all-start(f32[8]{0} %p), dimensions={0}, channel_id=1, "
                     "replica_groups={{0,1}}\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("all-to-all-done(((f32[8]{0}), f32[8]{0}) %s)\n"), std::string::npos) << out;
}

TEST(Printer, LayoutsAndShapes) {
  std::string out = Canonical(R"(HloModule m
ENTRY e {
  p = bf16[8,128]{0,1:T(8,128)(2,1)} parameter(0)
  q = s32[<=10]{0} parameter(1)
  t = token[] after-all()
  ROOT r = (bf16[8,128]{0,1:T(8,128)(2,1)}, s32[<=10]{0}, token[]) tuple(p, q, t)
}
)");
  EXPECT_NE(out.find("ENTRY %e (p: bf16[8,128], q: s32[<=10]) -> (bf16[8,128], s32[<=10], "
                     "token[]) {\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%p = bf16[8,128]{0,1:T(8,128)(2,1)} parameter(0)\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("%t = token[] after-all()\n"), std::string::npos) << out;
}

TEST(LiteralText, FloatsPrintShortestExactForm) {
  using hlo_text::FloatToText;
  EXPECT_EQ(FloatToText(0.1f), "0.1");
  EXPECT_EQ(FloatToText(1.0f), "1");
  EXPECT_EQ(FloatToText(1e-05f), "1e-05");
  EXPECT_EQ(FloatToText(-0.0f), "-0");
  EXPECT_EQ(FloatToText(0.1), "0.1");
  EXPECT_EQ(FloatToText(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(FloatToText(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(FloatToText(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FloatToText(std::numeric_limits<float>::quiet_NaN()), "nan");
  EXPECT_EQ(FloatToText(BitsToFloat(0x7f800001u)), "nan(0x1)");
  EXPECT_EQ(FloatToText(BitsToFloat(0xffc00000u)), "-nan");
}

std::string PrintConstant(std::string_view shape, std::string_view value) {
  std::string out = Canonical("HloModule m\nENTRY e {\n  ROOT c = " + std::string(shape) +
                              " constant(" + std::string(value) + ")\n}\n");
  size_t b = out.find("constant(");
  size_t e = out.rfind(")\n}");
  if (b == std::string::npos || e == std::string::npos) return out;
  return out.substr(b + 9, e - b - 9);
}

TEST(LiteralText, ValuesPrintExactly) {
  EXPECT_EQ(PrintConstant("f32[2,2]", "{{1,2.50},{ -inf , nan}}"), "{ {1, 2.5}, {-inf, nan} }");
  EXPECT_EQ(PrintConstant("s8[3]", "{-128, 0, 127}"), "{-128, 0, 127}");
  EXPECT_EQ(PrintConstant("u64[]", "18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(PrintConstant("pred[2]", "{1, false}"), "{true, false}");
  // bf16(0.1) is 0.10009765625: the shortest decimal that reads back to it is 0.1.
  EXPECT_EQ(PrintConstant("bf16[2]", "{0.1, 3.14159}"), "{0.1, 3.14}");
  EXPECT_EQ(PrintConstant("f16[]", "65504"), "6.55e+04");
  EXPECT_EQ(PrintConstant("c64[2]", "{(1, 2), (-0.5, 0)}"), "{(1, 2), (-0.5, 0)}");
  EXPECT_EQ(PrintConstant("(f32[], s32[2])", "(1, {2, 3})"), "(1, {2, 3})");
  EXPECT_EQ(PrintConstant("f32[1,1,2]", "{ { {1, 2} } }"), "{ { {1, 2} } }");
  EXPECT_EQ(PrintConstant("f32[2,0]", "{ {}, {} }"), "{}");
  EXPECT_EQ(PrintConstant("f64[]", "0.30000000000000004"), "0.30000000000000004");
}

TEST(Printer, ModuleBuiltInCodeGetsValidNames) {
  HloModule m("built");
  auto comp = std::make_unique<HloComputation>("main");
  HloInstruction* p =
      comp->AddInstruction(HloInstruction::CreateParameter(0, Shape(PrimitiveType::F32, {2}), "x"));
  HloInstruction* c = comp->AddInstruction(
      HloInstruction::CreateConstant(Literal::FromDoubles(Shape(PrimitiveType::F32, {2}), {1, 2})));
  HloInstruction* a = comp->AddInstruction(
      HloInstruction::CreateBinary(HloOpcode::kAdd, Shape(PrimitiveType::F32, {2}), p, c));
  comp->set_root(a);
  m.AddComputation(std::move(comp), /*is_entry=*/true);
  EXPECT_EQ(m.ToString(), R"(HloModule built

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  %constant.0 = f32[2]{0} constant({1, 2})
  ROOT %add.1 = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %constant.0)
}
)");
  EXPECT_EQ(a->ToString(), "%add = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %constant)");
  auto reparsed = ParseHloModule(m.ToString());
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
}

TEST(Printer, ScheduledModulesKeepTextOrder) {
  EXPECT_EQ(Canonical(R"(HloModule m, is_scheduled=true
ENTRY e {
  p = f32[] parameter(0)
  b = f32[] exponential(p)
  a = f32[] negate(p)
  ROOT s = f32[] add(a, b)
}
)"),
            R"(HloModule m, is_scheduled=true

ENTRY %e (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %b = f32[] exponential(f32[] %p)
  %a = f32[] negate(f32[] %p)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
)");
}

}  // namespace
}  // namespace kiln
