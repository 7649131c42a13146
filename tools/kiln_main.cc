// The `kiln` program: dispatches to the run / print / devices / opt / graph / plugin-test
// subcommands, and runs kiln-aot for `aot`.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace {

// Every command and every flag (a test checks this against each command's flag spec).
constexpr const char* kUsage =
    "usage: kiln <command> [args]\n"
    "  run MODULE.hlo [--device NAME|auto] [--input FILE.npy]... [--output-dir DIR]\n"
    "                 [--benchmark N] [--compare REF_DEVICE [--atol A] [--rtol R]]\n"
    "                 [--dump-to DIR [--dump-pass-re R]] [--no-core-passes] [--timeout S]\n"
    "                 [--log-partition] [--min-cluster-size N]\n"
    "                 [--save-executable FILE | --load-executable FILE]\n"
    "                 [--replicas R] [--partitions P] [--launch N]   (several devices)\n"
    "                 [--custom-calls LIB.so]...   (host custom-call handlers)\n"
    "  print MODULE.hlo\n"
    "  opt MODULE.hlo [--passes=a,b,c] [--dump-to DIR] [--dump-pass-re R] [--no-verify]\n"
    "                 [--buffer-report] | opt --list-passes\n"
    "  opt MODULE.hlo --device NAME|auto [--dump-to DIR] [--no-core-passes]\n"
    "  graph run FILE.graph [--input X.npy]... [--output-dir DIR] [--device NAME|auto]\n"
    "                       [--must-compile|--auto-jit] [--log-device-placement] [--log-compiles]\n"
    "                       [--soft-placement] [--dump-clusters FILE.dot|.svg|.html]\n"
    "                       [--steps N] [--no-core-passes]\n"
    "  graph print FILE.graph | graph lower FILE.graph [--input X.npy]...\n"
    "  graph aot FILE.graph --name NAME --out-dir DIR [--feed P[=SHAPE]]... [--fetch NODE[:I]]...\n"
    "                       [--target TRIPLE] [--cpu CPU] [--features F] [--gemm KIND]\n"
    "  devices\n"
    "  plugin-test PATH.so|NAME [--json] [--seed N] [--modules N]\n"
    "  aot MODULE.hlo --name NAME --out-dir DIR [--target TRIPLE] [--cpu CPU] [--features F]\n"
    "                 [--gemm emitted|openblas|onednn] [--no-core-passes] [--parallel]\n"
    "  help\n"
    "Run `kiln <command> --help` for details.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return kiln::kExitUsage;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "run") return kiln::RunCommand(args);
    if (command == "print") return kiln::PrintCommand(args);
    if (command == "devices") return kiln::DevicesCommand(args);
    if (command == "opt") return kiln::OptCommand(args);
    if (command == "graph") return kiln::GraphCommand(args);
    if (command == "plugin-test") return kiln::PluginTestCommand(args);
    if (command == "aot") return kiln::AotCommand(args);
    if (command == "help" || command == "--help" || command == "-h") {
      std::cout << kUsage;
      return kiln::kExitOk;
    }
  } catch (const std::exception& e) {
    // Library code returns statuses; this only guards against a bug turning into abort().
    return kiln::ReportError(command, std::string("internal error: ") + e.what());
  }
  std::cerr << "kiln: error: unknown command '" << command << "'\n" << kUsage;
  return kiln::kExitUsage;
}
