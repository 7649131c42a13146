// Literal values in HLO text: element scanning, nested-brace arrays (read iteratively),
// tuples, and exact shortest-form printing of floats.
#include "hlo/text/literal_text.h"

#include <charconv>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "fmt/format.h"
#include "hlo/native_type.h"
#include "hlo/text/shape_text.h"

namespace kiln::hlo_text {
namespace {

// IEEE layout of a floating type, for NaN payloads.
template <typename T>
struct FloatBitsOf;
template <>
struct FloatBitsOf<float> {
  using U = uint32_t;
  static constexpr int kMantissa = 23, kTotal = 32;
};
template <>
struct FloatBitsOf<double> {
  using U = uint64_t;
  static constexpr int kMantissa = 52, kTotal = 64;
};
template <>
struct FloatBitsOf<half> {
  using U = uint16_t;
  static constexpr int kMantissa = 10, kTotal = 16;
};
template <>
struct FloatBitsOf<bfloat16> {
  using U = uint16_t;
  static constexpr int kMantissa = 7, kTotal = 16;
};

template <typename T>
typename FloatBitsOf<T>::U BitsOf(T v) {
  typename FloatBitsOf<T>::U u;
  static_assert(sizeof(u) == sizeof(T));
  std::memcpy(&u, static_cast<const void*>(&v), sizeof(T));
  return u;
}
template <typename T>
T FromBits(typename FloatBitsOf<T>::U u) {
  T v;
  std::memcpy(static_cast<void*>(&v), &u, sizeof(T));
  return v;
}

template <typename T>
bool IsNan(T v) {
  return std::isnan(static_cast<double>(
      static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(v)));
}

// "nan", "-nan" or "nan(0x...)" for a NaN of type T.
template <typename T>
std::string NanText(T v) {
  using B = FloatBitsOf<T>;
  auto u = BitsOf(v);
  using U = typename B::U;
  bool negative = (u >> (B::kTotal - 1)) & 1;
  U payload = u & ((U(1) << B::kMantissa) - 1);
  U quiet = U(1) << (B::kMantissa - 1);
  std::string out = negative ? "-nan" : "nan";
  if (payload != quiet) out += fmt::format("(0x{:x})", static_cast<uint64_t>(payload));
  return out;
}

// A NaN of type T with the given sign and payload (0 = the default quiet NaN).
template <typename T>
T MakeNan(bool negative, uint64_t payload) {
  using B = FloatBitsOf<T>;
  using U = typename B::U;
  U mant_mask = (U(1) << B::kMantissa) - 1;
  U exp_mask = static_cast<U>(static_cast<U>(~U(0)) >> 1) & static_cast<U>(~mant_mask);
  U p = payload == 0 ? (U(1) << (B::kMantissa - 1)) : static_cast<U>(payload & mant_mask);
  U u = static_cast<U>(exp_mask | p);
  if (negative) u = static_cast<U>(u | (U(1) << (B::kTotal - 1)));
  return FromBits<T>(u);
}

template <typename T>
std::string SixteenBitText(T v) {
  if (IsNan(v)) return NanText(v);
  float f = static_cast<float>(v);
  if (std::isinf(f) || f == 0) return FloatToText(f);
  // Shortest decimal that converts back to the same 16-bit value.
  for (int prec = 1; prec <= 9; ++prec) {
    std::string s = fmt::format("{:.{}g}", f, prec);
    float back = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), back);
    if (ec == std::errc() && BitsOf(T(back)) == BitsOf(v)) return s;
  }
  return FloatToText(f);
}

// A minifloat is exactly a short float: print that float. NaN has no payload to show.
template <typename T>
std::string MiniFloatText(T v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "nan";
  return FloatToText(f);
}

template <typename T>
std::string ElementText(T v, PrimitiveType type) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (IsMiniFloatT<T>::value) {
    return MiniFloatText(v);
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    if (IsSubByteInt(type)) return fmt::format("{}", SubByteValue(type, v));
    return fmt::format("{}", v);
  } else if constexpr (kIsNarrowFloatT<T>) {
    return SixteenBitText(v);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return FloatToText(v);
  } else if constexpr (IsComplexT<T>::value) {
    return fmt::format("({}, {})", FloatToText(v.real()), FloatToText(v.imag()));
  } else {
    return fmt::format("{}", v);
  }
}

