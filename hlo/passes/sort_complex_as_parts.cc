// Sorts of complex operands as sorts of their parts (see sort_complex_as_parts.h).
#include "hlo/passes/sort_complex_as_parts.h"

#include "absl/container/flat_hash_map.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

PrimitiveType PartType(PrimitiveType t) {
  return t == PrimitiveType::C128 ? PrimitiveType::F64 : PrimitiveType::F32;
}

// The comparator over the parts, added to `module`, or null when a complex parameter of
// `cmp` has a user other than real() or imag(). `complex_operand[i]` says whether the sort's
// operand i is complex (its two parameters become four: both parts' lhs and rhs).
HloComputation* PartsComparator(HloModule& module, NameUniquer& names, const HloComputation& cmp,
                                const std::vector<bool>& complex_operand) {
  for (int k = 0; k < cmp.num_parameters(); ++k) {
    if (!complex_operand[k / 2]) continue;
    for (const HloInstruction* u : cmp.parameter(k)->users())
      if (u->opcode() != HloOpcode::kReal && u->opcode() != HloOpcode::kImag) return nullptr;
  }
  auto parts = std::make_unique<HloComputation>(cmp.name() + ".parts");
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> map;
  int next = 0;  // the new parameter number
  for (size_t i = 0; i < complex_operand.size(); ++i) {
    for (int side = 0; side < 2; ++side) {
      const HloInstruction* p = cmp.parameter(static_cast<int>(2 * i) + side);
      const PrimitiveType t = p->shape().element_type();
      if (!complex_operand[i]) {
        map[p] = parts->AddInstruction(
            HloInstruction::CreateParameter(next + side, p->shape(), names.Get(p->name())));
        continue;
      }
      // lhs and rhs of the real parts, then of the imaginary parts.
      HloInstruction* re = parts->AddInstruction(HloInstruction::CreateParameter(
          next + side, Shape::Scalar(PartType(t)), names.Get(p->name() + ".re")));
      HloInstruction* im = parts->AddInstruction(HloInstruction::CreateParameter(
          next + 2 + side, Shape::Scalar(PartType(t)), names.Get(p->name() + ".im")));
      for (const HloInstruction* u : p->users()) map[u] = u->opcode() == HloOpcode::kReal ? re : im;
    }
    next += complex_operand[i] ? 4 : 2;
  }
  for (const HloInstruction* h : cmp.MakeInstructionPostOrder()) {
    if (map.contains(h) || h->opcode() == HloOpcode::kParameter) continue;
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* o : h->operands()) operands.push_back(map.at(o));
    auto copy = std::make_unique<HloInstruction>(h->opcode(), h->shape(), std::move(operands));
    copy->mutable_attrs() = h->attrs();
    for (HloComputation* c : h->called_computations()) copy->AppendCalledComputation(c);
    copy->set_name(names.Get(h->name()));
    map[h] = parts->AddInstruction(std::move(copy));
  }
  parts->set_root(map.at(cmp.root()));
  return module.AddComputation(std::move(parts));
}

HloInstruction* Add(HloComputation* comp, NameUniquer& names, HloOpcode op, Shape shape,
                    std::vector<HloInstruction*> operands) {
  return AddWithFreshName(
      comp, std::make_unique<HloInstruction>(op, std::move(shape), std::move(operands)), names);
}

// The sort of parts and the complex results put back together, or null.
HloInstruction* Rewrite(HloInstruction* sort, NameUniquer& names) {
  std::vector<bool> complex_operand;
  bool any = false;
  for (const HloInstruction* o : sort->operands()) {
    if (!o->shape().IsArray()) return nullptr;
    complex_operand.push_back(IsComplex(o->shape().element_type()));
    any |= complex_operand.back();
  }
  if (!any || sort->to_apply() == nullptr ||
      sort->to_apply()->num_parameters() != 2 * sort->operand_count())
    return nullptr;
  HloComputation* comp = sort->parent();
  HloComputation* cmp = PartsComparator(*comp->parent(), names, *sort->to_apply(), complex_operand);
  if (cmp == nullptr) return nullptr;
  std::vector<HloInstruction*> operands;
  std::vector<Shape> shapes;
  for (HloInstruction* o : sort->operands()) {
    const Shape& s = o->shape();
    if (!IsComplex(s.element_type())) {
      operands.push_back(o);
    } else {
      const PrimitiveType t = PartType(s.element_type());
      operands.push_back(
          AddArrayInstruction(comp, names, HloOpcode::kReal, t, s.dimensions(), {o}, s));
      operands.push_back(
          AddArrayInstruction(comp, names, HloOpcode::kImag, t, s.dimensions(), {o}, s));
    }
  }
  for (const HloInstruction* o : operands) shapes.push_back(o->shape());
  HloInstruction* parts = Add(comp, names, HloOpcode::kSort, Shape::Tuple(shapes), operands);
  parts->mutable_attrs().dimensions = sort->dimensions();
  parts->mutable_attrs().has_dimensions = true;
  parts->mutable_attrs().is_stable = sort->attrs().is_stable;
  parts->AppendCalledComputation(cmp);
  std::vector<HloInstruction*> results;
  int j = 0;
  for (size_t i = 0; i < complex_operand.size(); ++i) {
    auto element = [&](int index) {
      HloInstruction* g = Add(comp, names, HloOpcode::kGetTupleElement, shapes[index], {parts});
      g->mutable_attrs().tuple_index = index;
      return g;
    };
    const Shape& s = sort->operand(static_cast<int>(i))->shape();
    if (complex_operand[i]) {
      results.push_back(Add(comp, names, HloOpcode::kComplex, s, {element(j), element(j + 1)}));
      j += 2;
    } else {
      results.push_back(element(j++));
    }
  }
  if (!sort->shape().IsTuple()) return results[0];
  return Add(comp, names, HloOpcode::kTuple, sort->shape(), results);
}

}  // namespace

absl::StatusOr<bool> SortComplexAsParts::Run(HloModule& module) {
  NameUniquer names(module);
  return RewriteEach(module, HloOpcode::kSort, [&](HloInstruction* sort) {
    HloInstruction* r = Rewrite(sort, names);
    if (r == nullptr) return false;
    if (!ReplaceUsesIfCompatible(sort, r)) {
      RemoveDeadFrom(sort->parent(), {r});
      return false;
    }
    return true;
  });
}

}  // namespace kiln
