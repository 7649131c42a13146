// A module run on several devices of one process by the evaluator, each device on its own
// thread with its own arguments, the collectives meeting in memory (local_communicator.h):
// the reference for multi-device programs (SPMD-partitioned modules, collectives) in tests.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "hlo/collectives/communicator.h"
#include "hlo/literal.h"
#include "hlo/module.h"

namespace kiln {

// One result per device, in device order; `args_per_device` has one argument list per device.
absl::StatusOr<std::vector<Literal>> EvaluateOnDevices(
    const HloModule& module, DeviceGrid grid, std::vector<std::vector<Literal>> args_per_device);

}  // namespace kiln