// Reads one scalar element token: sign, word or number, and a `(0x..)` NaN payload.
std::string_view ScanElement(Cursor& c) {
  size_t start = c.pos();
  if (c.Peek() == '-' || c.Peek() == '+') c.Advance();
  while (IsNameChar(c.Peek()) || ((c.Peek() == '+' || c.Peek() == '-') &&
                                  (c.text()[c.pos() - 1] == 'e' || c.text()[c.pos() - 1] == 'E')))
    c.Advance();
  if (c.Peek() == '(' && c.pos() >= start + 3 && c.text().substr(c.pos() - 3, 3) == "nan") {
    size_t close = c.text().find(')', c.pos());
    if (close != std::string_view::npos && close < c.end() && close - c.pos() < 40)
      c.set_pos(close + 1);
  }
  return c.text().substr(start, c.pos() - start);
}

template <typename T>
absl::Status ParseFloatToken(Cursor& c, size_t at, std::string_view tok, T* out,
                             PrimitiveType type) {
  auto bad = [&] {
    return c.ErrorAt(at, fmt::format("expected a {} value, found '{}'", PrimitiveTypeName(type),
                                     tok.empty() ? c.DescribeHere() : std::string(tok)));
  };
  if (tok.empty()) return bad();
  std::string_view body = tok;
  bool negative = false;
  if (body[0] == '-' || body[0] == '+') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.substr(0, 3) == "nan") {
    uint64_t payload = 0;
    std::string_view rest = body.substr(3);
    if (!rest.empty()) {
      if (rest.size() < 5 || rest.substr(0, 3) != "(0x" || rest.back() != ')') return bad();
      std::string_view hex = rest.substr(3, rest.size() - 4);
      auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), payload, 16);
      if (ec != std::errc() || p != hex.data() + hex.size() || payload == 0) return bad();
    }
    if constexpr (IsMiniFloatT<T>::value) {
      if (payload != 0) return bad();
      *out = T(negative ? -std::numeric_limits<double>::quiet_NaN()
                        : std::numeric_limits<double>::quiet_NaN());
    } else {
      *out = MakeNan<T>(negative, payload);
    }
    return absl::OkStatus();
  }
  if (body == "inf" || body == "infinity") {
    double inf = negative ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
    *out = static_cast<T>(inf);
    return absl::OkStatus();
  }
  if (body.empty() || !(IsDigit(body[0]) || body[0] == '.')) return bad();
  using Parse =
      std::conditional_t<std::is_same_v<T, double> || IsMiniFloatT<T>::value, double, float>;
  Parse v = 0;
  auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (p != body.data() + body.size()) return bad();
  if (ec == std::errc::result_out_of_range) {
    // Underflow reads as zero (or a denormal); overflow, infinite here, is refused below.
    // (from_chars leaves its result untouched when out of range; strtod says which way.)
    v = static_cast<Parse>(std::strtod(std::string(body).c_str(), nullptr));
  } else if (ec != std::errc()) {
    return bad();
  }
  if (negative) v = -v;
  *out = T(v);
  // A finite number that rounds past the type's largest value is an error, as in XLA's parser
  // (f16 constant(-65520), bf16 constant(1e100)); write inf for infinity.
  if (!std::isfinite(static_cast<double>(*out)))
    return c.ErrorAt(at,
                     fmt::format("value {} is out of range for {}", tok, PrimitiveTypeName(type)));
  return absl::OkStatus();
}

