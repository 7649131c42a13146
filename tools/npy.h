// NumPy .npy files <-> literals: every numeric dtype, both byte orders, C and Fortran
// order, format versions 1.0/2.0/3.0. Malformed files give errors naming the file.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hlo/literal.h"

namespace kiln {

// Parses the bytes of a .npy file. `name` (usually the path) starts every error message.
// Dtypes: bool, int8..64, uint8..64, float16/32/64, complex64/128 ('<', '>', '|', '=').
// Fortran-ordered data is transposed to row-major.
absl::StatusOr<Literal> ParseNpy(std::string_view bytes, std::string_view name);
absl::StatusOr<Literal> ReadNpyFile(const std::string& path);

// Serializes an array literal as a little-endian, C-ordered version 1.0 file (2.0 if the
// header needs it). bf16 has no NumPy dtype: it is written as float32.
absl::StatusOr<std::string> SerializeNpy(const Literal& literal);
absl::Status WriteNpyFile(const std::string& path, const Literal& literal);

// NumPy has no dtype for bf16, the minifloats and the sub-byte integers, so an input for such
// a parameter (`want`) arrives widened or as raw bytes; this turns `lit` into `want`:
// float32 is rounded to bf16 or a minifloat; uint8 is taken as the raw bytes of a minifloat or
// sub-byte integer (what ml_dtypes saves, as 'V1'); int8 gives an s4/s2 its values. Values a
// sub-byte type cannot hold are an error. Other combinations are left alone.
absl::Status AdoptWidenedInput(PrimitiveType want, Literal& lit);
// " (as float32 or raw bytes)" and the like, for the message when a type still differs.
std::string WidenedInputNote(PrimitiveType want);

}  // namespace kiln
