// kiln-aot: the ahead-of-time compiler `kiln aot` runs (it lives beside the cpu-llvm plugin
// because it is cpu-llvm's code generator; the `kiln` program itself links no LLVM).
//   kiln-aot MODULE.hlo --name NAME --out-dir DIR [--target TRIPLE] [--cpu CPU]
//            [--features F] [--gemm emitted|openblas|onednn] [--no-core-passes]
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "aot/aot_compiler.h"
#include "core/core_passes.h"
#include "hlo/passes/call_inliner.h"
#include "hlo/passes/dce.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace {

using kiln::kExitError;
using kiln::kExitOk;
using kiln::kExitUsage;

constexpr const char* kUsage =
    "usage: kiln aot MODULE.hlo --name NAME --out-dir DIR [--target TRIPLE] [--cpu CPU]\n"
    "                [--features F] [--gemm emitted|openblas|onednn] [--no-core-passes]\n"
    "                [--parallel]\n"
    "Compiles MODULE.hlo ahead of time into DIR/NAME.o and DIR/NAME.h: the same core passes,\n"
    "fusion, buffer assignment and code generator as the cpu-llvm device, with no LLVM, core\n"
    "or plugin at run time. Link with `cc prog.c DIR/NAME.o -lm` (add -lopenblas with\n"
    "--gemm openblas, -ldnnl with --gemm onednn). NAME.h declares\n"
    "  int NAME_run(const void* const* args, void* const* results, void* temp);\n"
    "  int NAME_run_simple(const void* const* args, void* const* results);\n"
    "with arguments in parameter order and results the flattened leaves of the output.\n"
    "  --target   an LLVM triple (default: this machine), e.g. aarch64-linux-gnu\n"
    "  --cpu      a CPU name (default: this machine's CPU for its own triple, else generic)\n"
    "  --features LLVM feature string (default: the host CPU's, for the host CPU)\n"
    "  --gemm     emitted (default: dots are generated loop nests), openblas (large dots\n"
    "             call cblas_sgemm/cblas_dgemm) or onednn (large f32 dots call dnnl_sgemm,\n"
    "             which runs on OMP_NUM_THREADS threads)\n"
    "  --parallel large kernels split their loops across a thread pool, the one in\n"
    "             DIR/libkiln_aot_runtime.a (link it and -lpthread; kiln_aot_set_threads(n)\n"
    "             in NAME.h picks the threads); this host's architecture only\n"
    "DIR always gets libkiln_aot_runtime.a (empty for another architecture), so\n"
    "`cc prog.c DIR/*.o DIR/*.a -lm -lpthread` links any artifact.\n";

// `kiln aot: error: MESSAGE` on one line, as every kiln command reports errors.
int Fail(const std::string& message, int code = kExitError) {
  return kiln::ReportError("aot", message, code);
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat(path.string(), ": cannot write"));
  return absl::OkStatus();
}

int Main(const std::vector<std::string>& args) {
  kiln::FlagSpec spec;
  spec.with_value = {"name", "out-dir", "target", "cpu", "features", "gemm"};
  spec.switches = {"help", "no-core-passes", "parallel"};
  absl::StatusOr<kiln::ParsedFlags> flags = kiln::ParseFlags(args, spec);
  if (!flags.ok()) return Fail(std::string(flags.status().message()), kExitUsage);
  if (flags->Has("help")) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (flags->positional.size() != 1) return Fail("expected exactly one MODULE.hlo", kExitUsage);
  if (!flags->Has("name") || !flags->Has("out-dir"))
    return Fail("--name NAME and --out-dir DIR are required", kExitUsage);
  kiln::cpu::aot::AotOptions options;
  options.name = flags->Get("name");
  if (!kiln::cpu::aot::IsValidAotName(options.name))
    return Fail(
        absl::StrCat("--name '", options.name, "' is not a C identifier ([A-Za-z][A-Za-z0-9_]*)"),
        kExitUsage);
  options.triple = flags->Get("target");
  options.cpu = flags->Get("cpu");
  options.features = flags->Get("features");
  options.parallel = flags->Has("parallel");
  const std::string gemm = flags->Get("gemm", "emitted");
  if (gemm == "openblas")
    options.gemm = kiln::cpu::aot::AotGemm::kOpenBlas;
  else if (gemm == "onednn")
    options.gemm = kiln::cpu::aot::AotGemm::kOneDnn;
  else if (gemm != "emitted")
    return Fail(absl::StrCat("--gemm must be emitted, openblas or onednn, not '", gemm, "'"),
                kExitUsage);

  const std::string& path = flags->positional[0];
  absl::StatusOr<std::unique_ptr<kiln::HloModule>> module = kiln::LoadModule(path);
  if (!module.ok()) return Fail(std::string(module.status().message()));
  kiln::CallInliner inliner;
  kiln::HloDCE dce;
  kiln::CorePassOptions core;
  core.enabled = !flags->Has("no-core-passes");
  if (core.enabled) {
    absl::StatusOr<kiln::CorePassReport> ran = kiln::RunCorePasses(**module, core);
    if (!ran.ok()) return Fail(absl::StrCat(path, ": ", ran.status().message()));
  }
  // Calls become flat code: the artifact has no sub-computations to call (yet).
  for (kiln::HloPass* pass : std::initializer_list<kiln::HloPass*>{&inliner, &dce}) {
    absl::StatusOr<bool> ran = pass->Run(**module);
    if (!ran.ok())
      return Fail(
          absl::StrCat(path, ": ", std::string(pass->name()), ": ", ran.status().message()));
  }
  absl::StatusOr<kiln::cpu::aot::AotArtifact> artifact =
      kiln::cpu::aot::CompileAot(**module, options);
  if (!artifact.ok()) return Fail(absl::StrCat(path, ": ", artifact.status().message()));

  const std::filesystem::path dir = flags->Get("out-dir");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(absl::StrCat(dir.string(), ": cannot create the folder: ", ec.message()));
  const std::filesystem::path object = dir / (options.name + ".o");
  const std::filesystem::path header = dir / (options.name + ".h");
  if (absl::Status st = WriteFile(object, artifact->object); !st.ok())
    return Fail(std::string(st.message()));
  if (absl::Status st = WriteFile(header, artifact->header); !st.ok())
    return Fail(std::string(st.message()));
  // Always there, so `cc prog.c DIR/*.o DIR/*.a -lm -lpthread` links every artifact: the
  // thread pool --parallel artifacts call, built for this host; for another architecture an
  // empty archive (--parallel is refused there).
  const std::filesystem::path runtime = dir / "libkiln_aot_runtime.a";
  const std::string archive = artifact->host_architecture
                                  ? std::string(kiln::cpu::aot::AotRuntimeArchive())
                                  : std::string("!<arch>\n");
  if (absl::Status st = WriteFile(runtime, archive); !st.ok())
    return Fail(std::string(st.message()));
  std::cout << "kiln aot: " << object.string() << " (" << artifact->object.size() << " bytes, "
            << artifact->kernels << " kernels, " << artifact->gemm_steps << " GEMMs, "
            << artifact->constant_bytes << " bytes of constants) and " << header.string() << "; "
            << artifact->args.size() << " arguments, " << artifact->results.size() << " results, "
            << artifact->temp_bytes << " bytes of temporaries; target " << artifact->target << "\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    return Fail(std::string("internal error: ") + e.what());
  }
}
