// Data movement opcodes: broadcast, reshape, bitcast, transpose, copy, slice, dynamic-slice,
// dynamic-update-slice, concatenate, pad, reverse, iota, get-dimension-size. Most are one
// strided copy (evaluator_util.h) with per-dimension strides.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hlo/checked_math.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/evaluator_util.h"
#include "hlo/evaluator/kernel_util.h"

namespace kiln::eval {
namespace {

std::string Dims(const std::vector<int64_t>& d) { return "{" + absl::StrJoin(d, ",") + "}"; }

int64_t ElemSize(const Literal& l) { return ByteSizeOf(l.shape().element_type()); }

absl::Status CheckElementType(const HloInstruction& instr, const Literal& operand) {
  if (operand.shape().element_type() != instr.shape().element_type()) {
    return InvalidArgument(
        instr, absl::StrCat("operand element type ",
                            std::string(PrimitiveTypeName(operand.shape().element_type())),
                            " differs from the result's ",
                            std::string(PrimitiveTypeName(instr.shape().element_type()))));
  }
  return absl::OkStatus();
}

// The result of permuting `operand`'s dimensions: result dim i is operand dim perm[i].
Literal TransposeLiteral(const Literal& operand, const std::vector<int64_t>& perm,
                         const Shape& out_shape) {
  Literal out(out_shape);
  std::vector<int64_t> src_strides = RowMajorStrides(operand.shape().dimensions());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = src_strides[perm[i]];
  StridedGather(operand.untyped_data(), ElemSize(operand), out.shape().dimensions(), 0, strides,
                out.untyped_data());
  return out;
}

bool IsPermutation(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

absl::StatusOr<Literal> Broadcast(const HloInstruction& instr, const Literal& operand) {
  const Shape& out_shape = instr.shape();
  const std::vector<int64_t>& map = instr.dimensions();
  if (static_cast<int>(map.size()) != operand.shape().rank()) {
    return InvalidArgument(
        instr, absl::StrCat("broadcast dimensions ", Dims(map), " do not cover the operand ",
                            operand.shape().ToString(false)));
  }
  std::vector<int64_t> op_strides = RowMajorStrides(operand.shape().dimensions());
  std::vector<int64_t> strides(out_shape.rank(), 0);
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] < 0 || map[i] >= out_shape.rank() ||
        out_shape.dimensions(static_cast<int>(map[i])) !=
            operand.shape().dimensions(static_cast<int>(i))) {
      return InvalidArgument(instr, absl::StrCat("broadcast dimension ", i, " -> ", map[i],
                                                 " does not fit ", operand.shape().ToString(false),
                                                 " into ", out_shape.ToString(false)));
    }
    strides[map[i]] = op_strides[i];
  }
  Literal out(out_shape);
  StridedGather(operand.untyped_data(), ElemSize(operand), out_shape.dimensions(), 0, strides,
                out.untyped_data());
  return out;
}

absl::StatusOr<Literal> Reshape(const HloInstruction& instr, const Literal& operand) {
  if (operand.element_count() != instr.shape().num_elements()) {
    return InvalidArgument(instr, absl::StrCat("cannot reshape ", operand.shape().ToString(false),
                                               " to ", instr.shape().ToString(false)));
  }
  Literal out(instr.shape());
  if (operand.size_bytes() > 0)
    std::memcpy(out.untyped_data(), operand.untyped_data(), operand.size_bytes());
  return out;
}

