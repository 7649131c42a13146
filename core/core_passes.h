// The core's target-independent pipeline: what every module goes through before placement,
// partitioning and compile (`kiln run`, the graph executor, and every front end after them).
//
// Today it is the simplification pipeline (algsimp, constant folding, tuple simplifier,
// transpose folding, CSE, DCE, to a fixed point). Fusion is not part of it: that is a
// target decision each codegen plugin takes. The plugin is told through
// KILN_CompileOptions::core_passes what was run, and a plugin whose attribute
// "core_passes" is "none" gets the module as written (see plugin_api/kiln_plugin_api.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/optimize.h"
#include "hlo/module.h"

namespace kiln {

struct CorePassOptions {
  bool enabled = true;          // false: the module goes to the plugin as written
  bool verify = true;           // verify after every pass that changed the module
  std::string dump_dir;         // "" = no dumps; otherwise after every pass that changed it
  std::string dump_pass_regex;  // only passes whose name matches; "" = all
};

struct CorePassReport {
  bool ran = false;
  // The passes that ran, comma-separated in first-run order: what the plugin is told.
  std::string pass_names;
  OptimizeResult result;
};

// Runs the core pipeline on `module` in place. A pass that fails, or a module that no longer
// verifies, is an error naming the pass (the module must not reach a device then).
absl::StatusOr<CorePassReport> RunCorePasses(HloModule& module, const CorePassOptions& options);

}  // namespace kiln
