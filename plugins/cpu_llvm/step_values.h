// The values of a plan's instructions during one run, shared by the cpu-llvm and gpu-nvptx
// runners: arguments and constants are borrowed, results are owned; bookkeeping steps and
// evaluator steps are executed here so both runners do them the same way.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/literal.h"

namespace kiln::cpu {

class StepValues {
 public:
  const Literal* at(const HloInstruction* h) const { return values_.at(h); }
  bool contains(const HloInstruction* h) const { return values_.contains(h); }
  // Takes ownership of `value` as the result of `h`.
  void Own(const HloInstruction* h, Literal value);
  // A kernel's outputs: one literal, or the elements of `h`'s tuple result.
  void OwnOutputs(const HloInstruction* h, std::vector<Literal> outputs);
  // Parameter, constant, get-tuple-element or tuple.
  absl::Status RunBookkeeping(const HloInstruction& h, std::span<const Literal* const> args);
  // One instruction on the host evaluator.
  absl::Status RunOnEvaluator(const HloInstruction& h, HloEvaluator& evaluator);
  // The root's value, moved out when this run owns it (copied when it is an argument or
  // constant).
  Literal TakeResult(const HloInstruction* root);

 private:
  absl::flat_hash_map<const HloInstruction*, const Literal*> values_;
  std::vector<std::unique_ptr<Literal>> owned_;
};

}  // namespace kiln::cpu
