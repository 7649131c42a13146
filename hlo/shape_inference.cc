// Shape inference for every HLO opcode, following XLA's rules (xla/service/shape_inference).
#include "hlo/shape_inference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "hlo/checked_math.h"
#include "hlo/computation.h"

namespace kiln {
namespace {

std::string Str(const Shape& s) { return s.ToString(/*print_layout=*/false); }

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Braces(const std::vector<int64_t>& v) {
  return fmt::format("{{{}}}", fmt::join(v, ","));
}

// Everything one opcode's inference needs, plus error construction that names the
// instruction the way every message must: `%name: opcode: detail`.
class Inferrer {
 public:
  Inferrer(const HloInstruction& instr, ShapeRules rules) : instr_(instr), rules_(rules) {}
  bool xla_text() const { return rules_ == ShapeRules::kXlaText; }

  template <typename... Args>
  absl::Status Err(fmt::format_string<Args...> f, Args&&... args) const {
    return absl::InvalidArgumentError(fmt::format("%{}: {}: {}", instr_.name(),
                                                  HloOpcodeString(instr_.opcode()),
                                                  fmt::format(f, std::forward<Args>(args)...)));
  }
  absl::Status CannotInfer(std::string_view why) const {
    return absl::UnimplementedError(fmt::format("%{}: {}: cannot infer the result shape ({})",
                                                instr_.name(), HloOpcodeString(instr_.opcode()),
                                                why));
  }

  const HloInstruction& instr() const { return instr_; }
  const Shape& op(int i) const { return instr_.operand(i)->shape(); }
  int n() const { return instr_.operand_count(); }
  const Shape& declared() const { return instr_.shape(); }
  const InstructionAttributes& attrs() const { return instr_.attrs(); }

  absl::Status RequireArray(const Shape& s, std::string_view what) const {
    if (!s.IsArray()) return Err("{} must be an array but is {}", what, Str(s));
    return absl::OkStatus();
  }
  absl::Status RequireOperandArrays() const {
    for (int i = 0; i < n(); ++i)
      if (!op(i).IsArray()) return Err("operand {} must be an array but is {}", i, Str(op(i)));
    return absl::OkStatus();
  }
  absl::Status RequireScalar(const Shape& s, std::string_view what) const {
    if (!s.IsArray() || s.rank() != 0) return Err("{} must be a scalar but is {}", what, Str(s));
    return absl::OkStatus();
  }
  // Dimension numbers listed in `dims` must lie in [0, rank) and appear once.
  absl::Status CheckDimList(const std::vector<int64_t>& dims, int64_t rank,
                            std::string_view what) const {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0 || dims[i] >= rank)
        return Err("{} {} is out of range for rank {}", what, dims[i], rank);
      for (size_t j = 0; j < i; ++j)
        if (dims[j] == dims[i]) return Err("{} {} appears more than once", what, dims[i]);
    }
    return absl::OkStatus();
  }
  absl::Status CheckSorted(const std::vector<int64_t>& dims, std::string_view what) const {
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i] <= dims[i - 1]) return Err("{} {} must be sorted", what, Braces(dims));
    return absl::OkStatus();
  }

  absl::StatusOr<Shape> Infer();

 private:
  absl::StatusOr<Shape> Unary();
  absl::StatusOr<Shape> Binary();
  absl::StatusOr<Shape> Select();
  absl::StatusOr<Shape> Clamp();
  absl::StatusOr<Shape> Convert();
  absl::StatusOr<Shape> BitcastConvert();
  absl::StatusOr<Shape> Bitcast();
  absl::StatusOr<Shape> StochasticConvert();
  absl::StatusOr<Shape> Broadcast();
  absl::StatusOr<Shape> Reshape();
  absl::StatusOr<Shape> Transpose();
  absl::StatusOr<Shape> Slice();
  absl::Status CheckStartIndices(int first, const Shape& a);
  absl::StatusOr<Shape> DynamicSlice();
  absl::StatusOr<Shape> DynamicUpdateSlice();
  absl::StatusOr<Shape> Concatenate();
  absl::StatusOr<Shape> Pad();
  absl::StatusOr<Shape> Reverse();
  absl::StatusOr<Shape> Iota();
  absl::StatusOr<Shape> Dot();
  absl::StatusOr<Shape> DotShape(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dn);
  absl::StatusOr<Shape> RaggedDot();
  absl::StatusOr<Shape> ScaledDot();
  absl::StatusOr<Shape> Convolution();
  absl::StatusOr<Shape> Reduce();
  absl::StatusOr<Shape> ReduceWindow();
  absl::StatusOr<Shape> SelectAndScatter();
  absl::StatusOr<Shape> Gather();
  absl::StatusOr<Shape> Scatter();
  absl::StatusOr<Shape> Sort();
  absl::StatusOr<Shape> Map();
  absl::StatusOr<Shape> Scan();
  absl::StatusOr<Shape> GetTupleElement();
  absl::StatusOr<Shape> CalledRoot(int index, std::string_view role);
  absl::StatusOr<Shape> Conditional();
  absl::StatusOr<Shape> BatchNorm();
  absl::StatusOr<Shape> DimensionSize();
  absl::StatusOr<Shape> RngBitGenerator();
  absl::StatusOr<Shape> Async();
  absl::StatusOr<Shape> Rng();
  absl::StatusOr<Shape> TopK();
  absl::StatusOr<Shape> Cholesky();
  absl::StatusOr<Shape> TriangularSolve();
  absl::StatusOr<Shape> Fft();
  absl::StatusOr<Shape> Collective();
  absl::StatusOr<std::vector<int64_t>> WindowOutput(const std::vector<int64_t>& base,
                                                    const Window& w, std::string_view what);
  absl::StatusOr<int64_t> SingleDimension(std::string_view what, int64_t rank);

  const HloInstruction& instr_;
  ShapeRules rules_;
};

Shape ArrayOf(PrimitiveType t, std::vector<int64_t> dims) { return Shape(t, std::move(dims)); }

// Result of ops that return one array per input, as a tuple when there are several.
Shape OneOrTuple(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes[0]);
  return Shape::Tuple(std::move(shapes));
}

PrimitiveType ComplexComponentType(PrimitiveType t) {
  return t == PrimitiveType::C128 ? PrimitiveType::F64 : PrimitiveType::F32;
}

bool IsFloatingOrComplex(PrimitiveType t) { return IsFloating(t) || IsComplex(t); }

absl::StatusOr<Shape> Inferrer::Unary() {
  const Shape& a = op(0);
  // copy and domain of a tuple are a (deep) copy of it, as in XLA.
  const bool any_shape =
      instr_.opcode() == HloOpcode::kCopy || instr_.opcode() == HloOpcode::kDomain;
  if (any_shape && !a.IsArray()) return a;
  if (!a.IsArray()) return Err("operand must be an array but is {}", Str(a));
  PrimitiveType t = a.element_type();
  auto type_error = [&](std::string_view expected) {
    return Err("operand element type {} is not {}", PrimitiveTypeName(t), expected);
  };
  switch (instr_.opcode()) {
    case HloOpcode::kAbs:
      if (!(IsSignedInt(t) || IsFloatingOrComplex(t)))
        return type_error("signed, floating or complex");
      if (IsComplex(t)) return ArrayOf(ComplexComponentType(t), a.dimensions());
      return a;
    case HloOpcode::kReal:
    case HloOpcode::kImag:
      if (!IsFloatingOrComplex(t)) return type_error("floating or complex");
      if (IsComplex(t)) return ArrayOf(ComplexComponentType(t), a.dimensions());
      return a;
    case HloOpcode::kIsFinite:
      if (!IsFloating(t)) return type_error("floating");
      return ArrayOf(PrimitiveType::PRED, a.dimensions());
    case HloOpcode::kNot:
      if (!(t == PrimitiveType::PRED || IsInteger(t))) return type_error("pred or integral");
      return a;
    case HloOpcode::kClz:
    case HloOpcode::kPopulationCount:
      if (!IsInteger(t)) return type_error("integral");
      return a;
    case HloOpcode::kNegate:
      if (t == PrimitiveType::PRED) return type_error("numeric");
      return a;
    case HloOpcode::kSign:
      if (!(IsSignedInt(t) || IsFloatingOrComplex(t)))
        return type_error("signed, floating or complex");
      return a;
    case HloOpcode::kCeil:
    case HloOpcode::kFloor:
    case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven:
      if (!IsFloating(t)) return type_error("floating");
      return a;
    case HloOpcode::kReducePrecision:
      if (!IsFloating(t)) return type_error("floating");
      if (attrs().exponent_bits < 1)
        return Err("exponent_bits={} must be at least 1", attrs().exponent_bits);
      if (attrs().mantissa_bits < 0)
        return Err("mantissa_bits={} must not be negative", attrs().mantissa_bits);
      return a;
    case HloOpcode::kCopy:
    case HloOpcode::kDomain:
      return a;
    default:  // transcendental functions: cbrt, cos, erf, exp, log, logistic, rsqrt, ...
      if (!IsFloatingOrComplex(t)) return type_error("floating or complex");
      return a;
  }
}

absl::StatusOr<Shape> Inferrer::Binary() {
  const Shape& a = op(0);
  const Shape& b = op(1);
  if (!a.IsArray()) return Err("lhs must be an array but is {}", Str(a));
  if (!b.IsArray()) return Err("rhs must be an array but is {}", Str(b));
  if (a.dimensions() != b.dimensions())
    return Err("operand shapes {} and {} have different dimensions", Str(a), Str(b));
  PrimitiveType t = a.element_type();
  if (a.element_type() != b.element_type()) {
    // Mixed floating-point precision (XLA's text form only): the wider type is the result's.
    bool mixed_fp = xla_text() && IsFloating(a.element_type()) && IsFloating(b.element_type());
    if (!mixed_fp)
      return Err("operand element types {} and {} differ", PrimitiveTypeName(a.element_type()),
                 PrimitiveTypeName(b.element_type()));
    if (BitWidth(b.element_type()) > BitWidth(t)) t = b.element_type();
  }
  auto result = [&] { return t == a.element_type() ? a : ArrayOf(t, a.dimensions()); };
  auto type_error = [&](std::string_view expected) {
    return Err("operand element type {} is not {}", PrimitiveTypeName(t), expected);
  };
  switch (instr_.opcode()) {
    case HloOpcode::kCompare:
      if (!attrs().comparison_direction) return Err("missing comparison direction");
      return ArrayOf(PrimitiveType::PRED, a.dimensions());
    case HloOpcode::kComplex:
      if (t != PrimitiveType::F32 && t != PrimitiveType::F64) return type_error("f32 or f64");
      return ArrayOf(t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64,
                     a.dimensions());
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
      if (!(t == PrimitiveType::PRED || IsInteger(t))) return type_error("pred or integral");
      return a;
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical:
      if (!IsInteger(t)) return type_error("integral");
      return a;
    case HloOpcode::kAtan2:
      if (!IsFloatingOrComplex(t)) return type_error("floating or complex");
      return result();
    default:
      return result();
  }
}

