// Runs a list of passes, optionally to a fixed point, verifying and recording each.
#include "hlo/passes/pass_pipeline.h"

#include <chrono>

#include "hlo/verifier.h"

namespace kiln {

absl::StatusOr<bool> HloPassPipeline::Run(HloModule& module) {
  bool changed_any = false;
  for (int iter = 0; iter < fixed_point_iterations_; ++iter) {
    bool changed_this_round = false;
    for (auto& pass : passes_) {
      if (auto* sub = dynamic_cast<HloPassPipeline*>(pass.get()); sub && hook_ && !sub->hook_)
        sub->set_after_pass_hook(hook_);
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<bool> changed = pass->Run(module);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (!changed.ok()) {
        return absl::Status(changed.status().code(), "pass '" + std::string(pass->name()) + "': " +
                                                         std::string(changed.status().message()));
      }
      records_.push_back({std::string(pass->name()), *changed, ms});
      if (!*changed) continue;
      changed_this_round = true;
      if (verify_) {
        absl::Status s = VerifyModule(module);
        if (!s.ok())
          return absl::InternalError("module invalid after pass '" + std::string(pass->name()) +
                                     "': " + std::string(s.message()));
      }
      // Nested pipelines call the hook for their own passes.
      if (hook_ && !dynamic_cast<HloPassPipeline*>(pass.get())) hook_(pass->name(), module);
    }
    changed_any |= changed_this_round;
    if (!changed_this_round) break;
  }
  return changed_any;
}

}  // namespace kiln
