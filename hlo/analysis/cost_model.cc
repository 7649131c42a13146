// Bytes and flops per kernel.
#include "hlo/analysis/cost_model.h"

namespace kiln {

bool IsKernel(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kAfterAll:
      return false;
    default:
      return true;
  }
}

int64_t EstimateFlops(const HloInstruction& instr) {
  const Shape& s = instr.shape();
  int64_t out_elems = s.IsArray() ? s.num_elements() : 0;
  switch (instr.opcode()) {
    case HloOpcode::kDot: {
      int64_t k = 1;
      if (const auto& dn = instr.attrs().dot_dimension_numbers)
        for (int64_t d : dn->lhs_contracting_dimensions)
          k *= instr.operand(0)->shape().dimensions(static_cast<int>(d));
      return 2 * out_elems * k;
    }
    case HloOpcode::kReduce:
      return instr.operand(0)->shape().IsArray() ? instr.operand(0)->shape().num_elements() : 0;
    case HloOpcode::kFusion: {
      int64_t f = 0;
      for (const HloInstruction* i : instr.fused_computation()->instructions())
        f += EstimateFlops(*i);
      return f;
    }
    default:
      return IsElementwiseOpcode(instr.opcode()) ? out_elems : 0;
  }
}

ComputationCost EstimateCost(const HloComputation& comp) {
  ComputationCost c;
  for (const HloInstruction* i : comp.instructions()) {
    if (!IsKernel(*i)) continue;
    KernelCost k;
    k.instr = i;
    for (const HloInstruction* o : i->operands()) k.bytes_read += o->shape().total_byte_size();
    k.bytes_written = i->shape().total_byte_size();
    k.flops = EstimateFlops(*i);
    ++c.kernels;
    c.bytes_read += k.bytes_read;
    c.bytes_written += k.bytes_written;
    c.flops += k.flops;
    c.per_kernel.push_back(k);
  }
  return c;
}

}  // namespace kiln
