// Dot canonicalization (see dot_canonicalization.h).
#include "hlo/passes/dot_canonicalization.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The operand's dimensions in canonical order: its batch dims as listed, then its free dims
// in increasing order, with the contracting dims (as listed) last (lhs) or first after the
// batch (rhs).
std::vector<int64_t> CanonicalOrder(int64_t rank, const std::vector<int64_t>& batch,
                                    const std::vector<int64_t>& contracting, bool lhs) {
  auto listed = [](const std::vector<int64_t>& v, int64_t d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };
  std::vector<int64_t> order(batch);
  if (!lhs) order.insert(order.end(), contracting.begin(), contracting.end());
  for (int64_t d = 0; d < rank; ++d)
    if (!listed(contracting, d) && !listed(batch, d)) order.push_back(d);
  if (lhs) order.insert(order.end(), contracting.begin(), contracting.end());
  return order;
}

// Makes operand `side` of `dot` canonical with a transpose; returns false when it already
// was GEMM-readable.
bool Canonicalize(HloComputation& comp, HloInstruction* dot, int side, NameUniquer& names) {
  DotDimensionNumbers& dn = *dot->mutable_attrs().dot_dimension_numbers;
  const bool lhs = side == 0;
  std::vector<int64_t>& batch = lhs ? dn.lhs_batch_dimensions : dn.rhs_batch_dimensions;
  std::vector<int64_t>& contracting =
      lhs ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
  HloInstruction* operand = dot->operand(side);
  const int64_t rank = operand->shape().rank();
  if (GemmReadableDotOperand(rank, batch, contracting)) return false;
  const std::vector<int64_t> order = CanonicalOrder(rank, batch, contracting, lhs);
  std::vector<int64_t> dims;
  for (int64_t d : order) dims.push_back(operand->shape().dimensions(d));
  auto t = HloInstruction::CreateUnary(HloOpcode::kTranspose,
                                       Shape(operand->shape().element_type(), dims), operand);
  t->mutable_attrs().dimensions = order;
  t->mutable_attrs().has_dimensions = true;
  // Named: dumps, plans and profiles list it as a step of its own.
  dot->ReplaceOperandWith(side, AddWithFreshName(&comp, std::move(t), names, "transpose"));
  const int64_t nb = static_cast<int64_t>(batch.size());
  const int64_t nc = static_cast<int64_t>(contracting.size());
  for (int64_t i = 0; i < nb; ++i) batch[i] = i;
  for (int64_t j = 0; j < nc; ++j) contracting[j] = (lhs ? rank - nc : nb) + j;
  return true;
}

}  // namespace

bool GemmReadableDotOperand(int64_t rank, const std::vector<int64_t>& batch,
                            const std::vector<int64_t>& contracting) {
  const int64_t nb = static_cast<int64_t>(batch.size());
  const int64_t nc = static_cast<int64_t>(contracting.size());
  for (int64_t i = 0; i < nb; ++i)
    if (batch[i] != i) return false;
  if (nc == 0) return false;
  for (int64_t j = 1; j < nc; ++j)
    if (contracting[j] != contracting[0] + j) return false;
  return contracting[0] == nb || contracting[0] + nc == rank;
}

absl::StatusOr<bool> DotCanonicalization::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    if (comp->is_fusion_computation()) continue;  // fused dots are emitted as loops anyway
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kDot || !instr->attrs().dot_dimension_numbers ||
          instr->operand_count() != 2 || !instr->shape().IsArray())
        continue;
      const DotDimensionNumbers& dn = *instr->attrs().dot_dimension_numbers;
      if (dn.lhs_contracting_dimensions.empty() ||
          dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size() ||
          !instr->operand(0)->shape().IsArray() || !instr->operand(1)->shape().IsArray() ||
          DotMultiplyAdds(*instr) < min_mnk_)
        continue;
      changed |= Canonicalize(*comp, instr, 0, names);
      changed |= Canonicalize(*comp, instr, 1, names);
    }
  }
  return changed;
}

}  // namespace kiln
