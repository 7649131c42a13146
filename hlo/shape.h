// Shapes of HLO values: arrays (element type, dimensions, layout) and tuples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hlo/primitive_type.h"

namespace kiln {

// Physical order of dimensions, as XLA prints it: `{1,0}` lists dimensions from the most
// minor to the most major. Tiling and memory-space suffixes (`{1,0:T(8,128)S(1)}`) are kept
// verbatim in `suffix` so they print back unchanged; Kiln does not interpret them.
struct Layout {
  std::vector<int64_t> minor_to_major;
  std::string suffix;
  bool operator==(const Layout&) const = default;
};

class Shape {
 public:
  Shape() = default;
  // An array shape with the default (row-major) layout.
  Shape(PrimitiveType type, std::vector<int64_t> dims);
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();
  static Shape Scalar(PrimitiveType type) { return Shape(type, {}); }

  PrimitiveType element_type() const { return element_type_; }
  void set_element_type(PrimitiveType t) { element_type_ = t; }
  bool IsTuple() const { return element_type_ == PrimitiveType::TUPLE; }
  bool IsToken() const { return element_type_ == PrimitiveType::TOKEN; }
  bool IsArray() const { return IsArrayType(element_type_); }

  const std::vector<int64_t>& dimensions() const { return dims_; }
  std::vector<int64_t>& mutable_dimensions() { return dims_; }
  int64_t dimensions(int i) const { return dims_[i]; }
  int rank() const { return static_cast<int>(dims_.size()); }

  // `f32[<=10]`: dimension i is a bound, not a fixed size.
  const std::vector<bool>& dynamic_dimensions() const { return dynamic_; }
  bool is_dynamic_dimension(int i) const { return !dynamic_.empty() && dynamic_[i]; }
  void set_dynamic_dimension(int i, bool d);
  bool is_dynamic() const;

  bool has_layout() const { return layout_.has_value(); }
  const Layout& layout() const { return *layout_; }
  const std::optional<Layout>& optional_layout() const { return layout_; }
  void set_layout(Layout l) { layout_ = std::move(l); }
  void clear_layout() { layout_.reset(); }
  // Sets the row-major layout {rank-1, ..., 0} on this and nested shapes.
  void SetDefaultLayout();
  // minor_to_major of the layout, or the row-major order when there is none.
  std::vector<int64_t> MinorToMajor() const;
  bool HasDefaultLayout() const;

  const std::vector<Shape>& tuple_shapes() const { return tuple_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_; }
  const Shape& tuple_shapes(int i) const { return tuple_[i]; }
  int tuple_size() const { return static_cast<int>(tuple_.size()); }

  // Number of elements of an array shape (1 for scalars).
  int64_t num_elements() const;
  int64_t byte_size() const { return num_elements() * ByteSizeOf(element_type_); }
  // Sum of the byte sizes of all array leaves.
  int64_t total_byte_size() const;
  // Whether every array leaf has non-negative dimensions and a byte size (and so an element
  // count) that fits in int64, and so does total_byte_size(): the size accessors are
  // meaningful only then.
  // Shapes from HLO text and from shape inference always fit; check shapes built by hand.
  bool SizeFits() const;

  // `f32[2,3]{1,0}`, `(f32[], s32[4]{0})`; layouts printed when present and requested.
  std::string ToString(bool print_layout = true) const;

  // Equal element types, dims and tuple structure; layouts ignored.
  bool Compatible(const Shape& other) const;
  bool operator==(const Shape& other) const;  // includes layout
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  PrimitiveType element_type_ = PrimitiveType::F32;
  std::vector<int64_t> dims_;
  std::vector<bool> dynamic_;  // empty when no dimension is dynamic
  std::optional<Layout> layout_;
  std::vector<Shape> tuple_;
};

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

// Leaf shapes of a (possibly nested) tuple shape, depth-first.
std::vector<Shape> FlattenShape(const Shape& s);

}  // namespace kiln
