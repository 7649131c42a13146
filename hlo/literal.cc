// Literal storage, element access and conversion.
#include "hlo/literal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kiln {

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) elements_.emplace_back(s);
  } else if (shape.IsArray()) {
    // resize + memset, not assign(n, 0): the allocator's construct() makes the vector fill
    // (and copy) byte by byte, at about a byte per cycle.
    bytes_.resize(static_cast<size_t>(shape.byte_size()));
    if (!bytes_.empty()) std::memset(bytes_.data(), 0, bytes_.size());
  }
}

Literal Literal::Uninitialized(const Shape& shape) {
  if (!shape.IsArray()) return Literal(shape);
  Literal l;
  l.shape_ = shape;
  l.bytes_.resize(static_cast<size_t>(shape.byte_size()));
  return l;
}

Literal Literal::Adopt(const Shape& shape, void* data, std::shared_ptr<void> owner) {
  Literal l;
  l.shape_ = shape;
  l.adopted_ = static_cast<uint8_t*>(data);
  l.adopted_size_ = static_cast<size_t>(shape.byte_size());
  l.owner_ = std::move(owner);
  return l;
}

Literal::Literal(const Literal& o) : shape_(o.shape_), elements_(o.elements_) {
  // memcpy into uninitialized bytes: the vector's own copy goes byte by byte (see above).
  const size_t n = o.owner_ ? o.adopted_size_ : o.bytes_.size();
  bytes_.resize(n);
  if (n > 0) std::memcpy(bytes_.data(), o.untyped_data(), n);
}

Literal& Literal::operator=(const Literal& o) {
  if (this != &o) *this = Literal(o);
  return *this;
}

Literal Literal::FromDoubles(const Shape& shape, const std::vector<double>& values) {
  Literal l(shape);
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < l.element_count(); ++i)
    l.SetFromDouble(static_cast<int64_t>(i), values[i]);
  return l;
}

Literal Literal::MakeTuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape());
  Literal l;
  l.shape_ = Shape::Tuple(std::move(shapes));
  l.elements_ = std::move(elements);
  return l;
}

int64_t Literal::LinearIndex(const std::vector<int64_t>& index) const {
  int64_t linear = 0;
  const auto& dims = shape_.dimensions();
  for (size_t i = 0; i < index.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

namespace {
template <typename T>
double ToDouble(T v) {
  if constexpr (IsComplexT<T>::value) {
    return static_cast<double>(v.real());
  } else {
    return static_cast<double>(static_cast<std::conditional_t<kIsFloatT<T>, float, T>>(v));
  }
}
template <>
double ToDouble<double>(double v) {
  return v;
}

// Float-to-integer conversion as XLA does it: NaN -> 0, saturating at the type's bounds.
template <typename T>
T FromDouble(double v) {
  if constexpr (IsComplexT<T>::value) {
    return T(static_cast<typename T::value_type>(v), 0);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (kIsFloatT<T>) {
    if constexpr (IsMiniFloatT<T>::value) {
      return T(v);  // one rounding from double
    } else if constexpr (kIsNarrowFloatT<T>) {
      // Rounding through float first could double-round; f64->f32 then ->16 differs only
      // in rare ties, which XLA's convert has too (it goes through f32 as well).
      return T(static_cast<float>(v));
    } else {
      return static_cast<T>(v);
    }
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::min()))
      return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}
}  // namespace

double Literal::GetAsDouble(int64_t i) const {
  const PrimitiveType t = shape_.element_type();
  if (IsSubByteInt(t)) return static_cast<double>(SubByteValue(t, data<uint8_t>()[i]));
  return PrimitiveTypeSwitch(shape_.element_type(),
                             [&](auto t) -> double { return ToDouble(data<decltype(t)>()[i]); });
}

void Literal::SetFromDouble(int64_t i, double v) {
  const PrimitiveType t = shape_.element_type();
  if (IsSubByteInt(t)) {  // saturating, as float-to-integer conversion
    const double c = std::isnan(v) ? 0.0
                                   : std::clamp(v, static_cast<double>(SubByteMin(t)),
                                                static_cast<double>(SubByteMax(t)));
    data<uint8_t>()[i] = SubByteBits(t, static_cast<int64_t>(c));
    return;
  }
  PrimitiveTypeSwitch(shape_.element_type(), [&](auto t) {
    using T = decltype(t);
    data<T>()[i] = FromDouble<T>(v);
  });
}

int64_t Literal::GetAsInt64(int64_t i) const {
  const PrimitiveType t = shape_.element_type();
  if (IsSubByteInt(t)) return SubByteValue(t, data<uint8_t>()[i]);
  return PrimitiveTypeSwitch(shape_.element_type(), [&](auto t) -> int64_t {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(data<T>()[i]);
    } else {
      return static_cast<int64_t>(ToDouble(data<T>()[i]));
    }
  });
}

uint64_t Literal::GetAsUint64(int64_t i) const {
  const PrimitiveType t = shape_.element_type();
  if (IsSubByteInt(t)) return static_cast<uint64_t>(SubByteValue(t, data<uint8_t>()[i]));
  return PrimitiveTypeSwitch(shape_.element_type(), [&](auto t) -> uint64_t {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<uint64_t>(data<T>()[i]);
    } else {
      return static_cast<uint64_t>(ToDouble(data<T>()[i]));
    }
  });
}

