// Computation bookkeeping: ownership, parameters, post-order.
#include "hlo/computation.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace kiln {

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instr) {
  HloInstruction* p = instr.get();
  p->set_parent(this);
  if (p->opcode() == HloOpcode::kParameter && p->parameter_number() >= 0) {
    size_t n = static_cast<size_t>(p->parameter_number());
    if (params_.size() <= n) params_.resize(n + 1, nullptr);
    params_[n] = p;
  }
  instrs_.push_back(std::move(instr));
  return p;
}

void HloComputation::RemoveInstruction(HloInstruction* instr) {
  instr->DetachOperands();
  if (instr->opcode() == HloOpcode::kParameter) {
    for (auto& p : params_)
      if (p == instr) p = nullptr;
  }
  instrs_.erase(std::remove_if(instrs_.begin(), instrs_.end(),
                               [&](const auto& u) { return u.get() == instr; }),
                instrs_.end());
}

std::vector<HloInstruction*> HloComputation::instructions() const {
  std::vector<HloInstruction*> out;
  out.reserve(instrs_.size());
  for (const auto& i : instrs_) out.push_back(i.get());
  return out;
}

std::vector<HloInstruction*> HloComputation::MakeInstructionPostOrder() const {
  std::vector<HloInstruction*> order;
  absl::flat_hash_set<const HloInstruction*> visited;
  // Iterative DFS so that deep chains do not overflow the stack.
  auto visit = [&](HloInstruction* start) {
    if (visited.contains(start)) return;
    std::vector<std::pair<HloInstruction*, size_t>> stack{{start, 0}};
    visited.insert(start);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      size_t n_ops = node->operands().size();
      size_t n_all = n_ops + node->control_predecessors().size();
      if (next < n_all) {
        HloInstruction* dep = next < n_ops ? node->operand(static_cast<int>(next))
                                           : node->control_predecessors()[next - n_ops];
        ++next;
        if (!visited.contains(dep)) {
          visited.insert(dep);
          stack.push_back({dep, 0});
        }
      } else {
        order.push_back(node);
        stack.pop_back();
      }
    }
  };
  if (root_) visit(root_);
  for (const auto& i : instrs_) visit(i.get());
  return order;
}

void HloComputation::SortInstructionsInPostOrder() {
  std::vector<HloInstruction*> order = MakeInstructionPostOrder();
  absl::flat_hash_map<const HloInstruction*, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::stable_sort(instrs_.begin(), instrs_.end(), [&](const auto& a, const auto& b) {
    return rank.at(a.get()) < rank.at(b.get());
  });
}

HloInstruction* HloComputation::FindInstruction(std::string_view name) const {
  for (const auto& i : instrs_)
    if (i->name() == name) return i.get();
  return nullptr;
}

std::string HloComputation::SignatureString() const {
  std::string out = "(";
  for (size_t i = 0; i < params_.size(); ++i) {
    if (i) out += ", ";
    if (params_[i])
      absl::StrAppend(&out, params_[i]->name(), ": ", params_[i]->shape().ToString(false));
  }
  absl::StrAppend(&out, ") -> ", root_ ? root_->shape().ToString(false) : "()");
  return out;
}

}  // namespace kiln
