// Shape construction, printing and comparison.
#include "hlo/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hlo/checked_math.h"

namespace kiln {

Shape::Shape(PrimitiveType type, std::vector<int64_t> dims)
    : element_type_(type), dims_(std::move(dims)) {
  SetDefaultLayout();
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.element_type_ = PrimitiveType::TUPLE;
  s.tuple_ = std::move(elements);
  return s;
}

Shape Shape::Token() {
  Shape s;
  s.element_type_ = PrimitiveType::TOKEN;
  return s;
}

void Shape::set_dynamic_dimension(int i, bool d) {
  if (dynamic_.empty()) dynamic_.assign(dims_.size(), false);
  dynamic_[i] = d;
}

bool Shape::is_dynamic() const {
  for (bool d : dynamic_)
    if (d) return true;
  for (const Shape& t : tuple_)
    if (t.is_dynamic()) return true;
  return false;
}

void Shape::SetDefaultLayout() {
  if (IsTuple()) {
    for (Shape& t : tuple_) t.SetDefaultLayout();
    return;
  }
  if (!IsArray()) return;
  Layout l;
  for (int i = rank() - 1; i >= 0; --i) l.minor_to_major.push_back(i);
  layout_ = std::move(l);
}

std::vector<int64_t> Shape::MinorToMajor() const {
  if (layout_ && static_cast<int>(layout_->minor_to_major.size()) == rank())
    return layout_->minor_to_major;
  std::vector<int64_t> m;
  for (int i = rank() - 1; i >= 0; --i) m.push_back(i);
  return m;
}

bool Shape::HasDefaultLayout() const {
  std::vector<int64_t> m = MinorToMajor();
  for (int i = 0; i < rank(); ++i)
    if (m[i] != rank() - 1 - i) return false;
  return true;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

int64_t Shape::total_byte_size() const {
  if (IsTuple()) {
    int64_t n = 0;
    for (const Shape& t : tuple_) n += t.total_byte_size();
    return n;
  }
  return IsArray() ? byte_size() : 0;
}

namespace {

// total_byte_size() of `s`, or nullopt when a dimension is negative or a product or sum
// overflows int64. The running byte count of an array bounds its running element count
// (each element has at least one byte), so this checks num_elements() too, including the
// products before a zero dimension.
std::optional<int64_t> CheckedTotalBytes(const Shape& s) {
  if (s.IsTuple()) {
    int64_t total = 0;
    for (const Shape& t : s.tuple_shapes()) {
      std::optional<int64_t> b = CheckedTotalBytes(t);
      if (b) b = CheckedAdd(total, *b);
      if (!b) return std::nullopt;
      total = *b;
    }
    return total;
  }
  if (!s.IsArray()) return 0;
  int64_t bytes = ByteSizeOf(s.element_type()) == 0 ? 1 : ByteSizeOf(s.element_type());
  for (int64_t d : s.dimensions()) {
    std::optional<int64_t> b = d < 0 ? std::nullopt : CheckedMul(bytes, d);
    if (!b) return std::nullopt;
    bytes = *b;
  }
  return bytes;
}

}  // namespace

bool Shape::SizeFits() const { return CheckedTotalBytes(*this).has_value(); }

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    std::string out = "(";
    for (int i = 0; i < tuple_size(); ++i) {
      if (i > 0) absl::StrAppend(&out, ", ");
      absl::StrAppend(&out, tuple_[i].ToString(print_layout));
    }
    return out + ")";
  }
  if (IsToken()) return "token[]";
  std::string out = std::string(PrimitiveTypeName(element_type_)) + "[";
  for (int i = 0; i < rank(); ++i) {
    if (i > 0) out += ",";
    if (is_dynamic_dimension(i)) out += "<=";
    absl::StrAppend(&out, dims_[i]);
  }
  out += "]";
  if (print_layout && layout_) {
    absl::StrAppend(&out, "{", absl::StrJoin(layout_->minor_to_major, ","), layout_->suffix, "}");
  }
  return out;
}

bool Shape::Compatible(const Shape& o) const {
  if (element_type_ != o.element_type_) return false;
  if (IsTuple()) {
    if (tuple_.size() != o.tuple_.size()) return false;
    for (size_t i = 0; i < tuple_.size(); ++i)
      if (!tuple_[i].Compatible(o.tuple_[i])) return false;
    return true;
  }
  return dims_ == o.dims_;
}

bool Shape::operator==(const Shape& o) const {
  if (!Compatible(o)) return false;
  if (IsTuple()) {
    for (size_t i = 0; i < tuple_.size(); ++i)
      if (tuple_[i] != o.tuple_[i]) return false;
    return true;
  }
  return dynamic_ == o.dynamic_ && MinorToMajor() == o.MinorToMajor();
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::vector<Shape> FlattenShape(const Shape& s) {
  if (!s.IsTuple()) return {s};
  std::vector<Shape> out;
  for (const Shape& t : s.tuple_shapes()) {
    std::vector<Shape> sub = FlattenShape(t);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

}  // namespace kiln
