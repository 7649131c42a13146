// PTX from the on-disk cache (the idea of XLA's PTX cache): when `$KILN_GPU_CACHE_DIR` is set,
// the PTX of a module's kernels is stored there keyed by the module text, the target sm,
// the options and the plugin binary's identity, and a later process (or executable) with the
// same key loads it instead of running LLVM. LLVM-free.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"

namespace kiln::gpu {

// `kernels` must be the plan kernels of `module` (the plan options are fixed per binary).
// `cache_hit` (optional) tells whether the PTX came from the cache.
absl::StatusOr<std::string> CompilePtxCached(const HloModule& module,
                                             const std::vector<llvm_emit::KernelSpec>& kernels,
                                             const PtxOptions& options, bool* cache_hit = nullptr);

}  // namespace kiln::gpu
