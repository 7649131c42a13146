// Call inlining: every `call` is replaced by a copy of its callee's instructions, so later
// passes and code generators see one flat computation (JAX wraps jitted helpers such as
// relu or log_softmax in calls). Ahead-of-time compilation runs it before planning.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// Inlines calls into every computation that runs other than through a call (the entry, loop
// bodies, reducers, branches), the copies' own calls too, until none is left; the callees
// nobody calls any more stay for DCE to remove. Instructions of the callee keep
// their names where the module does not use them yet (else `name.N`).
class CallInliner : public HloPass {
 public:
  std::string_view name() const override { return "call-inliner"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
