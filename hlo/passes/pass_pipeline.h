// A pipeline: an ordered list of passes (and nested fixed-point sub-pipelines), with the
// verifier after each pass in debug builds, a record of what changed, and an optional hook
// called after every pass that changed the module (used for dumps).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hlo/passes/pass.h"

namespace kiln {

struct PassRecord {
  std::string pass_name;
  bool changed = false;
  double millis = 0;
};

class HloPassPipeline : public HloPass {
 public:
  explicit HloPassPipeline(std::string name) : name_(std::move(name)) {}

  template <typename P, typename... Args>
  P& AddPass(Args&&... args) {
    auto p = std::make_unique<P>(std::forward<Args>(args)...);
    P& ref = *p;
    passes_.push_back(std::move(p));
    return ref;
  }
  void AddPass(std::unique_ptr<HloPass> p) { passes_.push_back(std::move(p)); }

  // Runs the passes again and again until none changes the module (at most max_iterations).
  void set_fixed_point(int max_iterations) { fixed_point_iterations_ = max_iterations; }
  // Verifies the module after every pass (default: on in debug builds).
  void set_verify(bool v) { verify_ = v; }
  // Called after each pass that changed the module: (pass name, module).
  void set_after_pass_hook(std::function<void(std::string_view, const HloModule&)> hook) {
    hook_ = std::move(hook);
  }

  std::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(HloModule& module) override;
  const std::vector<PassRecord>& records() const { return records_; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloPass>> passes_;
  int fixed_point_iterations_ = 1;
#ifdef NDEBUG
  bool verify_ = false;
#else
  bool verify_ = true;
#endif
  std::function<void(std::string_view, const HloModule&)> hook_;
  std::vector<PassRecord> records_;
};

}  // namespace kiln
