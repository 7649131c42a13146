// Instruction construction and use-def maintenance. Printing lives in printer.cc.
#include "hlo/instruction.h"

#include <algorithm>

#include "hlo/computation.h"

namespace kiln {

const std::string* InstructionAttributes::FindExtra(std::string_view name) const {
  for (const auto& [k, v] : extra)
    if (k == name) return &v;
  return nullptr;
}

void InstructionAttributes::SetExtra(std::string_view name, std::string value) {
  for (auto& [k, v] : extra) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  extra.emplace_back(std::string(name), std::move(value));
}

HloInstruction::HloInstruction(HloOpcode opcode, Shape shape, std::vector<HloInstruction*> operands)
    : opcode_(opcode), shape_(std::move(shape)) {
  for (HloInstruction* o : operands) AppendOperand(o);
}

std::unique_ptr<HloInstruction> HloInstruction::CreateParameter(int64_t number, Shape shape,
                                                                std::string name) {
  auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, std::move(shape));
  p->attrs_.parameter_number = number;
  p->name_ = std::move(name);
  return p;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateConstant(Literal literal) {
  auto c = std::make_unique<HloInstruction>(HloOpcode::kConstant, literal.shape());
  c->attrs_.literal = std::move(literal);
  return c;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateUnary(HloOpcode op, Shape shape,
                                                            HloInstruction* operand) {
  return std::make_unique<HloInstruction>(op, std::move(shape),
                                          std::vector<HloInstruction*>{operand});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateBinary(HloOpcode op, Shape shape,
                                                             HloInstruction* lhs,
                                                             HloInstruction* rhs) {
  return std::make_unique<HloInstruction>(op, std::move(shape),
                                          std::vector<HloInstruction*>{lhs, rhs});
}

void HloInstruction::AppendOperand(HloInstruction* operand) {
  operands_.push_back(operand);
  if (std::find(operand->users_.begin(), operand->users_.end(), this) == operand->users_.end())
    operand->users_.push_back(this);
}

void HloInstruction::ReplaceOperandWith(int i, HloInstruction* new_operand) {
  HloInstruction* old = operands_[i];
  operands_[i] = new_operand;
  if (std::find(operands_.begin(), operands_.end(), old) == operands_.end()) {
    old->users_.erase(std::remove(old->users_.begin(), old->users_.end(), this), old->users_.end());
  }
  if (std::find(new_operand->users_.begin(), new_operand->users_.end(), this) ==
      new_operand->users_.end())
    new_operand->users_.push_back(this);
}

void HloInstruction::ReplaceAllUsesWith(HloInstruction* other) {
  std::vector<HloInstruction*> users = users_;
  for (HloInstruction* u : users) {
    for (int i = 0; i < u->operand_count(); ++i)
      if (u->operands_[i] == this) u->ReplaceOperandWith(i, other);
  }
  if (parent_ && parent_->root() == this) parent_->set_root(other);
}

void HloInstruction::DetachOperands() {
  for (HloInstruction* o : operands_)
    o->users_.erase(std::remove(o->users_.begin(), o->users_.end(), this), o->users_.end());
  operands_.clear();
}

std::string_view ComparisonDirectionString(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kEq:
      return "EQ";
    case ComparisonDirection::kNe:
      return "NE";
    case ComparisonDirection::kGe:
      return "GE";
    case ComparisonDirection::kGt:
      return "GT";
    case ComparisonDirection::kLe:
      return "LE";
    case ComparisonDirection::kLt:
      return "LT";
  }
  return "EQ";
}

std::string_view FusionKindString(FusionKind k) {
  switch (k) {
    case FusionKind::kLoop:
      return "kLoop";
    case FusionKind::kInput:
      return "kInput";
    case FusionKind::kOutput:
      return "kOutput";
    case FusionKind::kCustom:
      return "kCustom";
  }
  return "kLoop";
}

}  // namespace kiln
