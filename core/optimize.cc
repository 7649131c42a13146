// The pass driver shared by `kiln opt` and the core pipeline (core_passes.h): see optimize.h.
#include "core/optimize.h"

#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "hlo/dump/dump.h"
#include "hlo/passes/fusion_pipeline.h"
#include "hlo/passes/optimization_pipeline.h"
#include "hlo/passes/pass_pipeline.h"
#include "hlo/passes/pass_registry.h"

namespace kiln {

absl::StatusOr<std::vector<std::unique_ptr<HloPass>>> MakeOptimizationPasses(
    const std::string& spec) {
  std::vector<std::unique_ptr<HloPass>> passes;
  if (spec.empty()) {
    passes.push_back(MakeSimplificationPipeline());
    passes.push_back(MakeFusionPipeline());
    return passes;
  }
  for (absl::string_view name : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    // `--passes="dce, cse"` is forgiving about spaces after commas.
    absl::StatusOr<std::unique_ptr<HloPass>> p =
        MakePassByName(std::string(absl::StripAsciiWhitespace(name)));
    if (!p.ok()) return p.status();
    passes.push_back(std::move(*p));
  }
  if (passes.empty()) return absl::InvalidArgumentError("--passes names no pass");
  return passes;
}

absl::StatusOr<OptimizeResult> OptimizeModule(HloModule& module,
                                              std::vector<std::unique_ptr<HloPass>> passes,
                                              const OptimizeOptions& options) {
  OptimizeResult result;
  std::unique_ptr<ModuleDumper> dumper;
  if (!options.dump_dir.empty()) {
    // Checked now: otherwise a bad regex would only show if some pass changed the module.
    try {
      std::regex check(options.dump_pass_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError("bad --dump-pass-re regex '" + options.dump_pass_regex +
                                        "': " + e.what());
    }
    DumpOptions d;
    d.dir = options.dump_dir;
    d.pass_regex = options.dump_pass_regex;
    dumper = std::make_unique<ModuleDumper>(d);
  }
  for (std::unique_ptr<HloPass>& pass : passes) {
    // A lone pass runs inside a one-pass pipeline so that it gets the same verification,
    // timing record and dump hook as the passes of a pipeline.
    std::unique_ptr<HloPassPipeline> owned;
    auto* pipeline = dynamic_cast<HloPassPipeline*>(pass.get());
    if (pipeline == nullptr) {
      owned = std::make_unique<HloPassPipeline>(std::string(pass->name()));
      owned->AddPass(std::move(pass));
      pipeline = owned.get();
    }
    pipeline->set_verify(options.verify);
    if (dumper) {
      pipeline->set_after_pass_hook(
          [d = dumper.get()](std::string_view name, const HloModule& m) { d->AfterPass(name, m); });
    }
    absl::StatusOr<bool> changed = pipeline->Run(module);
    if (!changed.ok()) return changed.status();
    if (dumper && !dumper->status().ok()) return dumper->status();
    // Sum the records per pass name, in first-run order.
    const std::string top(pipeline->name());
    const size_t first = result.passes.size();
    for (const PassRecord& r : pipeline->records()) {
      PassSummary* s = nullptr;
      for (size_t i = first; i < result.passes.size(); ++i) {
        if (result.passes[i].pass == r.pass_name) s = &result.passes[i];
      }
      if (s == nullptr) {
        result.passes.push_back({top, r.pass_name});
        s = &result.passes.back();
      }
      ++s->runs;
      s->changed_runs += r.changed ? 1 : 0;
      s->millis += r.millis;
    }
  }
  if (dumper) result.dumps = dumper->dumps();
  return result;
}

ModuleCounts CountModule(const HloModule& module) {
  ModuleCounts c;
  if (module.entry() != nullptr) c.entry_instructions = module.entry()->instruction_count();
  for (const HloComputation* comp : module.computations()) {
    if (comp->is_fusion_computation()) continue;
    for (const HloInstruction* instr : comp->instructions()) {
      if (instr->opcode() == HloOpcode::kDot) ++c.dots;
      if (instr->opcode() != HloOpcode::kFusion) continue;
      ++c.fusions;
      switch (instr->attrs().fusion_kind) {
        case FusionKind::kLoop:
          ++c.loop_fusions;
          break;
        case FusionKind::kInput:
          ++c.input_fusions;
          break;
        case FusionKind::kOutput:
          ++c.output_fusions;
          break;
        case FusionKind::kCustom:
          ++c.custom_fusions;
          break;
      }
    }
  }
  return c;
}

}  // namespace kiln
