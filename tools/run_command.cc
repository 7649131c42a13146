// `kiln run`: load a module, feed it .npy or generated inputs, run it on a plugin, write or
// print the result leaves, optionally benchmark and compare against another device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "absl/strings/numbers.h"
#include "core/collectives/mpi_world.h"
#include "core/hlo_partitioner.h"
#include "core/module_executable.h"
#include "core/plugin_paths.h"
#include "core/plugin_registry.h"
#include "fmt/format.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/custom_call_libraries.h"
#include "tools/flags.h"
#include "tools/npy.h"
#include "tools/random_inputs.h"
#include "tools/replicated_run.h"
#include "tools/run_arguments.h"

namespace kiln {
namespace {

constexpr const char* kRunUsage =
    "usage: kiln run MODULE.hlo [--device NAME|auto] [--input FILE.npy]... [--output-dir DIR]\n"
    "                [--benchmark N] [--compare REF_DEVICE] [--dump-to DIR [--dump-pass-re R]]\n"
    "                [--atol A] [--rtol R] [--log-partition] [--min-cluster-size N]\n"
    "                [--no-core-passes] [--timeout S]\n"
    "                [--save-executable FILE | --load-executable FILE]\n"
    "                [--replicas R] [--partitions P] [--launch N] [--custom-calls LIB.so]...\n"
    "Runs the entry computation. One --input per entry parameter, in order; without inputs,\n"
    "deterministic pseudo-random ones are generated (floats in [-1,1), ints in [-4,4) or\n"
    "[0,8), pred a coin flip). --output-dir writes output_0.npy, output_1.npy, ... (tuples\n"
    "flattened depth-first; bf16 written as float32), one `wrote FILE: ...` line each on\n"
    "stdout. --benchmark N times N runs after one\n"
    "warm-up. --compare runs on REF_DEVICE too and compares element by element: each must\n"
    "satisfy |got - ref| <= atol + rtol*|ref| (per-dtype defaults, exact for integers and\n"
    "pred; --atol/--rtol override them for floats), NaN and infinity matched by position;\n"
    "otherwise it reports the worst element with its index and exits 3.\n"
    "Before placement and compile, the core runs its target-independent passes\n"
    "(async-to-sync, call inlining, library-call lowering, one-window scatters as\n"
    "dynamic-update-slices, algsimp, constant folding, tuple simplifier,\n"
    "transpose folding, CSE,\n"
    "DCE, to a fixed point) on\n"
    "the module; --no-core-passes hands the module to the device as written (so does a\n"
    "plugin whose attribute core_passes is none). The --compare reference always gets the\n"
    "module as written. --dump-to DIR writes the module after each core pass that changed\n"
    "it (filtered by --dump-pass-re), then <module>.NN.compile.<device>.txt: the exact\n"
    "module each device compiles.\n"
    "With --device auto, when the highest-priority plugin cannot run every entry instruction,\n"
    "the module is partitioned: each cluster runs on the highest-priority plugin that can run\n"
    "it (a cluster under --min-cluster-size instructions, default 4, joins a neighbouring\n"
    "lower-priority plugin that can run it all); --log-partition prints the clusters on stderr.\n"
    "--timeout S runs the device's plugin isolated (in a kiln-plugin-host process) and cancels\n"
    "any plugin call that takes longer than S seconds (a hung call, a while loop that never\n"
    "ends) by killing that process: the run fails with DEADLINE_EXCEEDED, exit 1.\n"
    "--save-executable FILE writes the compiled executable (with a named --device; cpu-llvm's\n"
    "holds the kernels' object code) and --load-executable FILE runs one instead of compiling:\n"
    "a file saved by another device, from another module, by another build or for another\n"
    "CPU is refused with the reason (exit 1). compile_ms then measures the load.\n"
    "--replicas R [--partitions P] runs the module on R x P devices (P defaults to the\n"
    "module's num_partitions): in this process, a thread per device with the collectives\n"
    "meeting in memory, or under `mpirun -np R*P kiln run ...` one device per rank with the\n"
    "collectives over Open MPI (under mpirun, R defaults to the ranks). An --input path may\n"
    "hold {rank}, replaced by each device's id; --output-dir D then writes\n"
    "D/rank_<r>/output_<i>.npy, and printed lines start with `rank <r>: `. A collective\n"
    "whose peers do not come within KILN_COLLECTIVE_TIMEOUT_S (default 300) seconds fails\n"
    "the run; under mpirun the failing rank then ends the whole job. A module with shardings\n"
    "and no num_partitions (JAX's, before partitioning) is split by the SPMD partitioner; its\n"
    "inputs may be whole arrays (each device gets its tile) and the whole results are also\n"
    "written as DIR/output_<i>.npy. With --benchmark N each\n"
    "device prints `rank <r>: median_ms=...` of its N timed runs. --launch N runs the same\n"
    "command under `mpirun -np N --oversubscribe` (Open MPI's mpirun on PATH).\n"
    "--custom-calls LIB.so loads host handlers for custom-call targets: the library's\n"
    "KILN_RegisterCustomCalls(register) registers each (core/custom_calls.h); plugins built\n"
    "against ABI 1.5 then run those custom-calls by calling back into the host.\n";

using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct RunResult {
  std::vector<Literal> outputs;
  double compile_ms = 0;
  std::vector<double> run_ms;
};

// Runs `exe` `runs` times after `warmup` untimed runs and keeps the last outputs. A whole
// module runs on device buffers (inputs moved once, outputs copied back after the last run);
// a partitioned one moves values through host memory, so its timed runs include the copies.
absl::StatusOr<RunResult> Time(const ModuleExecutable& exe, const std::vector<Literal>& args,
                               int warmup, int runs) {
  RunResult r;
  r.compile_ms = exe.compile_ms();
  if (exe.executable() == nullptr) {
    for (int i = 0; i < warmup + runs; ++i) {
      auto start = Clock::now();
      absl::StatusOr<std::vector<Literal>> out = exe.Execute(args);
      double ms = Ms(Clock::now() - start);
      if (!out.ok()) return out.status();
      if (i >= warmup) r.run_ms.push_back(ms);
      r.outputs = std::move(*out);
    }
    return r;
  }
  std::vector<DeviceBuffer> on_device;
  for (const Literal& a : args) {
    absl::StatusOr<DeviceBuffer> b = exe.plugin()->ToDevice(a);
    if (!b.ok()) return b.status();
    on_device.push_back(std::move(*b));
  }
  std::vector<const DeviceBuffer*> ptrs;
  for (const DeviceBuffer& b : on_device) ptrs.push_back(&b);
  std::vector<DeviceBuffer> outputs;
  for (int i = 0; i < warmup + runs; ++i) {
    outputs.clear();  // the previous run's buffers are freed outside the timing, before the run
    auto start = Clock::now();
    absl::StatusOr<std::vector<DeviceBuffer>> out = exe.executable()->ExecuteBuffers(ptrs);
    double ms = Ms(Clock::now() - start);
    if (!out.ok()) return out.status();
    if (i >= warmup) r.run_ms.push_back(ms);
    outputs = std::move(*out);
  }
  for (DeviceBuffer& b : outputs) {
    absl::StatusOr<Literal> l = b.ToLiteral();
    if (!l.ok()) return l.status();
    r.outputs.push_back(std::move(*l));
    DeviceBuffer read = std::move(b);  // freed here: one copy of each output at a time
  }
  return r;
}

}  // namespace

int RunCommand(const std::vector<std::string>& argv) {
  FlagSpec spec;
  spec.with_value = {"device",  "input",           "output-dir",       "benchmark", "compare",
                     "dump-to", "dump-pass-re",    "min-cluster-size", "atol",      "rtol",
                     "timeout", "save-executable", "load-executable",  "replicas",  "partitions",
                     "launch",  "custom-calls"};
  spec.switches = {"help", "log-partition", "no-core-passes"};
  absl::StatusOr<ParsedFlags> flags = ParseFlags(argv, spec);
  if (!flags.ok()) return ReportError("run", std::string(flags.status().message()), kExitUsage);
  if (flags->Has("help")) {
    std::cout << kRunUsage;
    return kExitOk;
  }
  if (flags->positional.size() != 1) {
    return ReportError("run", "expected exactly one MODULE.hlo (see kiln run --help)", kExitUsage);
  }
  for (const std::string& lib : flags->All("custom-calls")) {
    if (absl::Status s = LoadCustomCallLibrary(lib); !s.ok())
      return ReportError("run", std::string(s.message()), kExitUsage);
  }
  if (flags->Has("dump-pass-re") && !flags->Has("dump-to")) {
    return ReportError("run", "--dump-pass-re needs --dump-to DIR", kExitUsage);
  }
  int benchmark_runs = 0;
  if (flags->Has("benchmark")) {
    std::string v = flags->Get("benchmark");
    if (!absl::SimpleAtoi(v, &benchmark_runs) || benchmark_runs < 1) {
      return ReportError("run", fmt::format("--benchmark needs a positive integer, got '{}'", v),
                         kExitUsage);
    }
  }
  PartitionOptions partition_options;
  if (flags->Has("min-cluster-size")) {
    std::string v = flags->Get("min-cluster-size");
    if (!absl::SimpleAtoi(v, &partition_options.min_cluster_size) ||
        partition_options.min_cluster_size < 1) {
      return ReportError("run",
                         fmt::format("--min-cluster-size needs a positive integer, got '{}'", v),
                         kExitUsage);
    }
  }
  // --atol/--rtol replace the per-dtype tolerance of floating-point outputs.
  std::optional<double> atol, rtol;
  for (auto [name, value] : {std::pair{"atol", &atol}, std::pair{"rtol", &rtol}}) {
    if (!flags->Has(name)) continue;
    if (!flags->Has("compare")) {
      return ReportError("run", fmt::format("--{} needs --compare REF_DEVICE", name), kExitUsage);
    }
    double v = 0;
    std::string text = flags->Get(name);
    if (!absl::SimpleAtod(text, &v) || !(v >= 0) || !std::isfinite(v)) {
      return ReportError(
          "run", fmt::format("--{} needs a non-negative number, got '{}'", name, text), kExitUsage);
    }
    *value = v;
  }
  double timeout_s = 0;
  if (flags->Has("timeout")) {
    std::string v = flags->Get("timeout");
    if (!absl::SimpleAtod(v, &timeout_s) || !(timeout_s > 0) || !std::isfinite(timeout_s)) {
      return ReportError("run",
                         fmt::format("--timeout needs a positive number of seconds, got '{}'", v),
                         kExitUsage);
    }
  }
  if (flags->Has("launch")) {
    int ranks = 0;
    if (!absl::SimpleAtoi(flags->Get("launch"), &ranks) || ranks < 1)
      return ReportError("run", "--launch needs a positive number of ranks", kExitUsage);
    if (MpiLaunchFromEnvironment())
      return ReportError("run", "--launch inside an MPI job: drop --launch (mpirun started it)",
                         kExitUsage);
    return LaunchUnderMpirun(ranks, argv);
  }
  const std::string device = flags->Get("device", "auto");
  const std::string& path = flags->positional[0];

  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadModule(path);
  if (!module.ok()) return ReportError("run", std::string(module.status().message()));
  absl::StatusOr<std::optional<DeviceGrid>> grid = RunDeviceGrid(*flags, **module);
  if (!grid.ok()) return ReportError("run", std::string(grid.status().message()), kExitUsage);
  if (grid->has_value()) {
    for (const char* alone : {"compare", "save-executable", "load-executable", "timeout"})
      if (flags->Has(alone))
        return ReportError(
            "run", fmt::format("--{} runs on one device, not with --replicas", alone), kExitUsage);
  }
  absl::StatusOr<std::vector<Literal>> args = std::vector<Literal>();
  if (!grid->has_value()) args = MakeArguments(*(*module)->entry(), flags->All("input"));
  if (!args.ok()) return ReportError("run", std::string(args.status().message()));

  absl::StatusOr<DeviceConfig> config = LoadDeviceConfig();
  if (!config.ok()) return ReportError("run", std::string(config.status().message()));
  if (timeout_s > 0) {  // a deadline is a killable helper process per plugin
    config->isolate = {device == "auto" ? std::string("all") : device};
    config->plugin_deadline_s = timeout_s;
  }
  absl::StatusOr<PluginRegistry> registry =
      PluginRegistry::Discover(*config, PluginSearchDirs(*config));
  ModuleCompileOptions compile;
  compile.device = device;
  compile.core_passes.enabled = !flags->Has("no-core-passes");
  compile.core_passes.dump_dir = flags->Get("dump-to");
  compile.core_passes.dump_pass_regex = flags->Get("dump-pass-re");
  compile.partition = partition_options;
  if (grid->has_value())
    return RunOnDevices(**module, *registry, compile, **grid, flags->All("input"),
                        flags->Get("output-dir"), benchmark_runs, flags->Has("log-partition"));
  if (flags->Has("save-executable") && flags->Has("load-executable"))
    return ReportError("run", "--save-executable and --load-executable exclude each other",
                       kExitUsage);
  if (flags->Has("load-executable")) {
    const std::string file = flags->Get("load-executable");
    absl::StatusOr<std::string> bytes = ReadFileBounded(file, kMaxTextFileBytes);
    if (!bytes.ok()) return ReportError("run", std::string(bytes.status().message()));
    if (bytes->empty()) return ReportError("run", file + ": empty file, not a saved executable");
    compile.executable_file = std::move(*bytes);
  }
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe =
      ModuleExecutable::Compile(*registry, **module, compile);
  if (!exe.ok()) {
    const std::string where =
        flags->Has("load-executable") ? flags->Get("load-executable") + ": " : "";
    return ReportError("run", where + std::string(exe.status().message()));
  }
  if (flags->Has("save-executable")) {
    const std::string file = flags->Get("save-executable");
    if (device == "auto")
      return ReportError("run", "--save-executable needs a named --device (the one to load it)",
                         kExitUsage);
    absl::StatusOr<std::string> saved = (*exe)->SaveExecutable();
    if (!saved.ok()) return ReportError("run", std::string(saved.status().message()));
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(saved->data(), static_cast<std::streamsize>(saved->size()));
    out.close();
    if (!out) return ReportError("run", fmt::format("--save-executable {}: cannot write", file));
  }
  if (flags->Has("log-partition")) LogPartition(**exe);
  const int warmup = benchmark_runs > 0 ? 1 : 0, runs = std::max(benchmark_runs, 1);
  absl::StatusOr<RunResult> result = Time(**exe, *args, warmup, runs);
  // With "auto", a plugin that went away (an isolated plugin whose helper process died or was
  // killed) hands the module to the next plugin that can run it.
  while (!result.ok() && device == "auto" && (*exe)->plugin() != nullptr &&
         !(*exe)->plugin()->alive() &&
         !(timeout_s > 0 && result.status().code() == absl::StatusCode::kDeadlineExceeded)) {
    std::cerr << fmt::format("kiln run: warning: {}; compiling for the next plugin\n",
                             std::string(result.status().message()));
    exe = ModuleExecutable::Compile(*registry, **module, compile);
    if (!exe.ok()) return ReportError("run", std::string(exe.status().message()));
    result = Time(**exe, *args, warmup, runs);
  }
  if (!result.ok()) return ReportError("run", std::string(result.status().message()));
  const std::string run_device = (*exe)->device_names();

  // Outputs: files, or a summary on stdout.
  if (flags->Has("output-dir")) {
    std::filesystem::path dir = flags->Get("output-dir");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return ReportError("run", fmt::format("--output-dir {}: {}", dir.string(), ec.message()));
    }
    for (size_t i = 0; i < result->outputs.size(); ++i) {
      std::string file = (dir / fmt::format("output_{}.npy", i)).string();
      if (absl::Status s = WriteNpyFile(file, result->outputs[i]); !s.ok()) {
        return ReportError("run", std::string(s.message()));
      }
      // Say what was written, where (stdout; the --benchmark line stays the last).
      std::cout << fmt::format("wrote {}: {}\n", file, Summarize(result->outputs[i]));
    }
  } else {
    for (size_t i = 0; i < result->outputs.size(); ++i) {
      std::cout << fmt::format("output_{}: {}\n", i, Summarize(result->outputs[i]));
    }
  }

