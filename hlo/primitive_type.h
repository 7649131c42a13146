// Element types of HLO arrays: the enum, names as XLA spells them, sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// X(enum, text name, byte size)
#define KILN_PRIMITIVE_TYPES(X) \
  X(PRED, "pred", 1)            \
  X(S8, "s8", 1)                \
  X(S16, "s16", 2)              \
  X(S32, "s32", 4)              \
  X(S64, "s64", 8)              \
  X(U8, "u8", 1)                \
  X(U16, "u16", 2)              \
  X(U32, "u32", 4)              \
  X(U64, "u64", 8)              \
  X(F16, "f16", 2)              \
  X(BF16, "bf16", 2)            \
  X(F32, "f32", 4)              \
  X(F64, "f64", 8)              \
  X(C64, "c64", 8)              \
  X(C128, "c128", 16)           \
  X(TUPLE, "tuple", 0)          \
  X(TOKEN, "token", 0)

enum class PrimitiveType : uint8_t {
#define KILN_ENUM(e, n, s) e,
  KILN_PRIMITIVE_TYPES(KILN_ENUM)
#undef KILN_ENUM
};

std::string_view PrimitiveTypeName(PrimitiveType t);
std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name);
int64_t ByteSizeOf(PrimitiveType t);

bool IsFloating(PrimitiveType t);     // f16, bf16, f32, f64
bool IsComplex(PrimitiveType t);      // c64, c128
bool IsSignedInt(PrimitiveType t);    // s8..s64
bool IsUnsignedInt(PrimitiveType t);  // u8..u64
inline bool IsInteger(PrimitiveType t) { return IsSignedInt(t) || IsUnsignedInt(t); }
bool IsArrayType(PrimitiveType t);  // everything but tuple and token
int BitWidth(PrimitiveType t);

}  // namespace kiln
