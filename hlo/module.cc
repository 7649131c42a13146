// Module bookkeeping: computation ownership and order, fingerprint.
#include "hlo/module.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_set.h"

namespace kiln {

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> c, bool is_entry) {
  HloComputation* p = c.get();
  p->set_parent(this);
  computations_.push_back(std::move(c));
  if (is_entry) entry_ = p;
  return p;
}

std::vector<HloComputation*> HloModule::computations() const {
  std::vector<HloComputation*> out;
  for (const auto& c : computations_) out.push_back(c.get());
  return out;
}

std::vector<HloComputation*> HloModule::MakeComputationPostOrder() const {
  std::vector<HloComputation*> order;
  absl::flat_hash_set<const HloComputation*> visited;
  std::function<void(HloComputation*)> visit = [&](HloComputation* c) {
    if (!visited.insert(c).second) return;
    for (HloInstruction* i : c->instructions())
      for (HloComputation* callee : i->called_computations()) visit(callee);
    order.push_back(c);
  };
  if (entry_) visit(entry_);
  for (const auto& c : computations_) visit(c.get());
  return order;
}

void HloModule::RemoveUnusedComputations() {
  absl::flat_hash_set<const HloComputation*> used;
  std::function<void(HloComputation*)> mark = [&](HloComputation* c) {
    if (!used.insert(c).second) return;
    for (HloInstruction* i : c->instructions())
      for (HloComputation* callee : i->called_computations()) mark(callee);
  };
  if (entry_) mark(entry_);
  computations_.erase(std::remove_if(computations_.begin(), computations_.end(),
                                     [&](const auto& c) { return !used.contains(c.get()); }),
                      computations_.end());
}

HloComputation* HloModule::FindComputation(std::string_view name) const {
  for (const auto& c : computations_)
    if (c->name() == name) return c.get();
  return nullptr;
}

// FNV-1a over the printed text: stable across processes, so usable for on-disk caches.
uint64_t HloModule::Fingerprint() const {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : ToString()) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace kiln