template <typename T>
absl::Status ParseIntToken(Cursor& c, size_t at, std::string_view tok, T* out, PrimitiveType type) {
  std::string_view body = tok;
  if (!body.empty() && body[0] == '+') body.remove_prefix(1);
  T v{};
  auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (body.empty() || p != body.data() + body.size()) {
    return c.ErrorAt(at,
                     fmt::format("expected a {} value, found {}", PrimitiveTypeName(type),
                                 tok.empty() ? c.DescribeHere() : "'" + std::string(tok) + "'"));
  }
  if (ec == std::errc::result_out_of_range)
    return c.ErrorAt(at,
                     fmt::format("value {} is out of range for {}", tok, PrimitiveTypeName(type)));
  if (ec != std::errc())
    return c.ErrorAt(at,
                     fmt::format("expected a {} value, found '{}'", PrimitiveTypeName(type), tok));
  *out = v;
  return absl::OkStatus();
}

// One element of an array literal of native type T at the cursor.
template <typename T>
absl::Status ParseElement(Cursor& c, PrimitiveType type, T* out) {
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  size_t at = c.pos();
  if constexpr (IsComplexT<T>::value) {
    using R = typename T::value_type;
    if (c.Peek() != '(')
      return c.Expected(fmt::format("a {} value '(real, imag)'", PrimitiveTypeName(type)));
    c.Advance();
    R parts[2];
    for (int i = 0; i < 2; ++i) {
      if (i == 1) {
        if (absl::Status s = c.Expect(','); !s.ok()) return s;
      }
      if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
      size_t part_at = c.pos();
      std::string_view tok = ScanElement(c);
      if (absl::Status s = ParseFloatToken(c, part_at, tok, &parts[i], type); !s.ok()) return s;
    }
    if (absl::Status s = c.Expect(')'); !s.ok()) return s;
    *out = T(parts[0], parts[1]);
    return absl::OkStatus();
  } else {
    std::string_view tok = ScanElement(c);
    if constexpr (std::is_same_v<T, bool>) {
      if (tok == "true" || tok == "1") {
        *out = true;
      } else if (tok == "false" || tok == "0") {
        *out = false;
      } else {
        return c.ErrorAt(
            at, fmt::format("expected a pred value (true or false), found {}",
                            tok.empty() ? c.DescribeHere() : "'" + std::string(tok) + "'"));
      }
      return absl::OkStatus();
    } else if constexpr (std::is_integral_v<T>) {
      if (IsSubByteInt(type)) {  // read as int64, range-checked, stored in the low bits
        int64_t v = 0;
        if (absl::Status s = ParseIntToken(c, at, tok, &v, type); !s.ok()) return s;
        if (v < SubByteMin(type) || v > SubByteMax(type))
          return c.ErrorAt(
              at, fmt::format("value {} is out of range for {}", tok, PrimitiveTypeName(type)));
        *out = static_cast<T>(SubByteBits(type, v));
        return absl::OkStatus();
      }
      if constexpr (std::is_same_v<T, uint64_t>) {
        // XLA reads u64 values through int64: a negative one wraps (constant(-1) is 2^64-1).
        if (!tok.empty() && tok[0] == '-') {
          int64_t v = 0;
          if (absl::Status s = ParseIntToken(c, at, tok, &v, type); !s.ok()) return s;
          *out = static_cast<uint64_t>(v);
          return absl::OkStatus();
        }
      }
      return ParseIntToken(c, at, tok, out, type);
    } else {
      return ParseFloatToken(c, at, tok, out, type);
    }
  }
}

