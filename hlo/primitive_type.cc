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

bool IsFloating(PrimitiveType t) {
  return t == PrimitiveType::F16 || t == PrimitiveType::BF16 || t == PrimitiveType::F32 ||
         t == PrimitiveType::F64;
}
bool IsComplex(PrimitiveType t) { return t == PrimitiveType::C64 || t == PrimitiveType::C128; }
bool IsSignedInt(PrimitiveType t) {
  return t == PrimitiveType::S8 || t == PrimitiveType::S16 || t == PrimitiveType::S32 ||
         t == PrimitiveType::S64;
}
bool IsUnsignedInt(PrimitiveType t) {
  return t == PrimitiveType::U8 || t == PrimitiveType::U16 || t == PrimitiveType::U32 ||
         t == PrimitiveType::U64;
}
bool IsArrayType(PrimitiveType t) { return t != PrimitiveType::TUPLE && t != PrimitiveType::TOKEN; }
int BitWidth(PrimitiveType t) { return t == PrimitiveType::PRED ? 1 : 8 * ByteSizeOf(t); }

}  // namespace kiln
