// The .npy reader and writer: header dict parsing, dtype mapping, byte swapping,
// Fortran-order transposition.
#include "tools/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "fmt/format.h"
#include "tools/commands.h"

namespace kiln {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A tiny parser for the Python dict literal NumPy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class DictParser {
 public:
  DictParser(std::string_view text) : text_(text) {}

  // Returns an error message (empty on success).
  std::string Parse(Header& h) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    SkipSpace();
    if (!Eat('{')) return "header is not a dict (no '{')";
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      std::optional<std::string> key = String();
      if (!key) return Where("expected a quoted key");
      SkipSpace();
      if (!Eat(':')) return Where("expected ':' after key '" + *key + "'");
      SkipSpace();
      if (*key == "descr") {
        if (Peek() == '[') return "unsupported dtype: structured arrays (descr is a list)";
        std::optional<std::string> v = String();
        if (!v) return Where("'descr' must be a quoted dtype string");
        h.descr = *v;
        have_descr = true;
      } else if (*key == "fortran_order") {
        if (EatWord("True")) {
          h.fortran_order = true;
        } else if (EatWord("False")) {
          h.fortran_order = false;
        } else {
          return Where("'fortran_order' must be True or False");
        }
        have_fortran = true;
      } else if (*key == "shape") {
        std::string err = Shape(h.shape);
        if (!err.empty()) return err;
        have_shape = true;
      } else {
        return "unexpected header key '" + *key + "'";
      }
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return Where("expected ',' or '}'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Where("unexpected text after the header dict");
    if (!have_descr) return "header has no 'descr'";
    if (!have_fortran) return "header has no 'fortran_order'";
    if (!have_shape) return "header has no 'shape'";
    return "";
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool EatWord(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  std::string Where(std::string what) const {
    return fmt::format("bad header dict at offset {}: {}", pos_, what);
  }
  std::optional<std::string> String() {
    char q = Peek();
    if (q != '\'' && q != '"') return std::nullopt;
    ++pos_;
    size_t end = text_.find(q, pos_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  std::string Shape(std::vector<int64_t>& dims) {
    if (!Eat('(')) return Where("'shape' must be a tuple");
    while (true) {
      SkipSpace();
      if (Eat(')')) return "";
      if (Peek() < '0' || Peek() > '9') return Where("shape entries must be non-negative integers");
      int64_t v = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        if (v > (INT64_MAX - 9) / 10) return Where("shape entry too large");
        v = v * 10 + (Peek() - '0');
        ++pos_;
      }
      if (Peek() == 'L') ++pos_;  // Python 2 longs
      dims.push_back(v);
      if (dims.size() > 64) return Where("more than 64 dimensions");
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat(')')) return "";
      return Where("expected ',' or ')' in shape");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// The element type and byte order of a descr such as '<f4'; error message when unsupported.
struct DType {
  PrimitiveType type;
  bool swap;  // stored in the other byte order than the host's
};

std::optional<DType> ParseDescr(const std::string& descr, std::string& error) {
  error = fmt::format("unsupported dtype '{}'", descr);
  if (descr.size() < 3) return std::nullopt;
  char order = descr[0];
  std::string_view code = std::string_view(descr).substr(1);
  static const struct {
    std::string_view code;
    PrimitiveType type;
  } kTypes[] = {
      {"b1", PrimitiveType::PRED},
      {"i1", PrimitiveType::S8},
      {"i2", PrimitiveType::S16},
      {"i4", PrimitiveType::S32},
      {"i8", PrimitiveType::S64},
      {"u1", PrimitiveType::U8},
      {"u2", PrimitiveType::U16},
      {"u4", PrimitiveType::U32},
      {"u8", PrimitiveType::U64},
      {"f2", PrimitiveType::F16},
      {"f4", PrimitiveType::F32},
      {"f8", PrimitiveType::F64},
      {"c8", PrimitiveType::C64},
      {"c16", PrimitiveType::C128},
      // ml_dtypes' types are saved as raw bytes: 'V1' (float8_e5m2: 'f1'), bfloat16 'V2'.
      {"V1", PrimitiveType::U8},
      {"f1", PrimitiveType::U8},
      {"V2", PrimitiveType::U16},
  };
  for (const auto& t : kTypes) {
    if (code != t.code) continue;
    int64_t size = ByteSizeOf(t.type);
    bool little_host = std::endian::native == std::endian::little;
    switch (order) {
      case '<':
        return DType{t.type, size > 1 && !little_host};
      case '>':
        return DType{t.type, size > 1 && little_host};
      case '=':
        return DType{t.type, false};
      case '|':
        if (size == 1) return DType{t.type, false};
        error = fmt::format("dtype '{}': byte order '|' is only valid for 1-byte types", descr);
        return std::nullopt;
      default:
        error = fmt::format("dtype '{}': unknown byte order '{}'", descr, order);
        return std::nullopt;
    }
  }
  return std::nullopt;
}

uint32_t ReadLE(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

const char* NumpyDescr(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::PRED:
      return "|b1";
    case PrimitiveType::S8:
      return "|i1";
    case PrimitiveType::S16:
      return "<i2";
    case PrimitiveType::S32:
      return "<i4";
    case PrimitiveType::S64:
      return "<i8";
    case PrimitiveType::U8:
      return "|u1";
    case PrimitiveType::U16:
      return "<u2";
    case PrimitiveType::U32:
      return "<u4";
    case PrimitiveType::U64:
      return "<u8";
    case PrimitiveType::F16:
      return "<f2";
    case PrimitiveType::F32:
      return "<f4";
    case PrimitiveType::F64:
      return "<f8";
    case PrimitiveType::C64:
      return "<c8";
    case PrimitiveType::C128:
      return "<c16";
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<Literal> ParseNpy(std::string_view bytes, std::string_view name) {
  auto fail = [&](const std::string& what) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", name, what));
  };
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < kMagicSize || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    return fail("not a .npy file (bad magic)");
  }
  if (bytes.size() < 10) return fail("truncated header");
  int major = data[6], minor = data[7];
  size_t len_size = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_size == 0 || minor != 0) {
    return fail(fmt::format("unsupported .npy format version {}.{}", major, minor));
  }
  if (bytes.size() < 6 + 2 + len_size) return fail("truncated header");
  size_t header_len = ReadLE(data + 8, static_cast<int>(len_size));
  size_t header_start = 8 + len_size;
  if (bytes.size() - header_start < header_len) {
    return fail(fmt::format("truncated header (declares {} bytes, file has {})", header_len,
                            bytes.size() - header_start));
  }
  std::string_view header_text = bytes.substr(header_start, header_len);
  Header header;
  if (std::string err = DictParser(header_text).Parse(header); !err.empty()) return fail(err);
  std::string dtype_error;
  std::optional<DType> dtype = ParseDescr(header.descr, dtype_error);
  if (!dtype) return fail(dtype_error);

  const int64_t item = ByteSizeOf(dtype->type);
  const size_t available = bytes.size() - header_start - header_len;
  // Element count, guarding the multiplication against overflow: count * d must stay within
  // what the file can hold, else the sizes cannot match anyway.
  const int64_t max_elements = static_cast<int64_t>(available / item);
  int64_t count = 1;
  for (int64_t d : header.shape) {
    if (d == 0) {
      count = 0;
      break;
    }
  }
  for (int64_t d : header.shape) {
    if (count == 0) break;
    if (count > max_elements / d) {
      return fail(fmt::format("data size mismatch: shape {} needs more than the file's {} bytes",
                              Shape(dtype->type, header.shape).ToString(false), available));
    }
    count *= d;
  }
  if (static_cast<uint64_t>(count) * item != available) {
    return fail(fmt::format("data size mismatch: shape needs {} bytes of '{}', file has {}",
                            count * item, header.descr, available));
  }

  Literal literal(Shape(dtype->type, header.shape));
  uint8_t* out = literal.untyped_data();
  const uint8_t* in = data + header_start + header_len;
  const int rank = static_cast<int>(header.shape.size());
  if (!header.fortran_order || rank <= 1) {
    if (count > 0) std::memcpy(out, in, static_cast<size_t>(count * item));
  } else {
    // Column-major source: element at multi-index i sits at sum(i[k] * fstride[k]).
    std::vector<int64_t> fstride(rank, 1);
    for (int k = 1; k < rank; ++k) fstride[k] = fstride[k - 1] * header.shape[k - 1];
    std::vector<int64_t> idx(rank, 0);
    for (int64_t linear = 0; linear < count; ++linear) {
      int64_t src = 0;
      for (int k = 0; k < rank; ++k) src += idx[k] * fstride[k];
      std::memcpy(out + linear * item, in + src * item, static_cast<size_t>(item));
      for (int k = rank - 1; k >= 0; --k) {
        if (++idx[k] < header.shape[k]) break;
        idx[k] = 0;
      }
    }
  }
  if (dtype->swap) {
    // Complex numbers swap each component separately.
    int64_t part = IsComplex(dtype->type) ? item / 2 : item;
    for (int64_t off = 0; off < count * item; off += part)
      std::reverse(out + off, out + off + part);
  }
  if (dtype->type == PrimitiveType::PRED) {
    for (int64_t i = 0; i < count; ++i) out[i] = out[i] != 0;  // bool is exactly 0 or 1
  }
  return literal;
}

absl::StatusOr<Literal> ReadNpyFile(const std::string& path) {
  // A regular file is read whole (its size is its own); anything else (a pipe, a device)
  // up to the limit of a text file, since it may never end.
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (regular) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(fmt::format("{}: cannot open file", path));
    std::stringstream buf;
    buf << in.rdbuf();
    if (in.bad()) return absl::DataLossError(fmt::format("{}: read error", path));
    return ParseNpy(buf.str(), path);
  }
  absl::StatusOr<std::string> bytes = ReadFileBounded(path, kMaxTextFileBytes);
  if (!bytes.ok()) return bytes.status();
  return ParseNpy(*bytes, path);
}

absl::StatusOr<std::string> SerializeNpy(const Literal& literal) {
  if (!literal.shape().IsArray()) {
    return absl::InvalidArgumentError(
        fmt::format("cannot write {} as .npy (arrays only)", literal.shape().ToString(false)));
  }
  // Types without a NumPy dtype are widened: bf16 and the minifloats to float32 (exact),
  // sub-byte integers to int8/uint8.
  const PrimitiveType type = literal.shape().element_type();
  if (type == PrimitiveType::BF16 || IsMiniFloat(type)) {
    return SerializeNpy(literal.Convert(PrimitiveType::F32));
  }
  if (IsSubByteInt(type)) {
    return SerializeNpy(literal.Convert(IsSignedInt(type) ? PrimitiveType::S8 : PrimitiveType::U8));
  }
  const char* descr = NumpyDescr(literal.shape().element_type());
  if (descr == nullptr) return absl::InvalidArgumentError("no NumPy dtype for this element type");
  std::string shape;
  for (int64_t d : literal.shape().dimensions()) shape += fmt::format("{}, ", d);
  if (literal.shape().rank() > 1) shape.resize(shape.size() - 2);  // (2, 3) but (2,) and ()
  if (literal.shape().rank() == 1) shape.resize(shape.size() - 1);
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // Pad with spaces so the data starts 64-byte aligned; the header ends in '\n'. Version 1.0
  // has a 2-byte header length; 2.0 (4 bytes) only when that does not fit.
  auto padding = [&](size_t prefix) { return (64 - (prefix + dict.size() + 1) % 64) % 64; };
  size_t prefix = 10;
  int version = 1;
  if (dict.size() + 1 + padding(prefix) > 65535) {
    prefix = 12;
    version = 2;
  }
  dict.append(padding(prefix), ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(version));
  out.push_back(0);
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += dict;
  size_t data_start = out.size();
  if (literal.size_bytes() > 0) {  // an empty literal's data pointer may be null
    out.append(reinterpret_cast<const char*>(literal.untyped_data()),
               static_cast<size_t>(literal.size_bytes()));
  }
  if constexpr (std::endian::native == std::endian::big) {
    int64_t item = ByteSizeOf(literal.shape().element_type());
    int64_t part = IsComplex(literal.shape().element_type()) ? item / 2 : item;
    for (size_t off = data_start; off < out.size(); off += part) {
      std::reverse(out.begin() + off, out.begin() + off + part);
    }
  }
  return out;
}

absl::Status WriteNpyFile(const std::string& path, const Literal& literal) {
  absl::StatusOr<std::string> bytes = SerializeNpy(literal);
  if (!bytes.ok())
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path, std::string(bytes.status().message())));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(fmt::format("{}: cannot create file", path));
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) return absl::DataLossError(fmt::format("{}: write failed", path));
  return absl::OkStatus();
}

}  // namespace kiln

