// The elemental emitter: generates LLVM IR for a kernel, one element at a time (see header).
#include "plugins/llvm_emitter/elemental_emitter.h"

#include <algorithm>
#include <complex>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"
#include "hlo/shape.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "plugins/llvm_emitter/fast_math.h"
#include "plugins/llvm_emitter/kernel_emitter.h"

namespace kiln::llvm_emit {
namespace {

using detail::IsFloatType;
using detail::IsSupportedType;
using PT = PrimitiveType;

// The operand shape of an elementwise instruction may be a scalar next to an array result
// (clamp, select): such an operand is read at the empty index.
bool IsImplicitScalar(const HloInstruction& instr, int operand) {
  return instr.operand(operand)->shape().rank() == 0 && instr.shape().rank() > 0;
}

// A float divide whose divisor is a broadcast along the last dimension: the divisor does not
// change along the innermost loop, so neither does its reciprocal.
bool DividesByBroadcast(const HloInstruction* h) {
  if (h == nullptr || h->opcode() != HloOpcode::kDivide || h->operand_count() != 2) return false;
  const HloInstruction* d = h->operand(1);
  const int64_t rank = h->shape().rank();
  return d->opcode() == HloOpcode::kBroadcast && rank > 0 &&
         !absl::c_linear_search(d->dimensions(), rank - 1);
}

bool IsReducerOpcode(HloOpcode op) {
  return IsElementwiseOpcode(op) || op == HloOpcode::kConstant || op == HloOpcode::kParameter;
}

bool CheckTypes(const HloInstruction& instr, std::string* why) {
  auto bad = [&](const Shape& s) {
    if (why)
      *why = absl::StrCat("element type ", std::string(PrimitiveTypeName(s.element_type())),
                          " is not supported by the emitter");
    return false;
  };
  if (!instr.shape().IsArray() || !IsSupportedType(instr.shape().element_type()))
    return bad(instr.shape());
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray() || !IsSupportedType(op->shape().element_type()))
      return bad(op->shape());
  }
  return true;
}

bool CanEmitUnary(HloOpcode op, PT in, PT out) {
  switch (op) {
    case HloOpcode::kAbs:
    case HloOpcode::kNegate:
    case HloOpcode::kSign:
    case HloOpcode::kCopy:
      return in != PT::PRED;
    case HloOpcode::kExp:
    case HloOpcode::kExpm1:
    case HloOpcode::kLog:
    case HloOpcode::kLog1p:
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt:
    case HloOpcode::kCbrt:
    case HloOpcode::kTanh:
    case HloOpcode::kLogistic:
    case HloOpcode::kErf:
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kTan:
    case HloOpcode::kFloor:
    case HloOpcode::kCeil:
    case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kIsFinite:
      return IsFloatType(in);
    case HloOpcode::kNot:
      return !IsFloatType(in);
    case HloOpcode::kPopulationCount:
    case HloOpcode::kClz:
      return IsInteger(in);
    case HloOpcode::kReal:  // of a real value (complex operands: CanEmitComplex)
    case HloOpcode::kImag:
      return IsFloatType(in);
    case HloOpcode::kConvert:
      return true;
    case HloOpcode::kBitcastConvert:
      return in != PT::PRED && out != PT::PRED && BitWidth(in) == BitWidth(out);
    default:
      return false;
  }
}

bool CanEmitBinary(HloOpcode op, PT t) {
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
      return t != PT::PRED;
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kCompare:
      return true;
    case HloOpcode::kPower:
    case HloOpcode::kAtan2:
      return IsFloatType(t);
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
      return !IsFloatType(t);
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical:
      return IsInteger(t);
    default:
      return false;
  }
}

bool CanEmitScalarComputation(const HloComputation* comp, std::string* why) {
  if (comp == nullptr) {
    if (why) *why = "missing reducer computation";
    return false;
  }
  for (const HloInstruction* i : comp->instructions()) {
    if (!IsReducerOpcode(i->opcode()) || !CanEmitElementally(*i, why)) {
      if (why)
        *why = absl::StrCat("reducer instruction ", i->name(), " (",
                            std::string(HloOpcodeString(i->opcode())),
                            ") is not a scalar op the emitter handles");
      return false;
    }
    if (i->shape().rank() != 0) {
      if (why) *why = "reducer is not scalar";
      return false;
    }
  }
  return comp->root() != nullptr;
}

}  // namespace

bool CanEmitSortComparator(const HloInstruction& sort, std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (sort.opcode() != HloOpcode::kSort || sort.operand_count() == 0 || sort.to_apply() == nullptr)
    return no("not a sort with a comparator");
  const Shape& first = sort.operand(0)->shape();
  for (const HloInstruction* o : sort.operands()) {
    const Shape& s = o->shape();
    if (!s.IsArray() || !IsSupportedType(s.element_type()) || IsComplex(s.element_type()) ||
        s.is_dynamic() || s.dimensions() != first.dimensions())
      return no("sort operands are not arrays of one shape and supported types");
  }
  const HloComputation* cmp = sort.to_apply();
  if (cmp->num_parameters() != 2 * sort.operand_count() || cmp->root() == nullptr ||
      !cmp->root()->shape().IsArray() || cmp->root()->shape().element_type() != PT::PRED ||
      cmp->root()->shape().rank() != 0)
    return no("sort comparator does not take two scalars per operand to a pred");
  for (int i = 0; i < cmp->num_parameters(); ++i)
    if (cmp->parameter(i)->shape().element_type() != sort.operand(i / 2)->shape().element_type())
      return no("sort comparator parameter types differ from the operands'");
  return CanEmitScalarComputation(cmp, why);
}

bool CanEmitElementally(const HloInstruction& instr, std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (!CheckTypes(instr, why)) return false;
  if (instr.shape().is_dynamic()) return no("dynamic shapes are not supported");
  if (TouchesComplex(instr)) {
    if (!CanEmitComplex(instr, why)) return false;
    if (IsElementwiseOpcode(instr.opcode())) return true;  // the complex arithmetic listed there
  }
  PT out = instr.shape().element_type();
  HloOpcode op = instr.opcode();
  if (op == HloOpcode::kReducePrecision) {  // 16-bit floats stay on the evaluator
    if (out != PT::F32 && out != PT::F64)
      return no("reduce-precision of a 16-bit float is not supported by the emitter");
    if (instr.attrs().exponent_bits < 1 || instr.attrs().mantissa_bits < 0)
      return no("reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0");
    return true;
  }
  if (IsElementwiseOpcode(op)) {
    if (instr.operand_count() == 1) {
      if (CanEmitUnary(op, instr.operand(0)->shape().element_type(), out)) return true;
      return no(
          absl::StrCat(std::string(HloOpcodeString(op)), " on ",
                       std::string(PrimitiveTypeName(instr.operand(0)->shape().element_type())),
                       " is not supported by the emitter"));
    }
    if (instr.operand_count() == 2) {
      if (CanEmitBinary(op, instr.operand(0)->shape().element_type())) return true;
      return no(
          absl::StrCat(std::string(HloOpcodeString(op)), " on ",
                       std::string(PrimitiveTypeName(instr.operand(0)->shape().element_type())),
                       " is not supported by the emitter"));
    }
    if (op == HloOpcode::kSelect || op == HloOpcode::kClamp) return true;
    return no(absl::StrCat(std::string(HloOpcodeString(op)), " is not supported by the emitter"));
  }
  if (op == HloOpcode::kConstant && !instr.attrs().literal.has_value())
    return no("the constant's value was elided in the dump ({...})");
  switch (op) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kPad:
    case HloOpcode::kIota:
    case HloOpcode::kReverse:
      return true;
    case HloOpcode::kBitcast:
      // Only the layout-free meaning (a reshape of row-major data) is emitted.
      if (instr.shape().HasDefaultLayout() && instr.operand(0)->shape().HasDefaultLayout() &&
          instr.shape().element_type() == instr.operand(0)->shape().element_type())
        return true;
      return no("bitcast that changes layout or type is not supported by the emitter");
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice: {
      // Scalar start indices, one per dimension, after the operand (and the update).
      const int first = op == HloOpcode::kDynamicSlice ? 1 : 2;
      if (instr.operand_count() != first + instr.shape().rank())
        return no("dynamic slice without one scalar start index per dimension");
      for (int i = first; i < instr.operand_count(); ++i)
        if (instr.operand(i)->shape().rank() != 0 ||
            !IsInteger(instr.operand(i)->shape().element_type()))
          return no("dynamic slice start indices must be integer scalars");
      if (op == HloOpcode::kDynamicSlice &&
          instr.attrs().dynamic_slice_sizes.size() != static_cast<size_t>(instr.shape().rank()))
        return no("dynamic-slice without dynamic_slice_sizes");
      return true;
    }
    case HloOpcode::kGather: {
      const auto& dn = instr.attrs().gather_dimension_numbers;
      if (!dn.has_value() || instr.operand_count() != 2)
        return no("gather without dimension numbers");
      if (dn->operand_batching_dims.size() != dn->start_indices_batching_dims.size())
        return no("gather whose batching dimensions do not pair up");
      const Shape& a = instr.operand(0)->shape();
      const Shape& ix = instr.operand(1)->shape();
      if (!IsInteger(ix.element_type())) return no("gather indices must be integers");
      // Nothing to read: XLA's result is zeros where a collapsed slice of size 0 leaves
      // elements (the evaluator's answer); not worth a kernel.
      if (a.num_elements() == 0) return no("gather from an empty operand");
      if (instr.attrs().gather_slice_sizes.size() != static_cast<size_t>(a.rank()) ||
          dn->index_vector_dim < 0 || dn->index_vector_dim > ix.rank() ||
          dn->offset_dims.size() + dn->collapsed_slice_dims.size() +
                  dn->operand_batching_dims.size() !=
              static_cast<size_t>(a.rank()))
        return no("gather whose dimension numbers do not fit its shapes");
      return true;
    }
    case HloOpcode::kReduce:
      if (instr.operand_count() != 2) return no("variadic reduce is not supported by the emitter");
      return CanEmitScalarComputation(instr.to_apply(), why);
    case HloOpcode::kReduceWindow:
      if (instr.operand_count() != 2 || !instr.shape().IsArray())
        return no("variadic reduce-window is not supported by the emitter");
      if (instr.attrs().window &&
          instr.attrs().window->dimensions.size() != instr.operand(0)->shape().dimensions().size())
        return no("reduce-window window does not match the operand's rank");
      return CanEmitScalarComputation(instr.to_apply(), why);
    case HloOpcode::kConvolution: {
      const auto& dn = instr.attrs().convolution_dimension_numbers;
      if (!dn.has_value() || instr.operand_count() != 2)
        return no("convolution without dim_labels");
      if (out == PT::PRED) return no("pred convolution is not supported by the emitter");
      const size_t nsp = dn->input_spatial_dimensions.size();
      if (dn->kernel_spatial_dimensions.size() != nsp ||
          dn->output_spatial_dimensions.size() != nsp ||
          instr.shape().rank() != static_cast<int>(nsp) + 2 ||
          (instr.attrs().window && instr.attrs().window->dimensions.size() != nsp))
        return no("convolution dim_labels do not match the shapes");
      const int64_t g = instr.attrs().feature_group_count, bg = instr.attrs().batch_group_count;
      const Shape& k = instr.operand(1)->shape();
      const int64_t o = k.dimensions(dn->kernel_output_feature_dimension);
      if (g < 1 || bg < 1 || o % g != 0 || o % bg != 0 ||
          instr.operand(0)->shape().dimensions(dn->input_batch_dimension) % bg != 0)
        return no("convolution group counts do not divide the features");
      return true;
    }
    case HloOpcode::kDot:
      if (!instr.attrs().dot_dimension_numbers.has_value())
        return no("dot without dimension numbers");
      if (out == PT::PRED) return no("pred dot is not supported by the emitter");
      return instr.operand_count() == 2 || no("dot with sparsity operands is not supported");
    default:
      return no(absl::StrCat(std::string(HloOpcodeString(op)), " is not supported by the emitter"));
  }
}

namespace {
// Convolutions with at most this many input features per group and taps in the window visit
// every tap, clamped (EmitConvolution).
constexpr int64_t kClampedTapsMaxFeatures = 4;
constexpr int64_t kClampedTapsMaxTaps = 64;

// The element count of the accumulator of a reduce that IsColumnReduction describes, without
// its size bounds, or -1 for another reduce.
int64_t ColumnAccumulatorElements(const HloInstruction& h) {
  // 32- and 64-bit integers too: their reducers are exact in any order (an arg-min's index
  // reduce over dimension 0 took 12 ms, 60x its value reduce, as a strided walk per column).
  const PT t = h.shape().IsArray() ? h.shape().element_type() : PT::PRED;
  if (h.opcode() != HloOpcode::kReduce || h.operand_count() != 2 || !h.shape().IsArray() ||
      (t != PT::F32 && t != PT::F64 && t != PT::S32 && t != PT::S64 && t != PT::U32 &&
       t != PT::U64))
    return -1;
  const std::vector<int64_t>& in = h.operand(0)->shape().dimensions();
  const std::vector<int64_t>& reduced = h.dimensions();
  const int64_t rank = static_cast<int64_t>(in.size());
  if (reduced.empty() || static_cast<int64_t>(reduced.size()) >= rank) return -1;
  int64_t last_kept = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (!absl::c_linear_search(reduced, d)) last_kept = d;
  // Rows: the reduced dimensions before the last kept one (at least one, else this is a row
  // reduction); the trailing ones widen the accumulator.
  int64_t rows = 1, trailing = 1;
  bool crosses = false;
  for (int64_t d : reduced) {
    if (d < last_kept) {
      rows *= in[d];
      crosses = true;
    } else {
      trailing *= in[d];
    }
  }
  if (!crosses || rows > kMaxColumnRows) return -1;
  return h.shape().num_elements() * trailing;
}
}  // namespace

bool IsColumnReduction(const HloInstruction& h) {
  const int64_t acc = ColumnAccumulatorElements(h);
  return acc >= 0 && acc <= kMaxColumnElements;
}

bool IsPartitionedColumnReduction(const HloInstruction& h) {
  const int64_t acc = ColumnAccumulatorElements(h);
  return acc >= 0 && acc <= kMaxPartitionedColumnElements &&
         !absl::c_linear_search(h.dimensions(), int64_t{0});
}

namespace detail {
ColumnLayout ColumnLayoutOf(const HloInstruction& r) {
  const std::vector<int64_t>& in = r.operand(0)->shape().dimensions();
  const std::vector<int64_t>& reduced = r.dimensions();
  ColumnLayout l;
  l.acc_dims = r.shape().dimensions();
  int64_t last_kept = -1;
  for (size_t d = 0; d < in.size(); ++d)
    if (!absl::c_linear_search(reduced, static_cast<int64_t>(d)))
      last_kept = static_cast<int64_t>(d);
  for (size_t d = 0; d < in.size(); ++d) {
    const bool trailing = static_cast<int64_t>(d) > last_kept;
    l.in_acc.push_back(trailing || !absl::c_linear_search(reduced, static_cast<int64_t>(d)));
    if (trailing) {
      l.acc_dims.push_back(in[d]);
      l.run *= in[d];
    }
  }
  l.elements = r.shape().num_elements() * l.run;
  return l;
}

std::vector<const HloInstruction*> ColumnReductionsOf(const KernelSpec& spec,
                                                      bool (*accepts)(const HloInstruction&)) {
  // Post-order over the kernel's cone, inputs left out.
  std::vector<const HloInstruction*> columns;
  absl::flat_hash_map<const HloInstruction*, bool> state;  // false: operands pending
  for (const HloInstruction* h : spec.inputs) state[h] = true;
  std::vector<const HloInstruction*> stack(spec.outputs.rbegin(), spec.outputs.rend());
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    auto [it, fresh] = state.try_emplace(h, false);
    if (!fresh) {
      stack.pop_back();
      if (!it->second && accepts(*h)) columns.push_back(h);
      it->second = true;
      continue;
    }
    for (const HloInstruction* o : h->operands())
      if (!state.contains(o)) stack.push_back(o);
  }
  return columns;
}
}  // namespace detail

bool AnyInCone(const KernelSpec& spec, const std::function<bool(const HloInstruction&)>& pred) {
  absl::flat_hash_set<const HloInstruction*> seen(spec.inputs.begin(), spec.inputs.end());
  std::vector<const HloInstruction*> stack(spec.outputs.begin(), spec.outputs.end());
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (!seen.insert(h).second) continue;
    if (pred(*h)) return true;
    for (const HloInstruction* o : h->operands()) stack.push_back(o);
  }
  return false;
}

const HloInstruction* PartedColumnReduction(const KernelSpec& spec) {
  std::vector<const HloInstruction*> columns = detail::ColumnReductionsOf(spec, IsColumnReduction);
  if (columns.size() != 1 || !absl::c_linear_search(columns[0]->dimensions(), int64_t{0}))
    return nullptr;
  return columns[0];
}

Shape PartialsShape(const KernelSpec& spec) {
  if (spec.accumulate_columns) {
    const HloInstruction* r = PartedColumnReduction(spec);
    if (r != nullptr)
      return Shape(r->shape().element_type(),
                   {spec.reduce_parts * detail::ColumnLayoutOf(*r).elements});
  }
  return Shape(spec.outputs[0]->shape().element_type(), {spec.reduce_parts});
}

// A root concatenation of more operands than this along an outer dimension is written one
// operand at a time (EmitConcatenateByOperand).
constexpr int kMaxBranchedConcatOperands = 4;

// The tile of TransposedRead kernels' output loops (32 x 32 f32: 4 KB of output, 32 lines
// of the transposed operand).
constexpr int64_t kTransposeTile = 32;

// The transpose whose read would make the plain loop nest touch a new cache line of its
// operand for every output element (its operand's minor dimension moves), or null.
const HloInstruction* TransposedReadOf(const KernelSpec& spec) {
  if (spec.target != KernelTarget::kCpu || spec.outputs.size() != 1 || spec.reduce_parts > 0 ||
      spec.update_in_place || spec.accumulate_columns)
    return nullptr;
  const Shape& shape = spec.outputs[0]->shape();
  if (!shape.IsArray() || shape.rank() < 2) return nullptr;
  absl::flat_hash_set<const HloInstruction*> inputs(spec.inputs.begin(), spec.inputs.end());
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack{spec.outputs[0]};
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (inputs.contains(i) || !seen.insert(i).second) continue;
    if (MovesMinorDimension(*i)) return i;
    for (const HloInstruction* o : i->operands()) stack.push_back(o);
  }
  return nullptr;
}

