// Shared helpers of the rewriting passes (see pass_util.h).
#include "hlo/passes/pass_util.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kiln {

bool HasSideEffectNoRecurse(const HloInstruction& instr) {
  // A custom call has effects only where it says so, as XLA reads it (JAX marks the callbacks
  // that print or write `custom_call_has_side_effect=true`): two LAPACK calls on one matrix
  // (jnp.linalg.norm(a, 2) and matrix_rank(a)) merge, and an unused one goes.
  if (instr.opcode() == HloOpcode::kCustomCall) {
    const std::string* flag = instr.attrs().FindExtra("custom_call_has_side_effect");
    return flag != nullptr && *flag == "true";
  }
  if (IsSideEffectingOpcode(instr.opcode())) return true;
  // A collective with a channel id talks to another program: removing it on one side
  // would deadlock the other.
  if (IsCollectiveOpcode(instr.opcode()) && instr.attrs().FindExtra("channel_id")) return true;
  return false;
}

namespace {
bool ComputationHasSideEffect(const HloComputation& comp,
                              absl::flat_hash_map<const HloComputation*, bool>& memo) {
  auto it = memo.find(&comp);
  if (it != memo.end()) return it->second;
  memo[&comp] = false;  // recursion guard (HLO call graphs are acyclic anyway)
  bool result = false;
  for (const HloInstruction* i : comp.instructions()) {
    if (HasSideEffectNoRecurse(*i)) {
      result = true;
      break;
    }
    for (const HloComputation* c : i->called_computations())
      if (ComputationHasSideEffect(*c, memo)) {
        result = true;
        break;
      }
    if (result) break;
  }
  memo[&comp] = result;
  return result;
}
}  // namespace

bool HasSideEffect(const HloInstruction& instr) {
  if (HasSideEffectNoRecurse(instr)) return true;
  if (instr.called_computations().empty()) return false;
  absl::flat_hash_map<const HloComputation*, bool> memo;
  for (const HloComputation* c : instr.called_computations())
    if (ComputationHasSideEffect(*c, memo)) return true;
  return false;
}

std::vector<HloComputation*> NonFusionComputations(const HloModule& module) {
  std::vector<HloComputation*> out;
  for (HloComputation* c : module.MakeComputationPostOrder())
    if (!c->is_fusion_computation()) out.push_back(c);
  return out;
}

NameUniquer::NameUniquer(const HloModule& module) {
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions()) used_.insert(i->name());
}

std::string NameUniquer::Get(std::string_view base) {
  std::string b(base);
  if (b.empty()) b = "instr";
  int64_t& n = next_[b];
  for (;;) {
    std::string candidate = absl::StrCat(b, ".", n++);
    if (used_.insert(candidate).second) return candidate;
  }
}

HloInstruction* AddWithFreshName(HloComputation* comp, std::unique_ptr<HloInstruction> instr,
                                 NameUniquer& names, std::string_view base) {
  std::string_view b = base.empty() ? HloOpcodeString(instr->opcode()) : base;
  instr->set_name(names.Get(b));
  return comp->AddInstruction(std::move(instr));
}

Shape ShapeLike(PrimitiveType type, std::vector<int64_t> dims, const Shape& like) {
  Shape s(type, std::move(dims));
  if (like.has_layout())
    s.SetDefaultLayout();
  else
    s.clear_layout();
  return s;
}

HloInstruction* AddArrayInstruction(HloComputation* comp, NameUniquer& names, HloOpcode op,
                                    PrimitiveType type, std::vector<int64_t> dims,
                                    std::vector<HloInstruction*> operands, const Shape& like) {
  auto instr = std::make_unique<HloInstruction>(op, ShapeLike(type, std::move(dims), like),
                                                std::move(operands));
  return AddWithFreshName(comp, std::move(instr), names);
}

HloInstruction* AddTranspose(HloComputation* comp, NameUniquer& names, HloInstruction* x,
                             const std::vector<int64_t>& perm) {
  const Shape& s = x->shape();
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(s.dimensions(p));
  HloInstruction* t =
      AddArrayInstruction(comp, names, HloOpcode::kTranspose, s.element_type(), dims, {x}, s);
  t->mutable_attrs().dimensions = perm;
  t->mutable_attrs().has_dimensions = true;
  return t;
}

