// HLO text printer: HloInstruction::ToString and HloModule::ToString in Kiln's canonical
// text, which is XLA's `%name` style with typed operands:
//
//   HloModule name, attr=value, ...
//
//   %callee (p: f32[]) -> f32[] { ... }
//
//   ENTRY %main (p: f32[2]) -> f32[2] {
//     %x = f32[2]{0} add(f32[2]{0} %a, f32[2]{0} %b), <typed attrs>, <calls>,
//          control-predecessors={...}, <other attributes verbatim, in their text order>
//     ROOT ...
//   }
//
// Computations print callees first and the entry last; instructions print in post order
// (operands first), or in text order when the module says is_scheduled=true. Parsing this
// text and printing it again gives the same text.
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "hlo/module.h"
#include "hlo/text/attribute_text.h"
#include "hlo/text/lexer.h"
#include "hlo/text/literal_text.h"
#include "hlo/text/shape_text.h"

namespace kiln {
namespace {

bool IsPlainName(const std::string& n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!hlo_text::IsNameChar(c)) return false;
  return true;
}

// Printed names: the instruction's and computation's own names, except where one is empty,
// not a valid identifier, or already taken (possible in modules built in code), which get
// a fresh `<base>.<n>`.
class Namer {
 public:
  std::string Name(const void* key, const std::string& name, std::string_view base) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string n = name;
    if (!IsPlainName(n) || used_.contains(n)) {
      do {
        n = fmt::format("{}.{}", base, next_++);
      } while (used_.contains(n));
    }
    used_.insert(n);
    names_[key] = n;
    return n;
  }
  void ClearInstructionScope() {}

 private:
  absl::flat_hash_map<const void*, std::string> names_;
  absl::flat_hash_set<std::string> used_;
  int next_ = 0;
};

struct PrintContext {
  Namer* instructions = nullptr;  // per computation
  Namer* computations = nullptr;  // per module
};

std::string InstrName(const HloInstruction* i, PrintContext& ctx) {
  if (ctx.instructions) return ctx.instructions->Name(i, i->name(), HloOpcodeString(i->opcode()));
  return i->name().empty() ? std::string(HloOpcodeString(i->opcode())) : i->name();
}

std::string CompName(const HloComputation* c, PrintContext& ctx) {
  if (ctx.computations) return ctx.computations->Name(c, c->name(), "computation");
  return c->name().empty() ? "computation" : c->name();
}

std::string OpcodeText(const HloInstruction& instr) {
  const auto& wrapped = instr.attrs().async_wrapped_opcode;
  if (wrapped) {
    std::string_view suffix = instr.opcode() == HloOpcode::kAsyncStart    ? "-start"
                              : instr.opcode() == HloOpcode::kAsyncUpdate ? "-update"
                                                                          : "-done";
    return std::string(HloOpcodeString(*wrapped)) + std::string(suffix);
  }
  return std::string(HloOpcodeString(instr.opcode()));
}

void AppendCalls(const HloInstruction& instr, PrintContext& ctx, std::string* out) {
  const auto& called = instr.called_computations();
  if (called.empty()) return;
  auto name = [&](size_t i) {
    return called[i] ? "%" + CompName(called[i], ctx) : std::string("%<null>");
  };
  auto list = [&](size_t from) {
    std::string s = "{";
    for (size_t i = from; i < called.size(); ++i) {
      if (i > from) s += ", ";
      s += name(i);
    }
    return s + "}";
  };
  switch (instr.opcode()) {
    case HloOpcode::kFusion:
    case HloOpcode::kAsyncStart:
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncDone:
      *out += ", calls=" + name(0);
      if (called.size() > 1) *out += ", called_computations=" + list(1);
      return;
    case HloOpcode::kWhile:
      *out += ", condition=" + name(0);
      if (called.size() > 1) *out += ", body=" + name(1);
      return;
    case HloOpcode::kSelectAndScatter:
      *out += ", select=" + name(0);
      if (called.size() > 1) *out += ", scatter=" + name(1);
      return;
    case HloOpcode::kConditional:
      if (called.size() == 2 && instr.operand_count() > 0 &&
          instr.operand(0)->shape().element_type() == PrimitiveType::PRED) {
        *out += ", true_computation=" + name(0) + ", false_computation=" + name(1);
      } else {
        *out += ", branch_computations=" + list(0);
      }
      return;
    case HloOpcode::kCustomCall:
      *out += ", called_computations=" + list(0);
      return;
    default:
      if (called.size() == 1) {
        *out += ", to_apply=" + name(0);
      } else {
        *out += ", called_computations=" + list(0);
      }
  }
}