// An array literal: a bare scalar for rank 0, otherwise braces nested `rank` deep. Read with
// an explicit per-level counter instead of recursion.
template <typename T>
absl::Status ParseArray(Cursor& c, const Shape& shape, Literal* lit) {
  PrimitiveType type = shape.element_type();
  auto data = lit->data<T>();
  int rank = shape.rank();
  if (rank == 0) {
    if (c.Peek() == '{') {
      // Accept `{1}` for a scalar as well.
      c.Advance();
      if (absl::Status s = ParseElement(c, type, &data[0]); !s.ok()) return s;
      return c.Expect('}', "'}' closing the scalar");
    }
    return ParseElement(c, type, &data[0]);
  }
  const auto& dims = shape.dimensions();
  std::vector<int64_t> count(rank, 0);
  int64_t next = 0;
  if (c.Peek() != '{')
    return c.Expected(fmt::format("'{{' starting a literal of {}", ShapeToText(shape)));
  c.Advance();
  if (shape.num_elements() == 0 && c.TryConsume('}')) return absl::OkStatus();  // `{}`
  int level = 1;
  while (level > 0) {
    if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
    if (c.Peek() == '}') {
      if (count[level - 1] != dims[level - 1]) {
        return c.Error(fmt::format("literal of {} has {} elements in dimension {}, expected {}",
                                   ShapeToText(shape), count[level - 1], level - 1,
                                   dims[level - 1]));
      }
      c.Advance();
      --level;
      if (level > 0) ++count[level - 1];
      continue;
    }
    if (count[level - 1] > 0) {
      if (c.Peek() != ',') return c.Expected("',' or '}' in literal");
      c.Advance();
      if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
    }
    if (count[level - 1] >= dims[level - 1]) {
      return c.Error(fmt::format("literal of {} has more than {} elements in dimension {}",
                                 ShapeToText(shape), dims[level - 1], level - 1));
    }
    if (level < rank) {
      if (c.Peek() != '{')
        return c.Expected(fmt::format("'{{' for dimension {} of the literal", level));
      c.Advance();
      count[level] = 0;
      ++level;
    } else {
      if (absl::Status s = ParseElement(c, type, &data[next]); !s.ok()) return s;
      ++next;
      ++count[level - 1];
    }
  }
  return absl::OkStatus();
}

// Appends the array elements, nested in braces as ParseArray reads them.
template <typename T>
void AppendArray(const Literal& lit, std::string* out) {
  auto data = lit.data<T>();
  const Shape& shape = lit.shape();
  int rank = shape.rank();
  if (rank == 0) {
    *out += ElementText(data[0], shape.element_type());
    return;
  }
  const auto& dims = shape.dimensions();
  for (int64_t d : dims) {
    if (d == 0) {
      *out += "{}";
      return;
    }
  }
  // Odometer over the index space: open braces where trailing indices are zero, close them
  // where they reach the end.
  std::vector<int64_t> index(rank, 0);
  int64_t n = lit.element_count();
  for (int i = 0; i < rank; ++i) *out += (i + 1 < rank) ? "{ " : "{";
  for (int64_t linear = 0; linear < n; ++linear) {
    *out += ElementText(data[linear], shape.element_type());
    int d = rank - 1;
    int closed = 0;
    while (d >= 0) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
      ++closed;
      --d;
    }
    for (int i = 0; i < closed; ++i) {
      int level = rank - 1 - i;  // dimension whose braces close
      *out += (level + 1 < rank) ? " }" : "}";
    }
    if (d >= 0) {
      *out += ", ";
      for (int i = closed - 1; i >= 0; --i) {
        int level = rank - 1 - i;
        *out += (level + 1 < rank) ? "{ " : "{";
      }
    }
  }
}

}  // namespace

std::string FloatToText(float v) {
  if (std::isnan(v)) return NanText(v);
  return fmt::format("{}", v);
}

std::string FloatToText(double v) {
  if (std::isnan(v)) return NanText(v);
  return fmt::format("{}", v);
}