HloInstruction* AddCompare(HloComputation* comp, NameUniquer& names, HloInstruction* a,
                           HloInstruction* b, ComparisonDirection dir, std::vector<int64_t> dims,
                           const Shape& like) {
  HloInstruction* c = AddArrayInstruction(comp, names, HloOpcode::kCompare, PrimitiveType::PRED,
                                          std::move(dims), {a, b}, like);
  c->mutable_attrs().comparison_direction = dir;
  return c;
}

HloInstruction* AddScalarConstant(HloComputation* comp, NameUniquer& names, PrimitiveType type,
                                  double value) {
  return AddWithFreshName(
      comp, HloInstruction::CreateConstant(Literal::FromDoubles(Shape(type, {}), {value})), names);
}

bool ReplaceUsesIfCompatible(HloInstruction* old, HloInstruction* repl) {
  if (old == repl) return false;
  if (!old->shape().Compatible(repl->shape())) return false;
  HloComputation* comp = old->parent();
  bool is_root = comp && comp->root() == old;
  if (!is_root && old->user_count() == 0) return false;  // nothing to replace
  if (is_root && old->shape() != repl->shape()) return false;
  old->ReplaceAllUsesWith(repl);
  return true;
}

absl::flat_hash_set<const HloInstruction*> ControlPredecessorsIn(const HloComputation& comp) {
  absl::flat_hash_set<const HloInstruction*> out;
  for (const HloInstruction* i : comp.instructions())
    for (const HloInstruction* p : i->control_predecessors()) out.insert(p);
  return out;
}

bool IsRemovable(const HloInstruction& instr,
                 const absl::flat_hash_set<const HloInstruction*>& control_preds) {
  if (instr.user_count() != 0) return false;
  if (instr.parent() && instr.parent()->root() == &instr) return false;
  if (instr.opcode() == HloOpcode::kParameter) return false;
  if (control_preds.contains(&instr)) return false;
  return !HasSideEffect(instr);
}

int64_t RemoveDeadFrom(HloComputation* comp, std::vector<HloInstruction*> candidates) {
  if (candidates.empty()) return 0;
  absl::flat_hash_set<const HloInstruction*> control_preds = ControlPredecessorsIn(*comp);
  // Candidates may repeat; only instructions still owned by `comp` are looked at.
  absl::flat_hash_set<HloInstruction*> alive;
  for (HloInstruction* i : comp->instructions()) alive.insert(i);
  int64_t removed = 0;
  while (!candidates.empty()) {
    HloInstruction* i = candidates.back();
    candidates.pop_back();
    if (!alive.contains(i) || !IsRemovable(*i, control_preds)) continue;
    std::vector<HloInstruction*> operands = i->operands();
    alive.erase(i);
    comp->RemoveInstruction(i);
    ++removed;
    for (HloInstruction* o : operands) candidates.push_back(o);
  }
  return removed;
}

bool RewriteEach(HloModule& module, HloOpcode op,
                 const std::function<bool(HloInstruction*)>& rewrite) {
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder())
      if (instr->opcode() == op && rewrite(instr)) dead.push_back(instr);
    if (dead.empty()) continue;
    RemoveDeadFrom(comp, dead);
    comp->SortInstructionsInPostOrder();
    changed = true;
  }
  return changed;
}

std::optional<HloOpcode> BinaryReducerWithIdentity(const HloInstruction& reduce) {
  const HloComputation* f = reduce.to_apply();
  if (f == nullptr || f->num_parameters() != 2 || f->root() == nullptr ||
      f->root()->operand_count() != 2 || reduce.operand_count() != 2)
    return std::nullopt;
  const HloInstruction* root = f->root();
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter ||
      a->parameter_number() + b->parameter_number() != 1)
    return std::nullopt;
  const HloInstruction* init = reduce.operand(1);
  const PrimitiveType t = init->shape().element_type();
  if (IsComplex(t)) return std::nullopt;
  bool identity = false;
  switch (root->opcode()) {
    case HloOpcode::kAdd:
      identity = IsAllValue(init, 0);
      break;
    case HloOpcode::kMultiply:
      identity = IsAllValue(init, 1);
      break;
    case HloOpcode::kMaximum:
      identity = IsAllLowest(init);
      break;
    case HloOpcode::kMinimum:
      identity = IsAllHighest(init);
      break;
    case HloOpcode::kAnd:
      identity = t == PrimitiveType::PRED && IsAllHighest(init);
      break;
    case HloOpcode::kOr:
      identity = t == PrimitiveType::PRED && IsAllLowest(init);
      break;
    default:
      break;
  }
  return identity ? std::optional<HloOpcode>(root->opcode()) : std::nullopt;
}