// Kept dependent on To so that clang, which checks non-dependent expressions of a nested
// generic lambda eagerly, does not reject `.real()` on non-complex types in discarded branches.
template <typename To, typename From>
To ComplexFromParts(const From& v) {
  return To(v.real(), v.imag());
}

Literal Literal::WithSubByteIntsWidened() const {
  if (IsTuple()) {
    std::vector<Literal> elems;
    for (const Literal& e : elements_) elems.push_back(e.WithSubByteIntsWidened());
    return MakeTuple(std::move(elems));
  }
  Literal out = *this;
  const PrimitiveType t = shape_.element_type();
  if (IsSubByteInt(t) && IsSignedInt(t)) {
    for (uint8_t& b : out.data<uint8_t>()) b = static_cast<uint8_t>(SubByteValue(t, b));
  }
  return out;
}

void Literal::TruncateSubByteInts() {
  for (Literal& e : elements_) e.TruncateSubByteInts();
  const PrimitiveType t = shape_.element_type();
  if (!IsTuple() && IsSubByteInt(t)) {
    for (uint8_t& b : data<uint8_t>()) b = SubByteBits(t, b);
  }
}

Literal Literal::Convert(PrimitiveType to) const {
  const PrimitiveType from = shape_.element_type();
  if (IsSubByteInt(from) || IsSubByteInt(to)) {
    // Through int64 or double, one element at a time: sub-byte values are few and small.
    Literal out(Shape(to, shape_.dimensions()));
    const bool integral = !IsFloating(from) && !IsComplex(from) && !IsFloating(to) &&
                          !IsComplex(to) && from != PrimitiveType::PRED &&
                          to != PrimitiveType::PRED;
    for (int64_t i = 0; i < element_count(); ++i) {
      if (integral && IsSubByteInt(to)) {
        out.data<uint8_t>()[i] = SubByteBits(to, GetAsInt64(i));  // integer narrowing wraps
      } else if (integral) {
        PrimitiveTypeSwitch(to, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_integral_v<T>) out.data<T>()[i] = static_cast<T>(GetAsInt64(i));
        });
      } else {
        out.SetFromDouble(i, GetAsDouble(i));
      }
    }
    return out;
  }
  Shape s(to, shape_.dimensions());
  Literal out(s);
  int64_t n = element_count();
  PrimitiveTypeSwitch(shape_.element_type(), [&](auto from_tag) {
    using From = decltype(from_tag);
    PrimitiveTypeSwitch(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      auto src = data<From>();
      auto dst = out.data<To>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (IsComplexT<To>::value && IsComplexT<From>::value) {
          dst[i] = ComplexFromParts<To>(src[i]);
        } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
          dst[i] = static_cast<To>(src[i]);  // integer conversions wrap, as in XLA
        } else if constexpr (std::is_same_v<From, float> && kIsNarrowFloatT<To>) {
          dst[i] = To(src[i]);
        } else {
          dst[i] = FromDouble<To>(ToDouble(src[i]));
        }
      }
    });
  });
  return out;
}

Literal Literal::Reshape(const std::vector<int64_t>& dims) const {
  Literal out = *this;
  out.shape_ = Shape(shape_.element_type(), dims);
  return out;
}

std::vector<Literal> Literal::DecomposeTuple() && {
  if (!IsTuple()) {
    std::vector<Literal> v;
    v.push_back(std::move(*this));
    return v;
  }
  std::vector<Literal> out;
  for (Literal& e : elements_) {
    std::vector<Literal> sub = std::move(e).DecomposeTuple();
    for (Literal& s : sub) out.push_back(std::move(s));
  }
  return out;
}

bool Literal::operator==(const Literal& o) const {
  if (!shape_.Compatible(o.shape_)) return false;
  if (IsTuple()) return elements_ == o.elements_;
  return size_bytes() == o.size_bytes() &&
         (size_bytes() == 0 || std::memcmp(untyped_data(), o.untyped_data(), size_bytes()) == 0);
}

std::string Literal::ToString() const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i) out += ", ";
      out += elements_[i].ToString();
    }
    return out + ")";
  }
  std::string out = shape_.ToString(false) + " {";
  int64_t n = element_count();
  for (int64_t i = 0; i < n && i < 64; ++i) {
    if (i) out += ", ";
    absl::StrAppend(&out, GetAsDouble(i));
  }
  if (n > 64) out += ", ...";
  return out + "}";
}

}  // namespace kiln
