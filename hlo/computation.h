// A computation: an ordered list of instructions with parameters and a root.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hlo/instruction.h"

namespace kiln {

class HloModule;

class HloComputation {
 public:
  explicit HloComputation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // Takes ownership; parameters are also recorded by their parameter_number.
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instr);
  // Removes an instruction that has no users (and is not the root).
  void RemoveInstruction(HloInstruction* instr);

  HloInstruction* root() const { return root_; }
  void set_root(HloInstruction* r) { root_ = r; }

  // Parameters indexed by parameter_number (null where a number is missing).
  const std::vector<HloInstruction*>& parameters() const { return params_; }
  HloInstruction* parameter(int i) const { return params_[i]; }
  int num_parameters() const { return static_cast<int>(params_.size()); }

  // Instructions in the order they were added (the text order when parsed).
  std::vector<HloInstruction*> instructions() const;
  int instruction_count() const { return static_cast<int>(instrs_.size()); }
  // Operands (and control predecessors) before users; only instructions reachable from root
  // come first, then the unreachable ones, each group in a stable order.
  std::vector<HloInstruction*> MakeInstructionPostOrder() const;

  HloInstruction* FindInstruction(std::string_view name) const;
  // Reorders the instruction list (the text order) to MakeInstructionPostOrder(), so that
  // instructions a pass appended print after their operands and before their users.
  void SortInstructionsInPostOrder();

  HloModule* parent() const { return parent_; }
  void set_parent(HloModule* m) { parent_ = m; }
  bool is_fusion_computation() const { return is_fusion_; }
  void set_is_fusion_computation(bool f) { is_fusion_ = f; }

  // Computation signature as XLA prints it: `(p: f32[2]) -> f32[2]`.
  std::string SignatureString() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloInstruction>> instrs_;
  std::vector<HloInstruction*> params_;
  HloInstruction* root_ = nullptr;
  HloModule* parent_ = nullptr;
  bool is_fusion_ = false;
};

}  // namespace kiln