  int status = kExitOk;
  if (flags->Has("compare")) {
    const std::string ref_device = flags->Get("compare");
    // The reference runs the module as written, so the comparison covers the core passes.
    ModuleCompileOptions as_written;
    as_written.device = ref_device;
    as_written.core_passes.enabled = false;
    absl::StatusOr<std::unique_ptr<ModuleExecutable>> ref =
        ModuleExecutable::Compile(*registry, **module, as_written);
    if (!ref.ok()) {
      return ReportError("run",
                         "--compare " + ref_device + ": " + std::string(ref.status().message()));
    }
    absl::StatusOr<RunResult> expected = Time(**ref, *args, 0, 1);
    if (!expected.ok()) {
      return ReportError(
          "run", "--compare " + ref_device + ": " + std::string(expected.status().message()));
    }
    if (expected->outputs.size() != result->outputs.size()) {
      return ReportError(
          "run",
          fmt::format("--compare: {} gave {} outputs, {} gave {}", run_device,
                      result->outputs.size(), (*ref)->device_names(), expected->outputs.size()),
          kExitMismatch);
    }
    for (size_t i = 0; i < result->outputs.size(); ++i) {
      const PrimitiveType type = expected->outputs[i].shape().element_type();
      Tolerance tol = ToleranceFor(type);
      if (IsFloating(type) || IsComplex(type)) {
        tol.atol = atol.value_or(tol.atol);
        tol.rtol = rtol.value_or(tol.rtol);
      }
      Comparison c = CompareLiterals(result->outputs[i], expected->outputs[i], tol);
      std::cout << fmt::format(
          "compare output_{} {} vs {}: {} max_abs={:.3g} max_rel={:.3g} "
          "(atol={:.0e} rtol={:.0e}){}\n",
          i, run_device, (*ref)->device_names(), c.ok ? "ok" : "MISMATCH", c.max_abs, c.max_rel,
          tol.atol, tol.rtol,
          c.ok ? "" : fmt::format(" {} mismatches; {}", c.mismatches, c.detail));
      if (!c.ok) status = kExitMismatch;
    }
    if (status != kExitOk) {
      ReportError("run",
                  fmt::format("--compare: {} differs from {} beyond tolerance", run_device,
                              (*ref)->device_names()),
                  kExitMismatch);
    }
  }

  if (benchmark_runs > 0) {
    std::vector<double> times = result->run_ms;
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    std::cout << fmt::format("compile_ms={:.3f} median_ms={:.3f} min_ms={:.3f} runs={} device={}",
                             result->compile_ms, median, times.front(), benchmark_runs, run_device)
              << std::endl;
  }
  return status;
}

}  // namespace kiln
