// Emits a loop driver (loop_schedule.h): one LLVM function running a flat loop's schedule,
// calling its kernels by name so the optimizer inlines them when they are in the same
// module. Includes LLVM: only the JIT includes this header.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "llvm/IR/Module.h"
#include "plugins/cpu_llvm/loop_schedule.h"

namespace kiln::cpu {

// Adds `spec.name`, a LoopDriverFn, to `m`; kernel k of the schedule is the function
// `kernel_names[k]` (declared when `m` does not define it).
absl::Status EmitLoopDriver(const LoopDriverSpec& spec,
                            const std::vector<std::string>& kernel_names, llvm::Module& m);

}  // namespace kiln::cpu
