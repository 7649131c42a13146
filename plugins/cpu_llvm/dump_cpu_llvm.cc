// Developer tool (not a test): prints how cpu-llvm compiles an HLO text file: every entry
// instruction's disposition (the plan) and the optimized LLVM IR of its kernels.
// Usage: dump_cpu_llvm MODULE.hlo
#include <cstdio>
#include <fstream>
#include <sstream>

#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_cpu_llvm MODULE.hlo\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  auto module = kiln::ParseHloModule(text.str(), argv[1]);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return 1;
  }
  kiln::cpu::CompileOptions opts;
  opts.keep_ir = true;
  auto compiler = kiln::cpu::CpuCompiler::Create(opts);
  if (!compiler.ok()) return 1;
  auto exe = (*compiler)->Compile(std::shared_ptr<const kiln::HloModule>(std::move(*module)));
  if (!exe.ok()) {
    std::fprintf(stderr, "%s\n", std::string(exe.status().message()).c_str());
    return 1;
  }
  for (const auto& [h, d] : (*exe)->plan().dispositions)
    std::printf("; %-24s %s\n", h->name().c_str(),
                std::string(kiln::cpu::DispositionName(d)).c_str());
  std::printf("%s", (*exe)->llvm_ir().c_str());
  return 0;
}
