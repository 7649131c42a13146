// Bookkeeping and evaluator steps of a plan run, and ownership of their values.
#include "plugins/kernel_plan/step_values.h"

#include "absl/strings/str_cat.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::kernel_plan {

Value Value::Borrowed(const Literal* l) {
  Value v;
  v.literal = std::shared_ptr<const Literal>(std::shared_ptr<const Literal>(), l);
  return v;
}

Value Value::Shared(std::shared_ptr<const Literal> l) {
  Value v;
  v.literal = std::move(l);
  return v;
}

Value Value::Owned(Literal l) {
  Value v;
  v.literal = std::make_shared<const Literal>(std::move(l));
  return v;
}

int64_t Value::TupleSize() const {
  if (literal == nullptr) return static_cast<int64_t>(elements.size());
  return literal->IsTuple() ? static_cast<int64_t>(literal->elements().size()) : 0;
}

Value Value::Element(int64_t i) const {
  if (literal == nullptr) return elements[i];
  Value v;
  // Shares ownership of the whole tuple literal (none when it is borrowed).
  v.literal = std::shared_ptr<const Literal>(literal, &literal->element(static_cast<int>(i)));
  return v;
}

Literal Materialize(Value v) {
  if (v.literal == nullptr) {
    std::vector<Literal> elems;
    elems.reserve(v.elements.size());
    for (Value& e : v.elements) elems.push_back(Materialize(std::move(e)));
    return Literal::MakeTuple(std::move(elems));
  }
  // use_count is 0 for borrowed literals; 1 when this value is the only owner of a literal
  // made with Owned (an element of a shared tuple literal counts its parent's owners).
  if (v.literal.use_count() == 1) return std::move(const_cast<Literal&>(*v.literal));
  return *v.literal;
}

const Literal* StepValues::at(const HloInstruction* h) {
  Value& v = values_.at(h);
  if (v.literal == nullptr) v = Value::Owned(Materialize(v));
  return v.literal.get();
}

Value StepValues::Take(const HloInstruction* h) {
  auto it = values_.find(h);
  Value v = std::move(it->second);
  values_.erase(it);
  return v;
}

Literal StepValues::TakeOrCopy(const HloInstruction* h, bool may_take) {
  if (may_take) {
    if (std::optional<Literal> taken = TakeIfOnlyOwner(h)) return *std::move(taken);
  }
  return Literal(*at(h));
}

std::optional<Literal> StepValues::TakeIfOnlyOwner(const HloInstruction* h) {
  auto it = values_.find(h);
  if (it == values_.end()) return std::nullopt;
  const Value& v = it->second;
  // use_count is 1 only for an owned literal (or owned tuple holding it) with no other owner.
  if (v.literal == nullptr || v.literal->IsTuple() || v.literal.use_count() != 1)
    return std::nullopt;
  Literal out = std::move(const_cast<Literal&>(*v.literal));
  values_.erase(it);
  return out;
}

void StepValues::OwnOutputs(const HloInstruction* h, std::span<Literal> outputs) {
  if (h->shape().IsTuple()) {
    Value t;
    for (Literal& o : outputs) t.elements.push_back(Value::Owned(std::move(o)));
    Set(h, std::move(t));
  } else {
    Own(h, std::move(outputs[0]));
  }
}

absl::Status StepValues::RunBookkeeping(const HloInstruction& h,
                                        std::span<const Literal* const> args, bool move_element) {
  if (h.opcode() != HloOpcode::kParameter)
    return RunBookkeeping(h, std::span<Value>(), move_element);
  Set(&h, Value::Borrowed(args[h.parameter_number()]));
  return absl::OkStatus();
}

absl::Status StepValues::RunBookkeeping(const HloInstruction& h, std::span<Value> args,
                                        bool move_element) {
  if (h.opcode() == HloOpcode::kParameter) {
    if (h.parameter_number() < 0 || h.parameter_number() >= static_cast<int64_t>(args.size()))
      return absl::InvalidArgumentError(absl::StrCat("parameter ", h.name(), " has no argument"));
    Set(&h, std::move(args[h.parameter_number()]));
  } else if (h.opcode() == HloOpcode::kConstant) {
    absl::StatusOr<const Literal*> value = ConstantValue(h);
    if (!value.ok()) return value.status();
    Set(&h, Value::Borrowed(*value));
  } else if (h.opcode() == HloOpcode::kGetTupleElement) {
    Value& t = values_.at(h.operand(0));
    if (!t.IsTuple() || h.tuple_index() < 0 || h.tuple_index() >= t.TupleSize())
      return absl::InvalidArgumentError(absl::StrCat("bad get-tuple-element ", h.name()));
    // Moved out when nothing else reads it (Step::moves_element); a tuple literal's
    // elements are views of it and stay shared.
    Value e = move_element && t.literal == nullptr ? std::move(t.elements[h.tuple_index()])
                                                   : t.Element(h.tuple_index());
    Set(&h, std::move(e));
  } else {  // tuple
    Value t;
    for (const HloInstruction* o : h.operands()) t.elements.push_back(values_.at(o));
    Set(&h, std::move(t));
  }
  return absl::OkStatus();
}

absl::Status StepValues::RunOnEvaluator(const HloInstruction& h, HloEvaluator& evaluator) {
  std::vector<const Literal*> ops;
  for (const HloInstruction* o : h.operands()) ops.push_back(at(o));
  absl::StatusOr<Literal> r = evaluator.EvaluateInstruction(h, ops);
  if (!r.ok()) return r.status();
  Own(&h, std::move(*r));
  return absl::OkStatus();
}

Value StepValues::TakeValue(const HloInstruction* root) {
  Value v = std::move(values_.at(root));
  values_.clear();
  return v;
}

}  // namespace kiln::kernel_plan
