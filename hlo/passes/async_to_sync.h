// Async to sync: an async-start ... async-done chain becomes the one instruction it wraps,
// issued where the done was. XLA's schedulers write these wrappers (`async-start(...),
// calls=c`, or the shorthands `call-start`, `slice-start`, `fusion-start`...) so that work
// can overlap; a device that runs one thing at a time computes the same values synchronously.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// Rewrites every chain async-start -> async-update* -> async-done whose start and updates
// have no other users: the done is replaced by a `call` of the wrapped computation (the
// `calls=` form) or by the wrapped opcode with the start's attributes (the shorthand), on
// the start's operands; the start and updates are removed. Chains whose context is read
// elsewhere are left alone (devices then refuse them as before).
class AsyncToSync : public HloPass {
 public:
  std::string_view name() const override { return "async-to-sync"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
