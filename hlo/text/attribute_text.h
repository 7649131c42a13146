// Typed instruction attributes in HLO text (`dimensions=`, `window=`, `dim_labels=`,
// gather/scatter dimension numbers, ...): reading them into InstructionAttributes and
// printing them back in one fixed order.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "hlo/instruction.h"
#include "hlo/text/lexer.h"

namespace kiln::hlo_text {

// Checks an attribute Kiln keeps verbatim where XLA's parser refuses bad values: a custom-call's
// api_version (a known API_VERSION_* name), and result_accuracy (only on the unary transcendental
// ops, {mode=default|highest} or {tolerance={atol=..,rtol=..,ulps=..}}). Anything else passes.
absl::Status CheckVerbatimAttribute(std::string_view name, HloOpcode op, Cursor value);

// Reads attribute `name` of an instruction with opcode `op` from `value` (a cursor over
// exactly the attribute's value text). Sets *typed to false, and reads nothing, when Kiln
// keeps this attribute verbatim for this opcode instead.
absl::Status ParseTypedAttribute(std::string_view name, HloOpcode op, Cursor value,
                                 InstructionAttributes* attrs, bool* typed);

// The opcode whose attributes `instr` carries: a shorthand async start (`custom-call-start`,
// `slice-start`...) carries its wrapped op's, everything else its own.
HloOpcode AttributeOpcode(const HloInstruction& instr);

// Appends `, name=value` for each typed attribute the instruction has, in a fixed order.
void AppendTypedAttributes(const HloInstruction& instr, std::string* out);

// Calls `add` with the name and value text of each typed attribute, in the same order.
void ForEachTypedAttribute(const HloInstruction& instr,
                           const std::function<void(std::string_view, const std::string&)>& add);

}  // namespace kiln::hlo_text
