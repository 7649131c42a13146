// One way to run an HLO module: the entry point `kiln run` uses and every front end (the
// Python package, an embedding program) should use. Compile takes the module as the user
// wrote it, runs the core passes (core_passes.h), places it (a named plugin, or `auto`: the
// highest-priority plugin that runs everything, else a partition across plugins), dumps what
// the devices compile when asked, and compiles. Execute moves host arrays in and out.
//
//   absl::StatusOr<PluginRegistry> registry = PluginRegistry::Discover();
//   auto exe = ModuleExecutable::Compile(*registry, *module, {.device = "auto"});
//   absl::StatusOr<std::vector<Literal>> outputs = (*exe)->Execute(args);
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/core_passes.h"
#include "core/hlo_partitioner.h"
#include "core/partitioned_executable.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "hlo/module.h"

namespace kiln {

struct ModuleCompileOptions {
  std::string device = "auto";  // a plugin name, or "auto"
  CorePassOptions core_passes;  // its dump_dir also receives the compiled modules' dumps
  PartitionOptions partition;   // for "auto" when no single plugin runs everything
  CompileOptions compile;       // passed to the plugins (core_passes is filled in)
  // When not empty: a file SaveExecutable wrote for this module, loaded by the named device
  // instead of compiling (the plugin's executable_deserialize; cpu-llvm's holds object code).
  std::string executable_file;
  // When > 0, each run (and the compile) is cancelled with DEADLINE_EXCEEDED after this many
  // seconds, however the plugin is stuck. Only a helper process can be stopped mid-call, so
  // the module runs on isolated plugins (PluginRegistry::Isolated); a stopped helper starts
  // again and the module is compiled again for the next run.
  double timeout_s = 0;
};

class ModuleExecutable {
 public:
  // `module` is copied: the caller keeps its module as written.
  static absl::StatusOr<std::unique_ptr<ModuleExecutable>> Compile(
      const PluginRegistry& registry, const HloModule& module, const ModuleCompileOptions& options);

  // One host array per entry parameter; returns the array leaves of the result (tuples
  // flattened depth-first). Shapes are checked: a wrong one is InvalidArgument naming it.
  // With device "auto", a run whose plugin is gone (an isolated plugin whose helper died or
  // was killed) is compiled again for the next plugin that can run it and run there, with a
  // warning on stderr; so is a compile. A partitioned module is partitioned again without
  // the plugin that went away.
  // An isolated plugin whose helper was lost and started again (a run stopped at its timeout,
  // or the restart policy) has none of this module's executables: it is compiled again there
  // before the next run.
  absl::StatusOr<std::vector<Literal>> Execute(std::span<const Literal> args) const;

  // What runs the module now: this, or what was compiled since (see Execute). Callers that
  // run on device buffers themselves (the Python package) take it before each run, under a
  // ScopedRunDeadline(timeout_s()).
  absl::StatusOr<const ModuleExecutable*> Live() const;
  double timeout_s() const { return options_.timeout_s; }

  // The one plugin that runs the whole module, or null when it is partitioned.
  // After a fallback (see Execute) these describe the plugin the module runs on now.
  const Plugin* plugin() const { return Current().plugin_; }
  // The whole-module executable (for runs on device buffers), or null when partitioned.
  const Executable* executable() const { return Current().executable_.get(); }
  // The clusters when partitioned (empty otherwise).
  const std::vector<HloCluster>& clusters() const;
  // "cpu-llvm", or the partition's plugins in order of use ("test-elementwise+cpu-llvm").
  const std::string& device_names() const { return Current().device_names_; }
  // The module the devices compile (after the core passes, if they ran).
  const HloModule& module() const { return *module_; }
  const CorePassReport& core_pass_report() const { return core_report_; }
  double compile_ms() const { return compile_ms_; }  // the plugins' compile, not the passes
  // The file `executable_file` takes back: the device, the module it compiled and its
  // serialized executable. Only for a module one plugin runs whole.
  absl::StatusOr<std::string> SaveExecutable() const;

 private:
  ModuleExecutable() = default;
  // This, or the executable compiled for the next plugin when this one's plugin went away.
  const ModuleExecutable& Current() const;
  // Whether a plugin it runs on lost its helper process since it was compiled.
  bool Stale() const;
  // The plugins it runs on: the one, or each cluster's and its fallbacks.
  std::vector<const Plugin*> Plugins() const;
  uint64_t Generations() const;  // the sum over its plugins' generations (plugin.h)
  // Whether a plugin it runs on is gone for good (placement would now skip it).
  bool LostAPlugin() const;
  // Compiles the module again (for the next plugin, or on a restarted one) as the fallback;
  // the caller holds fallback_mu_.
  absl::StatusOr<const ModuleExecutable*> CompileAgainLocked() const;
  // Runs here, with no fallback.
  absl::StatusOr<std::vector<Literal>> ExecuteHere(std::span<const Literal> args) const;
  static absl::StatusOr<std::unique_ptr<ModuleExecutable>> CompileOnce(
      const PluginRegistry& registry, const HloModule& module, const ModuleCompileOptions& options);

  // For the fallback of an "auto" module whose plugin went away.
  const PluginRegistry* registry_ = nullptr;
  std::string written_text_, written_name_;
  ModuleCompileOptions options_;
  mutable std::mutex fallback_mu_;
  mutable std::unique_ptr<ModuleExecutable> fallback_;
  // Replaced ones, kept while another thread may still be running them.
  mutable std::vector<std::unique_ptr<ModuleExecutable>> retired_;
  uint64_t generations_ = 0;

  std::unique_ptr<HloModule> module_;
  CorePassReport core_report_;
  const Plugin* plugin_ = nullptr;
  std::unique_ptr<Executable> executable_;
  std::unique_ptr<PartitionedExecutable> partitioned_;
  std::string device_names_;
  double compile_ms_ = 0;
};

}  // namespace kiln
