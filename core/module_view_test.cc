// The walkable module (ABI 1.6) against the module it views: what a C backend reads must be
// what the text says, checked here field by field on a module with computations calling
// each other, constants, tuples and attributes.
#include "core/module_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace kiln {
namespace {

constexpr char kModule[] = R"(HloModule walk, input_output_alias={ {0}: (0, {}, may-alias) }

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  p = (s32[], f32[2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], f32[2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[2,3] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[2,3] exponential(x)
  ROOT t = (s32[], f32[2,3]) tuple(j, y)
}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  c = f32[3] constant({1.5, -2, 4})
  b = f32[2,3] broadcast(c), dimensions={1}
  z = s32[] constant(0)
  init = (s32[], f32[2,3]) tuple(z, x)
  w = (s32[], f32[2,3]) while(init), condition=cond, body=body
  out = f32[2,3] get-tuple-element(w), index=1
  sum = f32[2,3] add(out, b)
  zero = f32[] constant(0)
  ROOT r = f32[2] reduce(sum, zero), dimensions={1}, to_apply=add
}
)";

const KILN_ComputationView* Find(const KILN_ModuleView* m, const std::string& name) {
  for (size_t i = 0; i < m->num_computations; ++i) {
    if (m->computations[i]->name == name) return m->computations[i];
  }
  return nullptr;
}

size_t IndexOf(const KILN_ModuleView* m, const KILN_ComputationView* c) {
  for (size_t i = 0; i < m->num_computations; ++i) {
    if (m->computations[i] == c) return i;
  }
  return m->num_computations;
}

const KILN_InstructionView* Instr(const KILN_ComputationView* c, const std::string& name) {
  for (size_t i = 0; i < c->num_instructions; ++i) {
    if (c->instructions[i]->name == name) return c->instructions[i];
  }
  return nullptr;
}

TEST(ModuleView, ComputationsComeAfterTheirCalleesAndTheEntryIsNamed) {
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ModuleView::FromText(kModule);
  ASSERT_TRUE(view.ok()) << view.status();
  const KILN_ModuleView* m = (*view)->get();
  EXPECT_EQ(m->struct_size, sizeof(KILN_ModuleView));
  EXPECT_STREQ(m->name, "walk");
  ASSERT_EQ(m->num_computations, 4u);
  EXPECT_STREQ(m->computations[m->entry]->name, "main");
  const KILN_ComputationView* entry = m->computations[m->entry];
  // Every computation an instruction calls is listed before the one that calls it.
  for (size_t c = 0; c < m->num_computations; ++c) {
    const KILN_ComputationView* comp = m->computations[c];
    for (size_t i = 0; i < comp->num_instructions; ++i) {
      const KILN_InstructionView* in = comp->instructions[i];
      for (size_t k = 0; k < in->num_called_computations; ++k) {
        EXPECT_LT(in->called_computations[k], c) << in->name;
      }
      // ... and every operand before its user.
      for (size_t k = 0; k < in->num_operands; ++k) EXPECT_LT(in->operands[k], i) << in->name;
    }
  }
  const KILN_InstructionView* w = Instr(entry, "w");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->num_called_computations, 2u);  // XLA's order: condition, body
  EXPECT_EQ(w->called_computations[0], IndexOf(m, Find(m, "cond")));
  EXPECT_EQ(w->called_computations[1], IndexOf(m, Find(m, "body")));
  const KILN_InstructionView* r = Instr(entry, "r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(entry->instructions[entry->root], r);
  ASSERT_EQ(r->num_called_computations, 1u);
  EXPECT_EQ(r->called_computations[0], IndexOf(m, Find(m, "add")));
  EXPECT_EQ(entry->num_parameters, 1u);
  EXPECT_EQ(Find(m, "add")->num_parameters, 2u);
  ASSERT_EQ(m->num_attributes, 1u);
  EXPECT_STREQ(m->attributes[0].name, "input_output_alias");
  EXPECT_STREQ(m->attributes[0].value, "{ {0}: (0, {}, may-alias) }");
}

