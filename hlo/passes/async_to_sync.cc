// Async wrappers made synchronous (see async_to_sync.h).
#include "hlo/passes/async_to_sync.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The start of `done`'s chain, with the updates between, when nothing else reads them and
// none of them waits on another instruction (that order would be lost with them).
HloInstruction* ExclusiveStart(HloInstruction* done, std::vector<HloInstruction*>* chain) {
  HloInstruction* h = done->operand_count() == 1 ? done->operand(0) : nullptr;
  while (h != nullptr && h->opcode() == HloOpcode::kAsyncUpdate) {
    if (h->user_count() != 1 || h->operand_count() != 1 || !h->control_predecessors().empty())
      return nullptr;
    chain->push_back(h);
    h = h->operand(0);
  }
  if (h == nullptr || h->opcode() != HloOpcode::kAsyncStart || h->user_count() != 1 ||
      !h->control_predecessors().empty())
    return nullptr;
  chain->push_back(h);
  return h;
}

// The synchronous instruction for `start`, with the done's result shape.
std::unique_ptr<HloInstruction> Synchronous(const HloInstruction& start, const Shape& shape) {
  const std::optional<HloOpcode>& wrapped = start.attrs().async_wrapped_opcode;
  if (!wrapped && start.called_computations().size() != 1) return nullptr;
  auto sync =
      std::make_unique<HloInstruction>(wrapped.value_or(HloOpcode::kCall), shape, start.operands());
  if (wrapped) {
    sync->mutable_attrs() = start.attrs();
    sync->mutable_attrs().async_wrapped_opcode.reset();
  }
  for (HloComputation* c : start.called_computations()) sync->AppendCalledComputation(c);
  return sync;
}

}  // namespace

absl::StatusOr<bool> AsyncToSync::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    bool here = false;
    // Instructions others must run after: those chains stay (the order is the point).
    absl::flat_hash_set<const HloInstruction*> ordered;
    for (const HloInstruction* h : comp->instructions())
      for (const HloInstruction* p : h->control_predecessors()) ordered.insert(p);
    for (HloInstruction* done : comp->MakeInstructionPostOrder()) {
      if (done->opcode() != HloOpcode::kAsyncDone || ordered.contains(done)) continue;
      std::vector<HloInstruction*> chain;  // updates, then the start
      HloInstruction* start = ExclusiveStart(done, &chain);
      if (start == nullptr) continue;
      bool free = true;
      for (const HloInstruction* h : chain)
        free = free && !ordered.contains(h) && comp->root() != h;
      if (!free) continue;
      std::unique_ptr<HloInstruction> sync = Synchronous(*start, done->shape());
      if (sync == nullptr) continue;
      HloInstruction* added = AddWithFreshName(comp, std::move(sync), names, done->name());
      for (HloInstruction* p : done->control_predecessors()) added->AddControlPredecessor(p);
      done->ReplaceAllUsesWith(added);
      if (comp->root() == done) comp->set_root(added);
      comp->RemoveInstruction(done);
      for (HloInstruction* h : chain) comp->RemoveInstruction(h);
      here = true;
    }
    if (here) comp->SortInstructionsInPostOrder();
    changed |= here;
  }
  return changed;
}

}  // namespace kiln
