#include "tools/replicated_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "core/collectives/mpi_world.h"
#include "core/partitioned_executable.h"
#include "fmt/format.h"
#include "hlo/collectives/local_communicator.h"
#include "hlo/passes/call_inliner.h"
#include "hlo/passes/spmd_partitioner.h"
#include "tools/commands.h"
#include "tools/npy.h"
#include "tools/run_arguments.h"
#include "tools/sharded_io.h"

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

// A module as JAX writes it before partitioning: shardings on its entry instructions, and
// neither num_partitions= nor collectives yet (partitioned modules, XLA's or torch-xla's,
// keep their shardings but have one or the other).
bool NeedsSpmdPartitioning(const HloModule& module) {
  for (const auto& [name, value] : module.attributes())
    if (name == "num_partitions") return false;
  // Collectives inside shard_map bodies (between Shardy's GlobalToLocalShape and
  // LocalToGlobalShape) are written by hand before partitioning.
  bool sharded = false, collectives = false, shard_map = false;
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions()) {
      collectives = collectives || IsCollectiveOpcode(i->opcode());
      shard_map = shard_map || (i->opcode() == HloOpcode::kCustomCall &&
                                i->attrs().custom_call_target == "xla.sdy.GlobalToLocalShape");
      sharded = sharded || i->attrs().FindExtra("sharding") != nullptr;
    }
  return sharded && (shard_map || !collectives);
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

struct DeviceRun {
  std::vector<Literal> outputs;
  std::vector<double> run_ms;  // with --benchmark: each timed run
};

// Device `device`'s arguments and run; with `benchmark_runs` > 0, that many timed runs after
// an untimed one (the devices keep in step: each run's collectives wait for the others).
absl::StatusOr<DeviceRun> RunDevice(const ModuleExecutable& exe, const HloModule& module,
                                    const std::vector<std::string>& inputs, int device,
                                    int benchmark_runs, const WholeArrays* whole) {
  // A whole array where the partitioned parameter wants a tile is cut to this device's tile.
  auto adapt = [&](int i, Literal lit) -> absl::StatusOr<Literal> {
    if (whole == nullptr || !whole->param_tiling[i]) return lit;
    const Shape& tile = module.entry()->parameter(i)->shape();
    if (lit.shape().dimensions() == tile.dimensions() ||
        lit.shape().dimensions() != whole->params[i].dimensions())
      return lit;
    return TileOf(lit, *whole->param_tiling[i], device);
  };
  absl::StatusOr<std::vector<Literal>> args =
      MakeArguments(*module.entry(), InputsOf(inputs, device), adapt);
  if (!args.ok()) return args.status();
  DeviceRun run;
  const int total = benchmark_runs > 0 ? benchmark_runs + 1 : 1;
  for (int i = 0; i < total; ++i) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Literal>> out = exe.Execute(*args);
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    if (!out.ok()) return out.status();
    if (benchmark_runs > 0 && i > 0) run.run_ms.push_back(ms.count());
    run.outputs = std::move(*out);
  }
  return run;
}

absl::Status Report(int device, const DeviceRun& run, const std::string& output_dir,
                    const std::string& device_names) {
  if (absl::Status s = Report(device, run.outputs, output_dir); !s.ok()) return s;
  if (run.run_ms.empty()) return absl::OkStatus();
  std::vector<double> t = run.run_ms;
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  const double median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  std::cout << fmt::format("rank {}: median_ms={:.3f} min_ms={:.3f} runs={} device={}\n", device,
                           median, t.front(), n, device_names);
  return absl::OkStatus();
}