// Bitcast reinterprets the physical buffer: the operand's bytes in its layout order are read
// back in the result's layout order. With row-major layouts on both sides it is a reshape.
absl::StatusOr<Literal> Bitcast(const HloInstruction& instr, const Literal& operand) {
  const Shape& in_shape = instr.operand_count() > 0 ? instr.operand(0)->shape() : operand.shape();
  const Shape& out_shape = instr.shape();
  if (ByteSizeOf(in_shape.element_type()) * operand.element_count() !=
      ByteSizeOf(out_shape.element_type()) * out_shape.num_elements()) {
    return InvalidArgument(instr, absl::StrCat("bitcast from ", in_shape.ToString(), " to ",
                                               out_shape.ToString(), " changes the byte size"));
  }
  if (in_shape.element_type() != out_shape.element_type()) {
    // A bitcast between element types of one size: reinterpret the bytes (row-major only).
    if (!in_shape.HasDefaultLayout() || !out_shape.HasDefaultLayout()) {
      return Unimplemented(instr, "bitcast that changes both element type and layout");
    }
    Literal out(out_shape);
    if (operand.size_bytes() > 0)
      std::memcpy(out.untyped_data(), operand.untyped_data(), operand.size_bytes());
    return out;
  }
  if (in_shape.HasDefaultLayout() && out_shape.HasDefaultLayout()) return Reshape(instr, operand);

  // Physical (major-to-minor) order of the operand.
  std::vector<int64_t> in_m2m = in_shape.MinorToMajor();
  std::vector<int64_t> in_major(in_m2m.rbegin(), in_m2m.rend());
  std::vector<int64_t> phys_in_dims;
  for (int64_t d : in_major)
    phys_in_dims.push_back(operand.shape().dimensions(static_cast<int>(d)));
  Literal physical =
      TransposeLiteral(operand, in_major, Shape(operand.shape().element_type(), phys_in_dims));

  // The same bytes seen as the result's physical array, then back to logical order.
  std::vector<int64_t> out_m2m = out_shape.MinorToMajor();
  std::vector<int64_t> out_major(out_m2m.rbegin(), out_m2m.rend());
  std::vector<int64_t> phys_out_dims;
  for (int64_t d : out_major) phys_out_dims.push_back(out_shape.dimensions(static_cast<int>(d)));
  Literal phys_out = physical.Reshape(phys_out_dims);
  // Logical dim d is physical dim j where out_major[j] == d.
  std::vector<int64_t> inverse(out_major.size());
  for (size_t j = 0; j < out_major.size(); ++j) inverse[out_major[j]] = static_cast<int64_t>(j);
  return TransposeLiteral(phys_out, inverse, out_shape);
}

absl::StatusOr<Literal> Transpose(const HloInstruction& instr, const Literal& operand) {
  const std::vector<int64_t>& perm = instr.dimensions();
  if (!IsPermutation(perm, operand.shape().rank())) {
    return InvalidArgument(instr, absl::StrCat("transpose dimensions ", Dims(perm),
                                               " are not a permutation of the operand's rank ",
                                               operand.shape().rank()));
  }
  for (size_t i = 0; i < perm.size(); ++i) {
    if (instr.shape().dimensions(static_cast<int>(i)) !=
        operand.shape().dimensions(static_cast<int>(perm[i]))) {
      return InvalidArgument(
          instr, absl::StrCat("transpose of ", operand.shape().ToString(false), " by ", Dims(perm),
                              " cannot give ", instr.shape().ToString(false)));
    }
  }
  return TransposeLiteral(operand, perm, instr.shape());
}

