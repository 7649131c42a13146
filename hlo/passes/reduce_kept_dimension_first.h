// A reduce over dimension 0 that keeps two dimensions or more (f32[200,32,512] reduced over
// {0}: the mean of a scan's stacked outputs) reads its operand through a transpose that
// brings the first kept dimension to the front: f32[32,200,512] reduced over {1}. A backend whose
// column reductions split their kept leading dimension across threads then accumulates each part's
// rows in memory order (2.7 -> 0.09 ms for that mean); reduced as it is, each result
// element walked the 200 rows, 64 KiB apart. The rewrite is kept only where `accepts` takes
// the new reduce (the backend's column path) and `keep_whole` does not take the old one.
#pragma once

#include <functional>

#include "hlo/passes/pass.h"

namespace kiln {

class ReduceKeptDimensionFirst : public HloPass {
 public:
  using Predicate = std::function<bool(const HloInstruction&)>;
  explicit ReduceKeptDimensionFirst(Predicate accepts = nullptr, Predicate keep_whole = nullptr)
      : accepts_(std::move(accepts)), keep_whole_(std::move(keep_whole)) {}
  std::string_view name() const override { return "reduce-kept-dimension-first"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  Predicate accepts_;
  Predicate keep_whole_;
};

}  // namespace kiln