void AppendInstruction(const HloInstruction& instr, PrintContext& ctx, std::string* out) {
  *out += "%";
  *out += InstrName(&instr, ctx);
  *out += " = ";
  hlo_text::AppendShape(instr.shape(), true, out);
  *out += " ";
  *out += OpcodeText(instr);
  *out += "(";
  const InstructionAttributes& a = instr.attrs();
  if (instr.opcode() == HloOpcode::kConstant) {
    *out += a.literal ? hlo_text::LiteralToText(*a.literal) : "{...}";
  } else if (instr.opcode() == HloOpcode::kParameter) {
    *out += fmt::format("{}", a.parameter_number);
  } else {
    for (int i = 0; i < instr.operand_count(); ++i) {
      if (i) *out += ", ";
      const HloInstruction* o = instr.operand(i);
      hlo_text::AppendShape(o->shape(), true, out);
      *out += " %";
      *out += InstrName(o, ctx);
    }
  }
  *out += ")";
  hlo_text::AppendTypedAttributes(instr, out);
  AppendCalls(instr, ctx, out);
  if (!instr.control_predecessors().empty()) {
    *out += ", control-predecessors={";
    for (size_t i = 0; i < instr.control_predecessors().size(); ++i) {
      if (i) *out += ", ";
      *out += "%" + InstrName(instr.control_predecessors()[i], ctx);
    }
    *out += "}";
  }
  for (const auto& [k, v] : a.extra) {
    *out += ", ";
    *out += k;
    *out += "=";
    *out += v;
  }
}

// Whether the text order of `comp` defines every operand before its use: a scheduled module
// keeps its order, unless a pass added instructions after their users (constant folding's
// constants), when the text would not parse back.
bool OperandsComeFirst(const HloComputation& comp) {
  absl::flat_hash_set<const HloInstruction*> seen;
  for (const HloInstruction* i : comp.instructions()) {
    for (const HloInstruction* o : i->operands())
      if (!seen.contains(o)) return false;
    for (const HloInstruction* p : i->control_predecessors())
      if (!seen.contains(p)) return false;
    seen.insert(i);
  }
  return true;
}

bool IsScheduled(const HloModule& m) {
  for (const auto& [k, v] : m.attributes())
    if (k == "is_scheduled") return v == "true";
  return false;
}

void AppendComputation(const HloComputation& comp, bool is_entry, bool scheduled, Namer& comp_names,
                       std::string* out) {
  Namer instr_names;
  PrintContext ctx{&instr_names, &comp_names};
  std::vector<HloInstruction*> order =
      scheduled && OperandsComeFirst(comp) ? comp.instructions() : comp.MakeInstructionPostOrder();
  // Name everything in print order first so that renamed instructions get stable names.
  for (HloInstruction* i : order) InstrName(i, ctx);
  if (is_entry) *out += "ENTRY ";
  *out += "%" + CompName(&comp, ctx) + " (";
  bool first = true;
  for (HloInstruction* p : comp.parameters()) {
    if (!p) continue;
    if (!first) *out += ", ";
    first = false;
    *out += InstrName(p, ctx) + ": ";
    hlo_text::AppendShape(p->shape(), false, out);
  }
  *out += ") -> ";
  if (comp.root()) {
    hlo_text::AppendShape(comp.root()->shape(), false, out);
  } else {
    *out += "()";
  }
  *out += " {\n";
  for (HloInstruction* i : order) {
    *out += i == comp.root() ? "  ROOT " : "  ";
    AppendInstruction(*i, ctx, out);
    *out += "\n";
  }
  *out += "}";
}

// Callees before callers, the entry last; iterative so deep call chains are safe.
std::vector<const HloComputation*> ComputationPrintOrder(const HloModule& m) {
  std::vector<const HloComputation*> order;
  absl::flat_hash_set<const HloComputation*> visited;
  auto visit = [&](const HloComputation* start) {
    if (!visited.insert(start).second) return;
    std::vector<std::pair<const HloComputation*, std::vector<const HloComputation*>>> stack;
    auto callees = [](const HloComputation* c) {
      std::vector<const HloComputation*> out;
      for (HloInstruction* i : c->instructions())
        for (HloComputation* k : i->called_computations())
          if (k) out.push_back(k);
      std::reverse(out.begin(), out.end());  // popped from the back: first callee first
      return out;
    };
    stack.emplace_back(start, callees(start));
    while (!stack.empty()) {
      auto& rest = stack.back().second;
      if (rest.empty()) {
        order.push_back(stack.back().first);
        stack.pop_back();
        continue;
      }
      const HloComputation* next = rest.back();
      rest.pop_back();
      if (visited.insert(next).second) stack.emplace_back(next, callees(next));
    }
  };
  for (const HloComputation* c : m.computations())
    if (c != m.entry()) visit(c);
  if (m.entry()) visit(m.entry());
  return order;
}

}  // namespace

std::string HloInstruction::ToString() const {
  std::string out;
  PrintContext ctx;
  AppendInstruction(*this, ctx, &out);
  return out;
}

std::string HloModule::ToString() const {
  std::string out = "HloModule " + (IsPlainName(name()) ? name() : std::string("module"));
  for (const auto& [k, v] : attributes()) out += ", " + k + "=" + v;
  out += "\n\n";
  if (!stack_frame_tables().empty()) out += stack_frame_tables() + "\n\n";
  Namer comp_names;
  bool scheduled = IsScheduled(*this);
  std::vector<const HloComputation*> order = ComputationPrintOrder(*this);
  // Name computations in print order so renamed ones are stable.
  for (const HloComputation* c : order) comp_names.Name(c, c->name(), "computation");
  for (size_t i = 0; i < order.size(); ++i) {
    if (i) out += "\n\n";
    AppendComputation(*order[i], order[i] == entry(), scheduled, comp_names, &out);
  }
  out += "\n";
  return out;
}

}  // namespace kiln
