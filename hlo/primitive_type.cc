// Names and sizes of primitive types, derived from the one X-macro list.
#include "hlo/primitive_type.h"

namespace kiln {

std::string_view PrimitiveTypeName(PrimitiveType t) {
  switch (t) {
#define KILN_CASE(e, n, s) \
  case PrimitiveType::e:   \
    return n;
    KILN_PRIMITIVE_TYPES(KILN_CASE)
#undef KILN_CASE
  }
  return "invalid";
}

std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name) {
#define KILN_CASE(e, n, s) \
  if (name == n) return PrimitiveType::e;
  KILN_PRIMITIVE_TYPES(KILN_CASE)
#undef KILN_CASE
  return std::nullopt;
}

int64_t ByteSizeOf(PrimitiveType t) {
  switch (t) {
#define KILN_CASE(e, n, s) \
  case PrimitiveType::e:   \
    return s;
    KILN_PRIMITIVE_TYPES(KILN_CASE)
#undef KILN_CASE
  }
  return 0;
}

bool IsMiniFloat(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::F8E4M3FN:
    case PrimitiveType::F8E5M2:
    case PrimitiveType::F8E4M3FNUZ:
    case PrimitiveType::F8E5M2FNUZ:
    case PrimitiveType::F8E4M3B11FNUZ:
    case PrimitiveType::F8E3M4:
    case PrimitiveType::F8E4M3:
    case PrimitiveType::F8E8M0FNU:
    case PrimitiveType::F4E2M1FN:
      return true;
    default:
      return false;
  }
}
bool IsFloating(PrimitiveType t) {
  return t == PrimitiveType::F16 || t == PrimitiveType::BF16 || t == PrimitiveType::F32 ||
         t == PrimitiveType::F64 || IsMiniFloat(t);
}
bool IsComplex(PrimitiveType t) { return t == PrimitiveType::C64 || t == PrimitiveType::C128; }
bool IsSignedInt(PrimitiveType t) {
  return t == PrimitiveType::S8 || t == PrimitiveType::S16 || t == PrimitiveType::S32 ||
         t == PrimitiveType::S64 || t == PrimitiveType::S4 || t == PrimitiveType::S2 ||
         t == PrimitiveType::S1;
}
bool IsUnsignedInt(PrimitiveType t) {
  return t == PrimitiveType::U8 || t == PrimitiveType::U16 || t == PrimitiveType::U32 ||
         t == PrimitiveType::U64 || t == PrimitiveType::U4 || t == PrimitiveType::U2 ||
         t == PrimitiveType::U1;
}
bool IsSubByteInt(PrimitiveType t) {
  return t == PrimitiveType::S4 || t == PrimitiveType::U4 || t == PrimitiveType::S2 ||
         t == PrimitiveType::U2 || t == PrimitiveType::S1 || t == PrimitiveType::U1;
}
bool IsArrayType(PrimitiveType t) { return t != PrimitiveType::TUPLE && t != PrimitiveType::TOKEN; }
int BitWidth(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::PRED:
    case PrimitiveType::S1:
    case PrimitiveType::U1:
      return 1;
    case PrimitiveType::S4:
    case PrimitiveType::U4:
    case PrimitiveType::F4E2M1FN:
      return 4;
    case PrimitiveType::S2:
    case PrimitiveType::U2:
      return 2;
    default:
      return static_cast<int>(8 * ByteSizeOf(t));
  }
}

}  // namespace kiln
