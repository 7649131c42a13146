// Producer-consumer fusion ("fusion"): merges chains of elementwise and data-movement ops,
// reductions with the producers of their input (and with a row-wise elementwise epilogue),
// and dots with their elementwise consumers, into `fusion` instructions whose bodies are
// fused computations. Memory traffic is what fusion saves: every intermediate that stays
// inside a fusion is never written to or read from memory.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

struct InstructionFusionOptions {
  // A fusion never gets more operands (parameters) than this.
  int64_t max_operands = 64;
  // Nor more instructions in its body.
  int64_t max_instructions = 256;
  // Let non-expensive elementwise and data-movement producers be copied into several
  // consumers (they are recomputed; the intermediate is never materialized).
  bool duplicate_cheap_elementwise = true;
};

class InstructionFusion : public HloPass {
 public:
  explicit InstructionFusion(InstructionFusionOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "fusion"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  InstructionFusionOptions options_;
};

}  // namespace kiln
