// Sibling multi-output fusion ("multi-output-fusion"): fusions (and lone reduces) that read
// the same large operand are merged into one fusion with a tuple root, so the operand is
// read from memory once; their users then read their results through get-tuple-element.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

struct MultiOutputFusionOptions {
  // The shared operand must have at least this many elements to be worth merging for.
  int64_t min_shared_elements = 2;
  int64_t max_operands = 64;
  int64_t max_instructions = 256;
  // Only loop fusions whose every instruction is elementwise, a broadcast, an iota, a
  // constant or a parameter, or has at most kSmallElements elements (scalar set-up such as
  // slicing a shift amount out of a u32[4]). A backend whose kernels have a strategy per
  // root kind (cpu-llvm: row and column reductions, tiled transposes, updates in place)
  // merges only what one plain loop over the output computes.
  bool elementwise_loops_only = false;
  // With elementwise_loops_only: also fusions whose every root is a reduce of the trailing
  // dimensions of such a loop's cone (row reductions), merged only with each other over the
  // same rows: one kernel then reads each row once for all of them (a standardization's sum
  // and sum of squares).
  bool row_reductions = false;
  static constexpr int64_t kSmallElements = 16;
};

class MultiOutputFusion : public HloPass {
 public:
  explicit MultiOutputFusion(MultiOutputFusionOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "multi-output-fusion"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  MultiOutputFusionOptions options_;
};

}  // namespace kiln
