// Opcode names, arity and classes, all derived from KILN_HLO_OPCODES.
#include "hlo/opcode.h"

#include "absl/container/flat_hash_map.h"

namespace kiln {

std::string_view HloOpcodeString(HloOpcode op) {
  switch (op) {
#define KILN_CASE(e, n, a, t) \
  case HloOpcode::e:          \
    return n;
    KILN_HLO_OPCODES(KILN_CASE)
#undef KILN_CASE
  }
  return "unknown";
}

std::optional<HloOpcode> StringToHloOpcode(std::string_view name) {
  static const auto* table = [] {
    auto* m = new absl::flat_hash_map<std::string_view, HloOpcode>();
#define KILN_ENTRY(e, n, a, t) (*m)[n] = HloOpcode::e;
    KILN_HLO_OPCODES(KILN_ENTRY)
#undef KILN_ENTRY
    return m;
  }();
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return it->second;
}

int HloOpcodeArity(HloOpcode op) {
  switch (op) {
#define KILN_CASE(e, n, a, t) \
  case HloOpcode::e:          \
    return a;
    KILN_HLO_OPCODES(KILN_CASE)
#undef KILN_CASE
  }
  return kVariadic;
}

unsigned HloOpcodeTraits(HloOpcode op) {
  switch (op) {
#define KILN_CASE(e, n, a, t) \
  case HloOpcode::e:          \
    return t;
    KILN_HLO_OPCODES(KILN_CASE)
#undef KILN_CASE
  }
  return 0;
}

static bool Has(HloOpcode op, OpcodeTrait t) { return (HloOpcodeTraits(op) & t) != 0; }

bool IsElementwiseOpcode(HloOpcode op) { return Has(op, kTraitElementwise); }
bool IsElementwiseUnary(HloOpcode op) {
  return Has(op, kTraitElementwise) && HloOpcodeArity(op) == 1;
}
bool IsElementwiseBinary(HloOpcode op) {
  return Has(op, kTraitElementwise) && HloOpcodeArity(op) == 2;
}
bool IsCostlyElementwiseOpcode(HloOpcode op) { return Has(op, kTraitCostly); }
bool IsSideEffectingOpcode(HloOpcode op) { return Has(op, kTraitSideEffecting); }
bool IsCollectiveOpcode(HloOpcode op) { return Has(op, kTraitCollective); }
bool IsRandomOpcode(HloOpcode op) { return Has(op, kTraitRandom); }
bool IsControlFlowOpcode(HloOpcode op) { return Has(op, kTraitControlFlow); }

}  // namespace kiln
