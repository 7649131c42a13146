// Ahead-of-time compilation (`kiln aot`): cpu-llvm's pipeline (kernel fusion, the plan, the
// arena from buffer assignment, the elemental emitter) turned into one object file whose
// entry point, NAME_run, calls the kernels in the plan's order on buffers at fixed places:
// the caller's arguments and results, read-only constants, and one temporary arena. Nothing
// at run time loads LLVM, the core or a plugin. No LLVM types in this header.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/module.h"

namespace kiln::cpu::aot {

enum class AotGemm {
  kEmitted,   // dots and convolutions are generated loops: the object needs only libc and libm
  kOpenBlas,  // large plain dots call cblas_sgemm/cblas_dgemm (link with -lopenblas)
  kOneDnn,    // large plain f32 dots call dnnl_sgemm (link with -ldnnl)
};

struct AotOptions {
  std::string name;      // C identifier prefixing every exported symbol (NAME_run, ...)
  std::string triple;    // LLVM target triple; "" = the host's
  std::string cpu;       // "" = the host CPU for a host triple, "generic" otherwise
  std::string features;  // "" = the host CPU's features for the host CPU, none otherwise
  AotGemm gemm = AotGemm::kEmitted;
  int opt_level = 3;
  // Large kernels split their outer loop across the thread pool of libkiln_aot_runtime.a
  // (kiln_aot_set_threads), as cpu-llvm's JIT does; the host's architecture only.
  bool parallel = false;
};

// One array argument or result of the compiled function.
struct AotBuffer {
  std::string name;  // the parameter's name, or "result<j>"
  Shape shape;
};

struct AotArtifact {
  std::string object;  // the relocatable object file (ELF)
  std::string header;  // NAME.h
  std::vector<AotBuffer> args, results;
  int64_t temp_bytes = 0;  // the one temporary arena NAME_run needs (64-byte aligned)
  int64_t kernels = 0;     // kernel functions in the object
  int64_t gemm_steps = 0;  // dots computed as GEMMs (emitted loop nests or OpenBLAS calls)
  int64_t constant_bytes = 0;
  std::string target;             // triple and CPU, for the summary
  bool parallel = false;          // built with --parallel: link libkiln_aot_runtime.a
  bool host_architecture = true;  // the target's architecture is this host's
};

// Compiles `module` (already through the core's passes). Errors name the instruction AOT
// cannot compile (control flow, evaluator fallbacks, tuple parameters, ...).
absl::StatusOr<AotArtifact> CompileAot(const HloModule& module, const AotOptions& options);

// libkiln_aot_runtime.a built for this host (the thread pool of parallel artifacts).
std::string_view AotRuntimeArchive();

// True for a C identifier that is not reserved (`[A-Za-z][A-Za-z0-9_]*`).
bool IsValidAotName(const std::string& name);

}  // namespace kiln::cpu::aot