bool ReadsTransposed(const KernelSpec& spec) { return TransposedReadOf(spec) != nullptr; }

bool MovesMinorDimension(const HloInstruction& h) {
  if (h.opcode() != HloOpcode::kTranspose || h.attrs().dimensions.empty()) return false;
  const int64_t minor = static_cast<int64_t>(h.attrs().dimensions.size()) - 1;
  return h.attrs().dimensions.back() != minor && h.operand(0)->shape().dimensions(minor) > 1;
}

// The output dimension that, with the last, the tiles of a transposed read span: the one the
// transpose fills from its operand's minor dimension when the transpose has the output's
// shape ([e,d,t] -> [t,e,d]: t; NHWC -> NCHW: the features), so that a tile reads whole
// lines of the operand; otherwise the second-to-last.
int64_t TransposeTileDim(const KernelSpec& spec) {
  const Shape& shape = spec.outputs[0]->shape();
  const int64_t minor = shape.rank() - 1;
  const HloInstruction* t = TransposedReadOf(spec);
  if (t != nullptr && t->shape().dimensions() == shape.dimensions()) {
    const std::vector<int64_t>& perm = t->attrs().dimensions;
    for (int64_t d = 0; d < minor; ++d)
      if (perm[d] == minor) return d;
  }
  return minor - 1;
}

// Dimension `tile_dim` and the last of `shape` (rank >= 2) both span a transpose tile.
bool SpansTransposeTile(const Shape& shape, int64_t tile_dim) {
  return shape.dimensions(shape.rank() - 1) >= kTransposeTile &&
         shape.dimensions(tile_dim) >= kTransposeTile;
}

bool TransposedRead(const KernelSpec& spec) {
  return ReadsTransposed(spec) &&
         SpansTransposeTile(spec.outputs[0]->shape(), TransposeTileDim(spec));
}

const HloInstruction* StashableRowStatistic(const KernelSpec& spec) {
  if (spec.target != KernelTarget::kCpu || spec.outputs.size() != 1 || spec.reduce_parts > 0 ||
      spec.update_in_place)
    return nullptr;
  const HloInstruction* root = spec.outputs[0];
  const Shape& shape = root->shape();
  if (!shape.IsArray() || shape.rank() < 2 ||
      (shape.element_type() != PT::F32 && shape.element_type() != PT::F64))
    return nullptr;
  absl::flat_hash_set<const HloInstruction*> inputs(spec.inputs.begin(), spec.inputs.end());
  // True when `h`'s cone inside the kernel has a costly elementwise op (exp, log, tanh, ...).
  const auto costly = [&](const HloInstruction* h) {
    absl::flat_hash_set<const HloInstruction*> seen;
    std::vector<const HloInstruction*> stack{h};
    while (!stack.empty()) {
      const HloInstruction* i = stack.back();
      stack.pop_back();
      if (inputs.contains(i) || !seen.insert(i).second) continue;
      if (IsCostlyElementwiseOpcode(i->opcode()) && i->opcode() != HloOpcode::kDivide) return true;
      for (const HloInstruction* o : i->operands()) stack.push_back(o);
    }
    return false;
  };
  // True when the output reads `value` at its own index: through elementwise instructions of
  // the output's shape only (else stashing would only add stores).
  const auto read_at_own_index = [&](const HloInstruction* value) {
    absl::flat_hash_set<const HloInstruction*> seen;
    std::vector<const HloInstruction*> stack{root};
    while (!stack.empty()) {
      const HloInstruction* i = stack.back();
      stack.pop_back();
      if (i == value) return true;
      if (inputs.contains(i) || !seen.insert(i).second || !IsElementwiseOpcode(i->opcode()) ||
          i->shape().dimensions() != shape.dimensions())
        continue;
      for (const HloInstruction* o : i->operands()) stack.push_back(o);
    }
    return false;
  };
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack{root};
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (inputs.contains(h) || !seen.insert(h).second) continue;
    for (const HloInstruction* o : h->operands()) stack.push_back(o);
    if (h->opcode() != HloOpcode::kReduce || h->operand_count() != 2) continue;
    const HloInstruction* value = h->operand(0);
    if (inputs.contains(value) || !(value->shape() == shape)) continue;
    // Over the trailing dimensions: the statistic of one output row (or block of rows).
    std::vector<int64_t> dims = h->dimensions();
    std::sort(dims.begin(), dims.end());
    bool trailing = !dims.empty() && dims.front() > 0;
    for (size_t i = 0; i < dims.size() && trailing; ++i)
      trailing = dims[i] == shape.rank() - static_cast<int64_t>(dims.size() - i);
    if (trailing && costly(value) && read_at_own_index(value)) return h;
  }
  return nullptr;
}

// True when the kernel gathers runs of 4 to 64 elements along the minor dimension of `dims`
// (a bilateral grid's 12 coefficients per pixel). Its innermost loop then stays a loop:
// unrolled whole, LLVM vectorized the loop around it, reading each run's elements with a
// gather per element and writing them with scatters (1.2 ms against 0.75 at b4 256x256).
bool GathersMinorRuns(const KernelSpec& spec, const std::vector<int64_t>& dims) {
  if (dims.empty() || dims.back() < 4 || dims.back() > 64) return false;
  const int64_t minor = static_cast<int64_t>(dims.size()) - 1;
  return AnyInCone(spec, [&](const HloInstruction& h) {
    return h.opcode() == HloOpcode::kGather && h.attrs().gather_dimension_numbers &&
           h.shape().dimensions() == dims &&
           absl::c_linear_search(h.attrs().gather_dimension_numbers->offset_dims, minor);
  });
}

namespace detail {

// A 16-bit float add/multiply reducer accumulates in f32 and rounds once at the end, as the
// HLO evaluator (and XLA's CPU backend after float normalization) does.
bool AccumulatesIn32(const HloInstruction& reduce) {
  PT t = reduce.shape().element_type();
  const HloInstruction* root = reduce.to_apply()->root();
  return IsNarrowFloat(t) &&
         (root->opcode() == HloOpcode::kAdd || root->opcode() == HloOpcode::kMultiply) &&
         root->operand(0)->opcode() == HloOpcode::kParameter &&
         root->operand(1)->opcode() == HloOpcode::kParameter &&
         root->operand(0) != root->operand(1);
}

llvm::AllocaInst* KernelEmitter::EntryAlloca(llvm::Type* t, const std::string& name) {
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  return eb.CreateAlloca(t, nullptr, name);
}

// Marks the loop closed by `latch` with `attributes` (its llvm.loop metadata: a distinct node
// whose first operand is itself).
static void SetLoopAttributes(llvm::LLVMContext& ctx, llvm::BranchInst* latch,
                              std::vector<llvm::Metadata*> attributes) {
  attributes.insert(attributes.begin(), nullptr);
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, attributes);
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
}

void KernelEmitter::SetLoopHint(llvm::BranchInst* latch, const char* hint) {
  SetLoopAttributes(ctx_, latch, {llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, hint)})});
}

void KernelEmitter::DisableUnrollBeforeVectorizing(llvm::BranchInst* latch) {
  auto* i1 = llvm::Type::getInt1Ty(ctx_);
  llvm::MDNode* disable =
      llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
  llvm::MDNode* vectorized =
      llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.isvectorized"),
                               llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i1, 1))});
  llvm::MDNode* followup = llvm::MDNode::get(
      ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.followup_vectorized"), vectorized});
  SetLoopAttributes(ctx_, latch, {disable, followup});
}

absl::Status KernelEmitter::EmitLoop(llvm::Value* lo, llvm::Value* hi, const std::string& name,
                                     const std::function<absl::Status(llvm::Value*)>& body,
                                     bool keep) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name + ".header", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fn_);
  llvm::Instruction* entry_br = b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(I64(), 2, name + ".iv");
  iv->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  loops_.push_back({iv, entry_br, scopes_.size()});
  PushScope();
  absl::Status st = body(iv);
  PopScope();
  keep = keep || loops_.back().holds_long_loop;
  loops_.pop_back();
  if (!st.ok()) return st;
  llvm::Value* next = b_.CreateAdd(iv, C64(1), name + ".next", /*HasNUW=*/true, /*HasNSW=*/true);
  iv->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* latch = b_.CreateBr(header);
  if (keep) DisableUnroll(latch);
  if (latch_sink_ != nullptr) latch_sink_->push_back(latch);
  b_.SetInsertPoint(exit);
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitLoopNestCollectingLatches(
    const std::vector<int64_t>& dims, const std::string& name,
    const std::function<absl::Status(const Index&)>& body, std::vector<llvm::BranchInst*>& latches,
    llvm::Value* outer_lo, llvm::Value* outer_hi, bool keep_outer_loops) {
  return CollectingLatches(latches, [&] {
    return EmitLoopNest(dims, name, body, outer_lo, outer_hi, keep_outer_loops);
  });
}

absl::Status KernelEmitter::CollectingLatches(std::vector<llvm::BranchInst*>& latches,
                                              const std::function<absl::Status()>& emit) {
  std::vector<llvm::BranchInst*>* outer_sink = latch_sink_;
  const size_t before = latches.size();
  latch_sink_ = &latches;
  absl::Status loops = emit();
  latch_sink_ = outer_sink;
  if (outer_sink != nullptr)
    outer_sink->insert(outer_sink->end(), latches.begin() + before, latches.end());
  return loops;
}

absl::Status KernelEmitter::EmitLoopNest(const std::vector<int64_t>& dims, const std::string& name,
                                         const std::function<absl::Status(const Index&)>& body,
                                         llvm::Value* outer_lo, llvm::Value* outer_hi,
                                         bool keep_outer_loops, bool keep_inner_loop) {
  // Outermost loop over dimension 0; the linear index is built as the loops nest so the
  // innermost loop walks memory contiguously (what the loop vectorizer wants).
  std::function<absl::Status(size_t, Index)> nest = [&](size_t d, Index idx) -> absl::Status {
    if (d == dims.size()) return body(idx);
    bool ranged = d == 0 && outer_lo != nullptr;
    return EmitLoop(
        ranged ? outer_lo : C64(0), ranged ? outer_hi : C64(dims[d]), absl::StrCat(name, ".d", d),
        [&](llvm::Value* iv) {
          Index inner = idx;
          inner.multi.push_back(iv);
          inner.linear = d == 0
                             ? iv
                             : b_.CreateAdd(b_.CreateMul(idx.linear, C64(dims[d]), "", true, true),
                                            iv, "", true, true);
          return nest(d + 1, inner);
        },
        d + 1 < dims.size() ? keep_outer_loops : keep_inner_loop);
  };
  Index start;
  start.linear = C64(0);
  return nest(0, start);
}

// A minor loop of kMinVectorRun to kMaxVectorRun elements under at least one other dimension,
// in a kernel of elementwise work (no dot, no reduction). LLVM unrolled such a loop whole and
// vectorized the loop of rows around it, reading and writing every element by a gather and a
// scatter: f32[512,16] a * b / (c + s) took 11 us against 3 kept (12, 16, 24 columns: 5x; 8
// columns: 2x). 2 to 4 columns run faster unrolled; 32 to 48 were not unrolled. An emitted
// dot's elements, each a sum, were faster unrolled (a Kalman filter's 16x8 and 8x8 products:
// 0.2 -> 0.7 us kept).
bool KernelEmitter::KeepsMinorLoop(const std::vector<int64_t>& dims) const {
  return dims.size() >= 2 && dims.back() >= kMinVectorRun && dims.back() < kMaxVectorRun &&
         !AnyInCone(spec_, [](const HloInstruction& h) {
           return h.opcode() == HloOpcode::kDot || h.opcode() == HloOpcode::kReduce ||
                  h.opcode() == HloOpcode::kReduceWindow;
         });
}

absl::Status KernelEmitter::EmitOverMinorPair(
    const std::vector<int64_t>& dims, const std::string& name, llvm::Value* outer_lo,
    llvm::Value* outer_hi,
    const std::function<absl::Status(const Index&, llvm::Value*, llvm::Value*)>& matrix) {
  const int64_t rows = dims[dims.size() - 2];
  if (dims.size() == 2) {
    Index none;
    none.linear = C64(0);
    return matrix(none, outer_lo != nullptr ? outer_lo : C64(0),
                  outer_hi != nullptr ? outer_hi : C64(rows));
  }
  const std::vector<int64_t> prefix(dims.begin(), dims.end() - 2);
  return EmitLoopNest(
      prefix, name, [&](const Index& p) { return matrix(p, C64(0), C64(rows)); }, outer_lo,
      outer_hi);
}

absl::Status KernelEmitter::EmitTiledLoopNest(const std::vector<int64_t>& dims, int64_t tile,
                                              const std::string& name,
                                              const std::function<absl::Status(const Index&)>& body,
                                              llvm::Value* outer_lo, llvm::Value* outer_hi,
                                              int64_t tile_dim) {
  const int64_t rank = static_cast<int64_t>(dims.size()), last = rank - 1;
  if (tile_dim < 0) tile_dim = rank - 2;
  const int64_t rows = dims[tile_dim], cols = dims[last];
  std::vector<int64_t> others, other_dims;  // the dimensions outside the tiles, in order
  for (int64_t d = 0; d < last; ++d)
    if (d != tile_dim) {
      others.push_back(d);
      other_dims.push_back(dims[d]);
    }
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  auto tiles = [&](const Index& prefix, llvm::Value* row_lo, llvm::Value* row_hi) {
    llvm::Value* row_tiles =
        b_.CreateUDiv(b_.CreateAdd(b_.CreateSub(row_hi, row_lo), C64(tile - 1)), C64(tile));
    llvm::Value* base = C64(0);
    for (size_t j = 0; j < others.size(); ++j)
      base =
          b_.CreateAdd(base, b_.CreateMul(prefix.multi[j], C64(strides[others[j]]), "", true, true),
                       "", true, true);
    // One tile: its rows, each a run of columns (the loop LLVM vectorizes).
    auto tile_at = [&](llvm::Value* tr, llvm::Value* tc) {
      llvm::Value* r0 = b_.CreateAdd(row_lo, b_.CreateMul(tr, C64(tile)));
      llvm::Value* r1 = b_.CreateSelect(b_.CreateICmpSLT(b_.CreateAdd(r0, C64(tile)), row_hi),
                                        b_.CreateAdd(r0, C64(tile)), row_hi);
      llvm::Value* c0 = b_.CreateMul(tc, C64(tile), "", true, true);
      // Where the tiles are all whole, a tile's row is `tile` columns, a count LLVM knows, and
      // its loop is not unrolled before the loop vectorizer takes it (no remainder, no checks;
      // the vector loop's two or four iterations are unrolled after). Unrolled first, the row
      // was put back together by the SLP vectorizer: 60-90 ms of optimization per transpose
      // kernel (an attention's head transposes, a Llama decode step's) for the same gathers.
      const bool whole_tiles = cols % tile == 0;
      llvm::Value* c1 =
          whole_tiles ? b_.CreateAdd(c0, C64(tile), "", true, true)
                      : b_.CreateSelect(b_.CreateICmpSLT(b_.CreateAdd(c0, C64(tile)), C64(cols)),
                                        b_.CreateAdd(c0, C64(tile)), C64(cols));
      auto row_at = [&](llvm::Value* row) {
        llvm::Value* row_base = b_.CreateAdd(
            base, b_.CreateMul(row, C64(strides[tile_dim]), "", true, true), "", true, true);
        std::vector<llvm::BranchInst*> latches;  // the column loop's closes last
        absl::Status columns = CollectingLatches(latches, [&] {
          return EmitLoop(c0, c1, name + ".c", [&](llvm::Value* col) {
            Index idx;
            idx.multi.resize(rank);
            for (size_t j = 0; j < others.size(); ++j) idx.multi[others[j]] = prefix.multi[j];
            idx.multi[tile_dim] = row;
            idx.multi[last] = col;
            idx.linear = b_.CreateAdd(row_base, col, "", true, true);
            return body(idx);
          });
        });
        if (columns.ok() && whole_tiles && !latches.empty())
          DisableUnrollBeforeVectorizing(latches.back());
        return columns;
      };
      return EmitLoop(r0, r1, name + ".r", row_at, /*keep=*/true);
    };
    // The loops over tiles and a tile's rows stay loops: unrolled whole, ViT's head transpose
    // ([8,196,6,64] -> [8,6,64,196], 2 x 7 tiles) had a vectorized column loop per tile and
    // row, 240 ms of optimization for no faster kernel.
    auto tile_row = [&](llvm::Value* tr) {
      return EmitLoop(
          C64(0), C64((cols + tile - 1) / tile), name + ".tc",
          [&](llvm::Value* tc) { return tile_at(tr, tc); }, /*keep=*/true);
    };
    return EmitLoop(C64(0), row_tiles, name + ".tr", tile_row, /*keep=*/true);
  };
  // The pool's range covers dimension 0: the tiles' rows when it is the tiled dimension,
  // else the outermost of the others. The loops over the others stay loops too (unrolled
  // whole, 8 heads made 8 copies of the tile loops).
  auto whole = [&](llvm::Value* v, int64_t n) { return v != nullptr ? v : C64(n); };
  if (tile_dim == 0) {
    llvm::Value* lo = outer_lo != nullptr ? outer_lo : C64(0);
    if (others.empty()) return tiles(Index{}, lo, whole(outer_hi, rows));
    return EmitLoopNest(
        other_dims, name, [&](const Index& p) { return tiles(p, lo, whole(outer_hi, rows)); },
        nullptr, nullptr, /*keep_outer_loops=*/true, /*keep_inner_loop=*/true);
  }
  return EmitLoopNest(
      other_dims, name, [&](const Index& p) { return tiles(p, C64(0), C64(rows)); }, outer_lo,
      outer_hi, /*keep_outer_loops=*/true, /*keep_inner_loop=*/true);
}

