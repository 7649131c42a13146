// Common subexpression elimination: identical instructions computed twice become one.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// Merges instructions with the same opcode, shape, operands, attributes and (equivalent)
// called computations; constants merge by value. Never merges random or side-effecting
// instructions, parameters, or instructions with control predecessors.
class HloCSE : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
