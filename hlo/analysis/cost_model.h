// A rough cost model of a computation as a sequence of kernels: every instruction that does
// work is one kernel that reads its operands from memory and writes its result; a fusion
// is one kernel whose body's intermediates never touch memory. Flops count one per
// element for elementwise work, 2*M*N*K for dots, one per input element for reductions.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/computation.h"

namespace kiln {

struct KernelCost {
  const HloInstruction* instr = nullptr;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t flops = 0;
};

struct ComputationCost {
  int64_t kernels = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t flops = 0;
  std::vector<KernelCost> per_kernel;
};

// Instructions that launch no kernel: parameters, constants, tuples, get-tuple-element,
// bitcasts.
bool IsKernel(const HloInstruction& instr);
int64_t EstimateFlops(const HloInstruction& instr);
ComputationCost EstimateCost(const HloComputation& comp);

}  // namespace kiln