absl::Status KernelEmitter::EmitMergedMinorLoopNest(
    const std::vector<int64_t>& dims, const std::string& name,
    const std::function<absl::Status(const Index&)>& body, llvm::Value* outer_lo,
    llvm::Value* outer_hi) {
  const int64_t rows = dims[dims.size() - 2], cols = dims[dims.size() - 1];
  auto merged = [&](const Index& prefix, llvm::Value* row_lo, llvm::Value* row_hi) {
    return EmitLoop(
        b_.CreateMul(row_lo, C64(cols)), b_.CreateMul(row_hi, C64(cols)), name + ".m",
        [&](llvm::Value* m) {
          Index idx = prefix;
          idx.multi.push_back(b_.CreateUDiv(m, C64(cols)));
          idx.multi.push_back(b_.CreateURem(m, C64(cols)));
          idx.linear = b_.CreateAdd(b_.CreateMul(prefix.linear, C64(rows * cols), "", true, true),
                                    m, "", true, true);
          return body(idx);
        },
        /*keep=*/true);  // unrolled whole, then SLP-vectorized: 256 gathers in one block
  };
  return EmitOverMinorPair(dims, name, outer_lo, outer_hi, merged);
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitIfElse(
    llvm::Value* cond, const std::function<absl::StatusOr<llvm::Value*>()>& then_fn,
    const std::function<absl::StatusOr<llvm::Value*>()>& else_fn) {
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
  auto* merge = llvm::BasicBlock::Create(ctx_, "merge", fn_);
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  PushScope();
  ++conditional_depth_;
  absl::StatusOr<llvm::Value*> tv = then_fn();
  --conditional_depth_;
  PopScope();
  if (!tv.ok()) return tv.status();
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(else_bb);
  PushScope();
  ++conditional_depth_;
  absl::StatusOr<llvm::Value*> ev = else_fn();
  --conditional_depth_;
  PopScope();
  if (!ev.ok()) return ev.status();
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  llvm::PHINode* phi = b_.CreatePHI((*tv)->getType(), 2);
  phi->addIncoming(*tv, then_end);
  phi->addIncoming(*ev, else_end);
  return phi;
}

llvm::Value* KernelEmitter::Linear(const Index& idx, const std::vector<int64_t>& dims) {
  if (idx.linear != nullptr) return idx.linear;
  std::vector<int64_t> strides = RowMajorStrides(dims);
  // No multiply by 1 or add to 0: a single index passes through as the same value (the GPU
  // emitter recognizes aligned indices by identity).
  llvm::Value* lin = nullptr;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    llvm::Value* term = strides[i] == 1
                            ? idx.multi[i]
                            : b_.CreateMul(idx.multi[i], C64(strides[i]), "", true, true);
    lin = lin == nullptr ? term : b_.CreateAdd(lin, term, "", true, true);
  }
  return lin == nullptr ? C64(0) : lin;
}

std::optional<Index> KernelEmitter::ReshapeByGroups(const Index& idx,
                                                    const std::vector<int64_t>& dims,
                                                    const std::vector<int64_t>& from) {
  for (int64_t d : dims)
    if (d == 0) return std::nullopt;
  Index oi;
  oi.multi.assign(from.size(), C64(0));  // size-1 operand dimensions stay 0
  oi.linear = idx.linear;                // a reshape keeps the row-major order
  size_t i = 0, j = 0;
  for (;;) {
    // Size-1 dimensions are added or removed outside any group: an index that only carries
    // over keeps no multiplication by them (an LSTM cell reading c[0] of f32[3,64,60]).
    while (i < dims.size() && dims[i] == 1) ++i;
    while (j < from.size() && from[j] == 1) ++j;
    if (i == dims.size() && j == from.size()) break;
    if (i == dims.size() || j == from.size()) return std::nullopt;
    // The next group: output dimensions [i0, i) and operand dimensions [j0, j) of equal
    // element counts.
    const size_t i0 = i, j0 = j;
    int64_t po = dims[i++], pi = from[j++];
    while (po != pi) {
      if (po < pi) {
        if (i == dims.size()) return std::nullopt;
        po *= dims[i++];
      } else {
        if (j == from.size()) return std::nullopt;
        pi *= from[j++];
      }
    }
    Index part;
    part.multi.assign(idx.multi.begin() + i0, idx.multi.begin() + i);
    const std::vector<int64_t> out_group(dims.begin() + i0, dims.begin() + i);
    const std::vector<int64_t> in_group(from.begin() + j0, from.begin() + j);
    llvm::Value* group_linear = part.multi.size() == 1 ? part.multi[0] : Linear(part, out_group);
    if (in_group.size() == 1) {
      oi.multi[j0] = group_linear;
    } else {
      const Index split = Delinearize(group_linear, in_group);
      for (size_t k = 0; k < in_group.size(); ++k) oi.multi[j0 + k] = split.multi[k];
    }
  }
  return oi;
}

Index KernelEmitter::Delinearize(llvm::Value* linear, const std::vector<int64_t>& dims) {
  Index idx;
  idx.linear = linear;
  idx.multi.resize(dims.size());
  llvm::Value* rest = linear;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    if (i == 0) {
      idx.multi[i] = rest;
    } else if (dims[i] == 1) {
      idx.multi[i] = C64(0);
    } else {
      idx.multi[i] = b_.CreateURem(rest, C64(dims[i]));
      rest = b_.CreateUDiv(rest, C64(dims[i]));
    }
  }
  return idx;
}

llvm::Value* KernelEmitter::ToCompute(llvm::Value* stored, PT t) {
  if (std::optional<MiniFloatFormat> f = MiniFloatFormatOf(t)) return DecodeMiniFloat(stored, *f);
  if (IsSubByteInt(t)) return b_.CreateTrunc(stored, ComputeType(t, ctx_));
  switch (t) {
    case PT::PRED:
      return b_.CreateICmpNE(stored, llvm::ConstantInt::get(stored->getType(), 0));
    case PT::F16:
      return b_.CreateFPExt(stored, b_.getFloatTy());
    case PT::BF16:
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(stored, b_.getInt32Ty()), 16),
                              b_.getFloatTy());
    default:
      return stored;
  }
}

llvm::Value* KernelEmitter::ToStorage(llvm::Value* v, PT t) {
  if (std::optional<MiniFloatFormat> f = MiniFloatFormatOf(t)) return EncodeMiniFloat(v, *f);
  if (IsSubByteInt(t)) return b_.CreateZExt(v, b_.getInt8Ty());  // low bits, the rest zero
  switch (t) {
    case PT::PRED:
      return b_.CreateZExt(v, b_.getInt8Ty());
    case PT::F16:
      return b_.CreateFPTrunc(v, b_.getHalfTy());
    case PT::BF16: {
      // Round to nearest even on the bits; NaN becomes a quiet NaN with its sign.
      llvm::Value* u = b_.CreateBitCast(v, b_.getInt32Ty());
      llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(u, 16), b_.getInt32(1));
      llvm::Value* rounded =
          b_.CreateLShr(b_.CreateAdd(u, b_.CreateAdd(b_.getInt32(0x7fff), lsb)), 16);
      llvm::Value* nan = b_.CreateOr(b_.CreateLShr(u, 16), b_.getInt32(0x40));
      llvm::Value* is_nan = b_.CreateFCmpUNO(v, v);
      return b_.CreateTrunc(b_.CreateSelect(is_nan, nan, rounded), b_.getInt16Ty());
    }
    default:
      return v;
  }
}

llvm::Value* KernelEmitter::RoundToType(llvm::Value* v, PT t) {
  if (IsNarrowFloat(t)) return ToCompute(ToStorage(v, t), t);
  return v;
}