absl::StatusOr<Shape> Inferrer::Select() {
  const Shape& pred = op(0);
  const Shape& on_true = op(1);
  const Shape& on_false = op(2);
  if (!on_true.IsArray() || !on_false.IsArray())
    return Err("on_true and on_false must be arrays but are {} and {}", Str(on_true),
               Str(on_false));
  if (!on_true.Compatible(on_false))
    return Err("on_true {} and on_false {} differ", Str(on_true), Str(on_false));
  if (!pred.IsArray() || pred.element_type() != PrimitiveType::PRED)
    return Err("predicate must be a pred array but is {}", Str(pred));
  if (pred.rank() != 0 && pred.dimensions() != on_true.dimensions())
    return Err("predicate {} must be a scalar or have the dimensions of {}", Str(pred),
               Str(on_true));
  return on_true;
}

absl::StatusOr<Shape> Inferrer::Clamp() {
  const Shape& lo = op(0);
  const Shape& x = op(1);
  const Shape& hi = op(2);
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  for (const auto& [bound, name] : {std::pair{&lo, "min"}, std::pair{&hi, "max"}}) {
    if (bound->element_type() != x.element_type())
      return Err("{} element type {} differs from operand element type {}", name,
                 PrimitiveTypeName(bound->element_type()), PrimitiveTypeName(x.element_type()));
    if (bound->rank() != 0 && bound->dimensions() != x.dimensions())
      return Err("{} {} must be a scalar or have the dimensions of operand {}", name, Str(*bound),
                 Str(x));
  }
  return x;
}

absl::StatusOr<Shape> Inferrer::Convert() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (!declared().IsArray()) return Err("result must be an array but is {}", Str(declared()));
  PrimitiveType from = a.element_type(), to = declared().element_type();
  if (IsComplex(from) && !IsComplex(to))
    return Err("conversion from complex {} to real {} is not allowed (use real/imag)",
               PrimitiveTypeName(from), PrimitiveTypeName(to));
  return ArrayOf(to, a.dimensions());
}

absl::StatusOr<Shape> Inferrer::StochasticConvert() {
  const Shape& a = op(0);
  const Shape& r = op(1);
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  if (!IsFloating(a.element_type()))
    return Err("operand element type {} is not floating", PrimitiveTypeName(a.element_type()));
  if (!IsUnsignedInt(r.element_type()) || BitWidth(r.element_type()) != BitWidth(a.element_type()))
    return Err("random operand {} must be unsigned with the bit width of {}", Str(r),
               PrimitiveTypeName(a.element_type()));
  if (r.dimensions() != a.dimensions())
    return Err("random operand {} must have the dimensions of operand {}", Str(r), Str(a));
  if (!declared().IsArray()) return Err("result must be an array but is {}", Str(declared()));
  return ArrayOf(declared().element_type(), a.dimensions());
}

// XLA's rule: equal bit widths keep the dims; a wider input gains a minor dimension of size
// ratio; a narrower input loses its minor dimension, which must be the ratio.
absl::StatusOr<Shape> Inferrer::BitcastConvert() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (!declared().IsArray()) return Err("result must be an array but is {}", Str(declared()));
  PrimitiveType from = a.element_type(), to = declared().element_type();
  if (IsComplex(from) != IsComplex(to))
    return Err("bitcast between complex and real types ({} to {}) is not allowed",
               PrimitiveTypeName(from), PrimitiveTypeName(to));
  int64_t in_bits = 8 * ByteSizeOf(from), out_bits = 8 * ByteSizeOf(to);
  std::vector<int64_t> dims = a.dimensions();
  if (in_bits == out_bits) return ArrayOf(to, dims);
  if (in_bits > out_bits) {
    dims.push_back(in_bits / out_bits);
    return ArrayOf(to, dims);
  }
  int64_t ratio = out_bits / in_bits;
  if (dims.empty() || dims.back() != ratio)
    return Err("converting {} to the wider {} needs a minor dimension of size {} but operand is {}",
               PrimitiveTypeName(from), PrimitiveTypeName(to), ratio, Str(a));
  dims.pop_back();
  return ArrayOf(to, dims);
}

absl::StatusOr<Shape> Inferrer::Bitcast() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (!declared().IsArray()) return Err("result must be an array but is {}", Str(declared()));
  if (a.byte_size() != declared().byte_size() && !xla_text())
    return Err("result {} has {} bytes but operand {} has {}", Str(declared()),
               declared().byte_size(), Str(a), a.byte_size());
  return ArrayOf(declared().element_type(), declared().dimensions());
}

absl::StatusOr<Shape> Inferrer::Broadcast() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  const Shape& out = declared();
  if (!out.IsArray()) return Err("result must be an array but is {}", Str(out));
  const std::vector<int64_t>& bdims = attrs().dimensions;
  // Old TF dumps omit `dimensions=` when broadcasting a scalar.
  if (static_cast<int>(bdims.size()) != a.rank())
    return Err("dimensions={} has {} entries but operand {} has rank {}", Braces(bdims),
               bdims.size(), Str(a), a.rank());
  if (absl::Status s = CheckDimList(bdims, out.rank(), "broadcast dimension"); !s.ok()) return s;
  for (int i = 0; i < a.rank(); ++i) {
    int64_t od = out.dimensions(static_cast<int>(bdims[i]));
    // XLA's HLO broadcast has no degenerate (size-1) stretching: sizes must be equal.
    if (a.dimensions(i) != od)
      return Err("operand dimension {} has size {} but result dimension {} has size {}", i,
                 a.dimensions(i), bdims[i], od);
  }
  return ArrayOf(a.element_type(), out.dimensions());
}

absl::StatusOr<Shape> Inferrer::Reshape() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  const Shape& out = declared();
  if (!out.IsArray()) return Err("result must be an array but is {}", Str(out));
  if (instr_.opcode() == HloOpcode::kDynamicReshape) {
    if (n() != 1 + out.rank())
      return Err("expects 1 + {} operands (one size per result dimension) but has {}", out.rank(),
                 n());
    for (int i = 1; i < n(); ++i)
      if (op(i).rank() != 0 || !IsInteger(op(i).element_type()))
        return Err("size operand {} must be an integral scalar but is {}", i, Str(op(i)));
    return ArrayOf(a.element_type(), out.dimensions());
  }
  if (a.num_elements() != out.num_elements() && !a.is_dynamic() && !out.is_dynamic())
    return Err("result {} has {} elements but operand {} has {}", Str(out), out.num_elements(),
               Str(a), a.num_elements());
  return ArrayOf(a.element_type(), out.dimensions());
}

absl::StatusOr<Shape> Inferrer::Transpose() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  const std::vector<int64_t>& perm = attrs().dimensions;
  if (static_cast<int>(perm.size()) != a.rank())
    return Err("dimensions={} is not a permutation of the {} dimensions of {}", Braces(perm),
               a.rank(), Str(a));
  if (absl::Status s = CheckDimList(perm, a.rank(), "dimension"); !s.ok()) return s;
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(a.dimensions(static_cast<int>(p)));
  return ArrayOf(a.element_type(), dims);
}

absl::StatusOr<Shape> Inferrer::Slice() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  const auto& starts = attrs().slice_starts;
  const auto& limits = attrs().slice_limits;
  const auto& strides = attrs().slice_strides;
  if (static_cast<int>(starts.size()) != a.rank() || limits.size() != starts.size() ||
      strides.size() != starts.size())
    return Err("slice has {} starts, {} limits and {} strides but operand {} has rank {}",
               starts.size(), limits.size(), strides.size(), Str(a), a.rank());
  std::vector<int64_t> dims;
  for (int i = 0; i < a.rank(); ++i) {
    if (strides[i] < 1) return Err("stride {} of dimension {} must be positive", strides[i], i);
    if (starts[i] < 0 || starts[i] > limits[i] || limits[i] > a.dimensions(i))
      return Err("slice [{}:{}] of dimension {} is out of bounds for size {}", starts[i], limits[i],
                 i, a.dimensions(i));
    // ceil(span / stride) without forming span + stride - 1, which overflows for huge strides.
    int64_t span = limits[i] - starts[i];  // in [0, size]: checked above
    dims.push_back(span == 0 ? 0 : (span - 1) / strides[i] + 1);
  }
  return ArrayOf(a.element_type(), dims);
}

