// Partitions an entry computation into JIT kernels, evaluator steps and bookkeeping.
#include "plugins/cpu_llvm/plan.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"

namespace kiln::cpu {

std::string_view DispositionName(Disposition d) {
  switch (d) {
    case Disposition::kKernel: return "kernel";
    case Disposition::kInlined: return "inlined";
    case Disposition::kLibrary: return "library";
    case Disposition::kEvaluator: return "evaluator";
    case Disposition::kBookkeeping: return "bookkeeping";
  }
  return "?";
}

bool CanEmitFusion(const HloInstruction& fusion, std::string* why) {
  const HloComputation* comp = fusion.fused_computation();
  if (comp == nullptr || comp->root() == nullptr) {
    if (why) *why = "fusion without a fused computation";
    return false;
  }
  for (const HloInstruction* p : comp->parameters()) {
    if (p == nullptr || !p->shape().IsArray()) {
      if (why) *why = "fusion parameter that is missing or not an array";
      return false;
    }
  }
  const HloInstruction* root = comp->root();
  for (const HloInstruction* i : comp->instructions()) {
    if (i == root && i->opcode() == HloOpcode::kTuple) {
      for (const HloInstruction* op : i->operands()) {
        if (!op->shape().IsArray()) {
          if (why) *why = "multi-output fusion with a nested tuple";
          return false;
        }
      }
      continue;
    }
    std::string reason;
    if (!llvm_emit::CanEmitElementally(*i, &reason)) {
      if (why) *why = absl::StrCat("fused ", i->name(), ": ", reason);
      return false;
    }
  }
  return true;
}

namespace {

bool IsBookkeeping(const HloInstruction& h) {
  switch (h.opcode()) {
    case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return true;
    default:
      return false;
  }
}

// Constants the emitter can embed into a kernel instead of reading them from a buffer.
bool IsInlinableConstant(const HloInstruction& h) {
  return h.opcode() == HloOpcode::kConstant && llvm_emit::CanEmitElementally(h);
}

// Recomputing these per element of a consumer costs a whole loop each: always materialize.
bool IsExpensive(const HloInstruction& h) {
  return h.opcode() == HloOpcode::kReduce || h.opcode() == HloOpcode::kDot;
}

int64_t Elements(const Shape& s) { return s.IsArray() ? s.num_elements() : 0; }

// Element operations a kernel performs: every generated instruction's elements, plus the
// inner loops of reductions and dots.
int64_t EstimateWork(const llvm_emit::KernelSpec& spec) {
  absl::flat_hash_set<const HloInstruction*> stop(spec.inputs.begin(), spec.inputs.end());
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack(spec.outputs.begin(), spec.outputs.end());
  int64_t work = 0;
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (stop.contains(h) || !seen.insert(h).second) continue;
    work += Elements(h->shape());
    if (h->opcode() == HloOpcode::kReduce && h->operand_count() > 0) {
      work += Elements(h->operand(0)->shape());
    } else if (h->opcode() == HloOpcode::kDot && h->attrs().dot_dimension_numbers) {
      int64_t k = 1;
      for (int64_t d : h->attrs().dot_dimension_numbers->lhs_contracting_dimensions)
        if (d >= 0 && d < h->operand(0)->shape().rank()) k *= h->operand(0)->shape().dimensions(d);
      work += Elements(h->shape()) * k;
    }
    for (const HloInstruction* o : h->operands()) stack.push_back(o);
  }
  return work;
}

// Marks the kernel's outer loop as partitionable when every output has the same leading
// dimension (of at least 2), and fills the step's extent and work.
void SetPartition(llvm_emit::KernelSpec& spec, Step& step) {
  step.work = EstimateWork(spec);
  int64_t extent = -1;
  for (const HloInstruction* o : spec.outputs) {
    if (!o->shape().IsArray() || o->shape().rank() == 0) return;
    int64_t d0 = o->shape().dimensions(0);
    if (extent >= 0 && d0 != extent) return;
    extent = d0;
  }
  if (extent < 2) return;
  spec.partition_outer = true;
  step.outer_extent = extent;
}

}  // namespace

