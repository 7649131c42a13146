// `kiln run --replicas R [--partitions P]`: the module on R x P devices, in one process (a
// thread per device, collectives meeting in memory) or, under `mpirun -np R*P`, one device
// per process with the collectives over Open MPI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/module_executable.h"
#include "core/plugin_registry.h"
#include "hlo/collectives/communicator.h"
#include "tools/flags.h"

namespace kiln {

// The devices a run asks for: --replicas and --partitions (default: the module's
// num_partitions, else 1; under mpirun without --replicas, the ranks fill the replicas).
// nullopt for a run on one device (no flag, not under a launcher of several ranks).
absl::StatusOr<std::optional<DeviceGrid>> RunDeviceGrid(const ParsedFlags& flags,
                                                        const HloModule& module);

// Compiles and runs `module` on `grid`; inputs may name `{rank}`, replaced by each device's
// id; with an output dir, device d writes DIR/rank_<d>/output_<i>.npy. Returns the exit code.
int RunOnDevices(const HloModule& module, const PluginRegistry& registry,
                 const ModuleCompileOptions& compile, DeviceGrid grid,
                 const std::vector<std::string>& inputs, const std::string& output_dir);

}  // namespace kiln