// Start-index operands of dynamic-slice/dynamic-update-slice, from operand `first` on.
// Current form: one integral scalar per dimension of `a`. Old form: one rank-1 vector.
absl::Status Inferrer::CheckStartIndices(int first, const Shape& a) {
  bool vector_form =
      n() == first + 1 && op(first).IsArray() && op(first).rank() == 1 && a.rank() != 1;
  if (!vector_form && n() != first + a.rank())
    return Err("expects {} + {} operands (one start index per dimension of {}) but has {}", first,
               a.rank(), Str(a), n());
  for (int i = first; i < n(); ++i) {
    const Shape& idx = op(i);
    if (!idx.IsArray() || !IsInteger(idx.element_type()) || (!vector_form && idx.rank() != 0))
      return Err("start index operand {} must be an integral scalar but is {}", i, Str(idx));
    if (idx.element_type() != op(first).element_type())
      return Err("start index operands have different types {} and {}", Str(op(first)), Str(idx));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> Inferrer::DynamicSlice() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (absl::Status st = CheckStartIndices(1, a); !st.ok()) return st;
  const auto& sizes = attrs().dynamic_slice_sizes;
  if (static_cast<int>(sizes.size()) != a.rank())
    return Err("dynamic_slice_sizes={} has {} entries but operand {} has rank {}", Braces(sizes),
               sizes.size(), Str(a), a.rank());
  for (int i = 0; i < a.rank(); ++i)
    if (sizes[i] < 0 || sizes[i] > a.dimensions(i))
      return Err("slice size {} of dimension {} exceeds the operand size {}", sizes[i], i,
                 a.dimensions(i));
  return ArrayOf(a.element_type(), sizes);
}

absl::StatusOr<Shape> Inferrer::DynamicUpdateSlice() {
  const Shape& a = op(0);
  const Shape& u = op(1);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (absl::Status s = RequireArray(u, "update"); !s.ok()) return s;
  if (u.element_type() != a.element_type())
    return Err("update element type {} differs from operand element type {}",
               PrimitiveTypeName(u.element_type()), PrimitiveTypeName(a.element_type()));
  if (u.rank() != a.rank())
    return Err("update {} and operand {} have different ranks", Str(u), Str(a));
  if (absl::Status st = CheckStartIndices(2, a); !st.ok()) return st;
  for (int i = 0; i < a.rank(); ++i)
    if (u.dimensions(i) > a.dimensions(i))
      return Err("update dimension {} has size {} but operand dimension has size {}", i,
                 u.dimensions(i), a.dimensions(i));
  return a;
}

absl::StatusOr<int64_t> Inferrer::SingleDimension(std::string_view what, int64_t rank) {
  const auto& dims = attrs().dimensions;
  if (dims.size() != 1)
    return Err("expects exactly one {} in dimensions= but has {}", what, Braces(dims));
  if (dims[0] < 0 || dims[0] >= rank)
    return Err("{} {} is out of range for rank {}", what, dims[0], rank);
  return dims[0];
}

absl::StatusOr<Shape> Inferrer::Concatenate() {
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& first = op(0);
  absl::StatusOr<int64_t> dim = SingleDimension("concatenate dimension", first.rank());
  if (!dim.ok()) return dim.status();
  std::vector<int64_t> dims = first.dimensions();
  for (int i = 1; i < n(); ++i) {
    const Shape& o = op(i);
    if (o.element_type() != first.element_type())
      return Err("operand {} element type {} differs from operand 0 element type {}", i,
                 PrimitiveTypeName(o.element_type()), PrimitiveTypeName(first.element_type()));
    if (o.rank() != first.rank())
      return Err("operand {} {} and operand 0 {} have different ranks", i, Str(o), Str(first));
    for (int d = 0; d < o.rank(); ++d) {
      if (d == *dim) continue;
      if (o.dimensions(d) != first.dimensions(d))
        return Err("operand {} {} differs from operand 0 {} in dimension {}", i, Str(o), Str(first),
                   d);
    }
    std::optional<int64_t> sum = CheckedAdd(dims[*dim], o.dimensions(static_cast<int>(*dim)));
    if (!sum) return Err("concatenated dimension {} overflows 64 bits at operand {}", *dim, i);
    dims[*dim] = *sum;
  }
  return ArrayOf(first.element_type(), dims);
}

absl::StatusOr<Shape> Inferrer::Pad() {
  const Shape& a = op(0);
  const Shape& v = op(1);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (absl::Status s = RequireScalar(v, "padding value"); !s.ok()) return s;
  if (v.element_type() != a.element_type())
    return Err("padding value type {} differs from operand element type {}",
               PrimitiveTypeName(v.element_type()), PrimitiveTypeName(a.element_type()));
  const PaddingConfig& pc = attrs().padding_config;
  if (static_cast<int>(pc.size()) != a.rank())
    return Err("padding has {} dimensions but operand {} has rank {}", pc.size(), Str(a), a.rank());
  std::vector<int64_t> dims;
  for (int i = 0; i < a.rank(); ++i) {
    const PaddingDimension& p = pc[i];
    if (p.interior_padding < 0)
      return Err("interior padding {} of dimension {} is negative", p.interior_padding, i);
    int64_t d = a.dimensions(i);
    std::optional<int64_t> size =
        CheckedPaddedSize(d, p.interior_padding, p.edge_padding_low, p.edge_padding_high);
    if (!size)
      return Err("padding {}_{}_{} of dimension {} (size {}) overflows 64 bits", p.edge_padding_low,
                 p.edge_padding_high, p.interior_padding, i, d);
    if (*size < 0)
      return Err("padding {}_{}_{} makes dimension {} of size {} negative", p.edge_padding_low,
                 p.edge_padding_high, p.interior_padding, i, d);
    dims.push_back(*size);
  }
  return ArrayOf(a.element_type(), dims);
}

absl::StatusOr<Shape> Inferrer::Reverse() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (absl::Status s = CheckDimList(attrs().dimensions, a.rank(), "dimension"); !s.ok()) return s;
  return a;
}

absl::StatusOr<Shape> Inferrer::Iota() {
  const Shape& out = declared();
  if (!out.IsArray()) return Err("result must be an array but is {}", Str(out));
  if (out.rank() == 0) return Err("result must have rank >= 1 but is {}", Str(out));
  int64_t d = attrs().iota_dimension;
  if (d < 0 || d >= out.rank()) return Err("iota_dimension={} is out of range for {}", d, Str(out));
  return ArrayOf(out.element_type(), out.dimensions());
}

absl::StatusOr<Shape> Inferrer::Dot() {
  return DotShape(op(0), op(1), attrs().dot_dimension_numbers.value_or(DotDimensionNumbers{}));
}

absl::StatusOr<Shape> Inferrer::DotShape(const Shape& lhs, const Shape& rhs,
                                         const DotDimensionNumbers& dn) {
  if (absl::Status s = RequireArray(lhs, "lhs"); !s.ok()) return s;
  if (absl::Status s = RequireArray(rhs, "rhs"); !s.ok()) return s;
  if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size())
    return Err("lhs has {} batch dimensions but rhs has {}", dn.lhs_batch_dimensions.size(),
               dn.rhs_batch_dimensions.size());
  if (dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
    return Err("lhs has {} contracting dimensions but rhs has {}",
               dn.lhs_contracting_dimensions.size(), dn.rhs_contracting_dimensions.size());
  std::vector<int64_t> lhs_used = dn.lhs_batch_dimensions, rhs_used = dn.rhs_batch_dimensions;
  lhs_used.insert(lhs_used.end(), dn.lhs_contracting_dimensions.begin(),
                  dn.lhs_contracting_dimensions.end());
  rhs_used.insert(rhs_used.end(), dn.rhs_contracting_dimensions.begin(),
                  dn.rhs_contracting_dimensions.end());
  if (absl::Status s = CheckDimList(lhs_used, lhs.rank(), "lhs batch/contracting dimension");
      !s.ok())
    return s;
  if (absl::Status s = CheckDimList(rhs_used, rhs.rank(), "rhs batch/contracting dimension");
      !s.ok())
    return s;
  for (size_t i = 0; i < dn.lhs_batch_dimensions.size(); ++i) {
    int64_t l = dn.lhs_batch_dimensions[i], r = dn.rhs_batch_dimensions[i];
    if (lhs.dimensions(static_cast<int>(l)) != rhs.dimensions(static_cast<int>(r)))
      return Err("lhs batch dimension {} has size {} but rhs batch dimension {} has size {}", l,
                 lhs.dimensions(static_cast<int>(l)), r, rhs.dimensions(static_cast<int>(r)));
  }
  for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
    int64_t l = dn.lhs_contracting_dimensions[i], r = dn.rhs_contracting_dimensions[i];
    if (lhs.dimensions(static_cast<int>(l)) != rhs.dimensions(static_cast<int>(r)))
      return Err(
          "lhs contracting dimension {} has size {} but rhs contracting dimension {} has size {}",
          l, lhs.dimensions(static_cast<int>(l)), r, rhs.dimensions(static_cast<int>(r)));
  }
  std::vector<int64_t> dims;
  for (int64_t b : dn.lhs_batch_dimensions) dims.push_back(lhs.dimensions(static_cast<int>(b)));
  for (int i = 0; i < lhs.rank(); ++i)
    if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end())
      dims.push_back(lhs.dimensions(i));
  for (int i = 0; i < rhs.rank(); ++i)
    if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end())
      dims.push_back(rhs.dimensions(i));
  // The result type may differ from the operands' (preferred_element_type): take the
  // declared one when it is an array.
  PrimitiveType t = declared().IsArray() ? declared().element_type() : lhs.element_type();
  return ArrayOf(t, dims);
}

