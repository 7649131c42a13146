// Where cpu-llvm compile time goes for one HLO file: parse, verify, plan, IR emission, LLVM
// optimization, code generation and loading, for the first (cold) compile in the process
// and the median of later ones (each with a fresh compiler, so no in-memory cache hit).
//   build/plugins/cpu_llvm/bench_compile_cpu_llvm MODULE.hlo [trials] [threads] [opt_level]
// Phase times are summed over parallel groups, so with several threads they can add up to
// more than the wall time.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "fmt/format.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"
#include "plugins/cpu_llvm/cpu_compiler.h"

namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Trial {
  double parse = 0, verify = 0, plan = 0, emit = 0, opt = 0, codegen = 0, load = 0, compile = 0;
  int64_t kernels = 0, modules = 0, shared = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: bench_compile_cpu_llvm MODULE.hlo [trials] [threads] [opt_level]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const int trials = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  kiln::cpu::CompileOptions options;
  options.threads = argc > 3 ? std::atoi(argv[3]) : 0;
  if (argc > 4) options.jit.opt_level = std::atoi(argv[4]);
  options.keep_ir = getenv("DUMPIR") != nullptr;
  options.cache_dir = "";  // measure compiling, not the disk cache
  std::vector<Trial> all;
  for (int t = 0; t < trials; ++t) {
    auto compiler = kiln::cpu::CpuCompiler::Create(options);
    if (!compiler.ok()) {
      fmt::print(stderr, "{}\n", std::string(compiler.status().message()));
      return 1;
    }
    Trial r;
    auto t0 = Clock::now();
    auto parsed = kiln::ParseHloModule(text, argv[1]);
    if (!parsed.ok()) {
      fmt::print(stderr, "{}\n", std::string(parsed.status().message()));
      return 1;
    }
    auto t1 = Clock::now();
    if (absl::Status st = kiln::VerifyModule(**parsed); !st.ok()) {
      fmt::print(stderr, "{}\n", std::string(st.message()));
      return 1;
    }
    auto t2 = Clock::now();
    std::shared_ptr<const kiln::HloModule> module = std::move(*parsed);
    auto exe = (*compiler)->Compile(module);
    auto t3 = Clock::now();
    if (!exe.ok()) {
      fmt::print(stderr, "{}\n", std::string(exe.status().message()));
      return 1;
    }
    kiln::cpu::CompileStats s = (*compiler)->stats();
    if (getenv("DUMPIR")) {
      std::ofstream o(getenv("DUMPIR"));
      o << (*exe)->llvm_ir();
    }
    r.parse = Ms(t1 - t0);
    r.verify = Ms(t2 - t1);
    r.compile = Ms(t3 - t2);
    r.plan = s.plan_ms;
    r.emit = s.jit.emit_ms;
    r.opt = s.jit.optimize_ms;
    r.codegen = s.jit.codegen_ms;
    r.load = s.jit.load_ms;
    r.kernels = (*exe)->kernel_count();
    r.modules = s.jit.codegen_modules;
    r.shared = s.jit.shared_kernels;
    all.push_back(r);
    if (t == 0)
      fmt::print(
          "threads {}, {} kernels ({} identical to another, compiled once) in {} LLVM modules\n",
          (*compiler)->threads(), r.kernels, r.shared, r.modules);
  }
  auto print = [](const char* label, const Trial& r) {
    fmt::print(
        "{:>8}: parse {:.1f} verify {:.1f} | compile {:.1f} ms = plan {:.1f} + emit {:.1f} "
        "+ opt {:.1f} + codegen {:.1f} + load {:.1f} (phases summed over threads)\n",
        label, r.parse, r.verify, r.compile, r.plan, r.emit, r.opt, r.codegen, r.load);
  };
  print("cold", all[0]);
  if (all.size() > 1) {
    std::vector<Trial> warm(all.begin() + 1, all.end());
    std::sort(warm.begin(), warm.end(),
              [](const Trial& a, const Trial& b) { return a.compile < b.compile; });
    print("median", warm[warm.size() / 2]);
  }
  return 0;
}
