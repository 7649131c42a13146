// Dot canonicalization: a dot whose operands are not laid out as a (batched) matrix product
// gets a transpose on each such operand, so a GEMM library can compute it: the lhs becomes
// [batch..., free..., contracting...], the rhs [batch..., contracting..., free...]. The dot's
// result, whose order HLO fixes (batch, lhs free, rhs free), is unchanged.
//
// The reverse of what transpose folding does for a loop emitter: a transposed copy costs one
// pass over the operand, an element-at-a-time dot O(m*n*k) strided loads. Backends with a
// GEMM library run it before deciding fusion (kernel_plan::MakeFusedPlan); XLA's CPU and GPU
// compilers do the same with their dot dimension sorting and layout assignment.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/passes/pass.h"

namespace kiln {

// True when a GEMM library can read a dot operand of `rank` as stored: its batch dimensions
// are the leading ones in order, and its contracting dimensions are adjacent, in the order
// listed, and first or last among the others, so they flatten into the matrix's depth and the
// free ones into its rows or columns (x[b,s,d] contracted with g[b,s,e] over {b,s} is one
// [b*s, d]^T x [b*s, e] GEMM, as a weight gradient is written). kernel_plan's MatchGemmDot
// asks it of both operands; DotCanonicalization transposes those it is false for.
bool GemmReadableDotOperand(int64_t rank, const std::vector<int64_t>& batch,
                            const std::vector<int64_t>& contracting);

class DotCanonicalization : public HloPass {
 public:
  // Only dots of at least `min_mnk` multiply-adds (batch*m*n*k) are rewritten: for smaller
  // ones the copies would cost more than they save.
  explicit DotCanonicalization(int64_t min_mnk = 0) : min_mnk_(min_mnk) {}
  std::string_view name() const override { return "dot-canonicalization"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_mnk_;
};

}  // namespace kiln