// ragged-dot (XLA's RaggedDot, jax.lax.ragged_dot_general): a dot whose lhs has one ragged
// dimension cut into consecutive groups by group_sizes. Ragged in a free dimension (rhs has a
// group dimension): [b,m,k] x [g,b,k,n] -> [b,m,n]; ragged in a contracting dimension: ->
// [g,b,m,n]; ragged in a batch dimension: -> [b,m,n]. group_sizes is [g] or has the batch
// (and outer) dimensions before g.
absl::StatusOr<Shape> Inferrer::RaggedDot() {
  const Shape& lhs = op(0);
  const Shape& rhs = op(1);
  const Shape& sizes = op(2);
  if (absl::Status s = RequireArray(sizes, "group_sizes"); !s.ok()) return s;
  if (!IsInteger(sizes.element_type()) || sizes.rank() < 1)
    return Err("group_sizes must be an integer array of rank >= 1 but is {}", Str(sizes));
  if (absl::Status s = RequireArray(lhs, "lhs"); !s.ok()) return s;
  if (absl::Status s = RequireArray(rhs, "rhs"); !s.ok()) return s;
  DotDimensionNumbers dn = attrs().dot_dimension_numbers.value_or(DotDimensionNumbers{});
  if (dn.lhs_ragged_dimensions.size() != 1)
    return Err("needs exactly one lhs_ragged_dims, has {}", dn.lhs_ragged_dimensions.size());
  if (dn.rhs_group_dimensions.size() > 1)
    return Err("has {} rhs_group_dims, at most one is allowed", dn.rhs_group_dimensions.size());
  const int64_t r = dn.lhs_ragged_dimensions[0];
  if (r < 0 || r >= lhs.rank())
    return Err("lhs_ragged_dims={{{}}} is out of range for {}", r, Str(lhs));
  const bool ragged_contracting = Contains(dn.lhs_contracting_dimensions, r);
  const bool ragged_batch = Contains(dn.lhs_batch_dimensions, r);
  const bool has_group = !dn.rhs_group_dimensions.empty();
  if ((ragged_contracting || ragged_batch) == has_group)
    return Err("a ragged {} dimension {} rhs_group_dims",
               ragged_contracting ? "contracting"
               : ragged_batch     ? "batch"
                                  : "non-contracting",
               has_group ? "takes no" : "needs");
  // Without the group dimension rhs is an ordinary dot operand.
  Shape rhs_plain = rhs;
  if (has_group) {
    const int64_t gd = dn.rhs_group_dimensions[0];
    if (gd < 0 || gd >= rhs.rank() || Contains(dn.rhs_batch_dimensions, gd) ||
        Contains(dn.rhs_contracting_dimensions, gd))
      return Err("rhs_group_dims={{{}}} is not a free dimension of {}", gd, Str(rhs));
    std::vector<int64_t> dims;
    for (int i = 0; i < rhs.rank(); ++i)
      if (i != gd) dims.push_back(rhs.dimensions(i));
    rhs_plain = Shape(rhs.element_type(), dims);
    if (sizes.dimensions().back() != rhs.dimensions(static_cast<int>(gd)))
      return Err("group_sizes {} has {} groups but rhs group dimension {} has size {}", Str(sizes),
                 sizes.dimensions().back(), gd, rhs.dimensions(static_cast<int>(gd)));
    auto shift = [gd](std::vector<int64_t>& v) {
      for (int64_t& d : v)
        if (d > gd) --d;
    };
    shift(dn.rhs_batch_dimensions);
    shift(dn.rhs_contracting_dimensions);
  }
  absl::StatusOr<Shape> out = DotShape(lhs, rhs_plain, dn);
  if (!out.ok()) return out;
  if (!ragged_contracting) return out;
  std::vector<int64_t> dims = {sizes.dimensions().back()};
  dims.insert(dims.end(), out->dimensions().begin(), out->dimensions().end());
  return ArrayOf(out->element_type(), dims);
}

// scaled-dot(lhs, rhs, lhs_scale, rhs_scale): a dot of block-scaled operands (MX formats).
// Each scale is a scalar or has the operand's rank with every operand dimension a whole
// number of blocks of it; an element is multiplied by the scale of its block.
absl::StatusOr<Shape> Inferrer::ScaledDot() {
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  for (int k = 0; k < 2; ++k) {
    const Shape& x = op(k);
    const Shape& scale = op(k + 2);
    const char* side = k == 0 ? "lhs" : "rhs";
    if (scale.rank() == 0) continue;
    if (scale.rank() != x.rank())
      return Err("{}_scale {} must be a scalar or have the rank of {} {}", side, Str(scale), side,
                 Str(x));
    for (int d = 0; d < x.rank(); ++d) {
      const int64_t n = x.dimensions(d), b = scale.dimensions(d);
      if (b == 0 ? n != 0 : n % b != 0)
        return Err("{} dimension {} of size {} is not a whole number of blocks of {}_scale {}",
                   side, d, n, side, Str(scale));
    }
  }
  return DotShape(op(0), op(1), attrs().dot_dimension_numbers.value_or(DotDimensionNumbers{}));
}

absl::StatusOr<std::vector<int64_t>> Inferrer::WindowOutput(const std::vector<int64_t>& base,
                                                            const Window& w,
                                                            std::string_view what) {
  if (w.dimensions.size() != base.size())
    return Err("window has {} dimensions but {} has {}", w.dimensions.size(), what, base.size());
  std::vector<int64_t> out;
  for (size_t i = 0; i < base.size(); ++i) {
    const WindowDimension& d = w.dimensions[i];
    if (d.size < 0) return Err("window dimension {} has negative size {}", i, d.size);
    if (d.stride < 1) return Err("window dimension {} has non-positive stride {}", i, d.stride);
    if (d.window_dilation < 1 || d.base_dilation < 1)
      return Err("window dimension {} has non-positive dilation (rhs {} lhs {})", i,
                 d.window_dilation, d.base_dilation);
    std::optional<int64_t> padded =
        CheckedPaddedSize(base[i], d.base_dilation - 1, d.padding_low, d.padding_high);
    if (!padded)
      return Err("window dimension {}: lhs_dilate={} and pad={}_{} of {} size {} overflow 64 bits",
                 i, d.base_dilation, d.padding_low, d.padding_high, what, base[i]);
    if (*padded < 0)
      return Err("padding {}_{} makes dimension {} of {} negative", d.padding_low, d.padding_high,
                 i, what);
    std::optional<int64_t> dilated_window =
        CheckedPaddedSize(d.size, d.window_dilation - 1, /*low=*/0, /*high=*/0);
    if (!dilated_window)
      return Err("window dimension {}: size {} with rhs_dilate={} overflows 64 bits", i, d.size,
                 d.window_dilation);
    out.push_back(*padded < *dilated_window ? 0 : (*padded - *dilated_window) / d.stride + 1);
  }
  return out;
}

absl::StatusOr<Shape> Inferrer::Convolution() {
  const Shape& lhs = op(0);
  const Shape& rhs = op(1);
  if (absl::Status s = RequireArray(lhs, "lhs"); !s.ok()) return s;
  if (absl::Status s = RequireArray(rhs, "rhs"); !s.ok()) return s;
  if (!attrs().convolution_dimension_numbers) return Err("missing dim_labels");
  const ConvolutionDimensionNumbers& dn = *attrs().convolution_dimension_numbers;
  size_t ns = dn.input_spatial_dimensions.size();
  if (dn.kernel_spatial_dimensions.size() != ns || dn.output_spatial_dimensions.size() != ns)
    return Err("dim_labels have {} input, {} kernel and {} output spatial dimensions", ns,
               dn.kernel_spatial_dimensions.size(), dn.output_spatial_dimensions.size());
  if (static_cast<size_t>(lhs.rank()) != ns + 2)
    return Err("lhs {} must have rank {} (batch, feature and {} spatial dimensions)", Str(lhs),
               ns + 2, ns);
  if (static_cast<size_t>(rhs.rank()) != ns + 2)
    return Err(
        "rhs {} must have rank {} (input feature, output feature and {} spatial "
        "dimensions)",
        Str(rhs), ns + 2, ns);
  std::vector<int64_t> in_dims{dn.input_batch_dimension, dn.input_feature_dimension};
  in_dims.insert(in_dims.end(), dn.input_spatial_dimensions.begin(),
                 dn.input_spatial_dimensions.end());
  std::vector<int64_t> k_dims{dn.kernel_input_feature_dimension,
                              dn.kernel_output_feature_dimension};
  k_dims.insert(k_dims.end(), dn.kernel_spatial_dimensions.begin(),
                dn.kernel_spatial_dimensions.end());
  std::vector<int64_t> o_dims{dn.output_batch_dimension, dn.output_feature_dimension};
  o_dims.insert(o_dims.end(), dn.output_spatial_dimensions.begin(),
                dn.output_spatial_dimensions.end());
  if (absl::Status s = CheckDimList(in_dims, lhs.rank(), "input dimension"); !s.ok()) return s;
  if (absl::Status s = CheckDimList(k_dims, rhs.rank(), "kernel dimension"); !s.ok()) return s;
  if (absl::Status s = CheckDimList(o_dims, ns + 2, "output dimension"); !s.ok()) return s;

  int64_t fgc = attrs().feature_group_count, bgc = attrs().batch_group_count;
  if (fgc < 1) return Err("feature_group_count={} must be positive", fgc);
  if (bgc < 1) return Err("batch_group_count={} must be positive", bgc);
  if (fgc > 1 && bgc > 1)
    return Err("feature_group_count={} and batch_group_count={} cannot both exceed 1", fgc, bgc);
  auto L = [&](int64_t d) { return lhs.dimensions(static_cast<int>(d)); };
  auto R = [&](int64_t d) { return rhs.dimensions(static_cast<int>(d)); };
  int64_t batch = L(dn.input_batch_dimension), in_features = L(dn.input_feature_dimension);
  int64_t k_in = R(dn.kernel_input_feature_dimension);
  int64_t k_out = R(dn.kernel_output_feature_dimension);
  if (in_features % fgc != 0)
    return Err("input feature size {} is not a multiple of feature_group_count={}", in_features,
               fgc);
  if (in_features / fgc != k_in)
    return Err(
        "input feature size {} / feature_group_count={} must equal the kernel input "
        "feature size {}",
        in_features, fgc, k_in);
  if (k_out % fgc != 0)
    return Err("kernel output feature size {} is not a multiple of feature_group_count={}", k_out,
               fgc);
  if (batch % bgc != 0)
    return Err("input batch size {} is not a multiple of batch_group_count={}", batch, bgc);
  if (k_out % bgc != 0)
    return Err("kernel output feature size {} is not a multiple of batch_group_count={}", k_out,
               bgc);

  Window w = attrs().window.value_or(Window{});
  if (w.dimensions.size() != ns)
    return Err("window has {} dimensions but the convolution has {} spatial dimensions",
               w.dimensions.size(), ns);
  std::vector<int64_t> base;
  for (size_t i = 0; i < ns; ++i) {
    if (w.dimensions[i].size != R(dn.kernel_spatial_dimensions[i]))
      return Err("window size {} of spatial dimension {} differs from the kernel size {}",
                 w.dimensions[i].size, i, R(dn.kernel_spatial_dimensions[i]));
    base.push_back(L(dn.input_spatial_dimensions[i]));
  }
  absl::StatusOr<std::vector<int64_t>> spatial = WindowOutput(base, w, "the input");
  if (!spatial.ok()) return spatial.status();
  std::vector<int64_t> dims(ns + 2);
  dims[dn.output_batch_dimension] = batch / bgc;
  dims[dn.output_feature_dimension] = k_out;
  for (size_t i = 0; i < ns; ++i) dims[dn.output_spatial_dimensions[i]] = (*spatial)[i];
  PrimitiveType t = declared().IsArray() ? declared().element_type() : lhs.element_type();
  return ArrayOf(t, dims);
}

