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
#include "core/hlo_partitioner.h"
#include "core/module_executable.h"
#include "core/plugin_paths.h"
#include "core/plugin_registry.h"
#include "fmt/format.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/flags.h"
#include "tools/npy.h"
#include "tools/random_inputs.h"

namespace kiln {
namespace {

constexpr const char* kRunUsage =
    "usage: kiln run MODULE.hlo [--device NAME|auto] [--input FILE.npy]... [--output-dir DIR]\n"
    "                [--benchmark N] [--compare REF_DEVICE] [--dump-to DIR [--dump-pass-re R]]\n"
    "                [--atol A] [--rtol R] [--log-partition] [--min-cluster-size N]\n"
    "                [--no-core-passes] [--timeout S]\n"
    "                [--save-executable FILE | --load-executable FILE]\n"
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
    "(async-to-sync, algsimp, constant folding, tuple simplifier, transpose folding, CSE,\n"
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
    "CPU is refused with the reason (exit 1). compile_ms then measures the load.\n";

using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string ParamLabel(const HloInstruction& p) {
  return fmt::format("parameter {} '{}'", p.parameter_number(), p.name());
}

// Host arguments for the entry parameters: from .npy files or generated.
absl::StatusOr<std::vector<Literal>> MakeArguments(const HloComputation& entry,
                                                   const std::vector<std::string>& inputs) {
  const int n = entry.num_parameters();
  for (int i = 0; i < n; ++i) {
    if (entry.parameter(i) == nullptr) {
      return absl::InvalidArgumentError(fmt::format("entry has no parameter number {}", i));
    }
    if (!entry.parameter(i)->shape().IsArray()) {
      return absl::InvalidArgumentError(fmt::format(
          "{} has shape {}; kiln run feeds array parameters only", ParamLabel(*entry.parameter(i)),
          entry.parameter(i)->shape().ToString(false)));
    }
  }
  // Inputs and results live on the host and again in the device's buffers, and the device
  // needs room for its temporaries (a transposed operand is as large as the operand): a run
  // that needs more than a third of the available memory for them is refused here, before
  // the kernel's out-of-memory killer would end it.
  uint64_t need = static_cast<uint64_t>(entry.root()->shape().total_byte_size());
  std::string largest = fmt::format("the result of instruction %{}, {}", entry.root()->name(),
                                    entry.root()->shape().ToString(false));
  uint64_t largest_bytes = need;
  for (int i = 0; i < n; ++i) {
    const uint64_t bytes = static_cast<uint64_t>(entry.parameter(i)->shape().byte_size());
    need += bytes;
    if (bytes >= largest_bytes) {  // on a tie, the input the user gives
      largest_bytes = bytes;
      largest = fmt::format("{}, {}", ParamLabel(*entry.parameter(i)),
                            entry.parameter(i)->shape().ToString(false));
    }
  }
  std::optional<uint64_t> available = AvailableMemoryBytes();
  if (available && need > *available / 3) {
    auto gib = [](uint64_t b) { return static_cast<double>(b) / (uint64_t{1} << 30); };
    return absl::ResourceExhaustedError(fmt::format(
        "out of memory: the inputs and results of this module take {:.1f} GiB (the largest is "
        "{}, {:.1f} GiB), about three times that with the device's copies and temporaries, "
        "and {:.1f} GiB of memory is available",
        gib(need), largest, gib(largest_bytes), gib(*available)));
  }
  std::vector<Literal> args;
  if (inputs.empty()) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<Literal> a =
          GeneratedInput(entry.parameter(i)->shape(), i, ParamLabel(*entry.parameter(i)));
      if (!a.ok()) return a.status();
      args.push_back(std::move(*a));
    }
    return args;
  }
  if (static_cast<int>(inputs.size()) != n) {
    std::string sig;
    for (int i = 0; i < n; ++i) {
      sig += fmt::format("{}{}: {}", i ? ", " : "", entry.parameter(i)->name(),
                         entry.parameter(i)->shape().ToString(false));
    }
    return absl::InvalidArgumentError(
        fmt::format("the entry computation takes {} parameter{} ({}), got {} --input", n,
                    n == 1 ? "" : "s", sig, inputs.size()));
  }
  for (int i = 0; i < n; ++i) {
    const HloInstruction& p = *entry.parameter(i);
    absl::StatusOr<Literal> lit = ReadNpyFile(inputs[i]);
    if (!lit.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {}", ParamLabel(p), std::string(lit.status().message())));
    }
    PrimitiveType want = p.shape().element_type();
    PrimitiveType got = lit->shape().element_type();
    if (absl::Status s = AdoptWidenedInput(want, *lit); !s.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {}: {}", inputs[i], ParamLabel(p), std::string(s.message())));
    }
    got = lit->shape().element_type();
    if (got != want || lit->shape().dimensions() != p.shape().dimensions()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: {} expects {}{}, got {}", inputs[i], ParamLabel(p), p.shape().ToString(false),
          WidenedInputNote(want), lit->shape().ToString(false)));
    }
    args.push_back(std::move(*lit));
  }
  return args;
}

// A short printable form: shape and up to 16 values.
std::string Summarize(const Literal& l) {
  std::string s = l.shape().ToString(false) + " [";
  const int64_t n = l.element_count();
  for (int64_t i = 0; i < std::min<int64_t>(n, 16); ++i) {
    if (i) s += ", ";
    if (l.shape().element_type() == PrimitiveType::PRED) {
      s += l.GetAsInt64(i) ? "true" : "false";
    } else if (IsInteger(l.shape().element_type())) {
      s += IsUnsignedInt(l.shape().element_type()) ? fmt::format("{}", l.GetAsUint64(i))
                                                   : fmt::format("{}", l.GetAsInt64(i));
    } else {
      s += fmt::format("{:.6g}", l.GetAsDouble(i));
    }
  }
  if (n > 16) s += fmt::format(", ... ({} elements)", n);
  return s + "]";
}

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
    auto start = Clock::now();
    absl::StatusOr<std::vector<DeviceBuffer>> out = exe.executable()->ExecuteBuffers(ptrs);
    double ms = Ms(Clock::now() - start);
    if (!out.ok()) return out.status();
    if (i >= warmup) r.run_ms.push_back(ms);
    outputs = std::move(*out);  // the previous run's buffers are freed outside the timing
  }
  for (const DeviceBuffer& b : outputs) {
    absl::StatusOr<Literal> l = b.ToLiteral();
    if (!l.ok()) return l.status();
    r.outputs.push_back(std::move(*l));
  }
  return r;
}

}  // namespace

int RunCommand(const std::vector<std::string>& argv) {
  FlagSpec spec;
  spec.with_value = {"device",  "input",           "output-dir",       "benchmark", "compare",
                     "dump-to", "dump-pass-re",    "min-cluster-size", "atol",      "rtol",
                     "timeout", "save-executable", "load-executable"};
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
  const std::string device = flags->Get("device", "auto");
  const std::string& path = flags->positional[0];

  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadModule(path);
  if (!module.ok()) return ReportError("run", std::string(module.status().message()));
  absl::StatusOr<std::vector<Literal>> args =
      MakeArguments(*(*module)->entry(), flags->All("input"));
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
  if (flags->Has("log-partition")) {
    if ((*exe)->plugin() != nullptr) {
      std::cerr << fmt::format("kiln run: cluster 0: {} ({} instructions, whole module)\n",
                               (*exe)->device_names(),
                               (*exe)->module().entry()->instruction_count());
    } else {
      std::cerr << DescribePartition((*exe)->clusters(), "kiln run: ");
    }
  }
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
