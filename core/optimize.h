// Runs HLO passes with per-pass records, verification and optional dumps: the driver behind
// `kiln opt` (the standard pipeline, simplification then fusion, or named passes) and the
// core pipeline every executed module goes through (core_passes.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "hlo/passes/pass.h"

namespace kiln {

struct OptimizeOptions {
  bool verify = true;           // verify the module after every pass that changed it
  std::string dump_dir;         // "" = no dumps
  std::string dump_pass_regex;  // only passes whose name matches; "" = all
};

// What one pass did, summed over its runs (a fixed-point pipeline runs a pass repeatedly).
struct PassSummary {
  std::string pipeline;  // the top-level pass or pipeline it ran in
  std::string pass;
  int runs = 0;
  int changed_runs = 0;
  double millis = 0;
};

struct OptimizeResult {
  std::vector<PassSummary> passes;
  int dumps = 0;  // dump sets written (text + graph each)
};

// The top-level passes for a `--passes=a,b,c` value; empty `spec` gives the standard
// pipeline. An unknown name is an error listing the known ones.
absl::StatusOr<std::vector<std::unique_ptr<HloPass>>> MakeOptimizationPasses(
    const std::string& spec);

// Runs `passes` in order on `module`. A failing pass, a module that no longer verifies, or
// a failed dump is an error naming the pass or the file.
absl::StatusOr<OptimizeResult> OptimizeModule(HloModule& module,
                                              std::vector<std::unique_ptr<HloPass>> passes,
                                              const OptimizeOptions& options);

// Module statistics for the summary: instructions of the entry computation, and fusion
// and dot instructions outside fused computations (fusions also by kind).
struct ModuleCounts {
  int entry_instructions = 0;
  int fusions = 0;
  int loop_fusions = 0, input_fusions = 0, output_fusions = 0, custom_fusions = 0;
  int dots = 0;
};
ModuleCounts CountModule(const HloModule& module);

}  // namespace kiln
