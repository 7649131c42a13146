// `kiln opt MODULE.hlo`: run the optimization pipeline (or named passes), print the result
// on stdout and a per-pass summary on stderr; optionally dump after each pass and report
// the buffer assignment.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/module_executable.h"
#include "core/optimize.h"
#include "core/plugin_registry.h"
#include "fmt/format.h"
#include "hlo/analysis/buffer_assignment.h"
#include "hlo/passes/pass_registry.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace kiln {
namespace {

constexpr const char* kOptUsage =
    "usage: kiln opt MODULE.hlo [--passes=a,b,c] [--dump-to DIR] [--dump-pass-re REGEX]\n"
    "                [--no-verify] [--buffer-report]\n"
    "       kiln opt MODULE.hlo --device NAME|auto [--dump-to DIR] [--no-core-passes]\n"
    "       kiln opt --list-passes\n"
    "Parses and verifies MODULE.hlo, runs the standard pipeline (simplification, then\n"
    "fusion) or the named passes in order, and prints the optimized module on stdout. On\n"
    "stderr: each pass (changed or not, runs, milliseconds), the entry computation's\n"
    "instruction count before and after, and the number of fusions.\n"
    "  --passes       comma-separated pass names (kiln opt --list-passes shows them)\n"
    "  --dump-to      write text + DOT + HTML of the module after every pass that changed it\n"
    "  --dump-pass-re only dump passes whose name matches this regex (ECMAScript search)\n"
    "  --no-verify    skip the verifier on the input and after each pass\n"
    "  --buffer-report  print the buffer assignment of the input and the optimized module\n"
    "With --device, prints what that plugin would run instead: the core passes, then the\n"
    "plugin's own passes as the plugin itself dumps them after compiling (cpu-llvm: its\n"
    "kernel-fusion, one kernel per fusion or remaining instruction); the same files as\n"
    "kiln run --dump-to. A plugin without passes of its own runs what the core hands it.\n";

std::string FormatBytes(int64_t b) {
  if (b >= 10 * 1024 * 1024) return fmt::format("{} ({:.1f} MiB)", b, b / 1048576.0);
  if (b >= 10 * 1024) return fmt::format("{} ({:.1f} KiB)", b, b / 1024.0);
  return fmt::format("{}", b);
}

// The totals of a buffer assignment as a few `buffers <label>: ...` lines.
std::string BufferTotals(const std::string& label, const BufferStats& s) {
  return fmt::format(
      "buffers {}: allocations={} total_allocation_bytes={} peak_live_bytes={} "
      "sum_intermediate_bytes={} parameter_bytes={} constant_bytes={} in_place={}\n",
      label, s.allocation_count, FormatBytes(s.total_allocation_bytes),
      FormatBytes(s.peak_live_bytes), FormatBytes(s.sum_intermediate_bytes),
      FormatBytes(s.parameter_bytes), FormatBytes(s.constant_bytes), s.in_place_count);
}

// The numbered dump files (`<module>.NN.<what>.txt`) in `dir`, in order.
std::vector<std::filesystem::path> DumpTexts(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".txt") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// `kiln opt MODULE --device NAME`: compiles as kiln run does, with dumps, and prints the last
// one: the program the plugin runs (or the module the core hands it, if it has no passes).
int OptForDevice(const std::string& path, const ParsedFlags& flags) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadModule(path);
  if (!module.ok()) return ReportError("opt", std::string(module.status().message()));
  absl::StatusOr<PluginRegistry> registry = PluginRegistry::Discover();
  if (!registry.ok()) return ReportError("opt", std::string(registry.status().message()));
  std::filesystem::path dir = flags.Get("dump-to");
  const bool temporary = dir.empty();
  if (temporary) {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-opt-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return ReportError("opt", "cannot create a temporary directory for the dumps");
    }
    dir = pattern;
  }
  ModuleCompileOptions options;
  options.device = flags.Get("device");
  options.core_passes.enabled = !flags.Has("no-core-passes");
  options.core_passes.dump_dir = dir.string();
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe =
      ModuleExecutable::Compile(*registry, **module, options);
  std::vector<std::filesystem::path> dumps = DumpTexts(dir);
  std::string text;
  if (exe.ok() && (*exe)->plugin() != nullptr && !dumps.empty()) {
    absl::StatusOr<std::string> last = ReadTextFile(dumps.back().string());
    if (last.ok()) text = *last;
  }
  if (temporary) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  if (!exe.ok()) return ReportError("opt", std::string(exe.status().message()));
  if ((*exe)->plugin() == nullptr) {
    return ReportError("opt", fmt::format("the module is partitioned across {}; kiln run "
                                          "--dump-to DIR writes each cluster's program",
                                          (*exe)->device_names()));
  }
  if (text.empty()) return ReportError("opt", "no dump of the compiled module was written");
  std::cout << text;
  std::cerr << fmt::format(
      "device {}: core passes {}; it runs {}\n", (*exe)->device_names(),
      (*exe)->core_pass_report().ran ? (*exe)->core_pass_report().pass_names : std::string("off"),
      dumps.back().filename().string());
  return kExitOk;
}

}  // namespace

