// Element types of HLO arrays: the enum, names as XLA spells them, sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// X(enum, text name, byte size). The types after TOKEN came later and are appended so the
// numbering (shared with the C ABI's KILN_DType) never moves. Every element of the sub-byte
// types takes one byte, as in ml_dtypes and XLA's unpacked layout: the value sits in the low
// bits and the rest are zero (an s4 -1 is the byte 0x0f).
#define KILN_PRIMITIVE_TYPES(X)        \
  X(PRED, "pred", 1)                   \
  X(S8, "s8", 1)                       \
  X(S16, "s16", 2)                     \
  X(S32, "s32", 4)                     \
  X(S64, "s64", 8)                     \
  X(U8, "u8", 1)                       \
  X(U16, "u16", 2)                     \
  X(U32, "u32", 4)                     \
  X(U64, "u64", 8)                     \
  X(F16, "f16", 2)                     \
  X(BF16, "bf16", 2)                   \
  X(F32, "f32", 4)                     \
  X(F64, "f64", 8)                     \
  X(C64, "c64", 8)                     \
  X(C128, "c128", 16)                  \
  X(TUPLE, "tuple", 0)                 \
  X(TOKEN, "token", 0)                 \
  X(F8E4M3FN, "f8e4m3fn", 1)           \
  X(F8E5M2, "f8e5m2", 1)               \
  X(F8E4M3FNUZ, "f8e4m3fnuz", 1)       \
  X(F8E5M2FNUZ, "f8e5m2fnuz", 1)       \
  X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 1) \
  X(F8E3M4, "f8e3m4", 1)               \
  X(F8E4M3, "f8e4m3", 1)               \
  X(F8E8M0FNU, "f8e8m0fnu", 1)         \
  X(F4E2M1FN, "f4e2m1fn", 1)           \
  X(S4, "s4", 1)                       \
  X(U4, "u4", 1)                       \
  X(S2, "s2", 1)                       \
  X(U2, "u2", 1)                       \
  X(S1, "s1", 1)                       \
  X(U1, "u1", 1)

enum class PrimitiveType : uint8_t {
#define KILN_ENUM(e, n, s) e,
  KILN_PRIMITIVE_TYPES(KILN_ENUM)
#undef KILN_ENUM
};

std::string_view PrimitiveTypeName(PrimitiveType t);
std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name);
int64_t ByteSizeOf(PrimitiveType t);

bool IsFloating(PrimitiveType t);   // f16, bf16, f32, f64 and the minifloats
bool IsMiniFloat(PrimitiveType t);  // the f8 and f4 types
// f16, bf16 and the minifloats: computed in f32 and rounded back after every op.
inline bool IsNarrowFloat(PrimitiveType t) {
  return t == PrimitiveType::F16 || t == PrimitiveType::BF16 || IsMiniFloat(t);
}
bool IsComplex(PrimitiveType t);      // c64, c128
bool IsSignedInt(PrimitiveType t);    // s1, s2, s4, s8..s64
bool IsUnsignedInt(PrimitiveType t);  // u1, u2, u4, u8..u64
bool IsSubByteInt(PrimitiveType t);   // s1..s4, u1..u4: one byte per element, value in the low bits
inline bool IsInteger(PrimitiveType t) { return IsSignedInt(t) || IsUnsignedInt(t); }
bool IsArrayType(PrimitiveType t);  // everything but tuple and token
int BitWidth(PrimitiveType t);      // bits of the value: 1 for pred, 4 for s4 and f4e2m1fn

// A sub-byte integer's stored byte (value in the low bits, the rest zero) and its value.
inline int64_t SubByteValue(PrimitiveType t, uint8_t byte) {
  const int bits = BitWidth(t);
  const int64_t v = byte & ((1 << bits) - 1);
  return IsSignedInt(t) && (v >> (bits - 1)) ? v - (int64_t{1} << bits) : v;
}
inline uint8_t SubByteBits(PrimitiveType t, int64_t value) {  // wraps, as integer narrowing
  return static_cast<uint8_t>(value & ((1 << BitWidth(t)) - 1));
}
inline int64_t SubByteMin(PrimitiveType t) {
  return IsSignedInt(t) ? -(int64_t{1} << (BitWidth(t) - 1)) : 0;
}
inline int64_t SubByteMax(PrimitiveType t) {
  return IsSignedInt(t) ? (int64_t{1} << (BitWidth(t) - 1)) - 1 : (int64_t{1} << BitWidth(t)) - 1;
}

}  // namespace kiln