namespace kiln {

absl::Status AdoptWidenedInput(PrimitiveType want, Literal& lit) {
  const PrimitiveType got = lit.shape().element_type();
  if (got == want || !lit.shape().IsArray()) return absl::OkStatus();
  if ((want == PrimitiveType::BF16 || IsMiniFloat(want)) && got == PrimitiveType::F32) {
    lit = lit.Convert(want);
    return absl::OkStatus();
  }
  if (want == PrimitiveType::BF16 && got == PrimitiveType::U16) {  // ml_dtypes' raw 'V2'
    Literal out(Shape(want, lit.shape().dimensions()));
    std::memcpy(out.untyped_data(), lit.untyped_data(), static_cast<size_t>(lit.size_bytes()));
    lit = std::move(out);
    return absl::OkStatus();
  }
  const int bits = BitWidth(want);
  const bool raw = got == PrimitiveType::U8 && (IsMiniFloat(want) || IsSubByteInt(want));
  const bool values = got == PrimitiveType::S8 && IsSubByteInt(want) && IsSignedInt(want);
  if (!raw && !values) return absl::OkStatus();
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    const int64_t v = lit.GetAsInt64(i);
    const bool fits =
        raw ? v < (int64_t{1} << bits) : v >= SubByteMin(want) && v <= SubByteMax(want);
    if (!fits) {
      return absl::InvalidArgumentError(fmt::format("element {} ({}) does not fit {}{}", i, v,
                                                    PrimitiveTypeName(want),
                                                    raw ? " (raw bytes)" : ""));
    }
  }
  Literal out(Shape(want, lit.shape().dimensions()));
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    out.data<uint8_t>()[i] = raw ? lit.data<uint8_t>()[i] : SubByteBits(want, lit.GetAsInt64(i));
  }
  lit = std::move(out);
  return absl::OkStatus();
}

std::string WidenedInputNote(PrimitiveType want) {
  if (want == PrimitiveType::BF16) return " (as float32, or raw bytes as ml_dtypes' 'V2')";
  if (IsMiniFloat(want)) return " (as float32, or its raw bytes as uint8 or ml_dtypes' 'V1')";
  if (IsSubByteInt(want) && IsSignedInt(want)) return " (as int8, or raw bytes as uint8/'V1')";
  if (IsSubByteInt(want)) return " (as uint8 or ml_dtypes' 'V1')";
  return "";
}

}  // namespace kiln
