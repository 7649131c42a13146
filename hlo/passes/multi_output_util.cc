// What the multi-output fusion mergers share (see multi_output_util.h).
#include "hlo/passes/multi_output_util.h"

#include <algorithm>

#include "hlo/passes/multi_output_fusion.h"

namespace kiln::multi_output {

namespace {

IterationSpace ReduceSpace(const HloInstruction& r) {
  IterationSpace s;
  s.valid = r.operand_count() == 2 && r.shape().IsArray();
  s.is_reduce = true;
  s.dims = r.operand(0)->shape().dimensions();
  s.reduced = r.dimensions();
  std::sort(s.reduced.begin(), s.reduced.end());
  return s;
}

}  // namespace

IterationSpace SpaceOf(const HloInstruction& i) {
  if (i.opcode() == HloOpcode::kReduce) return ReduceSpace(i);
  IterationSpace s;
  if (i.opcode() != HloOpcode::kFusion) return s;
  FusionKind k = i.attrs().fusion_kind;
  if (k != FusionKind::kLoop && k != FusionKind::kInput) return s;
  bool first = true;
  for (const HloInstruction* x : i.fused_computation()->instructions()) {
    if (x->opcode() != HloOpcode::kReduce) continue;
    IterationSpace r = ReduceSpace(*x);
    if (!r.valid) return s;
    if (!first && (r.dims != s.dims || r.reduced != s.reduced)) return IterationSpace{};
    s = r;
    first = false;
  }
  if (!first) return s;
  const HloInstruction* root = i.fused_computation()->root();
  std::vector<const HloInstruction*> leaves;
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* l : root->operands()) leaves.push_back(l);
  } else {
    leaves.push_back(root);
  }
  s.valid = true;
  s.dims = leaves[0]->shape().dimensions();
  for (const HloInstruction* l : leaves)
    if (!l->shape().IsArray() || l->shape().dimensions() != s.dims) s.valid = false;
  return s;
}

bool Compatible(const IterationSpace& a, const IterationSpace& b) {
  if (!a.valid || !b.valid) return false;
  if (a.is_reduce && b.is_reduce) return a.dims == b.dims && a.reduced == b.reduced;
  return a.dims == b.dims;
}

bool IsElementwiseLoop(const HloInstruction& fusion, bool row_reduction_roots) {
  if (fusion.opcode() != HloOpcode::kFusion ||
      (fusion.attrs().fusion_kind != FusionKind::kLoop &&
       !(row_reduction_roots && fusion.attrs().fusion_kind == FusionKind::kInput)))
    return false;
  const HloInstruction* root = fusion.fused_computation()->root();
  for (const HloInstruction* x : fusion.fused_computation()->instructions()) {
    if (x == root && x->opcode() == HloOpcode::kTuple) continue;
    if (row_reduction_roots && x->opcode() == HloOpcode::kReduce) continue;  // checked below
    switch (x->opcode()) {
      case HloOpcode::kBroadcast:
      case HloOpcode::kIota:
      case HloOpcode::kConstant:
      case HloOpcode::kParameter:
        continue;
      default:
        break;
    }
    if (IsElementwiseOpcode(x->opcode())) continue;
    if (x->shape().IsArray() &&
        x->shape().num_elements() <= MultiOutputFusionOptions::kSmallElements)
      continue;
    return false;
  }
  return true;
}

bool IsRowReduction(const HloInstruction& fusion) {
  if (!IsElementwiseLoop(fusion, /*row_reduction_roots=*/true)) return false;
  const HloInstruction* root = fusion.fused_computation()->root();
  std::vector<const HloInstruction*> roots;
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* l : root->operands()) roots.push_back(l);
  } else {
    roots.push_back(root);
  }
  for (const HloInstruction* r : roots) {
    if (r->opcode() != HloOpcode::kReduce || r->operand_count() != 2 || !r->shape().IsArray() ||
        r->user_count() != (root == r ? 0 : 1))
      return false;
    std::vector<int64_t> reduced = r->dimensions();
    std::sort(reduced.begin(), reduced.end());
    const int64_t rank = r->operand(0)->shape().rank();
    const int64_t kept = rank - static_cast<int64_t>(reduced.size());
    if (reduced.empty() || kept < 1) return false;
    for (size_t d = 0; d < reduced.size(); ++d)
      if (reduced[d] != kept + static_cast<int64_t>(d)) return false;
  }
  // No reduce other than the roots.
  int64_t reduces = 0;
  for (const HloInstruction* x : fusion.fused_computation()->instructions())
    reduces += x->opcode() == HloOpcode::kReduce;
  return reduces == static_cast<int64_t>(roots.size());
}

bool OutputsRewirable(const HloInstruction& f, const HloComputation& comp) {
  if (!f.shape().IsTuple()) return true;
  if (comp.root() == &f || f.opcode() != HloOpcode::kFusion ||
      f.fused_computation()->root()->opcode() != HloOpcode::kTuple)
    return false;
  for (const HloInstruction* u : f.users())
    if (u->opcode() != HloOpcode::kGetTupleElement) return false;
  return true;
}

int64_t BodySize(const HloInstruction& i) {
  if (i.opcode() != HloOpcode::kFusion) return 1;
  return i.fused_computation()->instruction_count();
}

namespace {

HloInstruction* AddGte(HloComputation* comp, FusionNameTable& names, HloInstruction* f,
                       int64_t index) {
  auto g = std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement,
                                            f->shape().tuple_shapes(static_cast<int>(index)),
                                            std::vector<HloInstruction*>{f});
  g->mutable_attrs().tuple_index = index;
  g->set_name(names.Get("get-tuple-element"));
  return comp->AddInstruction(std::move(g));
}

}  // namespace

void Rewire(HloComputation* comp, FusionNameTable& names, HloInstruction* old, HloInstruction* f,
            int64_t offset) {
  if (!old->shape().IsTuple()) {
    old->ReplaceAllUsesWith(AddGte(comp, names, f, offset));
    return;
  }
  std::vector<HloInstruction*> users = old->users();
  for (HloInstruction* u : users) {
    u->ReplaceAllUsesWith(AddGte(comp, names, f, offset + u->tuple_index()));
    names.Release(u->name());
    comp->RemoveInstruction(u);
  }
}

}  // namespace kiln::multi_output