// The whole results of a partitioned run, put together on device 0 from every device's tiles
// (gathered through the run's transport, so under mpirun too); nullopt where the module did
// not say how a result is tiled. Every device calls it.
absl::StatusOr<std::vector<std::optional<Literal>>> GatherWhole(const WholeArrays& whole,
                                                                const std::vector<Literal>& mine,
                                                                int device, int devices) {
  Communicator* c = CurrentCommunicator();
  std::vector<int> all(devices);
  for (int d = 0; d < devices; ++d) all[d] = d;
  std::vector<std::optional<Literal>> out(mine.size());
  for (size_t i = 0; i < mine.size() && i < whole.results.size(); ++i) {
    if (!mine[i].shape().IsArray()) continue;
    if (mine[i].shape().dimensions() == whole.results[i].dimensions()) {
      // Not tiled (replicated, or whole on every device): device 0's is the result.
      if (device == 0) out[i] = mine[i];
      continue;
    }
    if (!whole.result_tiling[i]) continue;
    const size_t bytes = mine[i].size_bytes();
    std::vector<uint8_t> gathered(bytes * devices);
    if (c == nullptr) return absl::InternalError("a run on several devices without a transport");
    if (absl::Status s = c->AllGather(all, mine[i].untyped_data(), gathered.data(), bytes); !s.ok())
      return s;
    if (device != 0) continue;  // only device 0 puts the result together
    std::vector<Literal> tiles(devices, Literal::Uninitialized(mine[i].shape()));
    std::vector<const Literal*> ptrs;
    for (int d = 0; d < devices; ++d) {
      if (bytes) std::memcpy(tiles[d].untyped_data(), gathered.data() + d * bytes, bytes);
      ptrs.push_back(&tiles[d]);
    }
    out[i] = Assemble(ptrs, *whole.result_tiling[i], whole.results[i]);
  }
  return out;
}

