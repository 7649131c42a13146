// Helpers shared by the evaluator families: index iteration, strided copies, operand checks
// and error messages that name the instruction.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"

namespace kiln::eval {

// Product of `dims` (1 for rank 0).
int64_t ElementCount(std::span<const int64_t> dims);

// Calls fn(index, linear) for every index of `dims` in row-major order, where `index` is a
// `const std::vector<int64_t>&` and `linear` its row-major position. Nothing for empty shapes.
template <typename F>
void ForEachIndex(std::span<const int64_t> dims, F&& fn) {
  int64_t n = ElementCount(dims);
  if (n == 0) return;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(static_cast<const std::vector<int64_t>&>(index), linear);
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

// Like ForEachIndex, but fn returns absl::Status and the walk stops at the first error.
template <typename F>
absl::Status ForEachIndexWithStatus(std::span<const int64_t> dims, F&& fn) {
  int64_t n = ElementCount(dims);
  if (n == 0) return absl::OkStatus();
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    absl::Status s = fn(static_cast<const std::vector<int64_t>&>(index), linear);
    if (!s.ok()) return s;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

// Row-major linear position of `index` in an array of `dims`.
int64_t LinearIndexOf(std::span<const int64_t> dims, std::span<const int64_t> index);

// Copies elements into `dst` (row-major over `out_dims`): output element at index i comes
// from source element `src_offset + sum_d i[d] * src_strides[d]` (strides in elements, may be
// zero or negative). Broadcast, transpose, slice and reverse are all this one walk.
void StridedGather(const uint8_t* src, int64_t element_size, std::span<const int64_t> out_dims,
                   int64_t src_offset, std::span<const int64_t> src_strides, uint8_t* dst);

// The general form: element at index i of a box of `dims` moves from
// `src_offset + sum_d i[d] * src_strides[d]` to `dst_offset + sum_d i[d] * dst_strides[d]`
// (all in elements). Pad, dynamic-update-slice and scatter-like writes use it.
void StridedCopy(const uint8_t* src, int64_t element_size, std::span<const int64_t> dims,
                 int64_t src_offset, std::span<const int64_t> src_strides, uint8_t* dst,
                 int64_t dst_offset, std::span<const int64_t> dst_strides);

// Reads element `linear` of an integer (or pred) array as int64 (index operands).
int64_t ReadIndex(const Literal& lit, int64_t linear = 0);

// ` (instruction %name)`, the suffix every evaluator error carries.
std::string InstrSuffix(const HloInstruction& instr);
// Errors that name the instruction: `<message> (instruction %name)`.
absl::Status InvalidArgument(const HloInstruction& instr, std::string_view message);
absl::Status Unimplemented(const HloInstruction& instr, std::string_view message);
// Checks the operand count and that every operand is an array literal.
absl::Status CheckArrayOperands(const HloInstruction& instr, std::span<const Literal* const> ops,
                                int expected_count);

}  // namespace kiln::eval