absl::StatusOr<Literal> Slice(const HloInstruction& instr, const Literal& operand) {
  const auto& a = instr.attrs();
  const int rank = operand.shape().rank();
  if (static_cast<int>(a.slice_starts.size()) != rank ||
      static_cast<int>(a.slice_limits.size()) != rank) {
    return InvalidArgument(instr, "slice needs one [start:limit:stride] per operand dimension");
  }
  std::vector<int64_t> op_strides = RowMajorStrides(operand.shape().dimensions());
  std::vector<int64_t> strides(rank);
  int64_t offset = 0;
  for (int i = 0; i < rank; ++i) {
    int64_t start = a.slice_starts[i], limit = a.slice_limits[i];
    int64_t stride = a.slice_strides.empty() ? 1 : a.slice_strides[i];
    int64_t size = operand.shape().dimensions(i);
    if (start < 0 || limit > size || start > limit || stride < 1) {
      return InvalidArgument(
          instr, absl::StrCat("slice [", start, ":", limit, ":", stride,
                              "] is out of range for dimension ", i, " of size ", size));
    }
    // ceil((limit - start) / stride), without forming limit - start + stride - 1.
    int64_t expect = limit == start ? 0 : (limit - start - 1) / stride + 1;
    if (instr.shape().dimensions(i) != expect) {
      return InvalidArgument(
          instr, absl::StrCat("slice result dimension ", i, " is ", instr.shape().dimensions(i),
                              ", expected ", expect));
    }
    offset += start * op_strides[i];
    // With one element the stride is never used (and stride * op_strides[i] may overflow for
    // a huge stride); with more, (expect - 1) * stride < size keeps the product in range.
    strides[i] = expect <= 1 ? 0 : stride * op_strides[i];
  }
  Literal out(instr.shape());
  StridedGather(operand.untyped_data(), ElemSize(operand), instr.shape().dimensions(), offset,
                strides, out.untyped_data());
  return out;
}

// Start indices of dynamic-slice / dynamic-update-slice: one scalar operand per dimension
// (or, in old HLO, one rank-1 operand), each clamped so the window stays inside.
absl::StatusOr<std::vector<int64_t>> StartIndices(const HloInstruction& instr, Operands index_ops,
                                                  const std::vector<int64_t>& operand_dims,
                                                  const std::vector<int64_t>& window) {
  const size_t rank = operand_dims.size();
  std::vector<int64_t> starts;
  if (index_ops.size() == 1 && index_ops[0]->shape().rank() == 1 && rank > 0) {
    if (static_cast<size_t>(index_ops[0]->element_count()) != rank) {
      return InvalidArgument(instr, "start index vector must have one entry per dimension");
    }
    for (size_t i = 0; i < rank; ++i)
      starts.push_back(ReadIndex(*index_ops[0], static_cast<int64_t>(i)));
  } else {
    if (index_ops.size() != rank) {
      return InvalidArgument(
          instr, absl::StrCat("expected ", rank, " start indices, got ", index_ops.size()));
    }
    for (size_t i = 0; i < rank; ++i) {
      if (index_ops[i]->element_count() != 1 || !IsInteger(index_ops[i]->shape().element_type())) {
        return InvalidArgument(instr,
                               absl::StrCat("start index ", i, " must be an integer scalar, got ",
                                            index_ops[i]->shape().ToString(false)));
      }
      starts.push_back(ReadIndex(*index_ops[i]));
    }
  }
  for (size_t i = 0; i < rank; ++i) {
    if (window[i] > operand_dims[i] || window[i] < 0) {
      return InvalidArgument(instr, absl::StrCat("window size ", window[i], " exceeds dimension ",
                                                 i, " of size ", operand_dims[i]));
    }
    starts[i] = std::clamp<int64_t>(starts[i], 0, operand_dims[i] - window[i]);
  }
  return starts;
}

absl::StatusOr<Literal> DynamicSlice(const HloInstruction& instr, Operands ops) {
  const Literal& operand = *ops[0];
  const std::vector<int64_t>& dims = operand.shape().dimensions();
  std::vector<int64_t> sizes = instr.attrs().dynamic_slice_sizes;
  if (sizes.empty()) sizes = instr.shape().dimensions();
  if (sizes != instr.shape().dimensions()) {
    return InvalidArgument(
        instr, absl::StrCat("dynamic_slice_sizes ", Dims(sizes), " do not match the result ",
                            instr.shape().ToString(false)));
  }
  if (sizes.size() != dims.size()) {
    return InvalidArgument(instr, "dynamic-slice result rank differs from the operand's");
  }
  absl::StatusOr<std::vector<int64_t>> starts = StartIndices(instr, ops.subspan(1), dims, sizes);
  if (!starts.ok()) return starts.status();
  std::vector<int64_t> strides = RowMajorStrides(dims);
  int64_t offset = 0;
  for (size_t i = 0; i < dims.size(); ++i) offset += (*starts)[i] * strides[i];
  Literal out(instr.shape());
  StridedGather(operand.untyped_data(), ElemSize(operand), sizes, offset, strides,
                out.untyped_data());
  return out;
}

