// The core's target-independent pipeline (see core_passes.h).
#include "core/core_passes.h"

#include "hlo/passes/optimization_pipeline.h"

namespace kiln {

absl::StatusOr<CorePassReport> RunCorePasses(HloModule& module, const CorePassOptions& options) {
  CorePassReport report;
  if (!options.enabled) return report;
  std::vector<std::unique_ptr<HloPass>> passes;
  passes.push_back(MakeSimplificationPipeline());
  OptimizeOptions o;
  o.verify = options.verify;
  o.dump_dir = options.dump_dir;
  o.dump_pass_regex = options.dump_pass_regex;
  absl::StatusOr<OptimizeResult> r = OptimizeModule(module, std::move(passes), o);
  if (!r.ok()) return r.status();
  report.ran = true;
  report.result = std::move(*r);
  for (const PassSummary& p : report.result.passes) {
    if (!report.pass_names.empty()) report.pass_names += ",";
    report.pass_names += p.pass;
  }
  return report;
}

}  // namespace kiln
