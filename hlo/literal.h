// Host values of HLO shapes: dense arrays stored in logical row-major order (layouts only
// matter where bytes cross to a device or a file), and tuples of literals.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hlo/literal_memory.h"
#include "hlo/native_type.h"
#include "hlo/shape.h"

namespace kiln {

class Literal {
 public:
  Literal() : shape_(Shape::Tuple({})) {}
  // A zero-filled literal of `shape` (tuples get zero-filled elements).
  explicit Literal(const Shape& shape);
  // A literal of array `shape` whose bytes are not initialized: for a buffer that is about to
  // be written whole (a kernel's output), where zero-filling would be a second pass over it.
  static Literal Uninitialized(const Shape& shape);
  // An array literal over memory it does not own (a zero-copy import such as DLPack):
  // `data` holds shape.byte_size() row-major bytes and stays valid until `owner` is
  // released, when this literal (or the literal it was moved into) dies. Copies own their
  // bytes.
  static Literal Adopt(const Shape& shape, void* data, std::shared_ptr<void> owner);

  Literal(const Literal& other);
  Literal& operator=(const Literal& other);
  Literal(Literal&&) noexcept = default;
  Literal& operator=(Literal&&) noexcept = default;

  template <typename T>
  static Literal Scalar(PrimitiveType type, T value) {
    Literal l(Shape::Scalar(type));
    l.SetFromDouble(0, static_cast<double>(value));
    return l;
  }
  // A 1-D or N-D array from values (converted through double), row-major.
  static Literal FromDoubles(const Shape& shape, const std::vector<double>& values);
  static Literal MakeTuple(std::vector<Literal> elements);

  const Shape& shape() const { return shape_; }
  bool IsTuple() const { return shape_.IsTuple(); }
  int64_t element_count() const { return shape_.num_elements(); }

  // Raw row-major bytes of an array literal.
  uint8_t* untyped_data() { return owner_ ? adopted_ : bytes_.data(); }
  const uint8_t* untyped_data() const { return owner_ ? adopted_ : bytes_.data(); }
  int64_t size_bytes() const {
    return static_cast<int64_t>(owner_ ? adopted_size_ : bytes_.size());
  }
  // True when the bytes belong to someone else (Adopt).
  bool adopted() const { return owner_ != nullptr; }

  template <typename T>
  std::span<T> data() {
    return {reinterpret_cast<T*>(untyped_data()), static_cast<size_t>(size_bytes()) / sizeof(T)};
  }
  template <typename T>
  std::span<const T> data() const {
    return {reinterpret_cast<const T*>(untyped_data()),
            static_cast<size_t>(size_bytes()) / sizeof(T)};
  }
  template <typename T>
  T Get(const std::vector<int64_t>& index) const {
    return data<T>()[LinearIndex(index)];
  }
  template <typename T>
  void Set(const std::vector<int64_t>& index, T v) {
    data<T>()[LinearIndex(index)] = v;
  }
  int64_t LinearIndex(const std::vector<int64_t>& index) const;

  // Element access through double (complex: real part); for tests and generic code.
  double GetAsDouble(int64_t linear) const;
  void SetFromDouble(int64_t linear, double v);
  // Integer access that is exact for all 64-bit values.
  int64_t GetAsInt64(int64_t linear) const;
  uint64_t GetAsUint64(int64_t linear) const;

  std::vector<Literal>& elements() { return elements_; }
  const std::vector<Literal>& elements() const { return elements_; }
  const Literal& element(int i) const { return elements_[i]; }

  // Same element type and dims, then converts every element (round-to-nearest-even).
  Literal Convert(PrimitiveType to) const;
  // Sub-byte integers (s4, u4, s2, u2) are stored in the low bits of a byte. Code that
  // computes on them in int8/uint8 widens first (signed values sign-extended into the whole
  // byte) and truncates the result back; both walk tuples and leave other types alone.
  Literal WithSubByteIntsWidened() const;
  void TruncateSubByteInts();
  // Same data, new dims (element count must match).
  Literal Reshape(const std::vector<int64_t>& dims) const;

  // Array leaves depth-first, moved out of this literal.
  std::vector<Literal> DecomposeTuple() &&;

  bool operator==(const Literal& other) const;
  bool operator!=(const Literal& other) const { return !(*this == other); }

  // Short human-readable form, e.g. `f32[2] {1, 2}`; for messages and tests.
  std::string ToString() const;

 private:
  Shape shape_;
  // Leaves new bytes uninitialized on resize (Uninitialized); assign() still fills. Bytes
  // start on a 64-byte boundary: a cache line, full AVX-512 vectors, and what JAX needs to
  // take a buffer through DLPack without a copy.
  template <typename T>
  struct DefaultInitAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
      using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() = default;
    template <typename U>
    DefaultInitAllocator(const DefaultInitAllocator<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(literal_memory::Allocate(n * sizeof(T))); }
    void deallocate(T* p, size_t n) { literal_memory::Free(p, n * sizeof(T)); }
    template <typename U>
    void construct(U* p) {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  };
  std::vector<uint8_t, DefaultInitAllocator<uint8_t>> bytes_;
  // Adopted bytes (Adopt): used instead of bytes_ while owner_ is set.
  uint8_t* adopted_ = nullptr;
  size_t adopted_size_ = 0;
  std::shared_ptr<void> owner_;
  std::vector<Literal> elements_;
};

}  // namespace kiln
