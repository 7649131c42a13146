// The reductions collective ops apply: which of the transport's native kinds a reducer
// computation is, and the same reduction done on the host (the in-process transport, and
// types or transports without a native reduction).
#pragma once

#include <cstddef>
#include <optional>

#include "absl/status/status.h"
#include "hlo/collectives/communicator.h"
#include "hlo/computation.h"

namespace kiln {

// The kind of `to_apply` when it is one binary op of its two scalar parameters (add,
// multiply, minimum, maximum, and, or), else nullopt (the evaluator then runs it).
std::optional<ReductionKind> MatchReductionKind(const HloComputation& to_apply);

// acc[i] = acc[i] (kind) in[i] for `count` elements of `type`; narrow floats are computed in
// float. An error for kinds a type has no meaning for (min of complex numbers).
absl::Status ReduceInto(PrimitiveType type, ReductionKind kind, void* acc, const void* in,
                        size_t count);

}  // namespace kiln