llvm::Value* KernelEmitter::ConvertValue(llvm::Value* v, PT from, PT to) {
  if (from == to) return v;
  llvm::Type* dst = ComputeType(to, ctx_);
  if (to == PT::PRED) {
    if (IsFloatType(from)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (IsMiniFloat(to) && from == PT::F64) {
    return ToCompute(EncodeMiniFloat(v, *MiniFloatFormatOf(to)), to);  // one rounding
  }
  if (IsFloatType(to)) {
    llvm::Value* r;
    if (IsFloatType(from)) {
      r = b_.CreateFPCast(v, dst);
    } else if (IsSignedInt(from)) {
      r = b_.CreateSIToFP(v, dst);
    } else {
      r = b_.CreateUIToFP(v, dst);  // unsigned ints and pred
    }
    return RoundToType(r, to);
  }
  // Integer destination.
  if (IsFloatType(from)) {
    // Saturating, NaN to zero: the intrinsics define what plain fptosi leaves undefined.
    auto id = IsSignedInt(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    if (gpu()) return CallIntrinsic(id, {dst, v->getType()}, {v});  // cvt.rzi.sat
    // On x86 LLVM 16 scalarizes the vector forms of those intrinsics (f32 -> s32 of 2^21
    // elements took 1.7 ms against 0.14 for a divide): the same saturation as selects around
    // a plain conversion of an in-range value, which vectorizes. The bounds are powers of two,
    // exact in any float type.
    const unsigned bits = dst->getIntegerBitWidth();
    const bool sign = IsSignedInt(to);
    llvm::Type* ft = v->getType();
    const double lo = sign ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double top = std::ldexp(1.0, sign ? bits - 1 : bits);  // the maximum plus one
    llvm::Value* below = sign ? b_.CreateFCmpOLT(v, llvm::ConstantFP::get(ft, lo))
                              : b_.CreateFCmpOLE(v, llvm::ConstantFP::get(ft, -1.0));
    llvm::Value* above = b_.CreateFCmpOGE(v, llvm::ConstantFP::get(ft, top));
    llvm::Value* nan = b_.CreateFCmpUNO(v, v);
    llvm::Value* out_of_range = b_.CreateOr(b_.CreateOr(below, above), nan);
    llvm::Value* safe = b_.CreateSelect(out_of_range, llvm::ConstantFP::get(ft, 0.0), v);
    llvm::Value* r = sign ? b_.CreateFPToSI(safe, dst) : b_.CreateFPToUI(safe, dst);
    const llvm::APInt max =
        sign ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
    const llvm::APInt min =
        sign ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getMinValue(bits);
    r = b_.CreateSelect(above, llvm::ConstantInt::get(dst, max), r);
    r = b_.CreateSelect(below, llvm::ConstantInt::get(dst, min), r);
    return b_.CreateSelect(nan, llvm::ConstantInt::get(dst, 0), r);
  }
  if (IsSignedInt(from)) return b_.CreateSExtOrTrunc(v, dst);
  return b_.CreateZExtOrTrunc(v, dst);  // unsigned ints and pred
}

llvm::Value* KernelEmitter::CallIntrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Type*> types,
                                          std::vector<llvm::Value*> args) {
  if (gpu()) {
    // The NVPTX backend cannot select these transcendental intrinsics: call libdevice.
    switch (id) {
      case llvm::Intrinsic::exp:
        return CallMath("expf", "exp", PT::F32, args);
      case llvm::Intrinsic::log:
        return CallMath("logf", "log", PT::F32, args);
      case llvm::Intrinsic::sin:
        return CallMath("sinf", "sin", PT::F32, args);
      case llvm::Intrinsic::cos:
        return CallMath("cosf", "cos", PT::F32, args);
      case llvm::Intrinsic::pow:
        return CallMath("powf", "pow", PT::F32, args);
      default:
        break;
    }
  }
  llvm::Function* f = llvm::Intrinsic::getDeclaration(&module_, id, types);
  return b_.CreateCall(f, args);
}

llvm::Value* KernelEmitter::Atan2(llvm::Value* y, llvm::Value* x) {
  if (!gpu() && y->getType()->isFloatTy()) return FastAtan2F32(b_, y, x);
  return CallMath("atan2f", "atan2", y->getType()->isDoubleTy() ? PT::F64 : PT::F32, {y, x});
}

llvm::Value* KernelEmitter::CallMath(const std::string& f32_name, const std::string& f64_name, PT t,
                                     std::vector<llvm::Value*> args) {
  // libm functions, resolved against the host process by the JIT. Marked as touching no
  // memory so that CSE and loop-invariant motion treat them like arithmetic.
  llvm::Type* ty = args[0]->getType();
  // On the GPU the same functions come from libdevice, prefixed __nv_.
  const std::string name = (gpu() ? "__nv_" : "") + (ty->isDoubleTy() ? f64_name : f32_name);
  std::vector<llvm::Type*> params(args.size(), ty);
  llvm::FunctionCallee callee =
      module_.getOrInsertFunction(name, llvm::FunctionType::get(ty, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  return b_.CreateCall(callee, args);
}

llvm::Value* KernelEmitter::ConstantScalar(const Literal& lit, int64_t linear, PT t) {
  llvm::Type* ty = ComputeType(t, ctx_);
  if (IsComplex(t)) {
    std::complex<double> z = t == PT::C64
                                 ? std::complex<double>(lit.data<std::complex<float>>()[linear])
                                 : lit.data<std::complex<double>>()[linear];
    llvm::Type* part = ComputeType(ComplexPartType(t), ctx_);
    return llvm::ConstantStruct::get(
        llvm::cast<llvm::StructType>(ty),
        {llvm::ConstantFP::get(part, z.real()), llvm::ConstantFP::get(part, z.imag())});
  }
  if (IsFloatType(t)) return llvm::ConstantFP::get(ty, lit.GetAsDouble(linear));
  if (t == PT::PRED) return llvm::ConstantInt::get(ty, lit.GetAsInt64(linear) != 0);
  if (IsUnsignedInt(t)) return llvm::ConstantInt::get(ty, lit.GetAsUint64(linear));
  return llvm::ConstantInt::get(ty, lit.GetAsInt64(linear), /*isSigned=*/true);
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitConstant(const HloInstruction* h,
                                                         const Index& idx) {
  PT t = h->shape().element_type();
  if (!h->attrs().literal.has_value())
    return absl::InvalidArgumentError(absl::StrCat("constant ", h->name(), " has no literal"));
  const Literal& lit = h->literal();
  if (h->shape().num_elements() == 1) return ConstantScalar(lit, 0, t);
  // Arrays live in a read-only global holding the literal's bytes.
  llvm::GlobalVariable*& g = constant_globals_[h];
  llvm::Type* st = StorageType(t, ctx_);
  if (g == nullptr) {
    // A complex array's bytes are twice as many of its part type (a raw array of structs
    // does not exist in LLVM); the loads below read pairs.
    const bool pairs = IsComplex(t);
    llvm::Constant* data = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(reinterpret_cast<const char*>(lit.untyped_data()), lit.size_bytes()),
        h->shape().num_elements() * (pairs ? 2 : 1),
        pairs ? StorageType(ComplexPartType(t), ctx_) : st);
    g = new llvm::GlobalVariable(module_, data->getType(), /*isConstant=*/true,
                                 llvm::GlobalValue::PrivateLinkage, data,
                                 absl::StrCat(spec_.name, ".", h->name()));
    g->setAlignment(llvm::Align(16));
  }
  llvm::Value* lin = Linear(idx, h->shape().dimensions());
  llvm::Value* p = b_.CreateInBoundsGEP(st, g, lin);
  return ToCompute(b_.CreateLoad(st, p), t);
}

absl::StatusOr<llvm::Value*> KernelEmitter::Element(const HloInstruction* h, const Index& idx) {
  auto bound = bound_scalars_.find(h);
  if (bound != bound_scalars_.end()) return bound->second;
  // The stashed value at the output's own index: its row was stored before the row's loop.
  if (stash_.hoisted && h == stash_.reduce->operand(0) && idx.multi == stash_.output_index->multi) {
    PT t = h->shape().element_type();
    llvm::Type* st = StorageType(t, ctx_);
    return ToCompute(
        b_.CreateLoad(st, b_.CreateInBoundsGEP(st, stash_.out, stash_.output_index->linear)), t);
  }
  std::pair<const HloInstruction*, std::vector<llvm::Value*>> key{h, idx.multi};
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(key);
    if (f != it->end()) return f->second;
  }
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * hoisted, HoistedElement(h, idx));
  if (hoisted != nullptr) return hoisted;
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, ElementUncached(h, idx));
  scopes_.back()[key] = v;
  return v;
}

absl::StatusOr<llvm::Value*> KernelEmitter::HoistedElement(const HloInstruction* h,
                                                           const Index& idx) {
  if (gpu() || conditional_depth_ > 0 ||
      (h->opcode() != HloOpcode::kReduce && h->opcode() != HloOpcode::kDot))
    return nullptr;
  // The innermost loop whose variable the index uses. A computed index is computed again at
  // the hoisting point (where it was computed may be inside an inner loop): an argmin over
  // [8192,8,256] whose output loop is one merged loop over [8192,8] regenerated its min for
  // every one of the 256 elements of each row (4.2 s against 0.1 hoisted).
  int needed = -1;
  for (llvm::Value* v : idx.multi) {
    const int found = IndexLoop(v);
    if (found == kNotInvariant) return nullptr;
    needed = std::max(needed, found);
  }
  size_t target = static_cast<size_t>(needed + 1);
  if (target >= loops_.size()) return nullptr;
  // Emit between the target loop's preheader and its header: split the preheader there and
  // generate the value with only the scopes and loops that enclose that point.
  LoopFrame frame = loops_[target];
  llvm::IRBuilderBase::InsertPoint ip = b_.saveIP();
  llvm::BasicBlock* pre = frame.entry_br->getParent();
  llvm::BasicBlock* cont = pre->splitBasicBlock(frame.entry_br, "hoist.cont");
  pre->getTerminator()->eraseFromParent();
  b_.SetInsertPoint(pre);
  std::vector<Cache> inner_scopes(std::make_move_iterator(scopes_.begin() + frame.scope_depth),
                                  std::make_move_iterator(scopes_.end()));
  scopes_.resize(frame.scope_depth);
  std::vector<LoopFrame> inner_loops(loops_.begin() + target, loops_.end());
  loops_.resize(target);
  // Only the statistic of the output element's own row stores the row (one of another row
  // could overwrite results already written, or race with another thread's rows).
  const bool stash =
      h == stash_.reduce && stash_.output_index != nullptr &&
      std::equal(idx.multi.begin(), idx.multi.end(), stash_.output_index->multi.begin());
  const bool storing = stash_.storing;  // a hoisting nested in the stashed one's keeps it
  stash_.storing = stash;
  std::vector<llvm::Value*> at;
  for (llvm::Value* v : idx.multi) at.push_back(RecomputeIndex(v));
  absl::StatusOr<llvm::Value*> v = ElementUncached(h, Index{at, nullptr});
  stash_.storing = storing;
  if (stash && v.ok()) stash_.hoisted = true;
  if (v.ok()) scopes_.back()[{h, idx.multi}] = *v;
  b_.CreateBr(cont);
  for (Cache& c : inner_scopes) scopes_.push_back(std::move(c));
  loops_.insert(loops_.end(), inner_loops.begin(), inner_loops.end());
  b_.restoreIP(ip);
  return v;
}

int KernelEmitter::IndexLoop(llvm::Value* v, int depth) const {
  if (llvm::isa<llvm::Constant>(v) || llvm::isa<llvm::Argument>(v)) return -1;
  for (size_t l = 0; l < loops_.size(); ++l)
    if (loops_[l].iv == v) return static_cast<int>(l);
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  if (inst == nullptr || depth > 8 || !inst->getType()->isIntegerTy() ||
      !(llvm::isa<llvm::BinaryOperator>(inst) || llvm::isa<llvm::CastInst>(inst)))
    return kNotInvariant;
  int loop = -1;
  for (llvm::Value* o : inst->operands()) {
    const int l = IndexLoop(o, depth + 1);
    if (l == kNotInvariant) return kNotInvariant;
    loop = std::max(loop, l);
  }
  return loop;
}

llvm::Value* KernelEmitter::RecomputeIndex(llvm::Value* v) {
  if (llvm::isa<llvm::Constant>(v) || llvm::isa<llvm::Argument>(v)) return v;
  for (const LoopFrame& l : loops_)
    if (l.iv == v) return v;
  llvm::Instruction* copy = llvm::cast<llvm::Instruction>(v)->clone();
  for (unsigned i = 0; i < copy->getNumOperands(); ++i)
    copy->setOperand(i, RecomputeIndex(copy->getOperand(i)));
  return b_.Insert(copy);
}

absl::StatusOr<llvm::Value*> KernelEmitter::OperandElement(const HloInstruction* h, int i,
                                                           const Index& idx) {
  if (IsImplicitScalar(*h, i)) return Element(h->operand(i), Index{{}, C64(0)});
  return Element(h->operand(i), idx);
}

// pow(a, b) as pow(|a|, b) with C's rule for a negative base put back: -pow(|a|, b) for an
// odd integer b, pow(|a|, b) for an even one (and for -inf or -0 with any b), NaN for a
// finite negative base with a non-integer b. glibc's vector powf takes its scalar path for
// the whole vector when a lane is negative: powers of normal samples (jnp.vander) cost 3.5 ns
// an element.
llvm::Value* KernelEmitter::EmitPow(llvm::Value* a, llvm::Value* b) {
  llvm::Type* ty = a->getType();
  llvm::Value* mag = CallIntrinsic(llvm::Intrinsic::pow, {ty},
                                   {CallIntrinsic(llvm::Intrinsic::fabs, {ty}, {a}), b});
  llvm::Value* integral = b_.CreateFCmpOEQ(CallIntrinsic(llvm::Intrinsic::trunc, {ty}, {b}), b);
  llvm::Value* half = b_.CreateFMul(b, llvm::ConstantFP::get(ty, 0.5));
  llvm::Value* odd = b_.CreateAnd(
      integral, b_.CreateFCmpUNE(CallIntrinsic(llvm::Intrinsic::trunc, {ty}, {half}), half));
  llvm::Type* it = b_.getIntNTy(ty->getPrimitiveSizeInBits());
  llvm::Value* sign = b_.CreateICmpSLT(b_.CreateBitCast(a, it), llvm::ConstantInt::get(it, 0));
  llvm::Value* r = b_.CreateSelect(b_.CreateAnd(sign, odd), b_.CreateFNeg(mag), mag);
  llvm::Value* finite_negative =
      b_.CreateAnd(b_.CreateFCmpOLT(a, llvm::ConstantFP::get(ty, 0.0)),
                   b_.CreateFCmpONE(a, llvm::ConstantFP::getInfinity(ty, /*Negative=*/true)));
  llvm::Value* nan_case = b_.CreateAnd(finite_negative, b_.CreateNot(integral));
  return b_.CreateSelect(nan_case, llvm::ConstantFP::getNaN(ty), r);
}

llvm::Value* KernelEmitter::EmitMax(PT t, llvm::Value* a, llvm::Value* b, bool is_max) {
  if (IsFloatType(t)) {
    // NaN-propagating, as XLA defines maximum/minimum.
    llvm::Value* pick_a = is_max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
    pick_a = b_.CreateOr(pick_a, b_.CreateFCmpUNO(a, a));
    return b_.CreateSelect(pick_a, a, b);
  }
  if (t == PT::PRED) return is_max ? b_.CreateOr(a, b) : b_.CreateAnd(a, b);
  llvm::Value* c;
  if (IsSignedInt(t)) {
    c = is_max ? b_.CreateICmpSGT(a, b) : b_.CreateICmpSLT(a, b);
  } else {
    c = is_max ? b_.CreateICmpUGT(a, b) : b_.CreateICmpULT(a, b);
  }
  return b_.CreateSelect(c, a, b);
}

llvm::Value* KernelEmitter::EmitCompare(ComparisonDirection d, PT t, llvm::Value* a,
                                        llvm::Value* b) {
  using P = llvm::CmpInst::Predicate;
  P p = P::ICMP_EQ;
  if (IsFloatType(t)) {
    // Ordered comparisons, except `ne`, which is true when either side is NaN.
    switch (d) {
      case ComparisonDirection::kEq:
        p = P::FCMP_OEQ;
        break;
      case ComparisonDirection::kNe:
        p = P::FCMP_UNE;
        break;
      case ComparisonDirection::kGe:
        p = P::FCMP_OGE;
        break;
      case ComparisonDirection::kGt:
        p = P::FCMP_OGT;
        break;
      case ComparisonDirection::kLe:
        p = P::FCMP_OLE;
        break;
      case ComparisonDirection::kLt:
        p = P::FCMP_OLT;
        break;
    }
    return b_.CreateFCmp(p, a, b);
  }
  bool s = IsSignedInt(t);
  switch (d) {
    case ComparisonDirection::kEq:
      p = P::ICMP_EQ;
      break;
    case ComparisonDirection::kNe:
      p = P::ICMP_NE;
      break;
    case ComparisonDirection::kGe:
      p = s ? P::ICMP_SGE : P::ICMP_UGE;
      break;
    case ComparisonDirection::kGt:
      p = s ? P::ICMP_SGT : P::ICMP_UGT;
      break;
    case ComparisonDirection::kLe:
      p = s ? P::ICMP_SLE : P::ICMP_ULE;
      break;
    case ComparisonDirection::kLt:
      p = s ? P::ICMP_SLT : P::ICMP_ULT;
      break;
  }
  return b_.CreateICmp(p, a, b);
}

llvm::Value* KernelEmitter::EmitReducePrecision(const HloInstruction* h, llvm::Value* x) {
  // As the evaluator's ReducePrecisionBits: the mantissa rounded to nearest even at its new
  // last bit (a carry into the exponent is right), then exponents beyond the new range to
  // signed infinity and below it to signed zero; a NaN stays NaN while a mantissa bit is left.
  const bool f64 = x->getType()->isDoubleTy();
  const int mant = f64 ? 52 : 23, exp = f64 ? 11 : 8, bits = f64 ? 64 : 32;
  const int64_t e = h->attrs().exponent_bits, m = h->attrs().mantissa_bits;
  llvm::Type* it = b_.getIntNTy(bits);
  auto c = [&](uint64_t v) { return llvm::ConstantInt::get(it, v); };
  llvm::Value* v = b_.CreateBitCast(x, it);
  if (m < mant) {
    const uint64_t last_bit_mask = uint64_t{1} << (mant - m);
    llvm::Value* last_bit = b_.CreateLShr(b_.CreateAnd(v, c(last_bit_mask)), mant - m);
    v = b_.CreateAdd(b_.CreateAdd(v, last_bit), c((last_bit_mask >> 1) - 1));
    v = b_.CreateAnd(v, c(~(last_bit_mask - 1)));
  }
  if (e < exp) {
    const uint64_t exp_mask = ((uint64_t{1} << exp) - 1) << mant;
    const uint64_t bias = (uint64_t{1} << (exp - 1)) - 1;
    const uint64_t reduced_bias = (uint64_t{1} << (e - 1)) - 1;
    llvm::Value* x_exp = b_.CreateAnd(v, c(exp_mask));
    llvm::Value* signed_zero = b_.CreateAnd(v, c(uint64_t{1} << (bits - 1)));
    llvm::Value* under = b_.CreateICmpULE(x_exp, c((bias - reduced_bias) << mant));
    llvm::Value* over = b_.CreateICmpUGT(x_exp, c((bias + reduced_bias) << mant));
    v = b_.CreateSelect(under, signed_zero, v);
    v = b_.CreateSelect(over, b_.CreateOr(signed_zero, c(exp_mask)), v);
  }
  llvm::Value* nan = b_.CreateFCmpUNO(x, x);
  llvm::Value* nan_out = m > 0 ? x : llvm::ConstantFP::getInfinity(x->getType());
  return b_.CreateSelect(nan, nan_out, b_.CreateBitCast(v, x->getType()));
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitUnary(const HloInstruction* h, llvm::Value* x) {
  if (h->opcode() == HloOpcode::kReducePrecision) return EmitReducePrecision(h, x);
  PT in = h->operand(0)->shape().element_type();
  PT out = h->shape().element_type();
  if (IsComplex(in) || IsComplex(out) || h->opcode() == HloOpcode::kReal ||
      h->opcode() == HloOpcode::kImag)
    return EmitComplexUnary(h, x);
  llvm::Type* ty = x->getType();
  llvm::Value* r = nullptr;
  bool f = IsFloatType(in);
  // f32 (and f16/bf16, computed in f32) on the CPU: vectorizable polynomial versions instead
  // of libm calls (fast_math.h). f64 and the GPU keep libm / libdevice.
  if (!gpu() && ty->isFloatTy()) {
    switch (h->opcode()) {
      case HloOpcode::kExp:
        return RoundToType(FastExpF32(b_, x), out);
      case HloOpcode::kLog:
        return RoundToType(FastLogF32(b_, x), out);
      case HloOpcode::kLog1p:
        return RoundToType(FastLog1pF32(b_, x), out);
      case HloOpcode::kExpm1:
        return RoundToType(FastExpm1F32(b_, x), out);
      case HloOpcode::kTanh:
        return RoundToType(FastTanhF32(b_, x), out);
      case HloOpcode::kErf:
        return RoundToType(FastErfF32(b_, x), out);
      case HloOpcode::kLogistic:
        return RoundToType(FastLogisticF32(b_, x), out);
      default:
        break;
    }
  }
  switch (h->opcode()) {
    case HloOpcode::kAbs:
      if (f)
        r = CallIntrinsic(llvm::Intrinsic::fabs, {ty}, {x});
      else if (IsSignedInt(in))
        r = b_.CreateSelect(b_.CreateICmpSLT(x, llvm::ConstantInt::get(ty, 0)), b_.CreateNeg(x), x);
      else
        r = x;
      break;
    case HloOpcode::kNegate:
      r = f ? b_.CreateFNeg(x) : b_.CreateNeg(x);
      break;
    case HloOpcode::kCopy:
      r = x;
      break;
    case HloOpcode::kExp:
      r = CallIntrinsic(llvm::Intrinsic::exp, {ty}, {x});
      break;
    case HloOpcode::kExpm1:
      r = CallMath("expm1f", "expm1", in, {x});
      break;
    case HloOpcode::kLog:
      r = CallIntrinsic(llvm::Intrinsic::log, {ty}, {x});
      break;
    case HloOpcode::kLog1p:
      r = CallMath("log1pf", "log1p", in, {x});
      break;
    case HloOpcode::kSqrt:
      r = CallIntrinsic(llvm::Intrinsic::sqrt, {ty}, {x});
      break;
    case HloOpcode::kRsqrt:
      r = b_.CreateFDiv(llvm::ConstantFP::get(ty, 1.0),
                        CallIntrinsic(llvm::Intrinsic::sqrt, {ty}, {x}));
      break;
    case HloOpcode::kCbrt:
      r = CallMath("cbrtf", "cbrt", in, {x});
      break;
    case HloOpcode::kTanh:
      r = CallMath("tanhf", "tanh", in, {x});
      break;
    case HloOpcode::kErf:
      r = CallMath("erff", "erf", in, {x});
      break;
    case HloOpcode::kTan:
      r = CallMath("tanf", "tan", in, {x});
      break;
    case HloOpcode::kSin:
      r = CallIntrinsic(llvm::Intrinsic::sin, {ty}, {x});
      break;
    case HloOpcode::kCos:
      r = CallIntrinsic(llvm::Intrinsic::cos, {ty}, {x});
      break;
    case HloOpcode::kLogistic: {
      llvm::Value* e = CallIntrinsic(llvm::Intrinsic::exp, {ty}, {b_.CreateFNeg(x)});
      llvm::Value* one = llvm::ConstantFP::get(ty, 1.0);
      r = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      break;
    }
    case HloOpcode::kFloor:
      r = CallIntrinsic(llvm::Intrinsic::floor, {ty}, {x});
      break;
    case HloOpcode::kCeil:
      r = CallIntrinsic(llvm::Intrinsic::ceil, {ty}, {x});
      break;
    case HloOpcode::kRoundNearestAfz:
      r = CallIntrinsic(llvm::Intrinsic::round, {ty}, {x});
      break;
    case HloOpcode::kRoundNearestEven:
      r = CallIntrinsic(llvm::Intrinsic::roundeven, {ty}, {x});
      break;
    case HloOpcode::kIsFinite: {
      llvm::Value* a = CallIntrinsic(llvm::Intrinsic::fabs, {ty}, {x});
      return b_.CreateFCmpOLT(a, llvm::ConstantFP::getInfinity(ty));
    }
    case HloOpcode::kSign:
      if (f) {
        // +-1 for nonzero numbers; zeros (with their sign) and NaN stay as they are.
        llvm::Value* zero = llvm::ConstantFP::get(ty, 0.0);
        llvm::Value* s = b_.CreateSelect(
            b_.CreateFCmpOGT(x, zero), llvm::ConstantFP::get(ty, 1.0),
            b_.CreateSelect(b_.CreateFCmpOLT(x, zero), llvm::ConstantFP::get(ty, -1.0), x));
        r = s;
      } else if (IsSignedInt(in)) {
        llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
        r = b_.CreateSelect(
            b_.CreateICmpSGT(x, zero), llvm::ConstantInt::get(ty, 1),
            b_.CreateSelect(b_.CreateICmpSLT(x, zero), llvm::ConstantInt::get(ty, -1, true), zero));
      } else {
        r = b_.CreateZExt(b_.CreateICmpNE(x, llvm::ConstantInt::get(ty, 0)), ty);
      }
      break;
    case HloOpcode::kNot:
      r = b_.CreateNot(x);
      break;
    case HloOpcode::kPopulationCount:
      r = CallIntrinsic(llvm::Intrinsic::ctpop, {ty}, {x});
      break;
    case HloOpcode::kClz:
      r = CallIntrinsic(llvm::Intrinsic::ctlz, {ty}, {x, b_.getFalse()});
      break;
    case HloOpcode::kConvert:
      return ConvertValue(x, in, out);
    case HloOpcode::kBitcastConvert: {
      llvm::Value* bits = b_.CreateBitCast(ToStorage(x, in), StorageType(out, ctx_));
      return ToCompute(bits, out);
    }
    default:
      return absl::UnimplementedError(absl::StrCat("emitter: unary ", h->name()));
  }
  return RoundToType(r, out);
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitBinary(HloOpcode op, const HloInstruction* h, PT t,
                                                       llvm::Value* a, llvm::Value* b) {
  if (IsComplex(t) || op == HloOpcode::kComplex) return EmitComplexBinary(h, t, a, b);
  bool f = IsFloatType(t);
  bool s = IsSignedInt(t);
  llvm::Type* ty = a->getType();
  llvm::Value* r = nullptr;
  switch (op) {
    case HloOpcode::kAdd:
      r = f ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
      break;
    case HloOpcode::kSubtract:
      r = f ? b_.CreateFSub(a, b) : b_.CreateSub(a, b);
      break;
    case HloOpcode::kMultiply:
      r = f ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
      break;
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder: {
      if (f && op == HloOpcode::kDivide && DividesByBroadcast(h) && !gpu()) {
        // x / broadcast(y) as x * (1 / y), as XLA:CPU computes it: the reciprocal is loop
        // invariant, so one division per row (or per array) instead of one per element,
        // which took the vector unit about as long as an exp. Within 1.5 ulp of the
        // quotient; |y| above 2^126 has a reciprocal flushed to 0.
        r = b_.CreateFMul(a, b_.CreateFDiv(llvm::ConstantFP::get(ty, 1.0), b));
        break;
      }
      if (f) {
        r = op == HloOpcode::kDivide ? b_.CreateFDiv(a, b) : b_.CreateFRem(a, b);
        break;
      }
      // XLA defines integer division by zero (x/0 = -1, x%0 = x) and INT_MIN / -1
      // (= INT_MIN, remainder 0); LLVM leaves them undefined, so guard the divisor.
      llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
      llvm::Value* by_zero = b_.CreateICmpEQ(b, zero);
      llvm::Value* overflow = b_.getFalse();
      if (s) {
        unsigned bits = ty->getIntegerBitWidth();
        overflow = b_.CreateAnd(
            b_.CreateICmpEQ(a, llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(bits))),
            b_.CreateICmpEQ(b, llvm::ConstantInt::get(ty, -1, true)));
      }
      llvm::Value* safe_b =
          b_.CreateSelect(b_.CreateOr(by_zero, overflow), llvm::ConstantInt::get(ty, 1), b);
      // A 32-bit (or narrower) quotient by a divisor that is not a constant comes from a
      // double division: exact after truncation (|a / b| < 2^32 / |b|, so the rounding error
      // stays below the 1 / |b| that separates a non-integer quotient from the next integer),
      // and vector division units have lanes for doubles where an integer division is one
      // scalar instruction per element (betainc's loop 2.1 -> 1.4 ms an iteration).
      llvm::Value* q;
      if (ty->getIntegerBitWidth() <= 32 && !llvm::isa<llvm::Constant>(b)) {
        llvm::Type* d = b_.getDoubleTy();
        llvm::Value* da = s ? b_.CreateSIToFP(a, d) : b_.CreateUIToFP(a, d);
        llvm::Value* db = s ? b_.CreateSIToFP(safe_b, d) : b_.CreateUIToFP(safe_b, d);
        llvm::Value* dq = b_.CreateFDiv(da, db);
        q = s ? b_.CreateFPToSI(dq, ty) : b_.CreateFPToUI(dq, ty);
      } else {
        q = s ? b_.CreateSDiv(a, safe_b) : b_.CreateUDiv(a, safe_b);
      }
      if (op == HloOpcode::kDivide) {
        // With safe_b = 1 on overflow the quotient is already INT_MIN.
        r = b_.CreateSelect(by_zero, llvm::ConstantInt::get(ty, -1, true), q);
      } else {
        llvm::Value* m = b_.CreateSub(a, b_.CreateMul(q, safe_b));
        r = b_.CreateSelect(by_zero, a, m);  // overflow: a % 1 == 0 already
      }
      break;
    }
    // The result is one of the operands, already of the type: rounding it again would only
    // put a chain of integer operations into a max reduction's loop-carried dependence
    // (a bf16 softmax's row max was scalar, 10 ms of 11 on f32[4096,1024]). Stores round.
    case HloOpcode::kMaximum:
      return EmitMax(t, a, b, true);
    case HloOpcode::kMinimum:
      return EmitMax(t, a, b, false);
    case HloOpcode::kPower:
      r = EmitPow(a, b);
      break;
    case HloOpcode::kAtan2:
      r = Atan2(a, b);
      break;
    case HloOpcode::kAnd:
      r = b_.CreateAnd(a, b);
      break;
    case HloOpcode::kOr:
      r = b_.CreateOr(a, b);
      break;
    case HloOpcode::kXor:
      r = b_.CreateXor(a, b);
      break;
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightLogical:
    case HloOpcode::kShiftRightArithmetic: {
      // Shift amounts at or past the width give 0 (or the sign fill), as in XLA.
      unsigned bits = ty->getIntegerBitWidth();
      llvm::Value* too_far = b_.CreateICmpUGE(b, llvm::ConstantInt::get(ty, bits));
      llvm::Value* amount = b_.CreateSelect(too_far, llvm::ConstantInt::get(ty, 0), b);
      if (op == HloOpcode::kShiftLeft) {
        r = b_.CreateSelect(too_far, llvm::ConstantInt::get(ty, 0), b_.CreateShl(a, amount));
      } else if (op == HloOpcode::kShiftRightLogical) {
        r = b_.CreateSelect(too_far, llvm::ConstantInt::get(ty, 0), b_.CreateLShr(a, amount));
      } else {
        r = b_.CreateSelect(too_far, b_.CreateAShr(a, llvm::ConstantInt::get(ty, bits - 1)),
                            b_.CreateAShr(a, amount));
      }
      break;
    }
    case HloOpcode::kCompare: {
      if (!h->attrs().comparison_direction.has_value())
        return absl::InvalidArgumentError(
            absl::StrCat("compare ", h->name(), " has no comparison direction"));
      if (h->attrs().comparison_type == ComparisonType::kFloatTotalOrder && IsFloatType(t)) {
        // Total order (-NaN < -inf < ... < -0 < +0 < ... < inf < +NaN): the bits as a signed
        // integer, the magnitude bits flipped where the sign is set, compared signed. Narrow
        // floats are computed widened, which keeps their order (NaN payloads too).
        const unsigned width = a->getType()->getPrimitiveSizeInBits();
        llvm::Type* it = b_.getIntNTy(width);
        auto key = [&](llvm::Value* v) {
          llvm::Value* bits = b_.CreateBitCast(v, it);
          llvm::Value* negative = b_.CreateICmpSLT(bits, llvm::ConstantInt::get(it, 0));
          llvm::Value* flipped =
              b_.CreateXor(bits, llvm::ConstantInt::get(it, llvm::APInt::getSignedMaxValue(width)));
          return b_.CreateSelect(negative, flipped, bits);
        };
        return EmitCompare(*h->attrs().comparison_direction, PT::S64, key(a), key(b));
      }
      return EmitCompare(*h->attrs().comparison_direction, t, a, b);
    }
    default:
      return absl::UnimplementedError(absl::StrCat("emitter: binary ", h->name()));
  }
  return RoundToType(r, t);
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitScalarCall(const HloComputation* comp,
                                                           std::vector<llvm::Value*> args) {
  if (comp->num_parameters() != static_cast<int>(args.size()))
    return absl::InvalidArgumentError(absl::StrCat("computation ", comp->name(), " takes ",
                                                   comp->num_parameters(), " parameters, got ",
                                                   args.size()));
  for (size_t i = 0; i < args.size(); ++i) bound_scalars_[comp->parameter(i)] = args[i];
  // A fresh scope: the same reducer instructions are generated again for other arguments.
  PushScope();
  absl::StatusOr<llvm::Value*> v = Element(comp->root(), Index{{}, C64(0)});
  PopScope();
  for (size_t i = 0; i < args.size(); ++i) bound_scalars_.erase(comp->parameter(i));
  return v;
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitConcatenate(const HloInstruction* h,
                                                            const Index& idx,
                                                            const std::vector<int64_t>& offsets,
                                                            int first, int last) {
  const int64_t d = h->dimensions()[0];
  if (last - first == 1) {
    Index oi;
    oi.multi = idx.multi;
    oi.multi[d] = b_.CreateSub(idx.multi[d], C64(offsets[first]));
    return Element(h->operand(first), oi);
  }
  // Halves, searched by branches, not selects (the other operands must not be read out of
  // their bounds): a chain of one test per operand took 7 ns an element for 98 audio frames.
  const int mid = first + (last - first) / 2;
  return EmitIfElse(
      b_.CreateICmpSLT(idx.multi[d], C64(offsets[mid])),
      [&, first, mid]() { return EmitConcatenate(h, idx, offsets, first, mid); },
      [&, mid, last]() { return EmitConcatenate(h, idx, offsets, mid, last); });
}

absl::Status KernelEmitter::EmitConcatenateByOperand(const HloInstruction* root, llvm::Value* out,
                                                     llvm::Value* lo, llvm::Value* hi) {
  // The dimensions before the concatenated one loop once, shared by the parts, so that parts
  // reading the same row (rope's halves, each made from both halves of x) find it in cache.
  const int64_t d = root->dimensions()[0];
  const std::vector<int64_t>& dims = root->shape().dimensions();
  const PT t = root->shape().element_type();
  const std::vector<int64_t> outer(dims.begin(), dims.begin() + d);
  return EmitLoopNest(
      outer, root->name() + ".rows",
      [&](const Index& row) -> absl::Status {
        int64_t offset = 0;
        for (int k = 0; k < root->operand_count(); ++k) {
          const HloInstruction* part = root->operand(k);
          const std::vector<int64_t>& part_dims = part->shape().dimensions();
          const int64_t rows = part_dims[d], first = offset;
          offset += rows;
          if (rows == 0) continue;
          llvm::Value* part_lo = nullptr;
          llvm::Value* part_hi = nullptr;
          if (lo != nullptr && d == 0) {  // the pool's range of output rows, in this part's
            auto clamp = [&](llvm::Value* v) {
              v = CallIntrinsic(llvm::Intrinsic::smax, {I64()},
                                {b_.CreateSub(v, C64(first)), C64(0)});
              return CallIntrinsic(llvm::Intrinsic::smin, {I64()}, {v, C64(rows)});
            };
            part_lo = clamp(lo);
            part_hi = clamp(hi);
          }
          const std::vector<int64_t> part_nest(part_dims.begin() + d, part_dims.end());
          std::vector<llvm::BranchInst*> latches;
          KILN_EMIT_RETURN_IF_ERROR(EmitLoopNestCollectingLatches(
              part_nest, absl::StrCat(root->name(), ".part", k),
              [&](const Index& inner) -> absl::Status {
                Index at;
                at.multi = row.multi;
                at.multi.insert(at.multi.end(), inner.multi.begin(), inner.multi.end());
                at.linear = Linear(at, part_dims);
                KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(part, at));
                std::vector<llvm::Value*> to = at.multi;
                if (first != 0) to[d] = b_.CreateAdd(to[d], C64(first), "", true, true);
                b_.CreateStore(ToStorage(v, t), b_.CreateInBoundsGEP(StorageType(t, ctx_), out,
                                                                     Linear({to, nullptr}, dims)));
                return absl::OkStatus();
              },
              latches, part_lo, part_hi, /*keep_outer_loops=*/true));
          // A part's run of 16 or more elements of a known count is left to the loop
          // vectorizer, then unrolled: unrolled first, the 9 runs of 32 int8s of a 3x3
          // convolution's patches were 288 scalar copies for the SLP vectorizer, 190 ms of
          // optimization. (The pool's range of rows has no known count: left as it was.)
          const bool known_count = d > 0 || part_nest.size() > 1;
          if (known_count && part_nest.back() >= 16 && latches.size() >= part_nest.size())
            DisableUnrollBeforeVectorizing(latches[latches.size() - part_nest.size()]);
        }
        return absl::OkStatus();
      },
      d > 0 ? lo : nullptr, d > 0 ? hi : nullptr, /*keep_outer_loops=*/true);
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitPad(const HloInstruction* h, const Index& idx) {
  const HloInstruction* operand = h->operand(0);
  const PaddingConfig& pc = h->attrs().padding_config;
  if (static_cast<int>(pc.size()) != h->shape().rank())
    return absl::InvalidArgumentError(absl::StrCat("pad ", h->name(), ": padding rank mismatch"));
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * pad_value, Element(h->operand(1), Index{{}, C64(0)}));
  Index oi;
  llvm::Value* in_bounds = b_.getTrue();
  for (int i = 0; i < h->shape().rank(); ++i) {
    llvm::Value* t = b_.CreateSub(idx.multi[i], C64(pc[i].edge_padding_low));
    // A lone element has no interior padding (which may then be as large as INT64_MAX); with
    // more, shape inference has checked that (size - 1) * step fits.
    int64_t step = operand->shape().dimensions(i) > 1 ? pc[i].interior_padding + 1 : 1;
    llvm::Value* oidx = t;
    if (step > 1) {
      // Negative t must not pass the modulus test: check t >= 0 first (below).
      in_bounds = b_.CreateAnd(in_bounds, b_.CreateICmpEQ(b_.CreateSRem(t, C64(step)), C64(0)));
      oidx = b_.CreateSDiv(t, C64(step));
    }
    in_bounds = b_.CreateAnd(in_bounds, b_.CreateICmpSGE(t, C64(0)));
    in_bounds =
        b_.CreateAnd(in_bounds, b_.CreateICmpSLT(oidx, C64(operand->shape().dimensions(i))));
    oi.multi.push_back(oidx);
  }
  return EmitIfElse(
      in_bounds, [&]() { return Element(operand, oi); },
      [&]() -> absl::StatusOr<llvm::Value*> { return pad_value; });
}

absl::StatusOr<std::vector<llvm::Value*>> KernelEmitter::ClampedStarts(
    const HloInstruction* h, int first, const std::vector<int64_t>& window) {
  // XLA clamps each start so the window stays inside the operand: [0, dim - window].
  const std::vector<int64_t>& dims = h->operand(0)->shape().dimensions();
  std::vector<llvm::Value*> starts;
  for (size_t d = 0; d < dims.size(); ++d) {
    const HloInstruction* s = h->operand(first + static_cast<int>(d));
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(s, Index{{}, C64(0)}));
    v = ConvertValue(v, s->shape().element_type(), PT::S64);
    v = b_.CreateSelect(b_.CreateICmpSLT(v, C64(0)), C64(0), v);
    llvm::Value* hi = C64(std::max<int64_t>(dims[d] - window[d], 0));
    starts.push_back(b_.CreateSelect(b_.CreateICmpSGT(v, hi), hi, v));
  }
  return starts;
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitDynamicSlice(const HloInstruction* h,
                                                             const Index& idx) {
  if (h->opcode() == HloOpcode::kDynamicSlice) {
    KILN_EMIT_ASSIGN_OR_RETURN(std::vector<llvm::Value*> starts,
                               ClampedStarts(h, 1, h->attrs().dynamic_slice_sizes));
    Index oi;
    for (size_t d = 0; d < starts.size(); ++d)
      oi.multi.push_back(b_.CreateAdd(idx.multi[d], starts[d], "", true, true));
    return Element(h->operand(0), oi);
  }
  // dynamic-update-slice: the update inside the window, the operand elsewhere.
  const HloInstruction* update = h->operand(1);
  KILN_EMIT_ASSIGN_OR_RETURN(std::vector<llvm::Value*> starts,
                             ClampedStarts(h, 2, update->shape().dimensions()));
  llvm::Value* inside = b_.getTrue();
  Index ui;
  for (size_t d = 0; d < starts.size(); ++d) {
    llvm::Value* u = b_.CreateSub(idx.multi[d], starts[d]);
    inside = b_.CreateAnd(inside, b_.CreateICmpSGE(u, C64(0)));
    inside = b_.CreateAnd(inside, b_.CreateICmpSLT(u, C64(update->shape().dimensions(d))));
    ui.multi.push_back(u);
  }
  return EmitIfElse(
      inside, [&]() { return Element(update, ui); }, [&]() { return Element(h->operand(0), idx); });
}

// out[batch..., offset...] = operand[start(batch) + offset]: the start comes from the index
// array at the output's batch position (index_vector_dim selecting its components, mapped to
// operand dimensions by start_index_map) and is clamped so the slice stays inside; the
// offset dimensions of the output walk the slice's dimensions that are neither collapsed
// nor batching dimensions.
absl::StatusOr<llvm::Value*> KernelEmitter::EmitGather(const HloInstruction* h, const Index& idx) {
  const GatherDimensionNumbers& dn = *h->attrs().gather_dimension_numbers;
  const HloInstruction* operand = h->operand(0);
  const HloInstruction* indices = h->operand(1);
  const std::vector<int64_t>& sizes = h->attrs().gather_slice_sizes;
  const int out_rank = h->shape().rank();
  const int ix_rank = indices->shape().rank();
  auto in = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // The output's batch dimensions, in order, are the index array's dimensions other than
  // index_vector_dim.
  std::vector<llvm::Value*> batch;
  for (int d = 0; d < out_rank; ++d)
    if (!in(dn.offset_dims, d)) batch.push_back(idx.multi[d]);
  Index at;
  for (int d = 0, b = 0; d < ix_rank; ++d)
    at.multi.push_back(d == dn.index_vector_dim ? C64(0) : batch[b++]);
  const std::vector<int64_t>& dims = operand->shape().dimensions();
  std::vector<llvm::Value*> start(dims.size(), C64(0));
  for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
    if (dn.index_vector_dim < ix_rank) at.multi[dn.index_vector_dim] = C64(static_cast<int64_t>(k));
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(indices, at));
    v = ConvertValue(v, indices->shape().element_type(), PT::S64);
    const int64_t d = dn.start_index_map[k];
    v = b_.CreateSelect(b_.CreateICmpSLT(v, C64(0)), C64(0), v);
    llvm::Value* hi = C64(std::max<int64_t>(dims[d] - sizes[d], 0));
    start[d] = b_.CreateSelect(b_.CreateICmpSGT(v, hi), hi, v);
  }
  // A batching dimension of the operand is indexed by the output's position in the paired
  // dimension of the index array (like a collapsed dimension, with no start of its own).
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
    start[dn.operand_batching_dims[i]] = at.multi[dn.start_indices_batching_dims[i]];
  Index oi;
  for (size_t d = 0, o = 0; d < dims.size(); ++d) {
    llvm::Value* off = C64(0);
    if (!in(dn.collapsed_slice_dims, static_cast<int64_t>(d)) &&
        !in(dn.operand_batching_dims, static_cast<int64_t>(d)))
      off = idx.multi[dn.offset_dims[o++]];
    oi.multi.push_back(b_.CreateAdd(start[d], off, "", true, true));
  }
  return Element(operand, oi);
}

absl::Status KernelEmitter::EmitBlockedSum(
    const std::vector<int64_t>& dims, const std::string& name, llvm::AllocaInst* acc,
    const std::function<absl::Status(const Index&, llvm::AllocaInst*)>& add, llvm::Value* outer_lo,
    llvm::Value* outer_hi) {
  // Dimension j is cut into chunks of c rows: the dimensions after it hold `inner` elements,
  // fewer than a block, so one chunk holds about kSumBlock elements.
  size_t j = dims.size() - 1;
  int64_t inner = 1;
  while (j > 0 && inner * dims[j] <= kSumBlock) inner *= dims[j--];
  const int64_t c = std::max<int64_t>(1, kSumBlock / inner);
  const std::vector<int64_t> prefix(dims.begin(), dims.begin() + j);
  const std::vector<int64_t> suffix(dims.begin() + j + 1, dims.end());
  llvm::Type* t = acc->getAllocatedType();
  llvm::AllocaInst* partial = EntryAlloca(t, name + ".block");
  return EmitLoopNest(
      prefix, name,
      [&](const Index& outer) -> absl::Status {
        bool ranged = j == 0 && outer_lo != nullptr;
        llvm::Value* lo = ranged ? outer_lo : C64(0);
        llvm::Value* hi = ranged ? outer_hi : C64(dims[j]);
        llvm::Value* chunks = b_.CreateSDiv(b_.CreateAdd(b_.CreateSub(hi, lo), C64(c - 1)), C64(c));
        // The chunk loop stays a loop (`keep`): each chunk is thousands of elements, and with
        // a constant chunk count O3 unrolled the chunks and their vector loops into one block
        // (a strided slice's sum of 143x337: 12k instructions, 1.9 s of instruction selection).
        return EmitLoop(
            C64(0), chunks, name + ".chunk",
            [&](llvm::Value* o) -> absl::Status {
              llvm::Value* begin = b_.CreateAdd(lo, b_.CreateMul(o, C64(c)));
              llvm::Value* end = b_.CreateAdd(begin, C64(c));
              end = b_.CreateSelect(b_.CreateICmpSLT(end, hi), end, hi);
              // -0 is the identity of a float sum (0 would turn a sum of -0s into +0).
              b_.CreateStore(llvm::ConstantFP::getNegativeZero(t), partial);
              KILN_EMIT_RETURN_IF_ERROR(
                  EmitLoop(begin, end, name + ".row", [&](llvm::Value* row) -> absl::Status {
                    return EmitLoopNest(suffix, name + ".in", [&](const Index& in) {
                      Index r;
                      r.multi = outer.multi;
                      r.multi.push_back(row);
                      r.multi.insert(r.multi.end(), in.multi.begin(), in.multi.end());
                      return add(r, partial);
                    });
                  }));
              b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(t, acc), b_.CreateLoad(t, partial)), acc);
              return absl::OkStatus();
            },
            /*keep=*/true);
      },
      j == 0 ? nullptr : outer_lo, j == 0 ? nullptr : outer_hi);
}

