// Bookkeeping and evaluator steps of a plan run, and ownership of their values.
#include "plugins/cpu_llvm/step_values.h"

#include "absl/strings/str_cat.h"
#include "plugins/cpu_llvm/plan.h"

namespace kiln::cpu {

void StepValues::Own(const HloInstruction* h, Literal value) {
  owned_.push_back(std::make_unique<Literal>(std::move(value)));
  values_[h] = owned_.back().get();
}

void StepValues::OwnOutputs(const HloInstruction* h, std::vector<Literal> outputs) {
  if (h->shape().IsTuple()) {
    Own(h, Literal::MakeTuple(std::move(outputs)));
  } else {
    Own(h, std::move(outputs[0]));
  }
}

absl::Status StepValues::RunBookkeeping(const HloInstruction& h,
                                        std::span<const Literal* const> args) {
  if (h.opcode() == HloOpcode::kParameter) {
    values_[&h] = args[h.parameter_number()];
  } else if (h.opcode() == HloOpcode::kConstant) {
    absl::StatusOr<const Literal*> value = ConstantValue(h);
    if (!value.ok()) return value.status();
    values_[&h] = *value;
  } else if (h.opcode() == HloOpcode::kGetTupleElement) {
    const Literal* t = values_.at(h.operand(0));
    if (!t->IsTuple() || h.tuple_index() < 0 ||
        h.tuple_index() >= static_cast<int64_t>(t->elements().size()))
      return absl::InvalidArgumentError(absl::StrCat("bad get-tuple-element ", h.name()));
    values_[&h] = &t->element(h.tuple_index());
  } else {  // tuple
    std::vector<Literal> elems;
    for (const HloInstruction* o : h.operands()) elems.push_back(*values_.at(o));
    Own(&h, Literal::MakeTuple(std::move(elems)));
  }
  return absl::OkStatus();
}

absl::Status StepValues::RunOnEvaluator(const HloInstruction& h, HloEvaluator& evaluator) {
  std::vector<const Literal*> ops;
  for (const HloInstruction* o : h.operands()) ops.push_back(values_.at(o));
  absl::StatusOr<Literal> r = evaluator.EvaluateInstruction(h, ops);
  if (!r.ok()) return r.status();
  Own(&h, std::move(*r));
  return absl::OkStatus();
}

Literal StepValues::TakeResult(const HloInstruction* root) {
  for (auto& o : owned_)
    if (o.get() == values_.at(root)) return std::move(*o);
  return *values_.at(root);
}

}  // namespace kiln::cpu
