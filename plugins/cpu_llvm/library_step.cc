// Library steps on literals (see library_step.h).
#include "plugins/cpu_llvm/library_step.h"

#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/conv_library.h"
#include "plugins/cpu_llvm/library_calls.h"
#include "plugins/cpu_llvm/sort_library.h"

namespace kiln::cpu {

absl::Status RunLibraryStep(const kernel_plan::Step& step, std::span<const Literal* const> operands,
                            Literal& out, std::span<const KernelFn> kernels, ThreadPool* pool) {
  if (step.gemm) {
    RunBlasDot(*step.gemm, operands[0]->untyped_data(), operands[1]->untyped_data(),
               out.untyped_data(), pool);
    return absl::OkStatus();
  }
  if (step.conv) {
    RunLibraryConv(*step.conv, operands[0]->untyped_data(), operands[1]->untyped_data(),
                   out.untyped_data(), pool);
    return absl::OkStatus();
  }
  if (step.comparator >= 0) {  // a sort by its generated comparator (sort_library.h)
    RunSort(*step.instr, kernels[step.comparator], operands, out, pool);
    return absl::OkStatus();
  }
  return RunLibraryCall(*step.instr, step.library_args.get(), operands, out,
                        pool);  // LAPACK, FFT (library_calls.h)
}

}  // namespace kiln::cpu