// A float add/multiply reducer may be reassociated so the loop vectorizer can split the
// accumulation into lanes (the order of a reduction or a window's reduction is unspecified in
// HLO). f32/f64 only: narrower floats accumulate widened (AccumulatesIn32).
static bool ReassociableReducer(const HloInstruction& h) {
  PT t = h.shape().element_type();
  const HloInstruction* root = h.to_apply()->root();
  return (t == PT::F32 || t == PT::F64) &&
         (root->opcode() == HloOpcode::kAdd || root->opcode() == HloOpcode::kMultiply) &&
         root->operand(0)->opcode() == HloOpcode::kParameter &&
         root->operand(1)->opcode() == HloOpcode::kParameter;
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitReduce(const HloInstruction* h, const Index& idx,
                                                       llvm::Value* outer_lo,
                                                       llvm::Value* outer_hi) {
  const HloInstruction* input = h->operand(0);
  const std::vector<int64_t>& in_dims = input->shape().dimensions();
  std::vector<bool> reduced(in_dims.size(), false);
  std::vector<int64_t> reduced_dims;
  for (int64_t d : h->dimensions()) {
    if (d < 0 || d >= static_cast<int64_t>(in_dims.size()))
      return absl::InvalidArgumentError(absl::StrCat("reduce ", h->name(), ": bad dimension ", d));
    reduced[d] = true;
  }
  for (size_t d = 0; d < in_dims.size(); ++d)
    if (reduced[d]) reduced_dims.push_back(in_dims[d]);
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * init, Element(h->operand(1), Index{{}, C64(0)}));
  llvm::AllocaInst* acc = EntryAlloca(init->getType(), h->name() + ".acc");
  b_.CreateStore(init, acc);
  PT t = h->shape().element_type();
  const HloInstruction* root = h->to_apply()->root();
  bool reassociate = ReassociableReducer(*h);
  bool widen16 = AccumulatesIn32(*h);
  // A float max/min reducer: the NaN-propagating select chain is a serial dependency the
  // vectorizer cannot split. Instead accumulate maxnum/minnum (nnan nsz, so it may be split
  // into lanes) and, separately, whether a NaN was seen; a NaN anywhere gives NaN.
  // Narrow floats too: computed widened, the maxnum of their values is one of them.
  bool minmax = (t == PT::F32 || t == PT::F64 || IsNarrowFloat(t)) &&
                (root->opcode() == HloOpcode::kMaximum || root->opcode() == HloOpcode::kMinimum) &&
                root->operand(0)->opcode() == HloOpcode::kParameter &&
                root->operand(1)->opcode() == HloOpcode::kParameter &&
                root->operand(0) != root->operand(1) && !gpu();
  llvm::AllocaInst* nan_seen = nullptr;
  if (minmax) {
    nan_seen = EntryAlloca(b_.getInt1Ty(), h->name() + ".nan");
    b_.CreateStore(b_.CreateFCmpUNO(init, init), nan_seen);
  }
  // Adds element `r` of the reduced dimensions into the accumulator `into`.
  auto accumulate = [&](const Index& r, llvm::AllocaInst* into) -> absl::Status {
    Index in;
    size_t kept = 0, red = 0;
    for (size_t d = 0; d < in_dims.size(); ++d)
      in.multi.push_back(reduced[d] ? r.multi[red++] : idx.multi[kept++]);
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(input, in));
    if (stash_.storing && h == stash_.reduce) {
      llvm::Type* st = StorageType(input->shape().element_type(), ctx_);
      b_.CreateStore(ToStorage(v, input->shape().element_type()),
                     b_.CreateInBoundsGEP(st, stash_.out, Linear(in, in_dims)));
    }
    llvm::Value* cur = b_.CreateLoad(init->getType(), into);
    if (minmax) {
      auto id =
          root->opcode() == HloOpcode::kMaximum ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
      llvm::Value* m = CallIntrinsic(id, {v->getType()}, {cur, v});
      // The builder may fold the call (or the GPU path emit a library call): flags go on
      // floating-point instructions only.
      auto* inst = llvm::dyn_cast<llvm::Instruction>(m);
      if (inst && llvm::isa<llvm::FPMathOperator>(inst)) {
        inst->setHasNoNaNs(true);
        inst->setHasNoSignedZeros(true);
      }
      b_.CreateStore(m, into);
      llvm::Value* seen = b_.CreateLoad(b_.getInt1Ty(), nan_seen);
      b_.CreateStore(b_.CreateOr(seen, b_.CreateFCmpUNO(v, v)), nan_seen);
      return absl::OkStatus();
    }
    llvm::Value* next;
    if (widen16) {
      next = root->opcode() == HloOpcode::kAdd ? b_.CreateFAdd(cur, v) : b_.CreateFMul(cur, v);
    } else {
      KILN_EMIT_ASSIGN_OR_RETURN(next, EmitScalarCall(h->to_apply(), {cur, v}));
    }
    if (reassociate) {
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(next)) inst->setHasAllowReassoc(true);
    }
    b_.CreateStore(next, into);
    return absl::OkStatus();
  };
  int64_t count = 1;
  for (int64_t n : reduced_dims) count *= n;
  MarkLongInnerLoop(count);
  // Long float sums run in blocks (EmitBlockedSum); the GPU's reductions split elsewhere.
  bool blocked =
      (reassociate || widen16) && root->opcode() == HloOpcode::kAdd && count > kSumBlock && !gpu();
  if (blocked) {
    KILN_EMIT_RETURN_IF_ERROR(
        EmitBlockedSum(reduced_dims, h->name(), acc, accumulate, outer_lo, outer_hi));
  } else {
    std::vector<llvm::BranchInst*> latches;
    KILN_EMIT_RETURN_IF_ERROR(EmitLoopNestCollectingLatches(
        reduced_dims, h->name(), [&](const Index& r) { return accumulate(r, acc); }, latches,
        outer_lo, outer_hi));
    // A short contiguous run reduced inside an output loop stays a loop: unrolled whole (a
    // mixture's 16 distances per component), it left the vectorizer the output's loop, which
    // read the run's elements with gathers; kept, the run is a vector load and a horizontal sum.
    // (Only short runs: unroll.disable also stops the vectorizer interleaving a long run's
    // sum into several accumulators.) This reduce's loops close last, innermost first (loops
    // of its input's cone close inside them).
    if (latches.size() >= reduced_dims.size() && (reassociate || minmax) &&
        reduced[in_dims.size() - 1] && in_dims.back() >= kMinVectorRun &&
        in_dims.back() <= kMaxVectorRun && !loops_.empty())
      DisableUnroll(latches[latches.size() - reduced_dims.size()]);
  }
  llvm::Value* result = b_.CreateLoad(init->getType(), acc);
  if (minmax)
    result = b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), nan_seen),
                             llvm::ConstantFP::getNaN(result->getType()), result);
  return widen16 || (minmax && IsNarrowFloat(t)) ? RoundToType(result, t) : result;
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitDot(const HloInstruction* h, const Index& idx) {
  const DotDimensionNumbers& dn = *h->attrs().dot_dimension_numbers;
  const HloInstruction* lhs = h->operand(0);
  const HloInstruction* rhs = h->operand(1);
  PT t = h->shape().element_type();
  auto free_dims = [](int rank, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contracting) {
    std::vector<int64_t> out;
    for (int d = 0; d < rank; ++d) {
      bool used = false;
      for (int64_t b : batch) used |= b == d;
      for (int64_t c : contracting) used |= c == d;
      if (!used) out.push_back(d);
    }
    return out;
  };
  std::vector<int64_t> lfree =
      free_dims(lhs->shape().rank(), dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions);
  std::vector<int64_t> rfree =
      free_dims(rhs->shape().rank(), dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions);
  size_t nb = dn.lhs_batch_dimensions.size();
  if (nb + lfree.size() + rfree.size() != idx.multi.size() ||
      dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
    return absl::InvalidArgumentError(
        absl::StrCat("dot ", h->name(), ": dimension numbers do not match the shapes"));
  std::vector<int64_t> csizes;
  int64_t contracted = 1;
  for (int64_t d : dn.lhs_contracting_dimensions) {
    csizes.push_back(lhs->shape().dimensions(d));
    contracted *= csizes.back();
  }
  MarkLongInnerLoop(contracted);
  llvm::Type* ct = ComputeType(t, ctx_);
  llvm::AllocaInst* acc = EntryAlloca(ct, h->name() + ".acc");
  b_.CreateStore(llvm::Constant::getNullValue(ct), acc);  // 0, 0.0 or a {0, 0} complex
  KILN_EMIT_RETURN_IF_ERROR(EmitLoopNest(csizes, h->name(), [&](const Index& c) -> absl::Status {
    Index li, ri;
    li.multi.resize(lhs->shape().rank());
    ri.multi.resize(rhs->shape().rank());
    for (size_t i = 0; i < nb; ++i) {
      li.multi[dn.lhs_batch_dimensions[i]] = idx.multi[i];
      ri.multi[dn.rhs_batch_dimensions[i]] = idx.multi[i];
    }
    for (size_t i = 0; i < lfree.size(); ++i) li.multi[lfree[i]] = idx.multi[nb + i];
    for (size_t i = 0; i < rfree.size(); ++i) ri.multi[rfree[i]] = idx.multi[nb + lfree.size() + i];
    for (size_t i = 0; i < csizes.size(); ++i) {
      li.multi[dn.lhs_contracting_dimensions[i]] = c.multi[i];
      ri.multi[dn.rhs_contracting_dimensions[i]] = c.multi[i];
    }
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * a, Element(lhs, li));
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * bv, Element(rhs, ri));
    // Operands go to the accumulation type (f32 for a narrow float result, as the evaluator
    // and XLA do), not the result type: an f32 x f32 -> bf16 dot must not round its inputs.
    if (IsComplex(t)) {  // CanEmitComplex: both operands of the result's type
      b_.CreateStore(ComplexMultiplyAdd(b_.CreateLoad(ct, acc), a, bv), acc);
      return absl::OkStatus();
    }
    a = ConvertValue(a, lhs->shape().element_type(), AccumulationType(t));
    bv = ConvertValue(bv, rhs->shape().element_type(), AccumulationType(t));
    b_.CreateStore(MultiplyAdd(b_.CreateLoad(ct, acc), a, bv, t), acc);
    return absl::OkStatus();
  }));
  return RoundToType(b_.CreateLoad(ct, acc), t);
}