absl::StatusOr<Shape> Inferrer::Reduce() {
  int num = n() / 2;
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& first = op(0);
  for (int i = 0; i < num; ++i) {
    if (op(i).dimensions() != first.dimensions())
      return Err("input {} {} and input 0 {} have different dimensions", i, Str(op(i)), Str(first));
    if (absl::Status s = RequireScalar(op(num + i), fmt::format("init value {}", i)); !s.ok())
      return s;
  }
  const std::vector<int64_t>& rdims = attrs().dimensions;
  if (absl::Status s = CheckDimList(rdims, first.rank(), "reduced dimension"); !s.ok()) return s;
  std::vector<int64_t> kept;
  for (int d = 0; d < first.rank(); ++d)
    if (std::find(rdims.begin(), rdims.end(), d) == rdims.end())
      kept.push_back(first.dimensions(d));
  std::vector<Shape> out;
  for (int i = 0; i < num; ++i) out.push_back(ArrayOf(op(num + i).element_type(), kept));
  return OneOrTuple(std::move(out));
}

absl::StatusOr<Shape> Inferrer::ReduceWindow() {
  int num = n() / 2;
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& first = op(0);
  for (int i = 0; i < num; ++i) {
    if (op(i).dimensions() != first.dimensions())
      return Err("input {} {} and input 0 {} have different dimensions", i, Str(op(i)), Str(first));
    if (absl::Status s = RequireScalar(op(num + i), fmt::format("init value {}", i)); !s.ok())
      return s;
  }
  Window w = attrs().window.value_or(Window{});
  absl::StatusOr<std::vector<int64_t>> dims = WindowOutput(first.dimensions(), w, "the input");
  if (!dims.ok()) return dims.status();
  std::vector<Shape> out;
  for (int i = 0; i < num; ++i) out.push_back(ArrayOf(op(num + i).element_type(), *dims));
  return OneOrTuple(std::move(out));
}

absl::StatusOr<Shape> Inferrer::SelectAndScatter() {
  const Shape& a = op(0);
  const Shape& src = op(1);
  const Shape& init = op(2);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (absl::Status s = RequireArray(src, "source"); !s.ok()) return s;
  if (absl::Status s = RequireScalar(init, "init value"); !s.ok()) return s;
  if (init.element_type() != a.element_type())
    return Err("init value type {} differs from operand element type {}",
               PrimitiveTypeName(init.element_type()), PrimitiveTypeName(a.element_type()));
  Window w = attrs().window.value_or(Window{});
  absl::StatusOr<std::vector<int64_t>> dims = WindowOutput(a.dimensions(), w, "the operand");
  if (!dims.ok()) return dims.status();
  if (*dims != src.dimensions())
    return Err("source {} must have the windowed operand dimensions {}", Str(src),
               Str(ArrayOf(src.element_type(), *dims)));
  return a;
}

absl::StatusOr<Shape> Inferrer::Gather() {
  const Shape& a = op(0);
  const Shape& idx = op(1);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (absl::Status s = RequireArray(idx, "start indices"); !s.ok()) return s;
  if (!IsInteger(idx.element_type())) return Err("start indices {} must be integral", Str(idx));
  if (!attrs().gather_dimension_numbers) return Err("missing gather dimension numbers");
  const GatherDimensionNumbers& dn = *attrs().gather_dimension_numbers;
  const std::vector<int64_t>& sizes = attrs().gather_slice_sizes;
  int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > idx.rank())
    return Err("index_vector_dim={} is out of range for start indices {}", ivd, Str(idx));
  int64_t index_size = ivd == idx.rank() ? 1 : idx.dimensions(static_cast<int>(ivd));
  if (static_cast<int64_t>(dn.start_index_map.size()) != index_size)
    return Err("start_index_map has {} entries but the index vector has size {}",
               dn.start_index_map.size(), index_size);
  if (static_cast<int>(sizes.size()) != a.rank())
    return Err("slice_sizes={} has {} entries but operand {} has rank {}", Braces(sizes),
               sizes.size(), Str(a), a.rank());
  if (absl::Status s = CheckSorted(dn.offset_dims, "offset_dims"); !s.ok()) return s;
  if (absl::Status s = CheckSorted(dn.collapsed_slice_dims, "collapsed_slice_dims"); !s.ok())
    return s;
  std::vector<int64_t> removed = dn.collapsed_slice_dims;
  removed.insert(removed.end(), dn.operand_batching_dims.begin(), dn.operand_batching_dims.end());
  if (absl::Status s = CheckDimList(removed, a.rank(), "collapsed/batching operand dimension");
      !s.ok())
    return s;
  if (absl::Status s = CheckDimList(dn.start_index_map, a.rank(), "start_index_map entry"); !s.ok())
    return s;
  for (int i = 0; i < a.rank(); ++i)
    if (sizes[i] < 0 || sizes[i] > a.dimensions(i))
      return Err("slice size {} of dimension {} is out of bounds for operand size {}", sizes[i], i,
                 a.dimensions(i));
  for (int64_t d : removed)
    if (sizes[d] > 1)
      return Err("collapsed/batching dimension {} has slice size {} (must be 0 or 1)", d, sizes[d]);
  std::vector<int64_t> batch_dims;
  for (int i = 0; i < idx.rank(); ++i)
    if (i != ivd) batch_dims.push_back(i);
  if (dn.start_indices_batching_dims.size() != dn.operand_batching_dims.size())
    return Err("{} operand batching dims but {} start indices batching dims",
               dn.operand_batching_dims.size(), dn.start_indices_batching_dims.size());
  for (size_t i = 0; i < dn.start_indices_batching_dims.size(); ++i) {
    int64_t d = dn.start_indices_batching_dims[i];
    if (d < 0 || d >= idx.rank() || d == ivd)
      return Err("start indices batching dimension {} is out of range", d);
    if (idx.dimensions(static_cast<int>(d)) !=
        a.dimensions(static_cast<int>(dn.operand_batching_dims[i])))
      return Err(
          "start indices batching dimension {} has size {} but operand batching "
          "dimension {} has size {}",
          d, idx.dimensions(static_cast<int>(d)), dn.operand_batching_dims[i],
          a.dimensions(static_cast<int>(dn.operand_batching_dims[i])));
  }
  size_t expected_offsets = a.rank() - removed.size();
  if (dn.offset_dims.size() != expected_offsets)
    return Err(
        "offset_dims={} has {} entries but operand rank {} minus {} collapsed/batching "
        "dimensions is {}",
        Braces(dn.offset_dims), dn.offset_dims.size(), a.rank(), removed.size(), expected_offsets);
  int64_t out_rank = static_cast<int64_t>(batch_dims.size() + dn.offset_dims.size());
  for (int64_t d : dn.offset_dims)
    if (d < 0 || d >= out_rank)
      return Err("offset dimension {} is out of range for result rank {}", d, out_rank);
  std::vector<int64_t> window_sizes;
  for (int i = 0; i < a.rank(); ++i)
    if (std::find(removed.begin(), removed.end(), i) == removed.end())
      window_sizes.push_back(sizes[i]);
  std::vector<int64_t> dims;
  size_t wi = 0, bi = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::find(dn.offset_dims.begin(), dn.offset_dims.end(), d) != dn.offset_dims.end())
      dims.push_back(window_sizes[wi++]);
    else
      dims.push_back(idx.dimensions(static_cast<int>(batch_dims[bi++])));
  }
  return ArrayOf(a.element_type(), dims);
}

absl::StatusOr<Shape> Inferrer::Scatter() {
  int num = (n() - 1) / 2;
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& a = op(0);
  const Shape& idx = op(num);
  const Shape& u = op(num + 1);
  if (!IsInteger(idx.element_type())) return Err("scatter indices {} must be integral", Str(idx));
  for (int i = 0; i < num; ++i) {
    if (op(i).dimensions() != a.dimensions())
      return Err("operand {} {} and operand 0 {} have different dimensions", i, Str(op(i)), Str(a));
    const Shape& ui = op(num + 1 + i);
    if (ui.dimensions() != u.dimensions())
      return Err("update {} {} and update 0 {} have different dimensions", i, Str(ui), Str(u));
    if (ui.element_type() != op(i).element_type())
      return Err("update {} element type {} differs from operand {} element type {}", i,
                 PrimitiveTypeName(ui.element_type()), i, PrimitiveTypeName(op(i).element_type()));
  }
  if (!attrs().scatter_dimension_numbers) return Err("missing scatter dimension numbers");
  const ScatterDimensionNumbers& dn = *attrs().scatter_dimension_numbers;
  int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > idx.rank())
    return Err("index_vector_dim={} is out of range for scatter indices {}", ivd, Str(idx));
  int64_t index_size = ivd == idx.rank() ? 1 : idx.dimensions(static_cast<int>(ivd));
  if (static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) != index_size)
    return Err("scatter_dims_to_operand_dims has {} entries but the index vector has size {}",
               dn.scatter_dims_to_operand_dims.size(), index_size);
  if (absl::Status s = CheckSorted(dn.update_window_dims, "update_window_dims"); !s.ok()) return s;
  if (absl::Status s = CheckSorted(dn.inserted_window_dims, "inserted_window_dims"); !s.ok())
    return s;
  if (absl::Status s = CheckDimList(dn.update_window_dims, u.rank(), "update window dimension");
      !s.ok())
    return s;
  std::vector<int64_t> removed = dn.inserted_window_dims;
  removed.insert(removed.end(), dn.input_batching_dims.begin(), dn.input_batching_dims.end());
  if (absl::Status s = CheckDimList(removed, a.rank(), "inserted/batching operand dimension");
      !s.ok())
    return s;
  if (absl::Status s = CheckDimList(dn.scatter_dims_to_operand_dims, a.rank(),
                                    "scatter_dims_to_operand_dims entry");
      !s.ok())
    return s;
  if (dn.update_window_dims.size() + removed.size() != static_cast<size_t>(a.rank()))
    return Err("{} update window dims + {} inserted/batching dims must equal operand rank {}",
               dn.update_window_dims.size(), removed.size(), a.rank());
  std::vector<int64_t> batch_dims;
  for (int i = 0; i < idx.rank(); ++i)
    if (i != ivd) batch_dims.push_back(i);
  if (dn.update_window_dims.size() + batch_dims.size() != static_cast<size_t>(u.rank()))
    return Err("updates {} must have rank {} ({} window + {} scatter dimensions)", Str(u),
               dn.update_window_dims.size() + batch_dims.size(), dn.update_window_dims.size(),
               batch_dims.size());
  if (dn.scatter_indices_batching_dims.size() != dn.input_batching_dims.size())
    return Err("{} input batching dims but {} scatter indices batching dims",
               dn.input_batching_dims.size(), dn.scatter_indices_batching_dims.size());
  size_t wi = 0, bi = 0;
  std::vector<int64_t> window_operand_dims;
  for (int i = 0; i < a.rank(); ++i)
    if (std::find(removed.begin(), removed.end(), i) == removed.end())
      window_operand_dims.push_back(i);
  for (int d = 0; d < u.rank(); ++d) {
    bool is_window = std::find(dn.update_window_dims.begin(), dn.update_window_dims.end(), d) !=
                     dn.update_window_dims.end();
    if (is_window) {
      int64_t od = window_operand_dims[wi++];
      if (u.dimensions(d) > a.dimensions(static_cast<int>(od)))
        return Err("update window dimension {} has size {} but operand dimension {} has size {}", d,
                   u.dimensions(d), od, a.dimensions(static_cast<int>(od)));
    } else {
      int64_t id = batch_dims[bi++];
      if (u.dimensions(d) != idx.dimensions(static_cast<int>(id)))
        return Err(
            "update scatter dimension {} has size {} but scatter indices dimension {} "
            "has size {}",
            d, u.dimensions(d), id, idx.dimensions(static_cast<int>(id)));
    }
  }
  std::vector<Shape> out;
  for (int i = 0; i < num; ++i) out.push_back(op(i));
  return OneOrTuple(std::move(out));
}