namespace {

// An array of one repeated value, written as the value alone. Its storage is allocated here,
// so it is bounded like other literals the text cannot fill.
absl::Status ParseSplat(Cursor& c, const Shape& shape, std::optional<Literal>* out, int depth) {
  constexpr int64_t kMaxSplatBytes = int64_t{1} << 31;
  const size_t at = c.pos();
  std::optional<Literal> one;
  if (absl::Status s = ParseLiteral(c, Shape::Scalar(shape.element_type()), &one, depth + 1);
      !s.ok())
    return s;
  if (!one) return c.ErrorAt(at, "a one-value (splat) constant cannot be elided");
  if (!shape.SizeFits() || shape.byte_size() > kMaxSplatBytes)
    return c.ErrorAt(at, fmt::format("a splat constant of {} would take more than {} bytes",
                                     ShapeToText(shape), kMaxSplatBytes));
  Literal lit = Literal::Uninitialized(shape);
  const size_t size = static_cast<size_t>(one->size_bytes());
  uint8_t* dst = lit.untyped_data();
  for (int64_t i = 0, n = shape.num_elements(); i < n; ++i)
    std::memcpy(dst + i * size, one->untyped_data(), size);
  out->emplace(std::move(lit));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseLiteral(Cursor& c, const Shape& shape, std::optional<Literal>* out, int depth) {
  if (depth > kMaxNesting) return c.Error("literal nested too deeply");
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  size_t start = c.pos();
  // `{...}`: the dumper left the value out.
  if (c.Peek() == '{') {
    Cursor probe = c;
    probe.Advance();
    if (probe.TryConsume("...") && probe.TryConsume('}')) {
      c = probe;
      out->reset();
      return absl::OkStatus();
    }
  }
  if (shape.IsTuple()) {
    if (absl::Status s = c.Expect('(', "'(' starting a tuple literal"); !s.ok()) return s;
    std::vector<Literal> elements;
    for (int i = 0; i < shape.tuple_size(); ++i) {
      if (i > 0) {
        if (absl::Status s = c.Expect(',', "',' between tuple literal elements"); !s.ok()) return s;
      }
      if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
      if (c.Peek() != '(' && AtShapeStart(c)) {
        // XLA may write each element's shape before its value: `(f32[] 1, s32[2] {1, 2})`.
        size_t shape_at = c.pos();
        Shape written;
        if (absl::Status s = ParseShapeAt(c, &written, depth + 1); !s.ok()) return s;
        if (!written.Compatible(shape.tuple_shapes(i)))
          return c.ErrorAt(shape_at,
                           fmt::format("tuple literal element {} has shape {}, expected {}", i,
                                       ShapeToText(written), ShapeToText(shape.tuple_shapes(i))));
      }
      std::optional<Literal> e;
      if (absl::Status s = ParseLiteral(c, shape.tuple_shapes(i), &e, depth + 1); !s.ok()) return s;
      if (!e) return c.ErrorAt(start, "a tuple literal cannot have elided elements");
      elements.push_back(std::move(*e));
    }
    if (absl::Status s = c.Expect(')', "')' closing the tuple literal"); !s.ok()) return s;
    Literal lit = Literal::MakeTuple(std::move(elements));
    out->emplace(std::move(lit));
    return absl::OkStatus();
  }
  if (!shape.IsArray())
    return c.Error(fmt::format("a {} has no literal value", ShapeToText(shape)));
  // XLA writes an array of one repeated value as that value: `f32[9] constant(0)`.
  if (shape.rank() > 0 && c.Peek() != '{') return ParseSplat(c, shape, out, depth);
  // Every element needs at least one character: refuse shapes the text cannot fill before
  // allocating their storage.
  int64_t n = shape.num_elements();
  if (n > static_cast<int64_t>(c.end() - c.pos()) + 1) {
    return c.Error(fmt::format("literal of {} needs {} elements, more than the text holds",
                               ShapeToText(shape), n));
  }
  Literal lit(shape);
  absl::Status st = PrimitiveTypeSwitch(
      shape.element_type(), [&](auto tag) { return ParseArray<decltype(tag)>(c, shape, &lit); });
  if (!st.ok()) return st;
  out->emplace(std::move(lit));
  return absl::OkStatus();
}

std::string LiteralToText(const Literal& literal) {
  std::string out;
  if (literal.IsTuple()) {
    out += "(";
    for (size_t i = 0; i < literal.elements().size(); ++i) {
      if (i) out += ", ";
      out += LiteralToText(literal.elements()[i]);
    }
    return out + ")";
  }
  if (!literal.shape().IsArray()) return out;
  PrimitiveTypeSwitch(literal.shape().element_type(),
                      [&](auto tag) { AppendArray<decltype(tag)>(literal, &out); });
  return out;
}

}  // namespace kiln::hlo_text