absl::StatusOr<Literal> DynamicUpdateSlice(const HloInstruction& instr, Operands ops) {
  const Literal& operand = *ops[0];
  const Literal& update = *ops[1];
  if (update.shape().element_type() != operand.shape().element_type()) {
    return InvalidArgument(instr, "update element type differs from the operand's");
  }
  const std::vector<int64_t>& dims = operand.shape().dimensions();
  const std::vector<int64_t>& udims = update.shape().dimensions();
  if (udims.size() != dims.size()) {
    return InvalidArgument(instr, "update rank differs from the operand's");
  }
  absl::StatusOr<std::vector<int64_t>> starts = StartIndices(instr, ops.subspan(2), dims, udims);
  if (!starts.ok()) return starts.status();
  Literal out(instr.shape());
  if (operand.size_bytes() > 0)
    std::memcpy(out.untyped_data(), operand.untyped_data(), operand.size_bytes());
  std::vector<int64_t> strides = RowMajorStrides(dims);
  int64_t offset = 0;
  for (size_t i = 0; i < dims.size(); ++i) offset += (*starts)[i] * strides[i];
  StridedCopy(update.untyped_data(), ElemSize(update), udims, 0, RowMajorStrides(udims),
              out.untyped_data(), offset, strides);
  return out;
}

absl::StatusOr<Literal> Concatenate(const HloInstruction& instr, Operands ops) {
  if (ops.empty()) return InvalidArgument(instr, "concatenate needs at least one operand");
  if (instr.dimensions().size() != 1) {
    return InvalidArgument(instr, "concatenate needs exactly one dimension in dimensions={...}");
  }
  const int64_t dim = instr.dimensions()[0];
  const Shape& out_shape = instr.shape();
  if (dim < 0 || dim >= out_shape.rank()) {
    return InvalidArgument(instr, absl::StrCat("concatenate dimension ", dim, " is out of range"));
  }
  int64_t total = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    const Shape& s = ops[k]->shape();
    bool ok = s.rank() == out_shape.rank() && s.element_type() == out_shape.element_type();
    for (int i = 0; ok && i < s.rank(); ++i)
      if (i != dim && s.dimensions(i) != out_shape.dimensions(i)) ok = false;
    if (!ok) {
      return InvalidArgument(
          instr, absl::StrCat("operand ", k, " ", s.ToString(false),
                              " does not fit concatenation into ", out_shape.ToString(false)));
    }
    total += s.dimensions(static_cast<int>(dim));
  }
  if (total != out_shape.dimensions(static_cast<int>(dim))) {
    return InvalidArgument(
        instr, absl::StrCat("operands add up to ", total, " along dimension ", dim, ", result has ",
                            out_shape.dimensions(static_cast<int>(dim))));
  }
  // View every array as [outer, dim * inner] and copy one contiguous run per operand.
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < dim; ++i) outer *= out_shape.dimensions(i);
  for (int i = static_cast<int>(dim) + 1; i < out_shape.rank(); ++i)
    inner *= out_shape.dimensions(i);
  const int64_t esize = ByteSizeOf(out_shape.element_type());
  Literal out(out_shape);
  uint8_t* dst = out.untyped_data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Literal* op : ops) {
      int64_t run = op->shape().dimensions(static_cast<int>(dim)) * inner * esize;
      if (run == 0) continue;
      std::memcpy(dst, op->untyped_data() + o * run, static_cast<size_t>(run));
      dst += run;
    }
  }
  return out;
}

