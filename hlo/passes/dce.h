// Dead code elimination: instructions nobody uses, then computations nobody calls.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// Removes, in every computation, instructions without users that are neither the root,
// a parameter, nor side-effecting (custom-call, rng, send/recv, infeed/outfeed,
// collectives with a channel id, anything calling such), nor a control predecessor;
// then removes the computations no instruction calls.
class HloDCE : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