int OptCommand(const std::vector<std::string>& args) {
  FlagSpec spec;
  spec.with_value = {"passes", "dump-to", "dump-pass-re", "device"};
  spec.switches = {"help", "no-verify", "buffer-report", "list-passes", "no-core-passes"};
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, spec);
  if (!flags.ok()) return ReportError("opt", std::string(flags.status().message()), kExitUsage);
  if (flags->Has("help")) {
    std::cout << kOptUsage;
    return kExitOk;
  }
  if (flags->Has("list-passes")) {
    for (const std::string& n : RegisteredPassNames()) std::cout << n << "\n";
    return kExitOk;
  }
  if (flags->positional.size() != 1) {
    return ReportError("opt", "expected exactly one MODULE.hlo (see kiln opt --help)", kExitUsage);
  }
  if (flags->Has("dump-pass-re") && !flags->Has("dump-to")) {
    return ReportError("opt", "--dump-pass-re needs --dump-to DIR", kExitUsage);
  }
  if (flags->Has("device")) {
    for (const char* f : {"passes", "dump-pass-re", "buffer-report", "no-verify"}) {
      if (flags->Has(f)) {
        return ReportError("opt", fmt::format("--{} does not go with --device", f), kExitUsage);
      }
    }
    return OptForDevice(flags->positional[0], *flags);
  }
  if (flags->Has("no-core-passes")) {
    return ReportError("opt", "--no-core-passes goes with --device", kExitUsage);
  }
  // Pass names are checked before the module is read: a typo is a usage error.
  absl::StatusOr<std::vector<std::unique_ptr<HloPass>>> passes =
      MakeOptimizationPasses(flags->Get("passes"));
  if (!passes.ok()) {
    return ReportError("opt", "--passes: " + std::string(passes.status().message()), kExitUsage);
  }
  OptimizeOptions options;
  options.verify = !flags->Has("no-verify");
  options.dump_dir = flags->Get("dump-to");
  options.dump_pass_regex = flags->Get("dump-pass-re");

  const std::string& path = flags->positional[0];
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadModule(path, options.verify);
  if (!module.ok()) return ReportError("opt", std::string(module.status().message()));
  HloModule& m = **module;

  std::string report;
  if (flags->Has("buffer-report")) {
    absl::StatusOr<BufferAssignment> before = BufferAssignment::Run(m);
    if (!before.ok()) {
      return ReportError("opt", "--buffer-report: " + std::string(before.status().message()));
    }
    report += BufferTotals("before", before->stats());
  }
  const ModuleCounts before = CountModule(m);
  absl::StatusOr<OptimizeResult> result = OptimizeModule(m, std::move(*passes), options);
  if (!result.ok()) {
    return ReportError("opt", fmt::format("{}: {}", path, std::string(result.status().message())));
  }
  const ModuleCounts after = CountModule(m);

  std::string text = m.ToString();
  std::cout << text;
  if (text.empty() || text.back() != '\n') std::cout << '\n';
  std::cout.flush();

  std::string summary;
  for (const PassSummary& p : result->passes) {
    std::string where = p.pipeline == p.pass ? p.pass : p.pipeline + "/" + p.pass;
    summary += fmt::format("pass {}: {}", where, p.changed_runs ? "changed" : "unchanged");
    if (p.runs > 1) summary += fmt::format(" ({} of {} runs)", p.changed_runs, p.runs);
    summary += fmt::format(" {:.3f} ms\n", p.millis);
  }
  summary += fmt::format("instructions: {} -> {} (entry computation)\n", before.entry_instructions,
                         after.entry_instructions);
  summary += fmt::format("fusions: {} (loop {}, input {}, output {}, custom {})\n", after.fusions,
                         after.loop_fusions, after.input_fusions, after.output_fusions,
                         after.custom_fusions);
  summary += fmt::format("dots: {}\n", after.dots);
  if (!options.dump_dir.empty()) {
    summary += fmt::format("dumps: {} in {}\n", result->dumps, options.dump_dir);
  }
  if (flags->Has("buffer-report")) {
    absl::StatusOr<BufferAssignment> assigned = BufferAssignment::Run(m);
    if (!assigned.ok()) {
      return ReportError("opt", "--buffer-report: " + std::string(assigned.status().message()));
    }
    summary += assigned->ToString();
    if (!summary.empty() && summary.back() != '\n') summary += '\n';
    summary += report + BufferTotals("after", assigned->stats());
  }
  std::cerr << summary;
  return kExitOk;
}

}  // namespace kiln
