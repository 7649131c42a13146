// Instruction and computation equivalence (see instruction_equality.h).
#include "hlo/passes/instruction_equality.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace kiln {
namespace {

bool SameLiteral(const std::optional<Literal>& a, const std::optional<Literal>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->shape() == b->shape() && *a == *b;
}

// Extra attributes that change what an instruction computes or where; `metadata` (source
// location, op name) does not.
std::vector<std::pair<std::string, std::string>> MeaningfulExtras(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : extra)
    if (kv.first != "metadata") out.push_back(kv);
  std::sort(out.begin(), out.end());
  return out;
}

bool SameAttributes(const InstructionAttributes& a, const InstructionAttributes& b) {
  return SameLiteral(a.literal, b.literal) && a.parameter_number == b.parameter_number &&
         a.tuple_index == b.tuple_index && a.dimensions == b.dimensions &&
         a.iota_dimension == b.iota_dimension && a.slice_starts == b.slice_starts &&
         a.slice_limits == b.slice_limits && a.slice_strides == b.slice_strides &&
         a.dynamic_slice_sizes == b.dynamic_slice_sizes && a.padding_config == b.padding_config &&
         a.dot_dimension_numbers == b.dot_dimension_numbers && a.window == b.window &&
         a.convolution_dimension_numbers == b.convolution_dimension_numbers &&
         a.feature_group_count == b.feature_group_count &&
         a.batch_group_count == b.batch_group_count &&
         a.comparison_direction == b.comparison_direction &&
         a.comparison_type == b.comparison_type &&
         a.gather_dimension_numbers == b.gather_dimension_numbers &&
         a.gather_slice_sizes == b.gather_slice_sizes &&
         a.indices_are_sorted == b.indices_are_sorted &&
         a.scatter_dimension_numbers == b.scatter_dimension_numbers &&
         a.unique_indices == b.unique_indices && a.fusion_kind == b.fusion_kind &&
         a.custom_call_target == b.custom_call_target && a.exponent_bits == b.exponent_bits &&
         a.mantissa_bits == b.mantissa_bits && a.distribution == b.distribution &&
         a.rng_algorithm == b.rng_algorithm && a.feature_index == b.feature_index &&
         a.epsilon == b.epsilon && a.is_stable == b.is_stable && a.k == b.k &&
         a.largest == b.largest && a.left_side == b.left_side && a.lower == b.lower &&
         a.unit_diagonal == b.unit_diagonal && a.transpose_a == b.transpose_a &&
         a.fft_type == b.fft_type && a.fft_length == b.fft_length &&
         MeaningfulExtras(a.extra) == MeaningfulExtras(b.extra);
}

}  // namespace

bool IdenticalIgnoringOperands(const HloInstruction& a, const HloInstruction& b) {
  if (a.opcode() != b.opcode() || a.shape() != b.shape()) return false;
  if (a.operand_count() != b.operand_count()) return false;
  if (a.called_computations().size() != b.called_computations().size()) return false;
  if (!SameAttributes(a.attrs(), b.attrs())) return false;
  for (size_t i = 0; i < a.called_computations().size(); ++i) {
    const HloComputation* ca = a.called_computations()[i];
    const HloComputation* cb = b.called_computations()[i];
    if (ca != cb && !ComputationsEquivalent(*ca, *cb)) return false;
  }
  return true;
}

bool ComputationsEquivalent(const HloComputation& a, const HloComputation& b) {
  if (&a == &b) return true;
  if (a.instruction_count() != b.instruction_count() || a.num_parameters() != b.num_parameters() ||
      !a.root() || !b.root())
    return false;
  std::vector<HloInstruction*> pa = a.MakeInstructionPostOrder();
  std::vector<HloInstruction*> pb = b.MakeInstructionPostOrder();
  absl::flat_hash_map<const HloInstruction*, size_t> index_a, index_b;
  for (size_t i = 0; i < pa.size(); ++i) {
    index_a[pa[i]] = i;
    index_b[pb[i]] = i;
  }
  for (size_t i = 0; i < pa.size(); ++i) {
    const HloInstruction& x = *pa[i];
    const HloInstruction& y = *pb[i];
    if (!x.control_predecessors().empty() || !y.control_predecessors().empty()) return false;
    if (!IdenticalIgnoringOperands(x, y)) return false;
    for (int k = 0; k < x.operand_count(); ++k)
      if (index_a.at(x.operand(k)) != index_b.at(y.operand(k))) return false;
  }
  return index_a.at(a.root()) == index_b.at(b.root());
}

}  // namespace kiln