llvm::Value* KernelEmitter::MultiplyAdd(llvm::Value* acc, llvm::Value* a, llvm::Value* b, PT t) {
  if (!IsFloatType(t)) return b_.CreateAdd(acc, b_.CreateMul(a, b));
  llvm::Value* prod = b_.CreateFMul(a, b);
  llvm::Value* next = b_.CreateFAdd(acc, prod);
  if (t == PT::F32 || t == PT::F64) {
    // IRBuilder folds constant operands (a dot of broadcast constants): a folded product is a
    // Constant and takes no flags.
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(prod)) inst->setHasAllowContract(true);
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(next)) {
      inst->setHasAllowContract(true);
      inst->setHasAllowReassoc(true);
    }
  }
  return next;
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitConvolution(const HloInstruction* h,
                                                            const Index& idx) {
  // Output element (b, o, spatial...) = sum over the kernel window and the group's input
  // features of input * kernel, with XLA's window semantics (stride, padding, lhs/rhs
  // dilation, reversal) and feature/batch groups; window taps outside the input add 0.
  const ConvolutionDimensionNumbers& dn = *h->attrs().convolution_dimension_numbers;
  const HloInstruction* lhs = h->operand(0);
  const HloInstruction* rhs = h->operand(1);
  const Shape& ls = lhs->shape();
  const Shape& rs = rhs->shape();
  PT t = h->shape().element_type();
  const size_t nsp = dn.input_spatial_dimensions.size();
  std::vector<WindowDimension> win(nsp);
  if (h->attrs().window) win = h->attrs().window->dimensions;
  const int64_t groups = h->attrs().feature_group_count,
                batch_groups = h->attrs().batch_group_count;
  const int64_t n = ls.dimensions(dn.input_batch_dimension);
  const int64_t ci = rs.dimensions(dn.kernel_input_feature_dimension);
  const int64_t o_count = rs.dimensions(dn.kernel_output_feature_dimension);
  llvm::Value* b = idx.multi[dn.output_batch_dimension];
  llvm::Value* o = idx.multi[dn.output_feature_dimension];
  llvm::Value* g = groups == 1 ? C64(0) : b_.CreateUDiv(o, C64(o_count / groups));
  llvm::Value* in_b = b;
  if (batch_groups > 1)
    in_b = b_.CreateAdd(
        b_.CreateMul(b_.CreateUDiv(o, C64(o_count / batch_groups)), C64(n / batch_groups)), b);
  llvm::Value* feature0 = b_.CreateMul(g, C64(ci));
  std::vector<int64_t> window_dims;
  for (int64_t d : dn.kernel_spatial_dimensions) window_dims.push_back(rs.dimensions(d));
  llvm::Type* ct = ComputeType(t, ctx_);
  llvm::AllocaInst* acc = EntryAlloca(ct, h->name() + ".acc");
  b_.CreateStore(llvm::Constant::getNullValue(ct), acc);  // 0, 0.0 or a {0, 0} complex
  Index li, ri;
  li.multi.resize(ls.rank());
  ri.multi.resize(rs.rank());
  li.multi[dn.input_batch_dimension] = in_b;
  ri.multi[dn.kernel_output_feature_dimension] = o;
  // With few features per group (a depthwise convolution) every tap is visited, read at a
  // clamped position and zeroed outside the input: the tap loops have constant trip counts
  // and unroll away, so the output's innermost loop (its features, contiguous) vectorizes.
  // Tap ranges per output position left a 3-tap loop innermost, which LLVM vectorized with
  // masked gathers (b8 56x56x64 3x3: 4.9 ms against 0.6 ms).
  int64_t taps = 1;
  for (int64_t d : window_dims) taps *= d;
  bool clamp_taps = ci <= kClampedTapsMaxFeatures && taps <= kClampedTapsMaxTaps;
  for (int64_t d : dn.input_spatial_dimensions) clamp_taps &= ls.dimensions(d) > 0;
  // The sum over the input features at one window position; `inside`, when not null, zeroes
  // the terms of a tap outside the input.
  auto features = [&](llvm::Value* inside) -> absl::Status {
    return EmitLoop(ci, h->name() + ".c", [&](llvm::Value* c) -> absl::Status {
      Index lc = li, rc = ri;
      lc.multi[dn.input_feature_dimension] = b_.CreateAdd(feature0, c);
      rc.multi[dn.kernel_input_feature_dimension] = c;
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * a, Element(lhs, lc));
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * bv, Element(rhs, rc));
      a = ConvertValue(a, ls.element_type(), AccumulationType(t));
      bv = ConvertValue(bv, rs.element_type(), AccumulationType(t));
      if (inside != nullptr) {  // both zeroed: 0 * inf would be a NaN the skipped tap is not
        a = b_.CreateSelect(inside, a, llvm::Constant::getNullValue(a->getType()));
        bv = b_.CreateSelect(inside, bv, llvm::Constant::getNullValue(bv->getType()));
      }
      // As in a dot, the innermost loop (taps or features) vectorizes as a reduction.
      b_.CreateStore(MultiplyAdd(b_.CreateLoad(ct, acc), a, bv, t), acc);
      return absl::OkStatus();
    });
  };
  // One loop per spatial dimension. Without dilation the taps that fall inside the input
  // form one range, computed per output position, so the loop needs no test per tap (and its
  // addresses stay affine); dilated dimensions test each tap.
  std::function<absl::Status(size_t, llvm::Value*)> window =
      [&](size_t s, llvm::Value* inside) -> absl::Status {
    if (s == nsp) {
      if (inside == nullptr || clamp_taps) return features(inside);
      return EmitIfElse(
                 inside,
                 [&]() -> absl::StatusOr<llvm::Value*> {
                   KILN_EMIT_RETURN_IF_ERROR(features(nullptr));
                   return b_.getTrue();
                 },
                 [&]() -> absl::StatusOr<llvm::Value*> { return b_.getFalse(); })
          .status();
    }
    const WindowDimension& w = win[s];
    const int64_t in_size = ls.dimensions(dn.input_spatial_dimensions[s]);
    const int64_t size = window_dims[s];
    llvm::Value* out_pos = idx.multi[dn.output_spatial_dimensions[s]];
    auto tap = [&](llvm::Value* k) {
      ri.multi[dn.kernel_spatial_dimensions[s]] =
          w.window_reversal ? b_.CreateSub(C64(size - 1), k) : k;
    };
    if (clamp_taps) {
      return EmitLoop(size, absl::StrCat(h->name(), ".win", s), [&](llvm::Value* k) {
        llvm::Value* in = inside == nullptr ? b_.getTrue() : inside;
        llvm::Value* pos = WindowInputIndex(w, out_pos, k, in_size, &in);
        pos = CallIntrinsic(llvm::Intrinsic::smax, {I64()}, {pos, C64(0)});
        li.multi[dn.input_spatial_dimensions[s]] =
            CallIntrinsic(llvm::Intrinsic::smin, {I64()}, {pos, C64(in_size - 1)});
        tap(k);
        return window(s + 1, in);
      });
    }
    if (w.window_dilation == 1 && w.base_dilation == 1) {
      // Input position base + k lies in [0, in_size) for k in [max(0, -base), in_size - base).
      llvm::Value* base = b_.CreateSub(b_.CreateMul(out_pos, C64(w.stride)), C64(w.padding_low));
      llvm::Value* lo = CallIntrinsic(llvm::Intrinsic::smax, {I64()}, {b_.CreateNeg(base), C64(0)});
      llvm::Value* hi = CallIntrinsic(llvm::Intrinsic::smin, {I64()},
                                      {b_.CreateSub(C64(in_size), base), C64(size)});
      return EmitLoop(lo, hi, absl::StrCat(h->name(), ".win", s), [&](llvm::Value* k) {
        li.multi[dn.input_spatial_dimensions[s]] = b_.CreateAdd(base, k);
        tap(k);
        return window(s + 1, inside);
      });
    }
    return EmitLoop(size, absl::StrCat(h->name(), ".win", s), [&](llvm::Value* k) {
      llvm::Value* in = inside == nullptr ? b_.getTrue() : inside;
      li.multi[dn.input_spatial_dimensions[s]] = WindowInputIndex(w, out_pos, k, in_size, &in);
      tap(k);
      return window(s + 1, in);
    });
  };
  std::vector<llvm::BranchInst*> tap_latches;
  KILN_EMIT_RETURN_IF_ERROR(EmitLoopNestCollectingLatches(
      {}, h->name(), [&](const Index&) { return window(0, nullptr); }, tap_latches));
  // LLVM's own unroll threshold stops short of long windows (a 31-tap 1-d depthwise
  // convolution), and then vectorizes the tap loop with a gather per tap instead.
  if (clamp_taps)
    for (llvm::BranchInst* latch : tap_latches) SetLoopHint(latch, "llvm.loop.unroll.full");
  return RoundToType(b_.CreateLoad(ct, acc), t);
}

