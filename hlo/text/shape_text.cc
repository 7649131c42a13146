// Shapes in HLO text: element type, dimensions (static or bounded), layout with a verbatim
// tiling/memory-space suffix, tuples.
#include "hlo/text/shape_text.h"

#include <cctype>
#include <string_view>

#include "fmt/format.h"
#include "hlo/text/literal_text.h"

namespace kiln::hlo_text {
namespace {

absl::Status ParseLayout(Cursor& c, Shape* shape) {
  size_t at = c.pos();
  c.Advance();  // '{'
  Layout layout;
  if (!c.TryConsume('}')) {
    if (c.Peek() != ':') {
      while (true) {
        int64_t d = 0;
        if (absl::Status s = c.ReadInt("a dimension number in the layout", &d); !s.ok()) return s;
        layout.minor_to_major.push_back(d);
        if (!c.TryConsume(',')) break;
      }
    }
    if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
    if (c.Peek() == ':') {
      // Tiling, element size, memory space...: kept verbatim, up to the closing brace.
      size_t start = c.pos();
      int parens = 0;
      while (!c.AtEnd() && !(c.Peek() == '}' && parens == 0)) {
        char ch = c.Peek();
        if (ch == '(') ++parens;
        if (ch == ')' && --parens < 0) break;
        // XLA's layout items (T(..), E(n), S(n), P(type), #(type), D(C+,S~..), SC(..), *) use
        // only these; anything else would not read back in every place a shape is written.
        bool known = std::isalnum(static_cast<unsigned char>(ch)) ||
                     std::string_view("(),*#_: +~-").find(ch) != std::string_view::npos;
        if (!known) {
          return c.ErrorAt(c.pos(), fmt::format("unexpected '{}' in the layout", ch));
        }
        c.Advance();
      }
      if (parens != 0) return c.ErrorAt(start, "unbalanced parentheses in the layout");
      layout.suffix = std::string(c.text().substr(start, c.pos() - start));
    }
    if (absl::Status s = c.Expect('}', "'}' closing the layout"); !s.ok()) return s;
  }
  // The layout must be a permutation of the dimensions.
  int rank = shape->rank();
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int>(layout.minor_to_major.size()) == rank;
  for (int64_t d : layout.minor_to_major) {
    if (!ok || d < 0 || d >= rank || seen[d]) {
      ok = false;
      break;
    }
    seen[d] = true;
  }
  if (!ok) {
    return c.ErrorAt(at, fmt::format("layout is not a permutation of the {} dimensions of {}", rank,
                                     shape->ToString(false)));
  }
  shape->set_layout(std::move(layout));
  return absl::OkStatus();
}

}  // namespace

bool AtShapeStart(const Cursor& c) {
  if (c.Peek() == '(') return true;
  if (c.Peek() == '%') return false;
  std::string_view w = c.PeekWord();
  if (w == "b" && c.Peek(1) == '(') return true;  // XLA's buffer type, b(f32[16])
  if (w.empty() || c.Peek(w.size()) != '[') return false;
  auto t = PrimitiveTypeFromName(w);
  return t.has_value() && *t != PrimitiveType::TUPLE;
}

absl::Status ParseShapeAt(Cursor& c, Shape* out, int depth) {
  if (depth > kMaxNesting) return c.Error("tuple shape nested too deeply");
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  if (c.Peek() == '(') {
    c.Advance();
    std::vector<Shape> elements;
    if (!c.TryConsume(')')) {
      while (true) {
        Shape e;
        if (absl::Status s = ParseShapeAt(c, &e, depth + 1); !s.ok()) return s;
        elements.push_back(std::move(e));
        if (c.TryConsume(')')) break;
        if (absl::Status s = c.Expect(',', "',' or ')' in tuple shape"); !s.ok()) return s;
      }
    }
    *out = Shape::Tuple(std::move(elements));
    return absl::OkStatus();
  }
  size_t at = c.pos();
  std::string_view word = c.Peek() == '%' ? std::string_view() : c.PeekWord();
  if (word == "b" && c.Peek(1) == '(') {
    // XLA's buffer type (an array that is not a value: Pin/Unpin custom calls): Kiln keeps
    // the array's shape; the custom calls that use buffers do not run here anyway.
    c.Advance(2);
    if (absl::Status s = ParseShapeAt(c, out, depth + 1); !s.ok()) return s;
    if (!out->IsArray()) return c.Error("a buffer type b(...) holds an array shape");
    return c.Expect(')', "')' closing the buffer type b(...)");
  }
  auto type = PrimitiveTypeFromName(word);
  if (!type || *type == PrimitiveType::TUPLE) {
    if (!word.empty() && c.Peek(word.size()) == '[')
      return c.Error(fmt::format("unknown element type '{}'", word));
    return c.Expected("a shape");
  }
  c.Advance(word.size());
  if (absl::Status s = c.Expect('[', "'[' after the element type"); !s.ok()) return s;
  if (*type == PrimitiveType::TOKEN) {
    if (absl::Status s = c.Expect(']', "']' in token[]"); !s.ok()) return s;
    *out = Shape::Token();
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  if (!c.TryConsume(']')) {
    while (true) {
      bool is_dynamic = c.TryConsume("<=");
      if (c.TryConsume('?'))
        return c.ErrorAt(c.pos() - 1, "unbounded dynamic dimension '?' is not supported");
      int64_t d = 0;
      size_t dim_at = c.pos();
      if (absl::Status s = c.ReadInt("a dimension size", &d); !s.ok()) return s;
      if (d < 0) return c.ErrorAt(dim_at, fmt::format("negative dimension size {}", d));
      dims.push_back(d);
      dynamic.push_back(is_dynamic);
      if (c.TryConsume(']')) break;
      if (absl::Status s = c.Expect(',', "',' or ']' in the dimensions"); !s.ok()) return s;
    }
  }
  Shape shape(*type, std::move(dims));
  // Sizes whose byte count does not fit in 64 bits cannot describe real data.
  if (!shape.SizeFits())
    return c.ErrorAt(at, "shape is too large (its byte size overflows 64 bits)");
  for (size_t i = 0; i < dynamic.size(); ++i)
    if (dynamic[i]) shape.set_dynamic_dimension(static_cast<int>(i), true);
  // A layout follows `]` directly (XLA never puts space between them); this keeps
  // `-> f32[] {` (a computation body) and `s32[2] {1, 2}` (a literal) apart from layouts.
  Cursor probe = c;
  if (probe.Peek() == '{') {
    probe.Advance();
    if (!probe.SkipSpace().ok()) return probe.SkipSpace();
    char n = probe.Peek();
    if (IsDigit(n) || n == '}' || n == ':') {
      if (absl::Status s = ParseLayout(c, &shape); !s.ok()) return s;
    }
  }
  *out = std::move(shape);
  return absl::OkStatus();
}

absl::Status ParseLayoutAfterSpace(Cursor& c, Shape* shape) {
  if (!shape->IsArray()) return absl::OkStatus();
  Cursor probe = c;
  if (absl::Status s = probe.SkipSpace(); !s.ok()) return s;
  if (probe.Peek() != '{') return absl::OkStatus();
  c = probe;
  return ParseLayout(c, shape);
}

void AppendShape(const Shape& s, bool layout, std::string* out) {
  if (s.IsTuple()) {
    *out += "(";
    for (int i = 0; i < s.tuple_size(); ++i) {
      if (i) *out += ", ";
      AppendShape(s.tuple_shapes(i), layout, out);
    }
    *out += ")";
    return;
  }
  if (s.IsToken()) {
    *out += "token[]";
    return;
  }
  *out += PrimitiveTypeName(s.element_type());
  *out += "[";
  for (int i = 0; i < s.rank(); ++i) {
    if (i) *out += ",";
    if (s.is_dynamic_dimension(i)) *out += "<=";
    *out += fmt::format("{}", s.dimensions(i));
  }
  *out += "]";
  // Scalars print without `{}`, as XLA does.
  if (layout && s.has_layout() && (s.rank() > 0 || !s.layout().suffix.empty())) {
    *out += "{";
    const auto& m = s.layout().minor_to_major;
    for (size_t i = 0; i < m.size(); ++i) {
      if (i) *out += ",";
      *out += fmt::format("{}", m[i]);
    }
    *out += s.layout().suffix;
    *out += "}";
  }
}

std::string ShapeToText(const Shape& s, bool layout) {
  std::string out;
  AppendShape(s, layout, &out);
  return out;
}

}  // namespace kiln::hlo_text
