#include "tools/replicated_run.h"

#include <filesystem>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "core/collectives/mpi_world.h"
#include "fmt/format.h"
#include "hlo/collectives/local_communicator.h"
#include "tools/commands.h"
#include "tools/npy.h"
#include "tools/run_arguments.h"

namespace kiln {
namespace {

absl::StatusOr<int> PositiveFlag(const ParsedFlags& flags, const std::string& name) {
  int v = 0;
  const std::string text = flags.Get(name);
  if (!absl::SimpleAtoi(text, &v) || v < 1)
    return absl::InvalidArgumentError(
        fmt::format("--{} needs a positive integer, got '{}'", name, text));
  return v;
}

int ModulePartitions(const HloModule& module) {
  for (const auto& [name, value] : module.attributes()) {
    int v = 0;
    if (name == "num_partitions" && absl::SimpleAtoi(value, &v) && v > 0) return v;
  }
  return 1;
}

std::vector<std::string> InputsOf(const std::vector<std::string>& inputs, int device) {
  std::vector<std::string> out;
  for (const std::string& in : inputs)
    out.push_back(absl::StrReplaceAll(in, {{"{rank}", std::to_string(device)}}));
  return out;
}

// Prints or writes device d's outputs, each line prefixed with its rank.
absl::Status Report(int device, const std::vector<Literal>& outputs,
                    const std::string& output_dir) {
  if (output_dir.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << fmt::format("rank {}: output_{}: {}\n", device, i, Summarize(outputs[i]));
    return absl::OkStatus();
  }
  std::filesystem::path dir = std::filesystem::path(output_dir) / fmt::format("rank_{}", device);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InvalidArgumentError(
        fmt::format("--output-dir {}: {}", dir.string(), ec.message()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string file = (dir / fmt::format("output_{}.npy", i)).string();
    if (absl::Status s = WriteNpyFile(file, outputs[i]); !s.ok()) return s;
    std::cout << fmt::format("rank {}: wrote {}: {}\n", device, file, Summarize(outputs[i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Literal>> RunDevice(const ModuleExecutable& exe, const HloModule& module,
                                               const std::vector<std::string>& inputs, int device) {
  absl::StatusOr<std::vector<Literal>> args =
      MakeArguments(*module.entry(), InputsOf(inputs, device));
  if (!args.ok()) return args.status();
  return exe.Execute(*args);
}

}  // namespace

absl::StatusOr<std::optional<DeviceGrid>> RunDeviceGrid(const ParsedFlags& flags,
                                                        const HloModule& module) {
  std::optional<MpiLaunch> launch = MpiLaunchFromEnvironment();
  const bool several_ranks = launch && launch->size > 1;
  if (!flags.Has("replicas") && !flags.Has("partitions") && !several_ranks) return std::nullopt;
  DeviceGrid grid;
  grid.partitions = ModulePartitions(module);
  if (flags.Has("partitions")) {
    absl::StatusOr<int> p = PositiveFlag(flags, "partitions");
    if (!p.ok()) return p.status();
    grid.partitions = *p;
  }
  if (flags.Has("replicas")) {
    absl::StatusOr<int> r = PositiveFlag(flags, "replicas");
    if (!r.ok()) return r.status();
    grid.replicas = *r;
  } else if (several_ranks) {
    grid.replicas = std::max(1, launch->size / grid.partitions);
  }
  if (launch && launch->size != grid.num_devices())
    return absl::InvalidArgumentError(fmt::format(
        "mpirun started {} rank(s), but the run has {} device(s) ({} replica(s) x {} "
        "partition(s)): start one rank per device (mpirun -np {})",
        launch->size, grid.num_devices(), grid.replicas, grid.partitions, grid.num_devices()));
  return grid;
}

int RunOnDevices(const HloModule& module, const PluginRegistry& registry,
                 const ModuleCompileOptions& compile, DeviceGrid grid,
                 const std::vector<std::string>& inputs, const std::string& output_dir) {
  // Compile before MPI starts: plugin discovery and isolated plugins start processes.
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe =
      ModuleExecutable::Compile(registry, module, compile);
  if (!exe.ok()) return ReportError("run", std::string(exe.status().message()));
  const double timeout_s = CollectiveTimeoutSeconds();

  if (std::optional<MpiLaunch> launch = MpiLaunchFromEnvironment()) {
    absl::StatusOr<std::unique_ptr<MpiWorld>> world = MpiWorld::Init();
    if (!world.ok()) return ReportError("run", std::string(world.status().message()));
    const int rank = (*world)->rank();
    std::unique_ptr<Communicator> communicator = (*world)->MakeCommunicator(grid, timeout_s);
    absl::StatusOr<std::vector<Literal>> outputs;
    {
      ScopedCommunicator scope(communicator.get());
      outputs = RunDevice(**exe, module, inputs, rank);
    }
    absl::Status reported = outputs.ok() ? Report(rank, *outputs, output_dir) : outputs.status();
    if (!reported.ok()) {
      // The others may be waiting for this rank in a collective: end the whole job.
      ReportError("run", fmt::format("rank {}: {}", rank, std::string(reported.message())));
      std::cerr.flush();
      (*world)->Abort(kExitError);
    }
    communicator.reset();
    return kExitOk;  // the world finalizes MPI as it goes
  }

  const int n = grid.num_devices();
  std::vector<std::vector<Literal>> outputs(n);
  absl::Status st = RunOnLocalDevices(
      grid,
      [&](int d) -> absl::Status {
        absl::StatusOr<std::vector<Literal>> out = RunDevice(**exe, module, inputs, d);
        if (!out.ok()) return out.status();
        outputs[d] = std::move(*out);
        return absl::OkStatus();
      },
      timeout_s);
  if (!st.ok()) return ReportError("run", std::string(st.message()));
  for (int d = 0; d < n; ++d)
    if (absl::Status s = Report(d, outputs[d], output_dir); !s.ok())
      return ReportError("run", std::string(s.message()));
  return kExitOk;
}

}  // namespace kiln