TEST(ModuleView, InstructionsCarryOperandsShapesAttributesAndValues) {
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ModuleView::FromText(kModule);
  ASSERT_TRUE(view.ok()) << view.status();
  const KILN_ModuleView* m = (*view)->get();
  const KILN_ComputationView* entry = m->computations[m->entry];

  const KILN_InstructionView* x = Instr(entry, "x");
  EXPECT_STREQ(x->opcode, "parameter");
  EXPECT_EQ(x->parameter_number, 0);
  EXPECT_EQ(x->shape->element_type, KILN_DTYPE_F32);
  ASSERT_EQ(x->shape->num_dims, 2u);
  EXPECT_EQ(x->shape->dims[0], 2);
  EXPECT_EQ(x->shape->dims[1], 3);
  ASSERT_NE(x->shape->minor_to_major, nullptr);
  EXPECT_EQ(x->shape->minor_to_major[0], 1);

  const KILN_InstructionView* c = Instr(entry, "c");
  EXPECT_STREQ(c->opcode, "constant");
  EXPECT_EQ(c->parameter_number, -1);
  ASSERT_EQ(c->literal_size, 3 * sizeof(float));
  float values[3];
  std::memcpy(values, c->literal, sizeof(values));
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  EXPECT_EQ(values[2], 4.0f);

  const KILN_InstructionView* b = Instr(entry, "b");
  EXPECT_STREQ(b->opcode, "broadcast");
  ASSERT_EQ(b->num_operands, 1u);
  EXPECT_EQ(entry->instructions[b->operands[0]], c);
  ASSERT_EQ(b->num_dimensions, 1u);
  EXPECT_EQ(b->dimensions[0], 1);
  ASSERT_NE(KILN_FindAttribute(b, "dimensions"), nullptr);
  EXPECT_STREQ(KILN_FindAttribute(b, "dimensions"), "{1}");
  EXPECT_EQ(KILN_FindAttribute(b, "dimension"), nullptr);  // a prefix is not a match

  const KILN_InstructionView* init = Instr(entry, "init");
  EXPECT_EQ(init->shape->element_type, KILN_SHAPE_TUPLE);
  ASSERT_EQ(init->shape->num_tuple_elements, 2u);
  EXPECT_EQ(init->shape->tuple_elements[0]->element_type, KILN_DTYPE_S32);
  EXPECT_EQ(init->shape->tuple_elements[0]->num_dims, 0u);
  EXPECT_EQ(init->shape->tuple_elements[1]->num_dims, 2u);
  EXPECT_EQ(Instr(entry, "out")->tuple_index, 1);
  EXPECT_EQ(init->tuple_index, -1);

  const KILN_InstructionView* lt = Instr(Find(m, "cond"), "lt");
  EXPECT_STREQ(lt->opcode, "compare");
  EXPECT_EQ(lt->shape->element_type, KILN_DTYPE_PRED);
  EXPECT_STREQ(KILN_FindAttribute(lt, "direction"), "LT");
}

TEST(ModuleView, CustomCallTargetsAndVerbatimAttributesAreAttributes) {
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ModuleView::FromText(R"(HloModule cc
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="my$op", backend_config="k=1, v=2"
}
)");
  ASSERT_TRUE(view.ok()) << view.status();
  const KILN_ComputationView* entry = (*view)->get()->computations[(*view)->get()->entry];
  const KILN_InstructionView* y = entry->instructions[entry->root];
  EXPECT_STREQ(y->opcode, "custom-call");
  EXPECT_STREQ(KILN_FindAttribute(y, "custom_call_target"), "\"my$op\"");
  EXPECT_STREQ(KILN_FindAttribute(y, "backend_config"), "\"k=1, v=2\"");
}

TEST(ModuleView, ControlPredecessorsComeBeforeAndAreListed) {
  absl::StatusOr<std::unique_ptr<ModuleView>> view = ModuleView::FromText(R"(HloModule cp
ENTRY main {
  x = f32[4] parameter(0)
  a = f32[4] negate(x)
  b = f32[4] exponential(x), control-predecessors={a}
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
  ASSERT_TRUE(view.ok()) << view.status();
  const KILN_ComputationView* entry = (*view)->get()->computations[(*view)->get()->entry];
  const KILN_InstructionView* b = Instr(entry, "b");
  ASSERT_EQ(b->num_control_predecessors, 1u);
  const size_t a = b->control_predecessors[0];
  EXPECT_EQ(entry->instructions[a], Instr(entry, "a"));
  EXPECT_LT(a, static_cast<size_t>(std::find(entry->instructions,
                                             entry->instructions + entry->num_instructions, b) -
                                   entry->instructions));
  EXPECT_EQ(Instr(entry, "a")->num_control_predecessors, 0u);
}

TEST(ModuleView, TextThatDoesNotParseOrVerifyIsALocatedError) {
  absl::StatusOr<std::unique_ptr<ModuleView>> bad = ModuleView::FromText("HloModule m\nENTRY {");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("module"), std::string::npos) << bad.status();
  absl::StatusOr<std::unique_ptr<ModuleView>> wrong = ModuleView::FromText(R"(HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[5] negate(x)
}
)");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("y"), std::string::npos) << wrong.status();
}

}  // namespace
}  // namespace kiln