absl::StatusOr<Literal> Pad(const HloInstruction& instr, Operands ops) {
  const Literal& operand = *ops[0];
  const Literal& pad_value = *ops[1];
  const PaddingConfig& cfg = instr.attrs().padding_config;
  const int rank = operand.shape().rank();
  if (static_cast<int>(cfg.size()) != rank) {
    return InvalidArgument(instr, "padding config needs one entry per operand dimension");
  }
  if (pad_value.element_count() != 1 ||
      pad_value.shape().element_type() != operand.shape().element_type()) {
    return InvalidArgument(instr, "padding value must be a scalar of the operand's element type");
  }
  const Shape& out_shape = instr.shape();
  for (int i = 0; i < rank; ++i) {
    int64_t n = operand.shape().dimensions(i);
    const PaddingDimension& p = cfg[i];
    if (p.interior_padding < 0)
      return InvalidArgument(instr, "interior padding must be non-negative");
    std::optional<int64_t> expect =
        CheckedPaddedSize(n, p.interior_padding, p.edge_padding_low, p.edge_padding_high);
    if (!expect)
      return InvalidArgument(instr, absl::StrCat("padding dimension ", i, " overflows 64 bits"));
    if (*expect != out_shape.dimensions(i) || *expect < 0) {
      return InvalidArgument(instr, absl::StrCat("padding dimension ", i, " gives size ", *expect,
                                                 ", result has ", out_shape.dimensions(i)));
    }
  }
  Literal out(out_shape);
  const int64_t esize = ElemSize(operand);
  // Fill with the padding value, then place the operand elements that land inside (negative
  // edge padding crops).
  FillWithScalar(out, pad_value);
  if (operand.element_count() == 0 || out.element_count() == 0) return out;
  std::vector<int64_t> in_strides = RowMajorStrides(operand.shape().dimensions());
  std::vector<int64_t> out_strides = RowMajorStrides(out_shape.dimensions());
  std::vector<int64_t> box(rank), src_strides(rank), dst_strides(rank);
  int64_t src_off = 0, dst_off = 0;
  // CheckedPaddedSize above bounds everything formed here: -low, out_n - 1 - low and
  // (n - 1) * step all fit in int64.
  for (int i = 0; i < rank; ++i) {
    const int64_t n = operand.shape().dimensions(i), out_n = out_shape.dimensions(i);
    const int64_t low = cfg[i].edge_padding_low;
    // A lone element has no interior padding (which may then be as large as INT64_MAX).
    const int64_t step = n > 1 ? cfg[i].interior_padding + 1 : 1;
    // Operand indices j with 0 <= low + j * step < out_n.
    int64_t first = low >= 0 ? 0 : (-low - 1) / step + 1;
    int64_t last = low > out_n - 1 ? -1 : std::min(n - 1, (out_n - 1 - low) / step);
    if (last < first) return out;  // no operand element lands inside the result
    box[i] = last - first + 1;
    src_off += first * in_strides[i];
    dst_off += (low + first * step) * out_strides[i];
    src_strides[i] = in_strides[i];
    dst_strides[i] = box[i] == 1 ? 0 : step * out_strides[i];
  }
  StridedCopy(operand.untyped_data(), esize, box, src_off, src_strides, out.untyped_data(), dst_off,
              dst_strides);
  return out;
}

