// KILN_CPU_PROFILE=1: time spent in each step of a cpu-llvm executable (kernel, library call,
// evaluator fallback, control flow), summed over runs and printed to stderr, most first, when
// the executable is destroyed. What XLA's --xla_hlo_profile is for: seeing which instruction
// a module's time goes to. LLVM-free.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "hlo/instruction.h"

namespace kiln::cpu {

class StepProfile {
 public:
  // A profile when KILN_CPU_PROFILE is set to a non-empty value other than 0, else null.
  static std::unique_ptr<StepProfile> FromEnv(std::string module_name);
  ~StepProfile();  // prints the table

  // Called as each run starts. The first run is left out of the table: it pays one-time
  // costs (the JIT links each kernel on its first call; oneDNN generates its GEMM kernels on
  // its first call in the process, ~30 ms) that would hide where the time of a run goes.
  void BeginRun();
  // Adds one step's time; `what` says how it ran ("kernel", "library", ...).
  void Add(const HloInstruction* instr, std::string_view what, int64_t ns);

 private:
  explicit StepProfile(std::string module_name) : module_(std::move(module_name)) {}

  struct Entry {
    std::string name, what;
    int64_t ns = 0, count = 0;
  };
  std::string module_;
  std::mutex mu_;
  int64_t runs_ = 0;
  absl::flat_hash_map<const HloInstruction*, Entry> entries_;
};

}  // namespace kiln::cpu
