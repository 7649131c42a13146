// Transpose folding (see transpose_folding.h).
#include "hlo/passes/transpose_folding.h"

#include <algorithm>

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

bool IsPermutation(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

// The transpose feeding operand `i` of `instr`, when it is one with a valid permutation.
const HloInstruction* TransposeOperand(const HloInstruction* instr, int i) {
  const HloInstruction* t = instr->operand(i);
  if (t->opcode() != HloOpcode::kTranspose) return nullptr;
  if (!IsPermutation(t->dimensions(), t->shape().rank())) return nullptr;
  if (t->operand(0)->shape().rank() != t->shape().rank()) return nullptr;
  return t;
}

void MapDims(const std::vector<int64_t>& perm, std::vector<int64_t>& dims) {
  for (int64_t& d : dims) d = perm[d];
}

// Folds a transposed dot operand (`side` 0: lhs, 1: rhs) when its free dims stay ordered.
bool FoldDotOperand(HloInstruction* dot, int side) {
  const HloInstruction* t = TransposeOperand(dot, side);
  if (!t) return false;
  DotDimensionNumbers& dn = *dot->mutable_attrs().dot_dimension_numbers;
  std::vector<int64_t>& batch = side == 0 ? dn.lhs_batch_dimensions : dn.rhs_batch_dimensions;
  std::vector<int64_t>& contracting =
      side == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
  const std::vector<int64_t>& perm = t->dimensions();
  int rank = t->shape().rank();
  for (int64_t d : batch)
    if (d < 0 || d >= rank) return false;
  for (int64_t d : contracting)
    if (d < 0 || d >= rank) return false;
  // The dot orders an operand's free dims by their index; the index they will have in the
  // transpose's operand must keep that order.
  int64_t last = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batch.begin(), batch.end(), d) != batch.end() ||
        std::find(contracting.begin(), contracting.end(), d) != contracting.end())
      continue;
    if (perm[d] < last) return false;
    last = perm[d];
  }
  MapDims(perm, batch);
  MapDims(perm, contracting);
  dot->ReplaceOperandWith(side, t->operand(0));
  return true;
}

bool FoldConvolutionOperand(HloInstruction* conv, int side) {
  const HloInstruction* t = TransposeOperand(conv, side);
  if (!t) return false;
  ConvolutionDimensionNumbers& cd = *conv->mutable_attrs().convolution_dimension_numbers;
  const std::vector<int64_t>& perm = t->dimensions();
  int rank = t->shape().rank();
  auto in_range = [&](int64_t d) { return d >= 0 && d < rank; };
  if (side == 0) {
    if (!in_range(cd.input_batch_dimension) || !in_range(cd.input_feature_dimension) ||
        !std::all_of(cd.input_spatial_dimensions.begin(), cd.input_spatial_dimensions.end(),
                     in_range))
      return false;
    cd.input_batch_dimension = perm[cd.input_batch_dimension];
    cd.input_feature_dimension = perm[cd.input_feature_dimension];
    MapDims(perm, cd.input_spatial_dimensions);
  } else {
    if (!in_range(cd.kernel_input_feature_dimension) ||
        !in_range(cd.kernel_output_feature_dimension) ||
        !std::all_of(cd.kernel_spatial_dimensions.begin(), cd.kernel_spatial_dimensions.end(),
                     in_range))
      return false;
    cd.kernel_input_feature_dimension = perm[cd.kernel_input_feature_dimension];
    cd.kernel_output_feature_dimension = perm[cd.kernel_output_feature_dimension];
    MapDims(perm, cd.kernel_spatial_dimensions);
  }
  conv->ReplaceOperandWith(side, t->operand(0));
  return true;
}

}  // namespace

absl::StatusOr<bool> TransposeFolding::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> old_operands;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->operand_count() != 2) continue;
      bool is_dot = instr->opcode() == HloOpcode::kDot && instr->attrs().dot_dimension_numbers;
      bool is_conv = instr->opcode() == HloOpcode::kConvolution &&
                     instr->attrs().convolution_dimension_numbers;
      if (!is_dot && !is_conv) continue;
      for (int side = 0; side < 2; ++side) {
        HloInstruction* before = instr->operand(side);
        bool folded = is_dot ? FoldDotOperand(instr, side) : FoldConvolutionOperand(instr, side);
        if (folded) old_operands.push_back(before);
      }
    }
    RemoveDeadFrom(comp, old_operands);
    changed |= !old_operands.empty();
  }
  return changed;
}

}  // namespace kiln
