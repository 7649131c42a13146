// All-reduce of f32 buffers over the ranks of `mpirun -np N`, three ways in the same run:
// a raw MPI_Allreduce, Kiln's MPI transport alone (MpiCommunicator), and a compiled module
// `all-reduce(p)` run on a plugin through the core (what `kiln run` does per step). Prints
// per size the median time per call and Kiln's throughput as a fraction of the raw call's.
// usage: mpirun -np 4 build/core/bench_allreduce [--device cpu-llvm] [--min-kb 1] [--max-mb 64]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/collectives/mpi_world.h"
#include "core/device_config.h"
#include "core/module_executable.h"
#include "core/plugin_paths.h"
#include "core/plugin_registry.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

// The slowest rank's mean time per call over a batch of `calls`.
double BatchUs(int calls, const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) fn();
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
  double slowest = 0;
  MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

std::string ModuleText(int64_t n) {
  return "HloModule allreduce\n"
         "%sum (x: f32[], y: f32[]) -> f32[] {\n"
         "  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n"
         "  ROOT %s = f32[] add(%x, %y)\n}\n"
         "ENTRY %e (p: f32[" +
         std::to_string(n) + "]) -> f32[" + std::to_string(n) +
         "] {\n"
         "  %p = f32[" +
         std::to_string(n) +
         "] parameter(0)\n"
         "  ROOT %r = f32[" +
         std::to_string(n) +
         "] all-reduce(%p), replica_groups={}, "
         "to_apply=%sum\n}\n";
}

int Main(int argc, char** argv) {
  std::string device = "cpu-llvm";
  int64_t max_mb = 64, min_kb = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    if (std::strcmp(argv[i], "--max-mb") == 0) max_mb = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--min-kb") == 0) min_kb = std::atoll(argv[i + 1]);
  }
  // Discover and compile before MPI starts (plugin probes start processes).
  absl::StatusOr<DeviceConfig> config = LoadDeviceConfig();
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 1;
  absl::StatusOr<PluginRegistry> registry =
      PluginRegistry::Discover(*config, PluginSearchDirs(*config));
  if (!registry.ok()) return std::fprintf(stderr, "%s\n", registry.status().ToString().c_str()), 1;
  std::vector<int64_t> sizes;
  for (int64_t bytes = min_kb * 1024; bytes <= max_mb * (1 << 20); bytes *= 4)
    sizes.push_back(bytes);
  std::vector<std::unique_ptr<ModuleExecutable>> exes;
  for (int64_t bytes : sizes) {
    auto module = ParseHloModule(ModuleText(bytes / 4));
    ModuleCompileOptions options;
    options.device = device;
    auto exe = ModuleExecutable::Compile(*registry, **module, options);
    if (!exe.ok()) return std::fprintf(stderr, "%s\n", exe.status().ToString().c_str()), 1;
    exes.push_back(*std::move(exe));
  }
  absl::StatusOr<std::unique_ptr<MpiWorld>> world = MpiWorld::Init();
  if (!world.ok()) return std::fprintf(stderr, "%s\n", world.status().ToString().c_str()), 1;
  const int rank = (*world)->rank(), size = (*world)->size();
  std::unique_ptr<Communicator> comm = (*world)->MakeCommunicator({size, 1}, 300);
  std::vector<int> group(size);
  for (int i = 0; i < size; ++i) group[i] = i;
  if (rank == 0)
    std::printf(
        "all-reduce f32 over %d ranks, device %s (median of 7 batches, slowest rank)\n"
        "%10s %12s %12s %12s %10s %10s\n",
        size, device.c_str(), "bytes", "mpi_us", "transport_us", "module_us", "transport",
        "module");
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t bytes = sizes[k], n = bytes / 4;
    std::vector<float> in(n, 1.0f + rank), out(n);
    const int calls = static_cast<int>(std::clamp<int64_t>((int64_t{16} << 20) / bytes, 2, 200));
    Literal arg(Shape(PrimitiveType::F32, {n}));
    std::memcpy(arg.untyped_data(), in.data(), bytes);
    const ModuleExecutable& exe = *exes[k];
    absl::StatusOr<DeviceBuffer> buffer = exe.plugin()->ToDevice(arg);
    if (!buffer.ok()) return std::fprintf(stderr, "%s\n", buffer.status().ToString().c_str()), 1;
    const DeviceBuffer* args[] = {&*buffer};
    ScopedCommunicator scope(comm.get());
    auto raw = [&] { MPI_Allreduce(in.data(), out.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
    auto transport = [&] {
      (void)comm->AllReduce(group, PrimitiveType::F32, ReductionKind::kSum, in.data(), out.data(),
                            n);
    };
    absl::Status failed;
    auto module = [&] {
      auto r = exe.executable()->ExecuteBuffers(args);
      if (!r.ok()) failed = r.status();
    };
    raw(), transport(), module();  // warm-up: communicators made, pages touched
    // Interleaved, so drift on a shared machine hits the three alike.
    std::vector<double> r_raw, r_tr, r_mod;
    for (int round = 0; round < 7; ++round) {
      r_raw.push_back(BatchUs(calls, raw));
      r_tr.push_back(BatchUs(calls, transport));
      r_mod.push_back(BatchUs(calls, module));
    }
    for (auto* v : {&r_raw, &r_tr, &r_mod}) std::sort(v->begin(), v->end());
    const double raw_us = r_raw[3], transport_us = r_tr[3], module_us = r_mod[3];  // medians
    if (!failed.ok()) return std::fprintf(stderr, "%s\n", failed.ToString().c_str()), 1;
    if (rank == 0)
      std::printf("%10lld %12.1f %12.1f %12.1f %9.0f%% %9.0f%%\n", static_cast<long long>(bytes),
                  raw_us, transport_us, module_us, 100 * raw_us / transport_us,
                  100 * raw_us / module_us);
  }
  comm.reset();
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
