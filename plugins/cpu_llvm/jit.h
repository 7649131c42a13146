// The CPU JIT: compiles kernels from the elemental emitter with LLVM's ORC LLJIT for the
// host CPU (its own features, O3 with loop and SLP vectorization) and hands back function
// pointers. No LLVM types in this header: only the codegen's own files include LLVM.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::cpu {

#include <cstdint>

// The entry point of every kernel: `buffers` holds the inputs, then the outputs; [begin,
// end) is the range of the outer dimension to compute when the kernel's spec has
// `partition_outer` (ignored otherwise).
using KernelFn = void (*)(void** buffers, int64_t begin, int64_t end);

struct JitOptions {
  int opt_level = 3;               // 0..3
  bool vectorize = true;           // loop and SLP vectorizers
  bool vector_math_library = true; // map exp/log/sin/cos to glibc's libmvec when vectorizing
};

class CpuJit {
 public:
  static absl::StatusOr<std::unique_ptr<CpuJit>> Create(const JitOptions& options = {});
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  // Emits every kernel into one LLVM module, optimizes and compiles it, and returns the
  // kernels' entry points in the order of `specs`. They stay valid while this JIT lives.
  // With `ir_out`, the optimized LLVM IR is written there (for tests and debugging).
  absl::StatusOr<std::vector<KernelFn>> Compile(const std::vector<llvm_emit::KernelSpec>& specs,
                                                std::string* ir_out = nullptr);

  // The CPU name and feature string the JIT targets, e.g. "skylake-avx512".
  std::string TargetDescription() const;

 private:
  struct Impl;
  explicit CpuJit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::cpu
