// Test-only helpers for evaluator tests: build computations in C++ and make literals with
// exact element values.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hlo/computation.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "hlo/module.h"

namespace kiln::testing_util {

// A literal of `type` with the given dims holding `values` stored exactly (no round trip
// through double), e.g. Lit<int64_t>(PrimitiveType::S64, {2}, {INT64_MIN, 1}).
template <typename T>
Literal Lit(PrimitiveType type, std::vector<int64_t> dims, const std::vector<T>& values) {
  Literal l(Shape(type, std::move(dims)));
  auto d = l.data<T>();
  for (size_t i = 0; i < values.size() && i < d.size(); ++i) d[i] = values[i];
  return l;
}

// Values converted through double (fine for floats and small integers).
inline Literal Vals(PrimitiveType type, std::vector<int64_t> dims,
                    const std::vector<double>& values) {
  return Literal::FromDoubles(Shape(type, std::move(dims)), values);
}

inline std::vector<double> AsDoubles(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

template <typename T>
std::vector<T> As(const Literal& l) {
  auto d = l.data<T>();
  return std::vector<T>(d.begin(), d.end());
}

// Builds one computation; instructions get names `<opcode>.<n>`.
class CompBuilder {
 public:
  explicit CompBuilder(std::string name)
      : comp_(std::make_unique<HloComputation>(std::move(name))) {}

  HloInstruction* Add(std::unique_ptr<HloInstruction> instr) {
    if (instr->name().empty()) {
      instr->set_name(std::string(HloOpcodeString(instr->opcode())) + "." +
                      std::to_string(next_++));
    }
    return comp_->AddInstruction(std::move(instr));
  }
  HloInstruction* Param(int64_t number, Shape shape) {
    return Add(
        HloInstruction::CreateParameter(number, std::move(shape), "p" + std::to_string(number)));
  }
  HloInstruction* Const(Literal l) { return Add(HloInstruction::CreateConstant(std::move(l))); }
  HloInstruction* Op(HloOpcode op, Shape shape, std::vector<HloInstruction*> operands,
                     std::vector<HloComputation*> called = {}) {
    auto instr = std::make_unique<HloInstruction>(op, std::move(shape), std::move(operands));
    for (HloComputation* c : called) instr->AppendCalledComputation(c);
    return Add(std::move(instr));
  }
  HloComputation* comp() { return comp_.get(); }
  // Sets the root and hands the computation to `module`.
  HloComputation* Finish(HloModule& module, HloInstruction* root, bool is_entry = false) {
    comp_->set_root(root);
    return module.AddComputation(std::move(comp_), is_entry);
  }

 private:
  std::unique_ptr<HloComputation> comp_;
  int next_ = 0;
};

}  // namespace kiln::testing_util
