// Shared evaluator helpers: index arithmetic, the strided copy kernel, error formatting.
#include "hlo/evaluator/evaluator_util.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::eval {

int64_t ElementCount(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t LinearIndexOf(std::span<const int64_t> dims, std::span<const int64_t> index) {
  int64_t linear = 0;
  for (size_t i = 0; i < dims.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

namespace {

// The innermost dimension is the hot loop; specialise it on the element size so that the
// compiler can turn it into plain loads and stores.
template <typename E>
void InnerCopy(const uint8_t* src, int64_t start, int64_t stride, int64_t n, uint8_t* dst) {
  const E* s = reinterpret_cast<const E*>(src) + start;
  E* d = reinterpret_cast<E*>(dst);
  if (stride == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * sizeof(E));
  } else if (stride == 0) {
    E v = *s;
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
  }
}

struct Bytes16 {
  uint8_t b[16];
};

void InnerCopyAny(const uint8_t* src, int64_t esize, int64_t start, int64_t stride, int64_t n,
                  uint8_t* dst) {
  switch (esize) {
    case 1:
      return InnerCopy<uint8_t>(src, start, stride, n, dst);
    case 2:
      return InnerCopy<uint16_t>(src, start, stride, n, dst);
    case 4:
      return InnerCopy<uint32_t>(src, start, stride, n, dst);
    case 8:
      return InnerCopy<uint64_t>(src, start, stride, n, dst);
    case 16:
      return InnerCopy<Bytes16>(src, start, stride, n, dst);
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * esize, src + (start + i * stride) * esize,
                    static_cast<size_t>(esize));
  }
}

}  // namespace

void StridedGather(const uint8_t* src, int64_t element_size, std::span<const int64_t> out_dims,
                   int64_t src_offset, std::span<const int64_t> src_strides, uint8_t* dst) {
  std::vector<int64_t> dst_strides =
      RowMajorStrides(std::vector<int64_t>(out_dims.begin(), out_dims.end()));
  StridedCopy(src, element_size, out_dims, src_offset, src_strides, dst, 0, dst_strides);
}

void StridedCopy(const uint8_t* src, int64_t element_size, std::span<const int64_t> dims,
                 int64_t src_offset, std::span<const int64_t> src_strides, uint8_t* dst,
                 int64_t dst_offset, std::span<const int64_t> dst_strides) {
  int64_t n = ElementCount(dims);
  if (n == 0) return;
  int rank = static_cast<int>(dims.size());
  if (rank == 0) {
    std::memcpy(dst + dst_offset * element_size, src + src_offset * element_size,
                static_cast<size_t>(element_size));
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t inner_src = src_strides[rank - 1];
  const bool dense_dst = dst_strides[rank - 1] == 1;
  std::vector<int64_t> index(rank - 1, 0);
  int64_t s = src_offset, d = dst_offset;
  for (int64_t done = 0; done < n; done += inner) {
    if (dense_dst) {
      InnerCopyAny(src, element_size, s, inner_src, inner, dst + d * element_size);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(dst + (d + i * dst_strides[rank - 1]) * element_size,
                    src + (s + i * inner_src) * element_size, static_cast<size_t>(element_size));
    }
    // Odometer over the outer dimensions, keeping both offsets in step.
    for (int k = rank - 2; k >= 0; --k) {
      s += src_strides[k];
      d += dst_strides[k];
      if (++index[k] < dims[k]) break;
      s -= src_strides[k] * dims[k];
      d -= dst_strides[k] * dims[k];
      index[k] = 0;
    }
  }
}

int64_t ReadIndex(const Literal& lit, int64_t linear) {
  if (lit.shape().element_type() == PrimitiveType::U64) {
    uint64_t v = lit.GetAsUint64(linear);
    // Indices beyond int64 are clamped by callers anyway; keep them large and positive.
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
  }
  return lit.GetAsInt64(linear);
}

std::string InstrSuffix(const HloInstruction& instr) {
  return absl::StrCat(" (instruction %", instr.name(), ")");
}

absl::Status InvalidArgument(const HloInstruction& instr, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(message), InstrSuffix(instr)));
}

absl::Status Unimplemented(const HloInstruction& instr, std::string_view message) {
  return absl::UnimplementedError(absl::StrCat(std::string(message), InstrSuffix(instr)));
}

absl::Status CheckArrayOperands(const HloInstruction& instr, std::span<const Literal* const> ops,
                                int expected_count) {
  if (expected_count >= 0 && static_cast<int>(ops.size()) != expected_count) {
    return InvalidArgument(instr,
                           absl::StrCat(std::string(HloOpcodeString(instr.opcode())), " expects ",
                                        expected_count, " operands, got ", ops.size()));
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] == nullptr || !ops[i]->shape().IsArray()) {
      return InvalidArgument(
          instr, absl::StrCat("operand ", i, " of ", std::string(HloOpcodeString(instr.opcode())),
                              " must be an array"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::eval