absl::StatusOr<Literal> Reverse(const HloInstruction& instr, const Literal& operand) {
  const std::vector<int64_t>& dims = operand.shape().dimensions();
  std::vector<int64_t> strides = RowMajorStrides(dims);
  int64_t offset = 0;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : instr.dimensions()) {
    if (d < 0 || d >= static_cast<int64_t>(dims.size()) || seen[d]) {
      return InvalidArgument(instr,
                             absl::StrCat("reverse dimension ", d, " is out of range or repeated"));
    }
    seen[d] = true;
    if (dims[d] == 0) continue;
    offset += (dims[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  Literal out(instr.shape());
  StridedGather(operand.untyped_data(), ElemSize(operand), dims, offset, strides,
                out.untyped_data());
  return out;
}

absl::StatusOr<Literal> Iota(const HloInstruction& instr) {
  const Shape& shape = instr.shape();
  const int64_t dim = instr.attrs().iota_dimension;
  if (dim < 0 || dim >= shape.rank()) {
    return InvalidArgument(instr, absl::StrCat("iota_dimension ", dim, " is out of range for ",
                                               shape.ToString(false)));
  }
  Literal out(shape);
  int64_t inner = 1;
  for (int i = static_cast<int>(dim) + 1; i < shape.rank(); ++i) inner *= shape.dimensions(i);
  const int64_t size = shape.dimensions(static_cast<int>(dim));
  PrimitiveTypeSwitch(shape.element_type(), [&](auto tag) {
    using T = decltype(tag);
    auto d = out.data<T>();
    for (size_t i = 0; i < d.size(); ++i) {
      int64_t v = (static_cast<int64_t>(i) / inner) % size;
      if constexpr (std::is_same_v<T, bool>) {
        d[i] = v != 0;
      } else if constexpr (IsComplexT<T>::value) {
        d[i] = T(static_cast<typename T::value_type>(v), 0);
      } else if constexpr (kIsNarrowFloatT<T>) {
        d[i] = T(static_cast<float>(v));
      } else {
        d[i] = static_cast<T>(v);
      }
    }
  });
  return out;
}

absl::StatusOr<Literal> GetDimensionSize(const HloInstruction& instr, const Literal& operand) {
  if (instr.dimensions().size() != 1 || instr.dimensions()[0] < 0 ||
      instr.dimensions()[0] >= operand.shape().rank()) {
    return InvalidArgument(instr, "get-dimension-size needs one valid dimension");
  }
  // Dynamic dimensions are evaluated at their bound.
  Literal out(instr.shape());
  out.SetFromDouble(
      0, static_cast<double>(operand.shape().dimensions(static_cast<int>(instr.dimensions()[0]))));
  return out;
}

}  // namespace

absl::StatusOr<Literal> EvalDataMovement(const HloInstruction& instr, Operands ops) {
  const HloOpcode op = instr.opcode();
  if (!instr.shape().IsArray()) {
    return InvalidArgument(instr,
                           "'" + std::string(HloOpcodeString(op)) + "' must produce an array");
  }
  int expected = HloOpcodeArity(op);
  if (auto s = CheckArrayOperands(instr, ops, expected); !s.ok()) return s;
  if (op != HloOpcode::kIota && op != HloOpcode::kGetDimensionSize && op != HloOpcode::kBitcast) {
    if (ops.empty()) return InvalidArgument(instr, "missing operand");
    if (auto s = CheckElementType(instr, *ops[0]); !s.ok()) return s;
  }
  switch (op) {
    case HloOpcode::kBroadcast:
      return Broadcast(instr, *ops[0]);
    case HloOpcode::kReshape:
      return Reshape(instr, *ops[0]);
    case HloOpcode::kBitcast:
      return Bitcast(instr, *ops[0]);
    case HloOpcode::kTranspose:
      return Transpose(instr, *ops[0]);
    case HloOpcode::kCopy:
      return Reshape(instr, *ops[0]);  // same dims, logical data unchanged
    case HloOpcode::kSlice:
      return Slice(instr, *ops[0]);
    case HloOpcode::kDynamicSlice:
      return DynamicSlice(instr, ops);
    case HloOpcode::kDynamicUpdateSlice:
      if (ops.size() < 2)
        return InvalidArgument(instr, "dynamic-update-slice needs an operand and an update");
      return DynamicUpdateSlice(instr, ops);
    case HloOpcode::kConcatenate:
      return Concatenate(instr, ops);
    case HloOpcode::kPad:
      return Pad(instr, ops);
    case HloOpcode::kReverse:
      return Reverse(instr, *ops[0]);
    case HloOpcode::kIota:
      return Iota(instr);
    case HloOpcode::kGetDimensionSize:
      return GetDimensionSize(instr, *ops[0]);
    default:
      return Unimplemented(
          instr, "'" + std::string(HloOpcodeString(op)) + "' is not a data movement opcode");
  }
}

}  // namespace kiln::eval