llvm::Value* KernelEmitter::WindowInputIndex(const WindowDimension& w, llvm::Value* o,
                                             llvm::Value* k, int64_t in_size,
                                             llvm::Value** inside) {
  llvm::Value* pos = b_.CreateAdd(b_.CreateSub(b_.CreateMul(o, C64(w.stride)), C64(w.padding_low)),
                                  b_.CreateMul(k, C64(w.window_dilation)));
  *inside = b_.CreateAnd(*inside, b_.CreateICmpSGE(pos, C64(0)));
  if (w.base_dilation > 1) {
    *inside =
        b_.CreateAnd(*inside, b_.CreateICmpEQ(b_.CreateSRem(pos, C64(w.base_dilation)), C64(0)));
    pos = b_.CreateSDiv(pos, C64(w.base_dilation));
  }
  *inside = b_.CreateAnd(*inside, b_.CreateICmpSLT(pos, C64(in_size)));
  return pos;
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitReduceWindow(const HloInstruction* h,
                                                             const Index& idx) {
  // Output element o = the reducer over the window positions k of the (padded, base-dilated)
  // input at o * stride - padding_low + k * window_dilation; positions outside the input are
  // skipped, as XLA's evaluator does. Branch-free (the accumulator keeps its value where a
  // position is outside), so the output's innermost loop still vectorizes.
  const HloInstruction* input = h->operand(0);
  const std::vector<int64_t>& in_dims = input->shape().dimensions();
  std::vector<WindowDimension> win(in_dims.size());
  if (h->attrs().window) win = h->attrs().window->dimensions;
  std::vector<int64_t> sizes;
  for (const WindowDimension& w : win) sizes.push_back(w.size);
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * init, Element(h->operand(1), Index{{}, C64(0)}));
  llvm::AllocaInst* acc = EntryAlloca(init->getType(), h->name() + ".acc");
  b_.CreateStore(init, acc);
  bool reassociate = ReassociableReducer(*h);
  // Dimensions whose every window position lies inside the input (no padding, no base
  // dilation, the last window ending inside: a VALID moving sum) need no bounds test and no
  // clamp, and a window with none to test is a plain contiguous sum the vectorizer takes along
  // the window.
  std::vector<bool> always_inside(in_dims.size());
  bool all_inside = true;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    const WindowDimension& w = win[d];
    const int64_t last = (h->shape().dimensions(d) - 1) * w.stride - w.padding_low +
                         (w.size - 1) * w.window_dilation;
    always_inside[d] = w.base_dilation == 1 && w.padding_low <= 0 && last <= in_dims[d] - 1;
    all_inside = all_inside && always_inside[d];
  }
  std::vector<llvm::BranchInst*> latches;
  auto window = [&](const Index& k) -> absl::Status {
    Index in;
    llvm::Value* inside = b_.getTrue();
    for (size_t d = 0; d < in_dims.size(); ++d) {
      // A dimension always inside leaves its bounds tests unused (LLVM drops them).
      llvm::Value* unused = b_.getTrue();
      llvm::Value* pos = WindowInputIndex(win[d], idx.multi[d], k.multi[d], in_dims[d],
                                          always_inside[d] ? &unused : &inside);
      if (always_inside[d]) {
        in.multi.push_back(pos);
        continue;
      }
      // Outside the input, read the nearest element inside instead and keep the
      // accumulator. Clamped with min/max rather than a select, so that the address stays
      // an affine function of the output's innermost index (a vector load, not a gather).
      in.multi.push_back(CallIntrinsic(
          llvm::Intrinsic::smin, {I64()},
          {CallIntrinsic(llvm::Intrinsic::smax, {I64()}, {pos, C64(0)}), C64(in_dims[d] - 1)}));
    }
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(input, in));
    llvm::Value* cur = b_.CreateLoad(init->getType(), acc);
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * next, EmitScalarCall(h->to_apply(), {cur, v}));
    // A reassociable window sum vectorizes along the window (a conditional reduction);
    // without it each output is one serial chain of window-size adds.
    if (reassociate)
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(next)) inst->setHasAllowReassoc(true);
    b_.CreateStore(all_inside ? next : b_.CreateSelect(inside, next, cur), acc);
    return absl::OkStatus();
  };
  KILN_EMIT_RETURN_IF_ERROR(
      EmitLoopNestCollectingLatches(sizes, h->name() + ".win", window, latches));
  // A strided window whose minor dimension is a short contiguous run inside the input (a
  // moving sum of 64 every 16) keeps that loop, as EmitReduce keeps a short reduced run:
  // unrolled whole, it left the vectorizer the output's loop, reading the windows with
  // gathers (with stride 1 those reads are plain vector loads, and stay). The window's loops
  // close last, innermost first (loops of the input's cone close inside them).
  const size_t minor = in_dims.size() - 1;
  if (reassociate && !in_dims.empty() && always_inside[minor] && win[minor].stride > 1 &&
      win[minor].window_dilation == 1 && sizes[minor] >= kMinVectorRun &&
      sizes[minor] <= kMaxVectorRun && !loops_.empty() && latches.size() >= sizes.size())
    DisableUnroll(latches[latches.size() - sizes.size()]);
  return b_.CreateLoad(init->getType(), acc);
}

absl::StatusOr<llvm::Value*> KernelEmitter::ElementUncached(const HloInstruction* h,
                                                            const Index& idx) {
  auto input = input_ptrs_.find(h);
  PT t = h->shape().element_type();
  if (input != input_ptrs_.end()) {
    llvm::Type* st = StorageType(t, ctx_);
    llvm::Value* p = b_.CreateInBoundsGEP(st, input->second, Linear(idx, h->shape().dimensions()));
    return ToCompute(b_.CreateLoad(st, p), t);
  }
  std::string why;
  if (!CanEmitElementally(*h, &why))
    return absl::UnimplementedError(absl::StrCat("cannot emit ", h->name(), ": ", why));
  const std::vector<int64_t>& dims = h->shape().dimensions();
  HloOpcode op = h->opcode();
  switch (op) {
    case HloOpcode::kParameter:
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", h->name(), " is not an input of kernel ", spec_.name));
    case HloOpcode::kConstant:
      return EmitConstant(h, idx);
    case HloOpcode::kSelect: {
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * p, OperandElement(h, 0, idx));
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * a, OperandElement(h, 1, idx));
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * c, OperandElement(h, 2, idx));
      return b_.CreateSelect(p, a, c);
    }
    case HloOpcode::kClamp: {
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * lo, OperandElement(h, 0, idx));
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * x, OperandElement(h, 1, idx));
      KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * hi, OperandElement(h, 2, idx));
      return EmitMax(t, EmitMax(t, x, lo, true), hi, false);
    }
    case HloOpcode::kBroadcast: {
      Index oi;
      for (int64_t d : h->dimensions()) oi.multi.push_back(idx.multi[d]);
      if (h->operand(0)->shape().rank() == 0) oi.linear = C64(0);
      return Element(h->operand(0), oi);
    }
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      const std::vector<int64_t>& from = h->operand(0)->shape().dimensions();
      if (std::optional<Index> grouped = ReshapeByGroups(idx, dims, from))
        return Element(h->operand(0), *grouped);
      llvm::Value* lin = Linear(idx, dims);
      return Element(h->operand(0), Delinearize(lin, from));
    }
    case HloOpcode::kTranspose: {
      Index oi;
      oi.multi.resize(dims.size());
      for (size_t i = 0; i < dims.size(); ++i) oi.multi[h->dimensions()[i]] = idx.multi[i];
      return Element(h->operand(0), oi);
    }
    case HloOpcode::kSlice: {
      Index oi;
      const InstructionAttributes& a = h->attrs();
      for (size_t i = 0; i < dims.size(); ++i) {
        llvm::Value* v = idx.multi[i];
        if (a.slice_strides.size() > i && a.slice_strides[i] != 1)
          v = b_.CreateMul(v, C64(a.slice_strides[i]), "", true, true);
        if (a.slice_starts.size() > i && a.slice_starts[i] != 0)
          v = b_.CreateAdd(v, C64(a.slice_starts[i]), "", true, true);
        oi.multi.push_back(v);
      }
      return Element(h->operand(0), oi);
    }
    case HloOpcode::kReverse: {
      Index oi;
      oi.multi = idx.multi;
      for (int64_t d : h->dimensions()) oi.multi[d] = b_.CreateSub(C64(dims[d] - 1), idx.multi[d]);
      return Element(h->operand(0), oi);
    }
    case HloOpcode::kIota: {
      int64_t d = h->attrs().iota_dimension;
      if (d < 0 || d >= static_cast<int64_t>(dims.size()))
        return absl::InvalidArgumentError(absl::StrCat("iota ", h->name(), ": bad iota_dimension"));
      return ConvertValue(idx.multi[d], PT::S64, t);
    }
    case HloOpcode::kConcatenate: {
      if (h->dimensions().size() != 1)
        return absl::InvalidArgumentError(
            absl::StrCat("concatenate ", h->name(), ": needs one dimension"));
      std::vector<int64_t> offsets = {0};
      for (const HloInstruction* o : h->operands())
        offsets.push_back(offsets.back() + o->shape().dimensions(h->dimensions()[0]));
      return EmitConcatenate(h, idx, offsets, 0, h->operand_count());
    }
    case HloOpcode::kPad:
      return EmitPad(h, idx);
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
      return EmitDynamicSlice(h, idx);
    case HloOpcode::kGather:
      return EmitGather(h, idx);
    case HloOpcode::kReduce:
      return EmitReduce(h, idx);
    case HloOpcode::kReduceWindow:
      return EmitReduceWindow(h, idx);
    case HloOpcode::kDot:
      return EmitDot(h, idx);
    case HloOpcode::kConvolution:
      return EmitConvolution(h, idx);
    default:
      break;
  }
  if (h->operand_count() == 1) {
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * x, OperandElement(h, 0, idx));
    return EmitUnary(h, x);
  }
  if (h->operand_count() == 2) {
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * a, OperandElement(h, 0, idx));
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * c, OperandElement(h, 1, idx));
    return EmitBinary(op, h, h->operand(0)->shape().element_type(), a, c);
  }
  return absl::UnimplementedError(absl::StrCat("emitter: no element generator for ", h->name()));
}

absl::Status KernelEmitter::Emit() {
  for (const HloInstruction* h : spec_.inputs) {
    if (!h->shape().IsArray() || !IsSupportedType(h->shape().element_type()))
      return absl::InvalidArgumentError(absl::StrCat("kernel ", spec_.name, ": input ", h->name(),
                                                     " has unsupported shape ",
                                                     h->shape().ToString()));
  }
  for (const HloInstruction* h : spec_.outputs) {
    if (!h->shape().IsArray() || !IsSupportedType(h->shape().element_type()))
      return absl::InvalidArgumentError(absl::StrCat("kernel ", spec_.name, ": output ", h->name(),
                                                     " has unsupported shape ",
                                                     h->shape().ToString()));
  }
  if (gpu()) return EmitGpu();
  if (spec_.sort != nullptr) return EmitSortComparator();
  const bool parts = spec_.reduce_parts > 0;
  if (spec_.update_in_place) {
    const HloInstruction* d = spec_.outputs.size() == 1 ? spec_.outputs[0] : nullptr;
    if (d == nullptr || d->opcode() != HloOpcode::kDynamicUpdateSlice || parts ||
        std::find(spec_.inputs.begin(), spec_.inputs.end(), d->operand(0)) == spec_.inputs.end())
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", spec_.name,
                       ": update_in_place needs one dynamic-update-slice output whose operand 0 "
                       "is an input"));
  }
  const bool column_parts = parts && spec_.accumulate_columns;
  if (parts && !column_parts) {
    const HloInstruction* r = spec_.outputs.size() == 1 ? spec_.outputs[0] : nullptr;
    if (r == nullptr || r->opcode() != HloOpcode::kReduce || r->shape().rank() != 0 ||
        r->operand(0)->shape().rank() == 0 ||
        std::find(spec_.inputs.begin(), spec_.inputs.end(), r) != spec_.inputs.end())
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel ", spec_.name, ": reduce_parts needs one rank-0 reduce output of an array"));
  }
  // A reduce_parts kernel has the partials buffer after the output.
  size_t n = spec_.inputs.size() + spec_.outputs.size() + (parts ? 1 : 0);
  StartBody(spec_.name + ".body", n);
  PushScope();
  if (parts && !column_parts)
    KILN_EMIT_RETURN_IF_ERROR(EmitReduceParts(fn_->getArg(n), fn_->getArg(n + 1)));
  if (spec_.accumulate_columns)
    KILN_EMIT_RETURN_IF_ERROR(
        EmitColumnReductions(spec_.partition_outer ? fn_->getArg(n) : nullptr,
                             spec_.partition_outer ? fn_->getArg(n + 1) : nullptr));
  if (spec_.update_in_place) {
    KILN_EMIT_RETURN_IF_ERROR(EmitUpdateInPlace(
        fn_->getArg(spec_.inputs.size()), spec_.partition_outer ? fn_->getArg(n) : nullptr,
        spec_.partition_outer ? fn_->getArg(n + 1) : nullptr));
  }
  // A column-parts kernel writes its outputs in the combining call only, whole.
  const bool ranged = spec_.partition_outer && !column_parts;
  // Output o's element at idx, computed as `source`'s (the root, or what a root reshape
  // reads: the same elements in the same order).
  const auto store_output = [&](size_t o, const Index& idx,
                                const HloInstruction* source = nullptr) -> absl::Status {
    const HloInstruction* root = spec_.outputs[o];
    const PT t = root->shape().element_type();
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(source ? source : root, idx));
    b_.CreateStore(ToStorage(v, t),
                   b_.CreateInBoundsGEP(StorageType(t, ctx_), fn_->getArg(spec_.inputs.size() + o),
                                        idx.linear));
    return absl::OkStatus();
  };
  // Outputs of one shape (sibling loops merged into one kernel) share one loop nest: each
  // element's common cone is generated once and every operand element is loaded once.
  bool one_nest =
      spec_.outputs.size() > 1 && !parts && !spec_.update_in_place && !spec_.accumulate_columns;
  for (const HloInstruction* root : spec_.outputs)
    one_nest = one_nest && root->shape().dimensions() == spec_.outputs[0]->shape().dimensions();
  // An output's outer loops stay loops: unrolled whole (16 rows of 256), each copy of the
  // inner loop was vectorized and unrolled on its own, and scheduling the one huge block
  // that made took seconds of code generation (a padded attention's softmax kernels: 2 s).
  if (one_nest) {
    KILN_EMIT_RETURN_IF_ERROR(EmitLoopNest(
        spec_.outputs[0]->shape().dimensions(), "out",
        [&](const Index& idx) -> absl::Status {
          for (size_t o = 0; o < spec_.outputs.size(); ++o)
            KILN_EMIT_RETURN_IF_ERROR(store_output(o, idx));
          return absl::OkStatus();
        },
        ranged ? fn_->getArg(n) : nullptr, ranged ? fn_->getArg(n + 1) : nullptr,
        /*keep_outer_loops=*/true, KeepsMinorLoop(spec_.outputs[0]->shape().dimensions())));
  }
  for (size_t o = 0;
       o < spec_.outputs.size() && (!parts || column_parts) && !spec_.update_in_place && !one_nest;
       ++o) {
    const HloInstruction* root = spec_.outputs[o];
    stash_ = Stash{StashableRowStatistic(spec_), fn_->getArg(spec_.inputs.size() + o)};
    const bool transposed = stash_.reduce == nullptr && ReadsTransposed(spec_);
    const int64_t tile_dim = transposed ? TransposeTileDim(spec_) : 0;
    const bool tiled = transposed && SpansTransposeTile(root->shape(), tile_dim);
    // A transposed read under a narrow minor dimension (a pixel shuffle's 16 features): one
    // loop over the two minor dimensions, so that the vectorizer's loop stores contiguously
    // (it took the next loop out instead, with AVX-512 scatters, 3x slower).
    const int64_t minor = transposed ? root->shape().dimensions(root->shape().rank() - 1) : 0;
    const bool merged = transposed && !tiled && minor > 1 && minor < kTransposeTile;
    // A reshape of a transpose (attention's heads merged, [b,s,h,d] -> [b,s,h*d]) loops over
    // the transpose's dimensions: over the merged one, each index was divided back into h and
    // d and the vectorizer read with a gather per vector (b32 h16 s128 d64: 3x a copy's time).
    // The pool's ranges split dimension 0, so it must be the root's.
    const HloInstruction* source = root;
    if (const HloInstruction* t = root->operand_count() == 1 ? root->operand(0) : nullptr;
        !transposed && stash_.reduce == nullptr && root->opcode() == HloOpcode::kReshape &&
        t->opcode() == HloOpcode::kTranspose && root->shape().rank() > 0 &&
        t->shape().rank() > root->shape().rank() &&
        t->shape().dimensions(0) == root->shape().dimensions(0) &&
        t->shape().dimensions().back() >= kMinVectorRun &&
        std::find(spec_.inputs.begin(), spec_.inputs.end(), t) == spec_.inputs.end())
      source = t;
    // A root concatenation loops per operand when choosing one per element costs: along the
    // minor dimension (a branch inside the vectorized loop: sin/cos positions 4x slower), or
    // among many operands (LLVM predicated the chain, a masked load of every operand per
    // vector). A few operands along an outer dimension (an edge pad's three) stay one nest:
    // the branch is invariant in the inner loop, and a part's own loops over a few rows cost
    // more than it.
    if (!transposed && stash_.reduce == nullptr && !parts &&
        root->opcode() == HloOpcode::kConcatenate && root->shape().rank() > 0 &&
        root->dimensions().size() == 1 &&
        (root->dimensions()[0] == root->shape().rank() - 1 ||
         root->operand_count() > kMaxBranchedConcatOperands)) {
      KILN_EMIT_RETURN_IF_ERROR(EmitConcatenateByOperand(root, fn_->getArg(spec_.inputs.size() + o),
                                                         ranged ? fn_->getArg(n) : nullptr,
                                                         ranged ? fn_->getArg(n + 1) : nullptr));
      stash_ = Stash{};
      continue;
    }
    const auto nest = [&](const std::vector<int64_t>& dims, const std::string& name,
                          const std::function<absl::Status(const Index&)>& body, llvm::Value* lo,
                          llvm::Value* hi) {
      if (tiled) return EmitTiledLoopNest(dims, kTransposeTile, name, body, lo, hi, tile_dim);
      if (merged) return EmitMergedMinorLoopNest(dims, name, body, lo, hi);
      return EmitLoopNest(dims, name, body, lo, hi, /*keep_outer_loops=*/true,
                          GathersMinorRuns(spec_, dims) || KeepsMinorLoop(dims));
    };
    KILN_EMIT_RETURN_IF_ERROR(nest(
        source->shape().dimensions(), absl::StrCat("out", o),
        [&](const Index& idx) -> absl::Status {
          if (stash_.reduce != nullptr) {
            // The statistic first (hoisted before the row's loop, storing the row), so that
            // the output's reads of the value find it stored.
            stash_.output_index = &idx;
            const size_t kept = stash_.reduce->shape().rank();
            KILN_EMIT_RETURN_IF_ERROR(
                Element(stash_.reduce,
                        Index{{idx.multi.begin(), idx.multi.begin() + kept}, nullptr})
                    .status());
          }
          return store_output(o, idx, source);
        },
        ranged ? fn_->getArg(n) : nullptr, ranged ? fn_->getArg(n + 1) : nullptr));
    stash_ = Stash{};
  }
  if (column_parts_done_ != nullptr) {
    b_.CreateBr(column_parts_done_);
    b_.SetInsertPoint(column_parts_done_);
  }
  b_.CreateRetVoid();
  PopScope();

  return EmitCpuEntry(n);
}

