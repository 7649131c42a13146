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
// num_partitions, else 1; under mpirun without --replicas, the ranks fill the replicas). A
// module with shardings and no num_partitions has partitions only: --partitions,
// --replicas or the ranks give their number.
// nullopt for a run on one device (no flag, not under a launcher of several ranks).
absl::StatusOr<std::optional<DeviceGrid>> RunDeviceGrid(const ParsedFlags& flags,
                                                        const HloModule& module);

// Compiles and runs `module` on `grid`; a module with shardings and no num_partitions (JAX's,
// before partitioning) is first split by the SPMD partitioner, in place: an input may then be
// the whole array (cut to each device's tile) or the tile, and the whole results are also
// written as a one-device run writes them (DIR/output_<i>.npy) where the module's shardings
// say how they are tiled, or they are not tiled. Inputs may name `{rank}`, replaced by each
// device's id; with an output dir, device d writes DIR/rank_<d>/output_<i>.npy. With benchmark_runs
// > 0, each device times that many runs after one untimed run and prints its median.
// Returns the exit code.
int RunOnDevices(HloModule& module, const PluginRegistry& registry,
                 const ModuleCompileOptions& compile, DeviceGrid grid,
                 const std::vector<std::string>& inputs, const std::string& output_dir,
                 int benchmark_runs, bool log_partition);

// --log-partition: the clusters `exe` runs, on stderr (one line for a whole module).
void LogPartition(const ModuleExecutable& exe);

// `kiln run ... --launch N`: runs the same command again under `mpirun -np N
// --oversubscribe`, without --launch; returns mpirun's exit status (or an error when Open
// MPI's mpirun is not on PATH). `run_args` are the arguments after `kiln run`.
int LaunchUnderMpirun(int ranks, const std::vector<std::string>& run_args);

}  // namespace kiln
