// Test-only helpers that build HLO in C++: a shape reader for `f32[2,3]`/`(s32[], f32[4])`
// and a small builder that names instructions the way XLA dumps do.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hlo/computation.h"
#include "hlo/module.h"

namespace kiln::testing {

// Reads `f32[2,<=3]`, `token[]`, `(f32[2], (s32[], pred[]))`. Test input only: no errors.
inline Shape ReadShape(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  if (s.front() == '(') {
    s.remove_prefix(1);
    std::vector<Shape> elems;
    while (true) {
      while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
      if (s.front() == ')') break;
      elems.push_back(ReadShape(s));
    }
    s.remove_prefix(1);
    return Shape::Tuple(std::move(elems));
  }
  size_t bracket = s.find('[');
  std::string_view type = s.substr(0, bracket);
  s.remove_prefix(bracket + 1);
  std::vector<int64_t> dims;
  std::vector<int> dynamic;
  while (s.front() != ']') {
    if (s.front() == ',') s.remove_prefix(1);
    if (s.substr(0, 2) == "<=") {
      dynamic.push_back(static_cast<int>(dims.size()));
      s.remove_prefix(2);
    }
    int64_t v = 0;
    while (s.front() >= '0' && s.front() <= '9') {
      v = v * 10 + (s.front() - '0');
      s.remove_prefix(1);
    }
    dims.push_back(v);
  }
  s.remove_prefix(1);
  if (type == "token") return Shape::Token();
  Shape out(*PrimitiveTypeFromName(type), dims);
  for (int d : dynamic) out.set_dynamic_dimension(d, true);
  return out;
}

inline Shape S(std::string_view text) { return ReadShape(text); }

// Builds one computation; instructions are named `<opcode>.<n>` unless a name is given.
class CompBuilder {
 public:
  explicit CompBuilder(std::string name) : comp_(std::make_unique<HloComputation>(name)) {}

  HloInstruction* Param(std::string_view shape, std::string name = "") {
    int64_t n = next_param_++;
    if (name.empty()) name = "p" + std::to_string(n);
    return comp_->AddInstruction(HloInstruction::CreateParameter(n, S(shape), name));
  }
  HloInstruction* Add(HloOpcode op, std::string_view shape, std::vector<HloInstruction*> operands,
                      std::string name = "") {
    auto i = std::make_unique<HloInstruction>(op, S(shape), std::move(operands));
    if (name.empty()) name = std::string(HloOpcodeString(op)) + "." + std::to_string(++counter_);
    i->set_name(std::move(name));
    return comp_->AddInstruction(std::move(i));
  }
  HloInstruction* Constant(Literal l, std::string name = "") {
    auto i = HloInstruction::CreateConstant(std::move(l));
    i->set_name(name.empty() ? "constant." + std::to_string(++counter_) : std::move(name));
    return comp_->AddInstruction(std::move(i));
  }
  HloComputation* comp() { return comp_.get(); }
  // Sets the root (the last added instruction by default) and hands the computation over.
  std::unique_ptr<HloComputation> Build(HloInstruction* root = nullptr) {
    if (root == nullptr) {
      std::vector<HloInstruction*> all = comp_->instructions();
      root = all.empty() ? nullptr : all.back();
    }
    comp_->set_root(root);
    return std::move(comp_);
  }

 private:
  std::unique_ptr<HloComputation> comp_;
  int64_t next_param_ = 0;
  int counter_ = 0;
};

// A scalar binary reducer `(a: T[], b: T[]) -> T[]` applying `op`.
inline std::unique_ptr<HloComputation> ScalarReducer(std::string name, std::string_view type,
                                                     HloOpcode op = HloOpcode::kAdd) {
  CompBuilder b(name);
  std::string s = std::string(type) + "[]";
  HloInstruction* x = b.Param(s, name + ".a");
  HloInstruction* y = b.Param(s, name + ".b");
  b.Add(op, s, {x, y}, name + ".r");
  return b.Build();
}

}  // namespace kiln::testing
