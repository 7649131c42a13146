// Per-step time of a cpu-llvm executable (see step_profile.h).
#include "plugins/cpu_llvm/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace kiln::cpu {

std::unique_ptr<StepProfile> StepProfile::FromEnv(std::string module_name) {
  const char* env = std::getenv("KILN_CPU_PROFILE");
  if (env == nullptr || *env == '\0' || std::string(env) == "0") return nullptr;
  return std::unique_ptr<StepProfile>(new StepProfile(std::move(module_name)));
}

void StepProfile::BeginRun() {
  std::lock_guard<std::mutex> lock(mu_);
  ++runs_;
}

void StepProfile::Add(const HloInstruction* instr, std::string_view what, int64_t ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (runs_ <= 1) return;  // the first run: see BeginRun
  Entry& e = entries_[instr];
  if (e.count == 0) {
    e.name = instr->name();
    e.what = std::string(what) + " " + instr->shape().ToString(false);
  }
  e.ns += ns;
  ++e.count;
}

StepProfile::~StepProfile() {
  std::vector<const Entry*> rows;
  int64_t total = 0;
  for (const auto& [instr, e] : entries_) {
    rows.push_back(&e);
    if (e.what.rfind("control-flow", 0) != 0) total += e.ns;  // those include their bodies
  }
  std::sort(rows.begin(), rows.end(), [](const Entry* a, const Entry* b) { return a->ns > b->ns; });
  std::fprintf(stderr,
               "KILN_CPU_PROFILE %s: %.3f ms in %zu steps over %lld runs (the first run left "
               "out; control flow counted once, in its bodies' steps)\n",
               module_.c_str(), total * 1e-6, rows.size(),
               static_cast<long long>(std::max<int64_t>(runs_ - 1, 0)));
  std::fprintf(stderr, "%10s %6s %8s  %s\n", "ms", "share", "calls", "step");
  for (const Entry* e : rows) {
    std::fprintf(stderr, "%10.3f %5.1f%% %8lld  %s = %s\n", e->ns * 1e-6,
                 total > 0 ? 100.0 * e->ns / total : 0.0, static_cast<long long>(e->count),
                 e->name.c_str(), e->what.c_str());
  }
}

}  // namespace kiln::cpu
