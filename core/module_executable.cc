// Compile and run a module the one way (see module_executable.h).
#include "core/module_executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/executable_file.h"
#include "core/run_deadline.h"
#include "fmt/format.h"
#include "hlo/dump/dump.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The exact module `device` compiles, numbered after the core passes' dumps.
absl::Status DumpCompiled(const HloModule& module, const CorePassOptions& o,
                          const std::string& device, int sequence) {
  if (o.dump_dir.empty()) return absl::OkStatus();
  return DumpModule(module, o.dump_dir, "", "compile." + device, sequence);
}

// A constant a dump elided (`{...}`) has no value, so the module cannot run on any device:
// it is refused before placement and compile, not part-way through a long run.
absl::Status CheckConstantsHaveValues(const HloModule& module) {
  for (const HloComputation* c : module.computations()) {
    for (const HloInstruction* h : c->instructions()) {
      if (h->opcode() == HloOpcode::kConstant && !h->attrs().literal.has_value())
        return absl::FailedPreconditionError(fmt::format(
            "module {} cannot run: constant %{} ({}) has no value (the dump elided it as "
            "{{...}}; dump with large constants printed)",
            module.name(), h->name(), h->shape().ToString(false)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<HloCluster>& ModuleExecutable::clusters() const {
  static const std::vector<HloCluster> kNone;
  return partitioned_ ? partitioned_->clusters() : kNone;
}

absl::StatusOr<std::string> ModuleExecutable::SaveExecutable() const {
  const ModuleExecutable& now = Current();
  if (now.executable_ == nullptr)
    return absl::FailedPreconditionError(
        "only a module one device runs whole can be saved (this one is partitioned: " +
        now.device_names_ + ")");
  absl::StatusOr<std::string> bytes = now.executable_->Serialize();
  if (!bytes.ok()) return bytes.status();
  return PackExecutableFile(now.plugin_->name(), now.module_->ToString(), *bytes);
}

const ModuleExecutable& ModuleExecutable::Current() const {
  std::lock_guard<std::mutex> lock(fallback_mu_);
  return fallback_ != nullptr ? *fallback_ : *this;
}

// How a call fails when its isolated plugin's helper process died or was killed.
static bool LostPluginStatus(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable ||
         s.code() == absl::StatusCode::kDeadlineExceeded;
}

absl::StatusOr<std::unique_ptr<ModuleExecutable>> ModuleExecutable::Compile(
    const PluginRegistry& registry, const HloModule& written, const ModuleCompileOptions& options) {
  for (;;) {
    // The plugin that failed is not known here: one going away lowers the candidate count.
    const size_t before = registry.Candidates().size();
    absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe = CompileOnce(registry, written, options);
    if (exe.ok()) return exe;
    if (options.device != "auto" || !LostPluginStatus(exe.status()) ||
        registry.Candidates().size() >= before)
      return exe.status();
    std::fprintf(stderr, "kiln: warning: %s; compiling for the next plugin\n",
                 std::string(exe.status().message()).c_str());
  }
}

// A token orders side effects and holds no data: the C ABI has no buffer dtype for one, so an
// entry computation that returns one is refused by name instead of failing after the run.
static absl::Status CheckResultsAreArrays(const HloModule& m) {
  const Shape& shape = m.entry()->root()->shape();
  std::vector<Shape> leaves = FlattenShape(shape);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].element_type() == PrimitiveType::TOKEN)
      return absl::UnimplementedError(fmt::format(
          "the entry computation returns a token (result leaf {} of {}); Kiln's devices return "
          "arrays only: leave the token out of the result",
          i, shape.ToString(false)));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ModuleExecutable>> ModuleExecutable::CompileOnce(
    const PluginRegistry& registry, const HloModule& written, const ModuleCompileOptions& options) {
  if (absl::Status s = CheckResultsAreArrays(written); !s.ok()) return s;
  std::unique_ptr<ModuleExecutable> exe(new ModuleExecutable());
  // Printed once: the copy the passes change, the plugin choice, and the as-written copy.
  const std::string written_text = written.ToString();
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(written_text, written.name());
  if (!module.ok()) return module.status();
  exe->module_ = std::move(*module);
  CorePassOptions core = options.core_passes;

  // A named device runs the whole module: it may ask for the module as written.
  Plugin* named = nullptr;
  if (!options.executable_file.empty() && options.device == "auto")
    return absl::InvalidArgumentError(
        "loading a saved executable needs the device that saved it (--device NAME, not auto)");
  if (options.device != "auto") {
    absl::StatusOr<Plugin*> p = registry.Select(options.device, written_text);
    if (!p.ok()) return p.status();
    named = *p;
    if (named->wants_module_as_written()) core.enabled = false;
  }
  // A run that can time out runs on helper processes, which can be stopped.
  const ScopedRunDeadline deadline(options.timeout_s);
  auto isolate = [&](Plugin*& p) -> absl::Status {
    if (options.timeout_s <= 0 || p == nullptr) return absl::OkStatus();
    absl::StatusOr<Plugin*> twin = registry.Isolated(p);
    if (!twin.ok()) return twin.status();
    p = *twin;
    return absl::OkStatus();
  };
  absl::StatusOr<CorePassReport> report = RunCorePasses(*exe->module_, core);
  if (!report.ok()) {
    return absl::Status(report.status().code(),
                        "core passes: " + std::string(report.status().message()));
  }
  exe->core_report_ = std::move(*report);
  if (absl::Status s = CheckConstantsHaveValues(*exe->module_); !s.ok()) return s;

  ModulePlacement placement;
  if (named != nullptr) {
    placement.whole = named;
  } else {
    absl::StatusOr<ModulePlacement> p = PlaceModule(registry, *exe->module_, options.partition);
    if (!p.ok()) return p.status();
    placement = std::move(*p);
    for (HloCluster& c : placement.clusters) {
      if (absl::Status s = isolate(c.handle); !s.ok()) return s;
      for (auto& [name, fallback] : c.fallbacks)
        if (absl::Status s = isolate(fallback); !s.ok()) return s;
    }
    // The one plugin chosen asked for the module as written: it gets that instead.
    if (placement.whole != nullptr && placement.whole->wants_module_as_written() &&
        exe->core_report_.ran) {
      absl::StatusOr<std::unique_ptr<HloModule>> as_written =
          ParseHloModule(written_text, written.name());
      if (!as_written.ok()) return as_written.status();
      exe->module_ = std::move(*as_written);
      exe->core_report_ = CorePassReport();
    }
  }

  CompileOptions compile = options.compile;
  compile.core_passes = exe->core_report_.pass_names;
  const int first_dump = exe->core_report_.result.dumps;
  // The plugin's own dumps follow the core's and the module handed over (one per cluster).
  compile.dump_dir = core.dump_dir;
  compile.dump_sequence =
      first_dump + static_cast<int>(std::max<size_t>(placement.clusters.size(), 1));
  if (absl::Status s = isolate(placement.whole); !s.ok()) return s;
  auto t0 = std::chrono::steady_clock::now();
  if (placement.whole != nullptr) {
    exe->plugin_ = placement.whole;
    exe->device_names_ = placement.whole->name();
    if (absl::Status s = DumpCompiled(*exe->module_, core, exe->device_names_, first_dump); !s.ok())
      return s;
    absl::StatusOr<std::unique_ptr<Executable>> e;
    if (options.executable_file.empty()) {
      e = placement.whole->Compile(*exe->module_, compile);
    } else {
      absl::StatusOr<std::string_view> bytes = UnpackExecutableFile(
          options.executable_file, placement.whole->name(), exe->module_->ToString());
      if (!bytes.ok()) return bytes.status();
      e = placement.whole->Deserialize(*bytes);
    }
    if (!e.ok()) return e.status();
    exe->executable_ = std::move(*e);
  } else {
    for (size_t i = 0; !core.dump_dir.empty() && i < placement.clusters.size(); ++i) {
      const HloCluster& c = placement.clusters[i];
      absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(c.module_text, c.plugin);
      if (!m.ok()) return m.status();
      absl::Status s = DumpCompiled(**m, core, fmt::format("cluster{}.{}", i, c.plugin),
                                    first_dump + static_cast<int>(i));
      if (!s.ok()) return s;
    }
    absl::StatusOr<std::unique_ptr<PartitionedExecutable>> p =
        PartitionedExecutable::Compile(*exe->module_, std::move(placement.clusters), compile);
    if (!p.ok()) return p.status();
    exe->partitioned_ = std::move(*p);
    exe->device_names_ = PartitionDeviceNames(exe->partitioned_->clusters());
  }
  exe->compile_ms_ = MsSince(t0);
  exe->generations_ = exe->Generations();
  // For compiling again: for the next plugin (auto), or after a helper was restarted.
  exe->registry_ = &registry;
  exe->written_text_ = written_text;
  exe->written_name_ = written.name();
  exe->options_ = options;
  return exe;
}

std::vector<const Plugin*> ModuleExecutable::Plugins() const {
  if (plugin_ != nullptr) return {plugin_};
  std::vector<const Plugin*> out;
  for (const HloCluster& c : partitioned_->clusters()) {
    if (c.handle != nullptr) out.push_back(c.handle);
    for (const auto& [name, fallback] : c.fallbacks) out.push_back(fallback);
  }
  return out;
}

uint64_t ModuleExecutable::Generations() const {
  uint64_t sum = 0;
  for (const Plugin* p : Plugins()) sum += p->generation();
  return sum;
}

bool ModuleExecutable::Stale() const { return Generations() != generations_; }

bool ModuleExecutable::LostAPlugin() const {
  const std::vector<const Plugin*> plugins = Plugins();
  return std::any_of(plugins.begin(), plugins.end(), [](const Plugin* p) { return !p->alive(); });
}

absl::StatusOr<const ModuleExecutable*> ModuleExecutable::CompileAgainLocked() const {
  absl::StatusOr<std::unique_ptr<HloModule>> written = ParseHloModule(written_text_, written_name_);
  if (!written.ok()) return written.status();
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> again =
      Compile(*registry_, **written, options_);
  if (!again.ok()) return again.status();
  if (fallback_ != nullptr) retired_.push_back(std::move(fallback_));
  fallback_ = std::move(*again);
  return fallback_.get();
}

absl::StatusOr<const ModuleExecutable*> ModuleExecutable::Live() const {
  std::lock_guard<std::mutex> lock(fallback_mu_);
  const ModuleExecutable* now = fallback_ != nullptr ? fallback_.get() : this;
  if (!now->Stale()) return now;
  return CompileAgainLocked();
}

absl::StatusOr<std::vector<Literal>> ModuleExecutable::ExecuteHere(
    std::span<const Literal> args) const {
  if (partitioned_) return partitioned_->Execute(args);
  return executable_->Execute(args);
}

absl::StatusOr<std::vector<Literal>> ModuleExecutable::Execute(
    std::span<const Literal> args) const {
  const HloComputation& entry = *module_->entry();
  if (static_cast<int>(args.size()) != entry.num_parameters()) {
    return absl::InvalidArgumentError(fmt::format("module {} takes {} arguments, got {}",
                                                  module_->name(), entry.num_parameters(),
                                                  args.size()));
  }
  for (int i = 0; i < entry.num_parameters(); ++i) {
    const Shape& want = entry.parameter(i)->shape();
    if (!args[i].shape().Compatible(want)) {
      return absl::InvalidArgumentError(fmt::format(
          "argument {} ('{}') has shape {}, the module wants {}", i, entry.parameter(i)->name(),
          args[i].shape().ToString(false), want.ToString(false)));
    }
  }
  const ScopedRunDeadline deadline(options_.timeout_s);
  absl::StatusOr<const ModuleExecutable*> live = Live();
  if (!live.ok()) return live.status();
  absl::StatusOr<std::vector<Literal>> out = (*live)->ExecuteHere(args);
  if (out.ok() || options_.device != "auto" || !LostPluginStatus(out.status()) ||
      !(*live)->LostAPlugin())
    return out;
  std::fprintf(stderr, "kiln: warning: %s; running on the next plugin\n",
               std::string(out.status().message()).c_str());
  absl::StatusOr<const ModuleExecutable*> next = nullptr;
  {
    std::lock_guard<std::mutex> lock(fallback_mu_);
    const ModuleExecutable* now = fallback_ != nullptr ? fallback_.get() : this;
    // Unless another thread already replaced it.
    next = now == *live ? CompileAgainLocked() : now;
  }
  if (!next.ok()) return next.status();
  return (*next)->ExecuteHere(args);
}

}  // namespace kiln