// Device 0 writes (or prints) the whole results as a run on one device would:
// DIR/output_<i>.npy.
absl::Status ReportWhole(const std::vector<std::optional<Literal>>& results, int devices,
                         const std::string& output_dir) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i]) continue;
    if (output_dir.empty()) {
      std::cout << fmt::format("output_{} (whole, from {} devices): {}\n", i, devices,
                               Summarize(*results[i]));
      continue;
    }
    std::string file = (std::filesystem::path(output_dir) / fmt::format("output_{}.npy", i));
    if (absl::Status s = WriteNpyFile(file, *results[i]); !s.ok()) return s;
    std::cout << fmt::format("wrote {}: {} (whole, from {} devices)\n", file,
                             Summarize(*results[i]), devices);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<DeviceGrid>> RunDeviceGrid(const ParsedFlags& flags,
                                                        const HloModule& module) {
  std::optional<MpiLaunch> launch = MpiLaunchFromEnvironment();
  const bool several_ranks = launch && launch->size > 1;
  if (!flags.Has("replicas") && !flags.Has("partitions") && !several_ranks) return std::nullopt;
  DeviceGrid grid;
  grid.partitions = ModulePartitions(module);
  if (NeedsSpmdPartitioning(module)) {
    // Its devices are the partitions the SPMD partitioner splits it into.
    grid.partitions = several_ranks ? launch->size : 1;
    for (const char* flag : {"replicas", "partitions"}) {
      if (!flags.Has(flag)) continue;
      absl::StatusOr<int> n = PositiveFlag(flags, flag);
      if (!n.ok()) return n.status();
      grid.partitions = *n;
    }
    if (launch && launch->size != grid.partitions)
      return absl::InvalidArgumentError(fmt::format(
          "mpirun started {} rank(s), but the run has {} device(s): start one rank per device "
          "(mpirun -np {})",
          launch->size, grid.partitions, grid.partitions));
    return grid;
  }
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

int RunOnDevices(HloModule& module, const PluginRegistry& registry,
                 const ModuleCompileOptions& compile, DeviceGrid grid,
                 const std::vector<std::string>& inputs, const std::string& output_dir,
                 int benchmark_runs, bool log_partition) {
  const std::optional<MpiLaunch> mpi = MpiLaunchFromEnvironment();
  const bool first_rank = !mpi || mpi->rank == 0;  // prints what every rank would
  std::optional<WholeArrays> whole;
  if (NeedsSpmdPartitioning(module)) {
    absl::StatusOr<WholeArrays> w = WholeArraysOf(module, grid.partitions);
    if (!w.ok()) return ReportError("run", std::string(w.status().message()));
    whole = *std::move(w);
    // Nested jit functions arrive as calls; the partitioner works on one computation.
    absl::StatusOr<bool> inlined = CallInliner().Run(module);
    if (!inlined.ok())
      return ReportError("run", "inlining calls: " + std::string(inlined.status().message()));
    absl::StatusOr<bool> split = SpmdPartitioner(grid.partitions).Run(module);
    if (!split.ok())
      return ReportError("run", "SPMD partitioning: " + std::string(split.status().message()));
    if (first_rank)
      std::cerr << fmt::format(
          "kiln run: split the module's shardings into {} partitions (spmd-partitioner); an "
          "input may be the whole array or the device's tile\n",
          grid.partitions);
  }
  // Compile before MPI starts: plugin discovery and isolated plugins start processes.
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe =
      ModuleExecutable::Compile(registry, module, compile);
  if (!exe.ok()) return ReportError("run", std::string(exe.status().message()));
  // Every device runs the same executable: rank 0 (or the one process) says how it is split.
  if (log_partition && first_rank) LogPartition(**exe);
  const double timeout_s = CollectiveTimeoutSeconds();

  if (mpi) {
    absl::StatusOr<std::unique_ptr<MpiWorld>> world = MpiWorld::Init();
    if (!world.ok()) return ReportError("run", std::string(world.status().message()));
    const int rank = (*world)->rank();
    std::unique_ptr<Communicator> communicator = (*world)->MakeCommunicator(grid, timeout_s);
    absl::StatusOr<DeviceRun> run;
    absl::StatusOr<std::vector<std::optional<Literal>>> results;
    {
      ScopedCommunicator scope(communicator.get());
      run = RunDevice(**exe, module, inputs, rank, benchmark_runs, whole ? &*whole : nullptr);
      if (run.ok() && whole) results = GatherWhole(*whole, run->outputs, rank, grid.num_devices());
    }
    absl::Status reported =
        run.ok() ? Report(rank, *run, output_dir, (*exe)->device_names()) : run.status();
    if (reported.ok() && whole)
      reported =
          results.ok() ? ReportWhole(*results, grid.num_devices(), output_dir) : results.status();
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
  std::vector<DeviceRun> runs(n);
  std::vector<std::optional<Literal>> results;
  absl::Status st = RunOnLocalDevices(
      grid,
      [&](int d) -> absl::Status {
        absl::StatusOr<DeviceRun> run =
            RunDevice(**exe, module, inputs, d, benchmark_runs, whole ? &*whole : nullptr);
        if (!run.ok()) return run.status();
        runs[d] = std::move(*run);
        if (!whole) return absl::OkStatus();
        absl::StatusOr<std::vector<std::optional<Literal>>> r =
            GatherWhole(*whole, runs[d].outputs, d, n);
        if (!r.ok()) return r.status();
        if (d == 0) results = std::move(*r);
        return absl::OkStatus();
      },
      timeout_s);
  if (!st.ok()) return ReportError("run", std::string(st.message()));
  for (int d = 0; d < n; ++d)
    if (absl::Status s = Report(d, runs[d], output_dir, (*exe)->device_names()); !s.ok())
      return ReportError("run", std::string(s.message()));
  if (absl::Status s = ReportWhole(results, n, output_dir); !s.ok())
    return ReportError("run", std::string(s.message()));
  return kExitOk;
}

int LaunchUnderMpirun(int ranks, const std::vector<std::string>& run_args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ReportError("run", "--launch: cannot find this kiln program: " + ec.message());
  std::vector<std::string> cmd = {"mpirun",          "-np",         std::to_string(ranks),
                                  "--oversubscribe", self.string(), "run"};
  for (size_t i = 0; i < run_args.size(); ++i) {
    if (run_args[i] == "--launch") {
      ++i;  // and its value
      continue;
    }
    if (run_args[i].rfind("--launch=", 0) == 0) continue;
    cmd.push_back(run_args[i]);
  }
  std::vector<char*> argv;
  for (std::string& a : cmd) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  pid_t child = fork();
  if (child == 0) {
    execvp("mpirun", argv.data());
    std::fprintf(stderr,
                 "kiln run: error: --launch needs Open MPI's mpirun on PATH (Debian's "
                 "openmpi-bin; ./setup.sh installs it): %s\n",
                 std::strerror(errno));
    std::_Exit(kExitError);
  }
  if (child < 0) return ReportError("run", std::string("--launch: fork: ") + std::strerror(errno));
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return ReportError("run", fmt::format("--launch: mpirun ended by signal {}", WTERMSIG(status)));
}

void LogPartition(const ModuleExecutable& exe) {
  if (exe.plugin() != nullptr) {
    std::cerr << fmt::format("kiln run: cluster 0: {} ({} instructions, whole module)\n",
                             exe.device_names(), exe.module().entry()->instruction_count());
  } else {
    std::cerr << DescribePartition(exe.clusters(), "kiln run: ");
  }
}

}  // namespace kiln