const Literal* UniformConstant(const HloInstruction* instr) {
  if (instr->opcode() == HloOpcode::kBroadcast) instr = instr->operand(0);
  if (instr->opcode() != HloOpcode::kConstant || !instr->attrs().literal) return nullptr;
  const Literal& lit = instr->literal();
  if (!lit.shape().IsArray() || lit.element_count() == 0) return nullptr;
  int64_t width = ByteSizeOf(lit.shape().element_type());
  const uint8_t* data = lit.untyped_data();
  for (int64_t e = 1; e < lit.element_count(); ++e)
    if (std::memcmp(data, data + e * width, static_cast<size_t>(width)) != 0) return nullptr;
  return &lit;
}

bool IsAllValue(const HloInstruction* instr, double value) {
  const Literal* lit = UniformConstant(instr);
  if (!lit) return false;
  PrimitiveType t = lit->shape().element_type();
  if (IsComplex(t)) return false;
  if (IsFloating(t)) return lit->GetAsDouble(0) == value;
  // Integers and pred: compare exactly (value is small and integral in practice).
  if (value != std::floor(value)) return false;
  if (IsUnsignedInt(t)) return value >= 0 && lit->GetAsUint64(0) == static_cast<uint64_t>(value);
  return lit->GetAsInt64(0) == static_cast<int64_t>(value);
}

namespace {
// Compares element 0 of `lit` with the lowest (or highest) value of its type.
bool IsExtreme(const HloInstruction* instr, bool lowest) {
  const Literal* lit = UniformConstant(instr);
  if (!lit) return false;
  PrimitiveType t = lit->shape().element_type();
  if (IsComplex(t)) return false;
  return PrimitiveTypeSwitch(t, [&](auto tag) -> bool {
    using T = decltype(tag);
    T v = lit->data<T>()[0];
    if constexpr (std::is_same_v<T, bool>) {
      return v == !lowest;
    } else if constexpr (kIsFloatT<T>) {
      double d = static_cast<double>(
          static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(v));
      return std::isinf(d) && ((d < 0) == lowest);
    } else {
      return lowest ? v == std::numeric_limits<T>::min() : v == std::numeric_limits<T>::max();
    }
  });
}
}  // namespace

bool IsAllLowest(const HloInstruction* instr) { return IsExtreme(instr, true); }
bool IsAllHighest(const HloInstruction* instr) { return IsExtreme(instr, false); }

HloComputation* BinaryComputation(HloModule& module, HloOpcode op, PrimitiveType type) {
  std::string base = std::string(HloOpcodeString(op)) + "." + std::string(PrimitiveTypeName(type));
  std::string name = base;
  for (int k = 1; module.FindComputation(name) != nullptr; ++k) {
    HloComputation* c = module.FindComputation(name);
    if (c->root() != nullptr && c->root()->opcode() == op && c->num_parameters() == 2 &&
        c->root()->shape() == Shape::Scalar(type) && c->root()->operand(0) == c->parameter(0) &&
        c->root()->operand(1) == c->parameter(1))
      return c;
    name = base + "." + std::to_string(k);
  }
  auto c = std::make_unique<HloComputation>(name);
  HloInstruction* a =
      c->AddInstruction(HloInstruction::CreateParameter(0, Shape::Scalar(type), "a"));
  HloInstruction* b =
      c->AddInstruction(HloInstruction::CreateParameter(1, Shape::Scalar(type), "b"));
  c->set_root(c->AddInstruction(HloInstruction::CreateBinary(op, Shape::Scalar(type), a, b)));
  return module.AddComputation(std::move(c));
}

int64_t DotMultiplyAdds(const HloInstruction& dot) {
  int64_t k = 1;
  for (int64_t d : dot.attrs().dot_dimension_numbers->lhs_contracting_dimensions)
    k *= dot.operand(0)->shape().dimensions(static_cast<int>(d));
  return dot.shape().num_elements() * k;
}

}  // namespace kiln