absl::StatusOr<Shape> Inferrer::Sort() {
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& first = op(0);
  for (int i = 1; i < n(); ++i)
    if (op(i).dimensions() != first.dimensions())
      return Err("operand {} {} and operand 0 {} have different dimensions", i, Str(op(i)),
                 Str(first));
  if (first.rank() > 0 || !attrs().dimensions.empty()) {
    absl::StatusOr<int64_t> d = SingleDimension("sort dimension", first.rank());
    if (!d.ok()) return d.status();
  }
  std::vector<Shape> out;
  for (int i = 0; i < n(); ++i) out.push_back(op(i));
  return OneOrTuple(std::move(out));
}

absl::StatusOr<Shape> Inferrer::Map() {
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& first = op(0);
  for (int i = 1; i < n(); ++i)
    if (op(i).dimensions() != first.dimensions())
      return Err("operand {} {} and operand 0 {} have different dimensions", i, Str(op(i)),
                 Str(first));
  if (attrs().has_dimensions || !attrs().dimensions.empty()) {
    const auto& d = attrs().dimensions;
    bool identity = static_cast<int>(d.size()) == first.rank();
    for (size_t i = 0; identity && i < d.size(); ++i) identity = d[i] == static_cast<int64_t>(i);
    if (!identity)
      return Err("dimensions={} must list every operand dimension in order", Braces(d));
  }
  absl::StatusOr<Shape> root = CalledRoot(0, "to_apply");
  if (!root.ok()) return root.status();
  if (!root->IsArray() || root->rank() != 0)
    return Err("to_apply must return a scalar but returns {}", Str(*root));
  return ArrayOf(root->element_type(), first.dimensions());
}

// scan(inputs..., inits...), num_carries inits: to_apply takes one element of each input
// (the input with the scan dimension removed) and the carries, and returns the output
// elements and the new carries; the result is the outputs stacked along the scan dimension,
// then the final carries.
absl::StatusOr<Shape> Inferrer::Scan() {
  const int64_t carries = attrs().num_carries;
  if (carries < 0 || carries > n())
    return Err("num_carries={} is out of range for {} operands", carries, n());
  const int64_t inputs = n() - carries;
  if (inputs < 1) return Err("needs at least one input besides its {} carries", carries);
  if (attrs().dimensions.size() != 1)
    return Err("needs one scan dimension, dimensions={}", Braces(attrs().dimensions));
  const int64_t d = attrs().dimensions[0];
  int64_t length = -1;
  for (int i = 0; i < inputs; ++i) {
    if (absl::Status s = RequireArray(op(i), "a scanned input"); !s.ok()) return s;
    if (d < 0 || d >= op(i).rank())
      return Err("scan dimension {} is out of range for input {} {}", d, i, Str(op(i)));
    const int64_t l = op(i).dimensions(static_cast<int>(d));
    if (length >= 0 && l != length)
      return Err("input {} {} has length {} along dimension {}, input 0 has {}", i, Str(op(i)), l,
                 d, length);
    length = l;
  }
  absl::StatusOr<Shape> root = CalledRoot(0, "to_apply");
  if (!root.ok()) return root.status();
  if (!root->IsTuple() || root->tuple_size() < carries)
    return Err("to_apply must return a tuple of outputs and {} carries but returns {}", carries,
               Str(*root));
  const int outputs = root->tuple_size() - static_cast<int>(carries);
  std::vector<Shape> result;
  for (int i = 0; i < outputs; ++i) {
    const Shape& e = root->tuple_shapes(i);
    if (!e.IsArray() || d > e.rank())
      return Err("output {} {} cannot be stacked along dimension {}", i, Str(e), d);
    std::vector<int64_t> dims = e.dimensions();
    dims.insert(dims.begin() + d, length);
    result.push_back(ArrayOf(e.element_type(), dims));
  }
  for (int64_t i = 0; i < carries; ++i) {
    const Shape& init = op(static_cast<int>(inputs + i));
    const Shape& back = root->tuple_shapes(outputs + static_cast<int>(i));
    if (!back.Compatible(init))
      return Err("to_apply returns carry {} as {} but its init is {}", i, Str(back), Str(init));
    result.push_back(init);
  }
  return Shape::Tuple(std::move(result));
}

absl::StatusOr<Shape> Inferrer::GetTupleElement() {
  const Shape& t = op(0);
  if (!t.IsTuple()) return Err("operand must be a tuple but is {}", Str(t));
  int64_t i = attrs().tuple_index;
  if (i < 0 || i >= t.tuple_size())
    return Err("index={} is out of range for {} with {} elements", i, Str(t), t.tuple_size());
  return t.tuple_shapes(static_cast<int>(i));
}

absl::StatusOr<Shape> Inferrer::CalledRoot(int index, std::string_view role) {
  const auto& called = instr_.called_computations();
  if (static_cast<int>(called.size()) <= index || called[index] == nullptr)
    return Err("missing {} computation", role);
  const HloComputation* c = called[index];
  if (c->root() == nullptr) return Err("{} computation %{} has no root", role, c->name());
  return c->root()->shape();
}

absl::StatusOr<Shape> Inferrer::Conditional() {
  const Shape& sel = op(0);
  const auto& branches = instr_.called_computations();
  if (branches.empty()) return Err("has no branch computations");
  if (!sel.IsArray() || sel.rank() != 0 ||
      (sel.element_type() != PrimitiveType::PRED && sel.element_type() != PrimitiveType::S32))
    return Err("branch selector must be pred[] or s32[] but is {}", Str(sel));
  if (sel.element_type() == PrimitiveType::PRED && branches.size() != 2)
    return Err("a pred selector needs exactly 2 branches but there are {}", branches.size());
  if (static_cast<size_t>(n()) != branches.size() + 1)
    return Err("has {} branches, so expects {} operands (selector + one per branch) but has {}",
               branches.size(), branches.size() + 1, n());
  return CalledRoot(0, "branch 0");
}

absl::StatusOr<Shape> Inferrer::BatchNorm() {
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  const Shape& x = op(0);
  if (!IsFloating(x.element_type()))
    return Err("operand element type {} is not floating", PrimitiveTypeName(x.element_type()));
  int64_t f = attrs().feature_index;
  if (f < 0 || f >= x.rank())
    return Err("feature_index={} is out of range for operand {}", f, Str(x));
  int64_t features = x.dimensions(static_cast<int>(f));
  Shape feature_shape = ArrayOf(x.element_type(), {features});
  // Which operands are per-feature vectors and which have the operand's shape.
  std::vector<const char*> names;
  int grad_output = -1;
  switch (instr_.opcode()) {
    case HloOpcode::kBatchNormTraining:
      names = {"operand", "scale", "offset"};
      break;
    case HloOpcode::kBatchNormInference:
      names = {"operand", "scale", "offset", "mean", "variance"};
      break;
    default:
      names = {"operand", "scale", "mean", "variance", "grad_output"};
      grad_output = 4;
      break;
  }
  for (int i = 1; i < n(); ++i) {
    const Shape& s = op(i);
    const Shape& want = i == grad_output ? x : feature_shape;
    if (s.element_type() != x.element_type() || s.dimensions() != want.dimensions())
      return Err("{} {} must be {}", names[i], Str(s), Str(want));
  }
  if (instr_.opcode() == HloOpcode::kBatchNormInference) return x;
  return Shape::Tuple({x, feature_shape, feature_shape});
}

absl::StatusOr<Shape> Inferrer::DimensionSize() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  absl::StatusOr<int64_t> d = SingleDimension("dimension", a.rank());
  if (!d.ok()) return d.status();
  if (instr_.opcode() == HloOpcode::kGetDimensionSize) return Shape::Scalar(PrimitiveType::S32);
  const Shape& size = op(1);
  if (size.rank() != 0 || size.element_type() != PrimitiveType::S32)
    return Err("size operand must be s32[] but is {}", Str(size));
  Shape out = a;
  out.set_dynamic_dimension(static_cast<int>(*d), true);
  return out;
}

