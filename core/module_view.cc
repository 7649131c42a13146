#include "core/module_view.h"

#include <utility>

#include "hlo/text/attribute_text.h"
#include "hlo/verifier.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<ModuleView>> ModuleView::FromText(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseRunnableModule(text, "module");
  if (!module.ok()) return module.status();
  auto view = std::make_unique<ModuleView>(**module);
  view->owned_ = std::move(*module);
  return view;
}

ModuleView::ModuleView(const HloModule& module) {
  Indices index;
  std::vector<HloComputation*> comps = module.MakeComputationPostOrder();
  for (size_t k = 0; k < comps.size(); ++k) index.computations[comps[k]] = k;
  for (const HloComputation* c : comps) {
    std::vector<HloInstruction*> order = c->MakeInstructionPostOrder();
    index.instructions.clear();
    for (size_t k = 0; k < order.size(); ++k) index.instructions[order[k]] = k;
    std::vector<const KILN_InstructionView*>& list = instruction_lists_.emplace_back();
    KILN_ComputationView& view = computations_.emplace_back();
    view.struct_size = sizeof(view);
    view.name = strings_.emplace_back(c->name()).c_str();
    for (size_t k = 0; k < order.size(); ++k) {
      list.push_back(AddInstruction(*order[k], index));
      if (order[k] == c->root()) view.root = k;
    }
    view.instructions = list.data();
    view.num_instructions = list.size();
    view.num_parameters = c->parameters().size();
    computation_list_.push_back(&view);
    if (c == module.entry()) module_.entry = computation_list_.size() - 1;
  }
  std::vector<KILN_Attribute>& attrs = attribute_lists_.emplace_back();
  for (const auto& [name, value] : module.attributes()) {
    attrs.push_back({strings_.emplace_back(name).c_str(), strings_.emplace_back(value).c_str()});
  }
  module_.struct_size = sizeof(module_);
  module_.name = strings_.emplace_back(module.name()).c_str();
  module_.computations = computation_list_.data();
  module_.num_computations = computation_list_.size();
  module_.attributes = attrs.data();
  module_.num_attributes = attrs.size();
}

const KILN_ShapeView* ModuleView::AddShape(const Shape& shape) {
  KILN_ShapeView& view = shapes_.emplace_back();
  view.struct_size = sizeof(view);
  view.element_type = static_cast<int32_t>(shape.element_type());
  if (shape.IsTuple()) {
    std::vector<const KILN_ShapeView*>& elements = shape_lists_.emplace_back();
    for (const Shape& e : shape.tuple_shapes()) elements.push_back(AddShape(e));
    view.tuple_elements = elements.data();
    view.num_tuple_elements = elements.size();
    return &view;
  }
  view.dims = ints_.emplace_back(shape.dimensions()).data();
  view.num_dims = shape.dimensions().size();
  if (shape.IsArray() && shape.has_layout()) {
    view.minor_to_major = ints_.emplace_back(shape.MinorToMajor()).data();
  }
  return &view;
}

const KILN_InstructionView* ModuleView::AddInstruction(const HloInstruction& instr,
                                                       const Indices& index) {
  KILN_InstructionView& view = instructions_.emplace_back();
  view.struct_size = sizeof(view);
  view.name = strings_.emplace_back(instr.name()).c_str();
  view.opcode = strings_.emplace_back(HloOpcodeString(instr.opcode())).c_str();
  view.shape = AddShape(instr.shape());

  std::vector<size_t>& operands = indices_.emplace_back();
  for (const HloInstruction* o : instr.operands()) operands.push_back(index.instructions.at(o));
  view.operands = operands.data();
  view.num_operands = operands.size();

  std::vector<size_t>& before = indices_.emplace_back();
  for (const HloInstruction* p : instr.control_predecessors())
    before.push_back(index.instructions.at(p));
  view.control_predecessors = before.data();
  view.num_control_predecessors = before.size();

  std::vector<size_t>& called = indices_.emplace_back();
  for (const HloComputation* c : instr.called_computations()) {
    called.push_back(index.computations.at(c));
  }
  view.called_computations = called.data();
  view.num_called_computations = called.size();

  std::vector<KILN_Attribute>& attrs = attribute_lists_.emplace_back();
  auto add = [&](std::string_view name, const std::string& value) {
    attrs.push_back({strings_.emplace_back(name).c_str(), strings_.emplace_back(value).c_str()});
  };
  hlo_text::ForEachTypedAttribute(instr, add);
  for (const auto& [name, value] : instr.attrs().extra) add(name, value);
  view.attributes = attrs.data();
  view.num_attributes = attrs.size();

  const InstructionAttributes& a = instr.attrs();
  view.parameter_number = instr.opcode() == HloOpcode::kParameter ? a.parameter_number : -1;
  view.tuple_index = instr.opcode() == HloOpcode::kGetTupleElement ? a.tuple_index : -1;
  if (a.has_dimensions || !a.dimensions.empty()) {
    view.dimensions = a.dimensions.data();
    view.num_dimensions = a.dimensions.size();
  }
  if (instr.opcode() == HloOpcode::kConstant && a.literal && a.literal->shape().IsArray()) {
    view.literal = a.literal->untyped_data();
    view.literal_size = static_cast<size_t>(a.literal->size_bytes());
  }
  return &view;
}

}  // namespace kiln
