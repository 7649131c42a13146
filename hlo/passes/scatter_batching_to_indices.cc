// Batching dimensions of scatters as index components (see scatter_batching_to_indices.h).
#include "hlo/passes/scatter_batching_to_indices.h"

#include <algorithm>
#include <limits>

#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The largest value an index of type t holds (0 for a type the rewrite leaves alone).
int64_t MaxIndex(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::S8:
      return std::numeric_limits<int8_t>::max();
    case PrimitiveType::S16:
      return std::numeric_limits<int16_t>::max();
    case PrimitiveType::S32:
      return std::numeric_limits<int32_t>::max();
    case PrimitiveType::S64:
      return std::numeric_limits<int64_t>::max();
    case PrimitiveType::U8:
      return std::numeric_limits<uint8_t>::max();
    case PrimitiveType::U16:
      return std::numeric_limits<uint16_t>::max();
    case PrimitiveType::U32:
      return std::numeric_limits<uint32_t>::max();
    case PrimitiveType::U64:
      return std::numeric_limits<int64_t>::max();
    default:
      return 0;
  }
}

// Rewrites `s` in place; false (nothing added) when it has no batching dimensions or a form
// the rewrite does not take.
bool Rewrite(HloComputation* comp, NameUniquer& names, HloInstruction* s) {
  if (!s->attrs().scatter_dimension_numbers || s->operand_count() < 3 ||
      s->operand_count() % 2 == 0)
    return false;
  ScatterDimensionNumbers dn = *s->attrs().scatter_dimension_numbers;
  const size_t batch = dn.input_batching_dims.size();
  if (batch == 0 || batch != dn.scatter_indices_batching_dims.size()) return false;
  // Operands: the inputs, the indices, as many updates as inputs.
  const int index_at = (s->operand_count() - 1) / 2;
  HloInstruction* indices = s->operand(index_at);
  const Shape& is = indices->shape();
  if (!is.IsArray()) return false;
  const PrimitiveType it = is.element_type();
  const int64_t ivd = dn.index_vector_dim;
  std::vector<int64_t> dims = is.dimensions();
  if (ivd < 0 || ivd > is.rank() || MaxIndex(it) == 0) return false;
  for (int64_t d : dn.scatter_indices_batching_dims)
    if (d < 0 || d >= is.rank() || d == ivd || dims[d] - 1 > MaxIndex(it)) return false;

  // An implicit trailing index vector of one component made explicit.
  if (ivd == is.rank()) {
    dims.push_back(1);
    indices = AddArrayInstruction(comp, names, HloOpcode::kReshape, it, dims, {indices}, is);
  }
  std::vector<int64_t> one = dims;
  one[ivd] = 1;
  std::vector<HloInstruction*> parts;
  for (int64_t d : dn.scatter_indices_batching_dims) {
    HloInstruction* iota = AddArrayInstruction(comp, names, HloOpcode::kIota, it, one, {}, is);
    iota->mutable_attrs().iota_dimension = d;
    parts.push_back(iota);
  }
  parts.push_back(indices);
  std::vector<int64_t> wide = dims;
  wide[ivd] += static_cast<int64_t>(batch);
  HloInstruction* cat =
      AddArrayInstruction(comp, names, HloOpcode::kConcatenate, it, wide, parts, is);
  cat->mutable_attrs().dimensions = {ivd};
  cat->mutable_attrs().has_dimensions = true;

  std::vector<int64_t> to_operand = dn.input_batching_dims;
  to_operand.insert(to_operand.end(), dn.scatter_dims_to_operand_dims.begin(),
                    dn.scatter_dims_to_operand_dims.end());
  dn.scatter_dims_to_operand_dims = std::move(to_operand);
  dn.inserted_window_dims.insert(dn.inserted_window_dims.end(), dn.input_batching_dims.begin(),
                                 dn.input_batching_dims.end());
  std::sort(dn.inserted_window_dims.begin(), dn.inserted_window_dims.end());
  dn.input_batching_dims.clear();
  dn.scatter_indices_batching_dims.clear();
  s->ReplaceOperandWith(index_at, cat);
  s->mutable_attrs().scatter_dimension_numbers = std::move(dn);
  // Sorted within each batch need not be sorted as whole index vectors.
  s->mutable_attrs().indices_are_sorted = false;
  return true;
}

}  // namespace

absl::StatusOr<bool> ScatterBatchingToIndices::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module))
    for (HloInstruction* s : comp->MakeInstructionPostOrder())
      if (s->opcode() == HloOpcode::kScatter) changed |= Rewrite(comp, names, s);
  return changed;
}

}  // namespace kiln