// An async wrapper of a computation: the start's value is ((operands), the computation's
// result, context...), updates pass it on and the done takes the result. The context (and
// everything about the shorthands of one instruction) is opaque.
absl::StatusOr<Shape> Inferrer::Async() {
  const HloOpcode opcode = instr_.opcode();
  if (opcode == HloOpcode::kAsyncStart) {
    const auto& called = instr_.called_computations();
    const Shape& d = declared();
    if (attrs().async_wrapped_opcode || called.size() != 1 || called[0] == nullptr ||
        called[0]->root() == nullptr || !d.IsTuple() || d.tuple_size() < 2)
      return CannotInfer("async wrapper: the wrapped operation's context shapes are opaque");
    std::vector<Shape> operands, parts;
    for (int i = 0; i < n(); ++i) operands.push_back(op(i));
    parts.push_back(Shape::Tuple(operands));
    parts.push_back(called[0]->root()->shape());
    for (int i = 2; i < d.tuple_size(); ++i) parts.push_back(d.tuple_shapes(i));
    return Shape::Tuple(parts);
  }
  if (n() != 1 || !op(0).IsTuple() || op(0).tuple_size() < 2)
    return CannotInfer("async wrapper: its operand is not an async-start's value");
  return opcode == HloOpcode::kAsyncDone ? op(0).tuple_shapes(1) : op(0);
}

absl::StatusOr<Shape> Inferrer::RngBitGenerator() {
  const Shape& state = op(0);
  const Shape& out = declared();
  // XLA's verifier checks only a (state, values) result against the state operand.
  if (xla_text() && !out.IsTuple()) return out;
  if (!state.IsArray() || state.rank() != 1 || !IsUnsignedInt(state.element_type()))
    return Err("state must be an unsigned rank-1 array but is {}", Str(state));
  if (!out.IsTuple() || out.tuple_size() != 2)
    return Err("result must be a (state, values) tuple but is {}", Str(out));
  if (!out.tuple_shapes(1).IsArray() || !IsInteger(out.tuple_shapes(1).element_type()))
    return Err("values {} must be an integral array", Str(out.tuple_shapes(1)));
  return Shape::Tuple(
      {state, ArrayOf(out.tuple_shapes(1).element_type(), out.tuple_shapes(1).dimensions())});
}

absl::StatusOr<Shape> Inferrer::Rng() {
  const Shape& a = op(0);
  const Shape& b = op(1);
  if (absl::Status s = RequireScalar(a, "first parameter"); !s.ok()) return s;
  if (absl::Status s = RequireScalar(b, "second parameter"); !s.ok()) return s;
  if (a.element_type() != b.element_type())
    return Err("parameters have different types {} and {}", Str(a), Str(b));
  PrimitiveType t = a.element_type();
  if (attrs().distribution == RandomDistribution::kNormal ? !IsFloating(t)
                                                          : !(IsFloating(t) || IsInteger(t)))
    return Err("parameter type {} is not supported by this distribution", PrimitiveTypeName(t));
  if (!declared().IsArray()) return Err("result must be an array but is {}", Str(declared()));
  return ArrayOf(t, declared().dimensions());
}

absl::StatusOr<Shape> Inferrer::TopK() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (a.rank() < 1) return Err("operand {} must have rank >= 1", Str(a));
  int64_t k = attrs().k;
  int64_t last = a.dimensions(a.rank() - 1);
  if (k < 0 || k > last) return Err("k={} is out of range for the last dimension of {}", k, Str(a));
  std::vector<int64_t> dims = a.dimensions();
  dims.back() = k;
  return Shape::Tuple({ArrayOf(a.element_type(), dims), ArrayOf(PrimitiveType::S32, dims)});
}

absl::StatusOr<Shape> Inferrer::Cholesky() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  if (!IsFloatingOrComplex(a.element_type()))
    return Err("operand element type {} is not floating or complex",
               PrimitiveTypeName(a.element_type()));
  if (a.rank() < 2 || a.dimensions(a.rank() - 1) != a.dimensions(a.rank() - 2))
    return Err("operand {} must be a (batch of) square matrices", Str(a));
  return a;
}

absl::StatusOr<Shape> Inferrer::TriangularSolve() {
  const Shape& a = op(0);
  const Shape& b = op(1);
  if (absl::Status s = RequireOperandArrays(); !s.ok()) return s;
  if (a.element_type() != b.element_type())
    return Err("a {} and b {} have different element types", Str(a), Str(b));
  if (!IsFloatingOrComplex(a.element_type()))
    return Err("element type {} is not floating or complex", PrimitiveTypeName(a.element_type()));
  if (a.rank() < 2 || a.dimensions(a.rank() - 1) != a.dimensions(a.rank() - 2))
    return Err("a {} must be a (batch of) square matrices", Str(a));
  if (b.rank() != a.rank()) return Err("a {} and b {} have different ranks", Str(a), Str(b));
  for (int i = 0; i + 2 < a.rank(); ++i)
    if (a.dimensions(i) != b.dimensions(i))
      return Err("batch dimension {} differs between a {} and b {}", i, Str(a), Str(b));
  int64_t m = a.dimensions(a.rank() - 1);
  int bdim = attrs().left_side ? b.rank() - 2 : b.rank() - 1;
  if (b.dimensions(bdim) != m)
    return Err("with left_side={} b dimension {} must be {} (the size of a) but is {}",
               attrs().left_side, bdim, m, b.dimensions(bdim));
  return b;
}

absl::StatusOr<Shape> Inferrer::Fft() {
  const Shape& a = op(0);
  if (absl::Status s = RequireArray(a, "operand"); !s.ok()) return s;
  const std::vector<int64_t>& len = attrs().fft_length;
  int L = static_cast<int>(len.size());
  if (L < 1 || L > 3) return Err("fft_length={} must have 1 to 3 entries", Braces(len));
  if (a.rank() < L) return Err("operand {} has fewer than {} dimensions", Str(a), L);
  PrimitiveType t = a.element_type();
  std::vector<int64_t> dims = a.dimensions();
  int base = a.rank() - L;
  auto check_inner = [&](int count, const char* what) -> absl::Status {
    for (int i = 0; i < count; ++i)
      if (dims[base + i] != len[i])
        return Err("{} dimension {} has size {} but fft_length={} wants {}", what, base + i,
                   dims[base + i], Braces(len), len[i]);
    return absl::OkStatus();
  };
  switch (attrs().fft_type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (!IsComplex(t)) return Err("operand element type {} is not complex", PrimitiveTypeName(t));
      // XLA's shape rules leave fft_length unchecked here (its evaluator then pads or cuts
      // the input); Kiln runs only lengths that match the operand.
      if (xla_text()) return a;
      if (absl::Status s = check_inner(L, "operand"); !s.ok()) return s;
      return a;
    case FftType::kRfft:
      if (t != PrimitiveType::F32 && t != PrimitiveType::F64)
        return Err("RFFT operand element type {} is not f32 or f64", PrimitiveTypeName(t));
      if (absl::Status s = check_inner(L, "operand"); !s.ok()) return s;
      dims.back() = len.back() == 0 ? 0 : len.back() / 2 + 1;
      return ArrayOf(t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64, dims);
    case FftType::kIrfft: {
      if (!IsComplex(t))
        return Err("IRFFT operand element type {} is not complex", PrimitiveTypeName(t));
      if (absl::Status s = check_inner(L - 1, "operand"); !s.ok()) return s;
      int64_t want = len.back() == 0 ? 0 : len.back() / 2 + 1;
      if (dims.back() != want)
        return Err("IRFFT operand minor dimension has size {} but fft_length={} wants {}",
                   dims.back(), Braces(len), want);
      dims.back() = len.back();
      return ArrayOf(ComplexComponentType(t), dims);
    }
  }
  return a;
}

// Collectives: shapes that follow from the operands alone are inferred; the ones that depend
// on the number of participants are checked structurally against the declared shape.
absl::StatusOr<Shape> Inferrer::Collective() {
  std::vector<Shape> operands;
  for (int i = 0; i < n(); ++i) operands.push_back(op(i));
  switch (instr_.opcode()) {
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId:
      return Shape::Scalar(PrimitiveType::U32);
    case HloOpcode::kAllReduce:
    case HloOpcode::kCollectiveBroadcast:
      if (operands.empty()) return Err("expects at least one operand");
      return OneOrTuple(operands);
    case HloOpcode::kCollectivePermute:
      if (n() == 1) return operands[0];
      return CannotInfer("in-place collective-permute");
    case HloOpcode::kAllToAll:
      if (operands.empty()) return Err("expects at least one operand");
      // Without a split dimension (dimensions={d}) it is the tuple form, even of one array.
      if (attrs().dimensions.empty()) return Shape::Tuple(operands);
      return OneOrTuple(operands);
    case HloOpcode::kRaggedAllToAll: {
      // (input, output, input_offsets, send_sizes, output_offsets, recv_sizes): rows of the
      // input go to other devices' outputs; the result is the output buffer, updated.
      if (!op(0).IsArray() || !op(1).IsArray() || op(0).element_type() != op(1).element_type() ||
          op(0).rank() != op(1).rank())
        return Err("input {} and output {} must be arrays of one element type and rank", Str(op(0)),
                   Str(op(1)));
      for (int i = 2; i < 6; ++i) {
        if (!op(i).IsArray() || !IsInteger(op(i).element_type()) || op(i).rank() != 1)
          return Err("operand {} (offsets or sizes) must be a rank-1 integer array but is {}", i,
                     Str(op(i)));
        if (op(i).dimensions(0) != op(2).dimensions(0))
          return Err("offsets and sizes must have one length: {} and {}", Str(op(2)), Str(op(i)));
      }
      return op(1);
    }
    case HloOpcode::kAllGather:
    case HloOpcode::kReduceScatter: {
      // The result differs from each operand only in `dimensions={d}`, by the group size.
      if (operands.empty()) return Err("expects at least one operand");
      std::vector<Shape> outs =
          n() == 1 ? std::vector<Shape>{declared()} : declared().tuple_shapes();
      if (static_cast<int>(outs.size()) != n() || (n() > 1 && !declared().IsTuple()))
        return Err("result {} must have one array per operand", Str(declared()));
      absl::StatusOr<int64_t> d = SingleDimension("dimension", operands[0].rank());
      if (!d.ok()) return d.status();
      for (int i = 0; i < n(); ++i) {
        const Shape& in = operands[i];
        const Shape& out = outs[i];
        if (!in.IsArray() || !out.IsArray() || in.rank() != out.rank() ||
            in.element_type() != out.element_type())
          return Err("result {} does not match operand {}", Str(out), Str(in));
        for (int k = 0; k < in.rank(); ++k) {
          int64_t big = in.dimensions(k), small = out.dimensions(k);
          if (instr_.opcode() == HloOpcode::kAllGather) std::swap(big, small);
          bool ok = k == *d ? (small > 0 ? big % small == 0 : big == 0) : big == small;
          if (!ok)
            return Err("result {} is not operand {} {} along dimension {}", Str(out), Str(in),
                       instr_.opcode() == HloOpcode::kAllGather ? "gathered" : "scattered", *d);
        }
      }
      return declared();
    }
    default:
      return CannotInfer("depends on devices, channels or hosts outside the module");
  }
}