absl::Status KernelEmitter::EmitCpuEntry(size_t n) {
  llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
  auto* entry_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, I64(), I64()}, false);
  llvm::Function* kernel =
      llvm::Function::Create(entry_ty, llvm::GlobalValue::ExternalLinkage, spec_.name, module_);
  kernel->addFnAttr(llvm::Attribute::NoUnwind);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < n; ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, kernel->getArg(0), i);
    args.push_back(b_.CreateLoad(ptr, slot, absl::StrCat("buf", i)));
  }
  args.push_back(kernel->getArg(1));
  args.push_back(kernel->getArg(2));
  b_.CreateCall(fn_, args);
  b_.CreateRetVoid();

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*fn_, &os) || llvm::verifyFunction(*kernel, &os))
    return absl::InternalError(
        absl::StrCat("emitter produced invalid IR for ", spec_.name, ": ", os.str()));
  return absl::OkStatus();
}

void KernelEmitter::StartBody(const std::string& name, size_t n) {
  llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
  // Each buffer is a noalias argument (the executor never aliases them); the body is inlined
  // into the entry point. The last two arguments are the [begin, end) range of the
  // partitioned outer dimension (CPU).
  std::vector<llvm::Type*> params(n, ptr);
  params.push_back(I64());
  params.push_back(I64());
  auto* ty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(ty, llvm::GlobalValue::InternalLinkage, name, module_);
  fn_->addFnAttr(llvm::Attribute::AlwaysInline);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < n; ++i) {
    fn_->addParamAttr(i, llvm::Attribute::NoAlias);
    fn_->addParamAttr(i, llvm::Attribute::NoCapture);
    if (i < spec_.inputs.size()) fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  input_ptrs_.clear();
  for (size_t i = 0; i < spec_.inputs.size(); ++i) input_ptrs_[spec_.inputs[i]] = fn_->getArg(i);
  scopes_.clear();
}

absl::Status KernelEmitter::EmitUpdateInPlace(llvm::Value* out, llvm::Value* begin,
                                              llvm::Value* end) {
  const HloInstruction* dus = spec_.outputs[0];
  const HloInstruction* update = dus->operand(1);
  const std::vector<int64_t>& dims = dus->shape().dimensions();
  PT t = dus->shape().element_type();
  llvm::Type* st = StorageType(t, ctx_);
  // The starts are scalars: generated once, before the loop nest.
  KILN_EMIT_ASSIGN_OR_RETURN(std::vector<llvm::Value*> starts,
                             ClampedStarts(dus, 2, update->shape().dimensions()));
  return EmitLoopNest(
      update->shape().dimensions(), "update",
      [&](const Index& ui) -> absl::Status {
        KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(update, ui));
        Index oi;
        for (size_t d = 0; d < starts.size(); ++d)
          oi.multi.push_back(b_.CreateAdd(ui.multi[d], starts[d], "", true, true));
        b_.CreateStore(ToStorage(v, t), b_.CreateInBoundsGEP(st, out, Linear(oi, dims)));
        return absl::OkStatus();
      },
      begin, end);
}

namespace {
// True when `r` and `s` reduce inputs of one shape over the same dimensions: one pass over
// the rows can accumulate both.
bool SameColumnRows(const HloInstruction& r, const HloInstruction& s) {
  return r.operand(0)->shape().dimensions() == s.operand(0)->shape().dimensions() &&
         r.dimensions() == s.dimensions() && r.shape().element_type() == s.shape().element_type();
}

// True when `h`'s cone, below the kernel's inputs, contains one of `targets`.
bool ConeContains(const HloInstruction* h, const std::vector<const HloInstruction*>& targets,
                  const std::vector<const HloInstruction*>& inputs) {
  absl::flat_hash_set<const HloInstruction*> seen(inputs.begin(), inputs.end());
  std::vector<const HloInstruction*> stack = {h};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (absl::c_linear_search(targets, x)) return true;
    for (const HloInstruction* o : x->operands()) stack.push_back(o);
  }
  return false;
}
}  // namespace

absl::Status KernelEmitter::EmitColumnReductions(llvm::Value* lo, llvm::Value* hi) {
  if (spec_.reduce_parts > 0) return EmitColumnParts();
  // The kernel's column reductions in post-order: one inside another one's input is
  // accumulated first. Consecutive ones over the same rows that do not read each other share
  // one pass (a Dice loss sums p * t, p and t, each p a softmax, over the same pixels). A
  // partitioned kernel accumulates the rows of its range of dimension 0, which its
  // reductions keep, into that range of accumulators.
  const std::vector<const HloInstruction*> columns =
      ColumnReductionsOf(spec_, lo != nullptr ? IsPartitionedColumnReduction : IsColumnReduction);
  for (size_t first = 0; first < columns.size();) {
    std::vector<const HloInstruction*> members = {columns[first]};
    size_t next = first + 1;
    for (; next < columns.size(); ++next) {
      if (!SameColumnRows(*columns[first], *columns[next]) ||
          ConeContains(columns[next]->operand(0), members, spec_.inputs))
        break;
      members.push_back(columns[next]);
    }
    first = next;
    PushScope();
    std::vector<ColumnAccumulator> group;
    for (const HloInstruction* r : members) {
      ColumnAccumulator c{r, ColumnLayoutOf(*r), nullptr, nullptr};
      c.acc = EntryAlloca(llvm::ArrayType::get(StorageType(r->shape().element_type(), ctx_),
                                               static_cast<uint64_t>(c.layout.elements)),
                          r->name() + ".columns");
      absl::StatusOr<llvm::Value*> init = Element(r->operand(1), Index{{}, C64(0)});
      if (!init.ok()) {
        PopScope();
        return init.status();
      }
      c.init = *init;
      group.push_back(std::move(c));
    }
    absl::Status status = AccumulateColumns(group, lo, hi);
    std::vector<llvm::Value*> results;
    for (const ColumnAccumulator& c : group) {
      if (!status.ok()) break;
      absl::StatusOr<llvm::Value*> result = FoldColumns(c.reduce, c.layout, c.acc, c.init, lo, hi);
      status = result.status();
      if (result.ok()) results.push_back(*result);
    }
    PopScope();
    KILN_EMIT_RETURN_IF_ERROR(status);
    for (size_t k = 0; k < group.size(); ++k)
      input_ptrs_[group[k].reduce] = results[k];  // the output loop reads it like an input
  }
  return absl::OkStatus();
}

absl::Status KernelEmitter::AccumulateColumns(const std::vector<ColumnAccumulator>& group,
                                              llvm::Value* lo, llvm::Value* hi) {
  const HloInstruction* first = group.front().reduce;
  const std::vector<int64_t>& in = first->operand(0)->shape().dimensions();
  PT t = first->shape().element_type();
  llvm::Type* st = StorageType(t, ctx_);
  // With a range of dimension 0 that the reductions keep, only that range of accumulators.
  const bool keeps_0 = !absl::c_linear_search(first->dimensions(), int64_t{0});
  // The accumulators to set are one contiguous range (dimension 0 is the outermost): one flat
  // loop. As a loop nest, LLVM unrolled the inner loop and vectorized the outer one into
  // scatters (257 of them for a [64,64] accumulator, most of the kernel's compile time).
  for (const ColumnAccumulator& c : group) {
    const int64_t per_row = c.layout.elements / std::max<int64_t>(c.layout.acc_dims[0], 1);
    const bool ranged = keeps_0 && lo != nullptr;
    llvm::Value* first = ranged ? b_.CreateMul(lo, C64(per_row)) : C64(0);
    llvm::Value* last = ranged ? b_.CreateMul(hi, C64(per_row)) : C64(c.layout.elements);
    KILN_EMIT_RETURN_IF_ERROR(
        EmitLoop(first, last, c.reduce->name() + ".init", [&](llvm::Value* j) -> absl::Status {
          b_.CreateStore(ToStorage(c.init, t), b_.CreateInBoundsGEP(st, c.acc, j));
          return absl::OkStatus();
        }));
  }
  // The input in memory order, each element combined into its accumulator: the inner loop
  // walks memory contiguously and updates a run of accumulators (vectorized across them).
  const ColumnLayout& layout = group.front().layout;  // the same for every member
  std::vector<llvm::BranchInst*> latches;
  KILN_EMIT_RETURN_IF_ERROR(EmitLoopNestCollectingLatches(
      in, first->name() + ".rows",
      [&](const Index& i) -> absl::Status {
        Index k;
        for (size_t d = 0; d < in.size(); ++d)
          if (layout.in_acc[d]) k.multi.push_back(i.multi[d]);
        k.linear = Linear(k, layout.acc_dims);
        for (const ColumnAccumulator& c : group) {
          KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(c.reduce->operand(0), i));
          llvm::Value* p = b_.CreateInBoundsGEP(st, c.acc, k.linear);
          KILN_EMIT_ASSIGN_OR_RETURN(
              llvm::Value * next,
              EmitScalarCall(c.reduce->to_apply(), {ToCompute(b_.CreateLoad(st, p), t), v}));
          b_.CreateStore(ToStorage(next, t), p);
        }
        return absl::OkStatus();
      },
      latches, lo, hi));
  // The innermost loop (the first to close) stays a loop: unrolled whole when short (a group
  // norm's 32 channels), it left the vectorizer the loop around it, read with gathers. Not
  // one shorter than a vector: kept, it became masked loads and stores of the accumulators,
  // which a store does not forward to the next row's load (a mean over [1025,129,3]'s 129
  // rows: 0.91 ms).
  if (!latches.empty() && in.back() >= kMinVectorRun) DisableUnroll(latches.front());
  return absl::OkStatus();
}

absl::StatusOr<llvm::Value*> KernelEmitter::FoldColumns(const HloInstruction* r,
                                                        const ColumnLayout& layout,
                                                        llvm::Value* acc, llvm::Value* init,
                                                        llvm::Value* lo, llvm::Value* hi) {
  if (layout.run == 1) return acc;
  // Each result element folds its run of accumulators (trailing reduced dimensions), in order.
  PT t = r->shape().element_type();
  llvm::Type* st = StorageType(t, ctx_);
  llvm::AllocaInst* result =
      EntryAlloca(llvm::ArrayType::get(st, static_cast<uint64_t>(r->shape().num_elements())),
                  r->name() + ".folded");
  llvm::AllocaInst* sum = EntryAlloca(init->getType(), r->name() + ".fold");
  KILN_EMIT_RETURN_IF_ERROR(EmitLoopNest(
      r->shape().dimensions(), r->name() + ".fold",
      [&](const Index& k) -> absl::Status {
        return FoldStrided(r, acc, b_.CreateMul(k.linear, C64(layout.run)), 1, layout.run, init,
                           sum, b_.CreateInBoundsGEP(st, result, k.linear));
      },
      lo, hi));
  return result;
}

absl::Status KernelEmitter::FoldStrided(const HloInstruction* r, llvm::Value* src,
                                        llvm::Value* base, int64_t stride, int64_t count,
                                        llvm::Value* init, llvm::AllocaInst* sum,
                                        llvm::Value* dst) {
  PT t = r->shape().element_type();
  llvm::Type* st = StorageType(t, ctx_);
  b_.CreateStore(init, sum);
  KILN_EMIT_RETURN_IF_ERROR(
      EmitLoop(count, r->name() + ".fold", [&](llvm::Value* i) -> absl::Status {
        llvm::Value* at = b_.CreateAdd(base, b_.CreateMul(i, C64(stride)));
        llvm::Value* v = ToCompute(b_.CreateLoad(st, b_.CreateInBoundsGEP(st, src, at)), t);
        KILN_EMIT_ASSIGN_OR_RETURN(
            llvm::Value * next,
            EmitScalarCall(r->to_apply(), {b_.CreateLoad(init->getType(), sum), v}));
        b_.CreateStore(next, sum);
        return absl::OkStatus();
      }));
  b_.CreateStore(ToStorage(b_.CreateLoad(init->getType(), sum), t), dst);
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitColumnParts() {
  const HloInstruction* r = PartedColumnReduction(spec_);
  if (r == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", spec_.name,
        ": reduce_parts with accumulate_columns needs one column reduction of dimension 0"));
  const ColumnLayout layout = ColumnLayoutOf(*r);
  PT t = r->shape().element_type();
  llvm::Type* st = StorageType(t, ctx_);
  const int64_t p_count = spec_.reduce_parts;
  const int64_t d0 = r->operand(0)->shape().dimensions(0);
  const size_t n = spec_.inputs.size() + spec_.outputs.size();
  llvm::Value* partials = fn_->getArg(n);
  llvm::Value* begin = fn_->getArg(n + 1);
  llvm::Value* end = fn_->getArg(n + 2);
  // Stage one: part p accumulates rows [p d0 / P, (p+1) d0 / P) of dimension 0 into its own
  // accumulator, partials[p].
  llvm::Value* parts_end = b_.CreateSelect(b_.CreateICmpSLT(end, C64(p_count)), end, C64(p_count));
  KILN_EMIT_RETURN_IF_ERROR(EmitLoop(begin, parts_end, "part", [&](llvm::Value* p) -> absl::Status {
    llvm::Value* lo = b_.CreateSDiv(b_.CreateMul(p, C64(d0)), C64(p_count));
    llvm::Value* hi = b_.CreateSDiv(b_.CreateMul(b_.CreateAdd(p, C64(1)), C64(d0)), C64(p_count));
    llvm::Value* acc = b_.CreateInBoundsGEP(st, partials, b_.CreateMul(p, C64(layout.elements)));
    PushScope();
    absl::StatusOr<llvm::Value*> init = Element(r->operand(1), Index{{}, C64(0)});
    absl::Status st_acc =
        init.ok() ? AccumulateColumns({{r, layout, acc, *init}}, lo, hi) : init.status();
    PopScope();
    return st_acc;
  }));
  // Stage two, when the range includes part P: the parts' accumulators folded in order, then
  // the output loops (Emit continues in this block and closes it with FinishColumnParts).
  auto* combine = llvm::BasicBlock::Create(ctx_, "combine", fn_);
  column_parts_done_ = llvm::BasicBlock::Create(ctx_, "combine.done", fn_);
  b_.CreateCondBr(b_.CreateICmpSGT(end, C64(p_count)), combine, column_parts_done_);
  b_.SetInsertPoint(combine);
  llvm::AllocaInst* acc = EntryAlloca(
      llvm::ArrayType::get(st, static_cast<uint64_t>(layout.elements)), r->name() + ".columns");
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * init, Element(r->operand(1), Index{{}, C64(0)}));
  llvm::AllocaInst* sum = EntryAlloca(init->getType(), r->name() + ".parts");
  KILN_EMIT_RETURN_IF_ERROR(
      EmitLoop(layout.elements, r->name() + ".combine", [&](llvm::Value* j) -> absl::Status {
        return FoldStrided(r, partials, j, layout.elements, p_count, init, sum,
                           b_.CreateInBoundsGEP(st, acc, j));
      }));
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * result,
                             FoldColumns(r, layout, acc, init, nullptr, nullptr));
  input_ptrs_[r] = result;
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitReduceParts(llvm::Value* begin, llvm::Value* end) {
  const HloInstruction* r = spec_.outputs[0];
  PT t = r->shape().element_type();
  llvm::Type* st = StorageType(t, ctx_);
  const int64_t p_count = spec_.reduce_parts;
  const int64_t d0 = r->operand(0)->shape().dimensions(0);
  llvm::Value* out = fn_->getArg(spec_.inputs.size());
  llvm::Value* partials = fn_->getArg(spec_.inputs.size() + 1);
  // Stage one: part p reduces rows [p d0 / P, (p+1) d0 / P) of dimension 0.
  llvm::Value* parts_end = b_.CreateSelect(b_.CreateICmpSLT(end, C64(p_count)), end, C64(p_count));
  KILN_EMIT_RETURN_IF_ERROR(EmitLoop(begin, parts_end, "part", [&](llvm::Value* p) -> absl::Status {
    llvm::Value* lo = b_.CreateSDiv(b_.CreateMul(p, C64(d0)), C64(p_count));
    llvm::Value* hi = b_.CreateSDiv(b_.CreateMul(b_.CreateAdd(p, C64(1)), C64(d0)), C64(p_count));
    KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, EmitReduce(r, Index{{}, C64(0)}, lo, hi));
    b_.CreateStore(ToStorage(v, t), b_.CreateInBoundsGEP(st, partials, p));
    return absl::OkStatus();
  }));
  // Stage two, when the range includes part P: fold the partials in order.
  auto* combine = llvm::BasicBlock::Create(ctx_, "combine", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "combine.done", fn_);
  b_.CreateCondBr(b_.CreateICmpSGT(end, C64(p_count)), combine, done);
  b_.SetInsertPoint(combine);
  PushScope();
  absl::StatusOr<llvm::Value*> init = Element(r->operand(1), Index{{}, C64(0)});
  absl::Status st_fold =
      init.ok() ? FoldStrided(r, partials, C64(0), 1, p_count, *init,
                              EntryAlloca((*init)->getType(), r->name() + ".combine"), out)
                : init.status();
  PopScope();
  KILN_EMIT_RETURN_IF_ERROR(st_fold);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  return absl::OkStatus();
}

}  // namespace detail

absl::Status EmitKernel(const KernelSpec& spec, llvm::Module& module) {
  detail::KernelEmitter emitter(spec, module);
  return emitter.Emit();
}

}  // namespace kiln::llvm_emit
