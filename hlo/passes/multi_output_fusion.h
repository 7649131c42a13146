// Sibling multi-output fusion ("multi-output-fusion"): fusions (and lone reduces) that read
// the same large operand are merged into one fusion with a tuple root, so the operand is
// read from memory once; their users then read their results through get-tuple-element.
// Optionally also producer-consumer: an elementwise loop that another reads element by
// element is merged into it, its value still an output when something else reads it.
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
  // With elementwise_loops_only: also merge a producer loop into a consumer loop over the
  // same space that reads it only elementwise (no broadcast, slice or other index change),
  // when every other reader comes after the consumer. A value computed into memory because
  // several kernels read it is then computed in one of them and read back by the others
  // only (an optimizer step's new moments, read by the update and returned).
  bool producer_consumer = false;
  // Limits of one producer-consumer merge (measured on the sweeps' programs on cpu-llvm):
  // operations of the merged body, parameters left out (a chain of 10,000 elementwise
  // operations merged 256 at a time compiled in twice the time of 128 at a time, fewer of its
  // kernels being identical to another); operands (each scalar one a loop-invariant broadcast
  // held in a vector register); costly operations (IsCostlyElementwiseOpcode) one after the
  // other on a path through the merged body, which one loop iteration runs at their latency
  // (a bisection's eight steps of a [512] recurrence, two divisions each, merged into one
  // kernel ran 1.8x slower than as eight); and the elements of the space, below which short
  // loops leave that latency exposed even within the depth limit (the same bisection merged
  // two steps at a time ran 1.15x slower).
  int64_t max_merged_operations = 128;
  int64_t max_merged_operands = 32;
  int64_t max_merged_costly_depth = 4;
  int64_t min_merged_elements = 4096;
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