absl::StatusOr<Shape> Inferrer::Infer() {
  if (absl::Status s = CheckOperandCount(instr_); !s.ok()) return s;
  for (int i = 0; i < n(); ++i)
    if (instr_.operand(i) == nullptr) return Err("operand {} is null", i);
  switch (instr_.opcode()) {
    case HloOpcode::kAbs:
    case HloOpcode::kCbrt:
    case HloOpcode::kCeil:
    case HloOpcode::kClz:
    case HloOpcode::kCopy:
    case HloOpcode::kCos:
    case HloOpcode::kDomain:
    case HloOpcode::kErf:
    case HloOpcode::kExp:
    case HloOpcode::kExpm1:
    case HloOpcode::kFloor:
    case HloOpcode::kImag:
    case HloOpcode::kIsFinite:
    case HloOpcode::kLog:
    case HloOpcode::kLog1p:
    case HloOpcode::kLogistic:
    case HloOpcode::kNegate:
    case HloOpcode::kNot:
    case HloOpcode::kPopulationCount:
    case HloOpcode::kReal:
    case HloOpcode::kReducePrecision:
    case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kRsqrt:
    case HloOpcode::kSign:
    case HloOpcode::kSin:
    case HloOpcode::kSqrt:
    case HloOpcode::kTan:
    case HloOpcode::kTanh:
      return Unary();
    case HloOpcode::kAdd:
    case HloOpcode::kAnd:
    case HloOpcode::kAtan2:
    case HloOpcode::kCompare:
    case HloOpcode::kComplex:
    case HloOpcode::kDivide:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kMultiply:
    case HloOpcode::kOr:
    case HloOpcode::kPower:
    case HloOpcode::kRemainder:
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical:
    case HloOpcode::kSubtract:
    case HloOpcode::kXor:
      return Binary();
    case HloOpcode::kSelect:
      return Select();
    case HloOpcode::kClamp:
      return Clamp();
    case HloOpcode::kConvert:
      return Convert();
    case HloOpcode::kStochasticConvert:
      return StochasticConvert();
    case HloOpcode::kBitcastConvert:
      return BitcastConvert();
    case HloOpcode::kBitcast:
      return Bitcast();
    case HloOpcode::kBroadcast:
      return Broadcast();
    case HloOpcode::kReshape:
    case HloOpcode::kDynamicReshape:
      return Reshape();
    case HloOpcode::kTranspose:
      return Transpose();
    case HloOpcode::kSlice:
      return Slice();
    case HloOpcode::kDynamicSlice:
      return DynamicSlice();
    case HloOpcode::kDynamicUpdateSlice:
      return DynamicUpdateSlice();
    case HloOpcode::kConcatenate:
      return Concatenate();
    case HloOpcode::kPad:
      return Pad();
    case HloOpcode::kReverse:
      return Reverse();
    case HloOpcode::kIota:
      return Iota();
    case HloOpcode::kDot:
      return Dot();
    case HloOpcode::kRaggedDot:
      return RaggedDot();
    case HloOpcode::kScaledDot:
      return ScaledDot();
    case HloOpcode::kConvolution:
      return Convolution();
    case HloOpcode::kReduce:
      return Reduce();
    case HloOpcode::kReduceWindow:
      return ReduceWindow();
    case HloOpcode::kSelectAndScatter:
      return SelectAndScatter();
    case HloOpcode::kGather:
      return Gather();
    case HloOpcode::kScatter:
      return Scatter();
    case HloOpcode::kSort:
      return Sort();
    case HloOpcode::kMap:
      return Map();
    case HloOpcode::kScan:
      return Scan();
    case HloOpcode::kTuple: {
      std::vector<Shape> elems;
      for (int i = 0; i < n(); ++i) elems.push_back(op(i));
      return Shape::Tuple(std::move(elems));
    }
    case HloOpcode::kGetTupleElement:
      return GetTupleElement();
    case HloOpcode::kCall:
      return CalledRoot(0, "to_apply");
    case HloOpcode::kFusion:
      return CalledRoot(0, "fused");
    case HloOpcode::kWhile:
      return op(0);
    case HloOpcode::kConditional:
      return Conditional();
    case HloOpcode::kBatchNormTraining:
    case HloOpcode::kBatchNormInference:
    case HloOpcode::kBatchNormGrad:
      return BatchNorm();
    case HloOpcode::kGetDimensionSize:
    case HloOpcode::kSetDimensionSize:
      return DimensionSize();
    case HloOpcode::kConstant:
      // `constant({...})`: the dumper elided the value; only the declared shape is known
      // (running such a module must fail where the value is needed, not here).
      if (!attrs().literal) return declared();
      return attrs().literal->shape();
    case HloOpcode::kParameter:
      if (attrs().parameter_number < 0)
        return Err("parameter number {} is negative", attrs().parameter_number);
      return declared();
    case HloOpcode::kCustomCall:
      // The target decides; nothing to infer.
      return declared();
    case HloOpcode::kRngBitGenerator:
      return RngBitGenerator();
    case HloOpcode::kRng:
      return Rng();
    case HloOpcode::kRngGetAndUpdateState:
      return ArrayOf(PrimitiveType::U64, {2});
    case HloOpcode::kTopK:
      return TopK();
    case HloOpcode::kCholesky:
      return Cholesky();
    case HloOpcode::kTriangularSolve:
      return TriangularSolve();
    case HloOpcode::kFft:
      return Fft();
    case HloOpcode::kAfterAll:
      // Operands are ordering dependencies only: XLA accepts any value (its token tests join
      // an f32 into a token).
      return Shape::Token();
    case HloOpcode::kAddDependency:
      if (!op(1).IsToken() && !op(1).IsArray() && !op(1).IsTuple())
        return Err("dependency operand {} is not a value", Str(op(1)));
      return op(0);
    case HloOpcode::kOptimizationBarrier:
      return op(0);
    case HloOpcode::kCopyStart:
      return Shape::Tuple({op(0), op(0), Shape::Scalar(PrimitiveType::U32)});
    case HloOpcode::kCopyDone:
      if (!op(0).IsTuple() || op(0).tuple_size() < 1)
        return Err("operand must be a copy-start tuple but is {}", Str(op(0)));
      return op(0).tuple_shapes(0);
    case HloOpcode::kAsyncStart:
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncDone:
      return Async();
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kInfeed:
    case HloOpcode::kOutfeed:
    case HloOpcode::kPartitionId:
    case HloOpcode::kRaggedAllToAll:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kReplicaId:
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
      return Collective();
  }
  return Err("unknown opcode");
}

}  // namespace

absl::Status CheckOperandCount(const HloInstruction& instr) {
  int n = instr.operand_count();
  HloOpcode op = instr.opcode();
  auto err = [&](std::string_view expected) {
    return absl::InvalidArgumentError(fmt::format("%{}: {}: expects {} but has {} operand{}",
                                                  instr.name(), HloOpcodeString(op), expected, n,
                                                  n == 1 ? "" : "s"));
  };
  int arity = HloOpcodeArity(op);
  if (arity != kVariadic) {
    if (n != arity) return err(fmt::format("{} operand{}", arity, arity == 1 ? "" : "s"));
    return absl::OkStatus();
  }
  switch (op) {
    case HloOpcode::kDot:
      if (n != 2) return err("2 operands (sparse dot is not supported)");
      break;
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow:
      if (n < 2 || n % 2 != 0) return err("2N operands (N inputs, then N init values)");
      break;
    case HloOpcode::kScatter:
      if (n < 3 || n % 2 != 1) return err("2N+1 operands (N inputs, indices, N updates)");
      break;
    case HloOpcode::kSort:
    case HloOpcode::kConcatenate:
    case HloOpcode::kMap:
    case HloOpcode::kScan:
      if (n < 1) return err("at least 1 operand");
      break;
    case HloOpcode::kConditional:
      if (n < 2) return err("at least 2 operands (branch selector, then branch operands)");
      break;
    case HloOpcode::kDynamicSlice:
      if (n < 2) return err("at least 2 operands (operand, then start indices)");
      break;
    case HloOpcode::kDynamicUpdateSlice:
      if (n < 3) return err("at least 3 operands (operand, update, then start indices)");
      break;
    case HloOpcode::kDynamicReshape:
      if (n < 1) return err("at least 1 operand");
      break;
    case HloOpcode::kRng:
      if (n != 2) return err("2 operands");
      break;
    default:
      break;  // tuple, call, fusion, custom-call, after-all, collectives: any count
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> InferShape(const HloInstruction& instr, ShapeRules rules) {
  absl::StatusOr<Shape> s = Inferrer(instr, rules).Infer();
  if (!s.ok()) return s;
  // Results built from attributes (pad, slice, windows, concatenate) or taken from the
  // declared shape must still describe data whose byte size fits in int64.
  if (!s->SizeFits())
    return absl::InvalidArgumentError(
        fmt::format("%{}: {}: result shape {} is too large (its byte size overflows 64 bits)",
                    instr.name(), HloOpcodeString(instr.opcode()), Str(*s)));
  s->SetDefaultLayout();
  return s;
}

}  // namespace kiln
