// The arena layout of a plan's entry temporaries, from hlo/analysis's buffer assignment.
#include "plugins/kernel_plan/arena_layout.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "hlo/analysis/buffer_assignment.h"
#include "hlo/computation.h"

namespace kiln::kernel_plan {

namespace {

constexpr int64_t kAlignment = 64;  // as Literal storage: whole cache lines, aligned vectors

int64_t RoundUp(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

std::string ArenaLayout::Summary() const {
  return absl::StrCat("arena: ", size, " bytes, ", allocations, " allocations for ", values,
                      " results");
}

namespace {

// Places the temporaries of one computation's steps after `layout.size`, from `assignment`
// (which analysed that computation); appends each placement to `report`.
void LayOutComputation(const BufferAssignment& assignment, const ComputationPlan& plan,
                       ArenaLayout& layout, std::string* report) {
  const Liveness& liveness = assignment.liveness();
  // The live ranges are in schedule order: the steps must run in that order.
  absl::flat_hash_map<const HloInstruction*, const Step*> steps;
  int64_t previous = -1;
  for (const Step& s : plan.steps) {
    const int64_t position = liveness.schedule().PositionOf(s.instr);
    if (position <= previous) return;
    previous = position;
    steps[s.instr] = &s;
  }
  // A user that reads the value as a step of its own and keeps no reference to it.
  auto direct_reader = [&](const HloInstruction* u) {
    auto it = steps.find(u);
    if (it == steps.end()) return false;  // generated inside another kernel
    const Disposition k = it->second->kind;
    return k == Disposition::kKernel || k == Disposition::kLibrary || k == Disposition::kEvaluator;
  };
  const int64_t base = layout.size;
  absl::flat_hash_map<const HloInstruction*, int64_t> allocation_of;  // results placed so far
  absl::flat_hash_map<int64_t, int64_t> offset_of;                    // allocation -> offset
  if (report != nullptr && plan.computation != nullptr)
    absl::StrAppend(report, "%", plan.computation->name(), ":\n");
  // The allocations of the outputs placed of each multi-output kernel.
  absl::flat_hash_map<const HloInstruction*, absl::flat_hash_set<int64_t>> kernel_allocations;
  // Places value `tree` of step s (the step's result, or its output `index` read by `readers`,
  // its get-tuple-elements); false when it stays out.
  auto place = [&](const Step& s, const ValueTree& tree, int64_t index,
                   const std::vector<const HloInstruction*>& readers) {
    const HloInstruction* h = s.instr;
    if (tree.value < 0 || !tree.children.empty()) return false;
    const BufferValue& value = liveness.value(tree.value);
    if (value.is_output || value.is_parameter || value.is_constant) return false;
    const int64_t a = assignment.AllocationOf(value.id);
    if (a < 0) return false;
    const Allocation& allocation = assignment.allocations()[a];
    // An allocation that also holds outputs still serves its temporaries: outputs get
    // buffers of their own (the caller keeps them).
    if (allocation.is_parameter || allocation.is_constant) return false;
    for (const HloInstruction* r : readers) {
      if (!std::all_of(r->users().begin(), r->users().end(), direct_reader)) return false;
      // The table a scatter on the evaluator updates stays out, so that the scatter can take
      // it over instead of copying it (an embedding gradient's zeroed table).
      if (std::any_of(r->users().begin(), r->users().end(), [&](const HloInstruction* u) {
            return u->opcode() == HloOpcode::kScatter && u->operand(0) == r &&
                   steps.at(u)->kind == Disposition::kEvaluator;
          }))
        return false;
    }
    // In place on an input of the same kernel: only the dynamic-update-slice kernels that
    // write just the update are made for that. Nor on another output of the same kernel.
    for (size_t i = 0; i < s.sources.size(); ++i) {
      auto it = allocation_of.find(s.sources[i]);
      if (it != allocation_of.end() && it->second == a && static_cast<int>(i) != s.in_place_source)
        return false;
    }
    if (index >= 0 && kernel_allocations[h].contains(a)) return false;
    auto [it, fresh] = offset_of.try_emplace(a, layout.size);
    if (fresh) {
      layout.size += RoundUp(allocation.size);
      ++layout.allocations;
    }
    for (const HloInstruction* r : readers) {
      allocation_of[r] = a;
      layout.offsets[r] = it->second;
    }
    if (index >= 0) {
      layout.element_offsets[{h, index}] = it->second;
      kernel_allocations[h].insert(a);
    }
    ++layout.values;
    if (report != nullptr)
      absl::StrAppend(report, "  %", h->name(), index >= 0 ? absl::StrCat(" output ", index) : "",
                      " ",
                      (index >= 0 ? h->shape().tuple_shapes(static_cast<int>(index)) : h->shape())
                          .ToString(false),
                      " at ", it->second, " (allocation ", a, ")\n");
    return true;
  };
  for (const Step& s : plan.steps) {
    if (s.kind != Disposition::kKernel && s.kind != Disposition::kLibrary) continue;
    const HloInstruction* h = s.instr;
    const ValueTree& tree = liveness.TreeOf(h);
    if (h->shape().IsArray()) {
      place(s, tree, -1, {h});
      continue;
    }
    // A multi-output kernel read through get-tuple-elements only: each output on its own.
    if (s.kind != Disposition::kKernel ||
        !std::all_of(h->users().begin(), h->users().end(), [](const HloInstruction* u) {
          return u->opcode() == HloOpcode::kGetTupleElement;
        }))
      continue;
    for (int64_t i = 0; i < static_cast<int64_t>(tree.children.size()); ++i) {
      if (!h->shape().tuple_shapes(static_cast<int>(i)).IsArray()) continue;
      std::vector<const HloInstruction*> readers;
      for (const HloInstruction* u : h->users())
        if (u->tuple_index() == i) readers.push_back(u);
      place(s, tree.children[i], i, readers);
    }
  }
  if (report != nullptr && layout.size > base)
    absl::StrAppend(report, "  (", layout.size - base, " bytes from ", base, ")\n");
}

}  // namespace

ArenaLayout LayOutArena(const HloModule& module, const Plan& plan, std::string* report) {
  ArenaLayout layout;
  if (plan.computation == nullptr || plan.computation != module.entry()) return layout;
  absl::StatusOr<BufferAssignment> assignment = BufferAssignment::Run(module);
  if (!assignment.ok()) return layout;
  std::string placed, assignments;
  std::string* out = report != nullptr ? &placed : nullptr;
  LayOutComputation(*assignment, plan, layout, out);
  if (report != nullptr) assignments = assignment->ToString();
  // Each called computation gets a region of its own after the entry's: a loop body's
  // temporaries are reused by every iteration, and no two computations of one run share
  // bytes (a body may run while the entry's temporaries are live).
  for (const ComputationPlan& called : plan.called) {
    if (called.computation == nullptr) continue;
    const BufferAssignment sub = BufferAssignment::RunOnComputation(*called.computation);
    LayOutComputation(sub, called, layout, out);
    if (report != nullptr) absl::StrAppend(&assignments, "\n", sub.ToString());
  }
  if (report != nullptr) {
    *report = absl::StrCat(layout.Summary(), "\n", placed, "\nbuffer assignment:\n", assignments);
  }
  return layout;
}

}  // namespace kiln::kernel_plan