Plan MakePlan(const HloModule& module, const PlanOptions& options) {
  Plan plan;
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return plan;
  std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();

  // Which instructions the emitter can generate (outside fusions).
  absl::flat_hash_map<const HloInstruction*, std::string> why_not;
  absl::flat_hash_set<const HloInstruction*> emittable;
  absl::flat_hash_map<const HloInstruction*, GemmShape> gemms;
  absl::flat_hash_map<const HloInstruction*, ConvGemm> convs;
  for (const HloInstruction* h : order) {
    std::string why;
    if (h->opcode() == HloOpcode::kConvolution) {
      if (std::optional<ConvGemm> c = MatchLibraryConv(*h, options.blas_min_mnk)) {
        convs[h] = *c;
        continue;
      }
    }
    if (h->opcode() == HloOpcode::kDot) {
      std::optional<GemmShape> g =
          options.device_gemm_min_mnk > 0 ? MatchGemmDot(*h, options.device_gemm_min_mnk)
                                           : MatchBlasDot(*h, options.blas_min_mnk);
      if (g && options.device_gemm_min_mnk > 0 && g->f64) g.reset();  // f32 only on the device
      if (g) {
        // Not emittable: its operands are materialized and its users read its buffer.
        gemms[h] = *g;
        continue;
      }
    }
    if (h->opcode() == HloOpcode::kFusion) {
      if (!CanEmitFusion(*h, &why)) why_not[h] = why;
    } else if (!IsBookkeeping(*h)) {
      if (llvm_emit::CanEmitElementally(*h, &why)) emittable.insert(h);
      else why_not[h] = why;
    }
  }
  // An emittable instruction gets its own kernel unless every user is an emittable
  // instruction that can generate it inline.
  auto materialized = [&](const HloInstruction* h) {
    if (!options.fuse_unfused || h == entry->root() || IsExpensive(*h) || h->user_count() == 0)
      return true;
    for (const HloInstruction* u : h->users())
      if (!emittable.contains(u)) return true;
    return false;
  };

  for (const HloInstruction* h : order) {
    Step step;
    step.instr = h;
    if (IsBookkeeping(*h)) {
      step.kind = Disposition::kBookkeeping;
    } else if (auto g = gemms.find(h); g != gemms.end()) {
      step.kind = Disposition::kLibrary;
      step.gemm = g->second;
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
    } else if (auto c = convs.find(h); c != convs.end()) {
      step.kind = Disposition::kLibrary;
      step.conv = c->second;
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
    } else if (auto w = why_not.find(h); w != why_not.end()) {
      step.kind = Disposition::kEvaluator;
      step.why = w->second;
    } else if (h->opcode() == HloOpcode::kFusion) {
      step.kind = Disposition::kKernel;
      llvm_emit::KernelSpec spec;
      spec.name = absl::StrCat("k", plan.kernels.size(), "_", h->name());
      const HloComputation* comp = h->fused_computation();
      for (const HloInstruction* p : comp->parameters()) spec.inputs.push_back(p);
      if (comp->root()->opcode() == HloOpcode::kTuple) {
        for (const HloInstruction* op : comp->root()->operands()) spec.outputs.push_back(op);
      } else {
        spec.outputs.push_back(comp->root());
      }
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
      step.kernel = static_cast<int>(plan.kernels.size());
      SetPartition(spec, step);
      plan.kernels.push_back(std::move(spec));
    } else if (!materialized(h)) {
      plan.dispositions.emplace_back(h, Disposition::kInlined);
      continue;
    } else {
      step.kind = Disposition::kKernel;
      llvm_emit::KernelSpec spec;
      spec.name = absl::StrCat("k", plan.kernels.size(), "_", h->name());
      spec.outputs.push_back(h);
      // Walk the operands: inline what is generated element by element, read the rest.
      absl::flat_hash_set<const HloInstruction*> seen;
      std::vector<const HloInstruction*> stack(h->operands().begin(), h->operands().end());
      while (!stack.empty()) {
        const HloInstruction* o = stack.back();
        stack.pop_back();
        if (!seen.insert(o).second) continue;
        if (IsInlinableConstant(*o)) continue;
        if (emittable.contains(o) && !materialized(o)) {
          for (const HloInstruction* oo : o->operands()) stack.push_back(oo);
          continue;
        }
        spec.inputs.push_back(o);
      }
      step.sources = spec.inputs;
      step.kernel = static_cast<int>(plan.kernels.size());
      SetPartition(spec, step);
      plan.kernels.push_back(std::move(spec));
    }
    plan.dispositions.emplace_back(h, step.kind);
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

absl::StatusOr<const Literal*> ConstantValue(const HloInstruction& constant) {
  if (!constant.attrs().literal.has_value())
    return absl::InvalidArgumentError("constant " + constant.name() +
                                      " has no value (the dump elided it as {...})");
  return &constant.literal();
}

}  // namespace kiln::cpu
