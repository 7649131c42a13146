// Benchmark (not a test): f32 dot GFLOP/s through cpu-llvm (BLAS-routed and the emitted
// loop) against the GEMM call (RunBlasDot: oneDNN or OpenBLAS, split over a pool of the same
// size) made directly on the same arrays: what the executable adds around it. The libraries'
// own threading is measured in benchmarks/gemm_libraries.cc. Usage: bench_dot_cpu_llvm [runs]
// (median of `runs` timed runs after one warm-up; thread count from KILN_CPU_THREADS)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/bench_util.h"
#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/cpu_compiler.h"

namespace {

using Clock = std::chrono::steady_clock;

using kiln::bench::MedianMs;
using kiln::bench::RandomF32;

std::string DotModule(int64_t m, int64_t k, int64_t n) {
  return fmt::format(R"(
HloModule dot_{0}x{1}x{2}
ENTRY %main (a: f32[{0},{1}], b: f32[{1},{2}]) -> f32[{0},{2}] {{
  %a = f32[{0},{1}]{{1,0}} parameter(0)
  %b = f32[{1},{2}]{{1,0}} parameter(1)
  ROOT %d = f32[{0},{2}]{{1,0}} dot(%a, %b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
)",
                     m, k, n);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  if (!kiln::cpu::HaveBlas()) {
    std::printf("built without OpenBLAS: nothing to compare\n");
    return 0;
  }
  kiln::cpu::CompileOptions blas_opts;
  blas_opts.plan.blas_min_mnk = 0;  // every size goes to BLAS, to see where it starts to pay
  kiln::cpu::CompileOptions emit_opts;
  emit_opts.plan.blas_min_mnk = INT64_MAX;  // force the emitted loop
  auto blas_compiler = kiln::cpu::CpuCompiler::Create(blas_opts);
  auto emit_compiler = kiln::cpu::CpuCompiler::Create(emit_opts);
  if (!blas_compiler.ok() || !emit_compiler.ok()) {
    std::fprintf(stderr, "cannot create the JIT\n");
    return 1;
  }
  std::printf("threads: %d, runs: %d (median after one warm-up)\n", (*blas_compiler)->threads(),
              runs);
  kiln::cpu::ThreadPool pool((*blas_compiler)->threads());
  struct Size {
    int64_t m, k, n;
    bool emitted;
  };
  for (Size s : {Size{8, 8, 8, true}, Size{16, 16, 16, true}, Size{32, 32, 32, true},
                 Size{64, 64, 64, true}, Size{256, 784, 512, true}, Size{512, 512, 512, true},
                 Size{1024, 1024, 1024, false}, Size{2048, 2048, 2048, false},
                 // Matrix-vector products (a power iteration, a logistic regression step).
                 Size{256, 256, 1, true}, Size{1024, 1024, 1, true}, Size{4096, 64, 1, true},
                 Size{64, 4096, 1, true}, Size{1, 256, 256, true}, Size{1, 1024, 1024, true}}) {
    auto module = kiln::ParseHloModule(DotModule(s.m, s.k, s.n), "bench");
    if (!module.ok()) {
      std::fprintf(stderr, "parse error: %s\n", std::string(module.status().message()).c_str());
      return 1;
    }
    std::shared_ptr<const kiln::HloModule> mod = std::move(*module);
    std::vector<kiln::Literal> args = {RandomF32({s.m, s.k}, 1), RandomF32({s.k, s.n}, 2)};
    double gflop = 2.0 * s.m * s.n * s.k * 1e-9;
    auto exe = (*blas_compiler)->Compile(mod);
    if (!exe.ok()) return 1;
    kiln::Literal out;
    // The same GEMM called directly (output preallocated, so no zero-fill in the timing),
    // timed before and after kiln (the better of the two: the machine may be shared).
    kiln::Literal direct(kiln::Shape(kiln::PrimitiveType::F32, {s.m, s.n}));
    kiln::cpu::GemmShape g;
    g.m = s.m, g.n = s.n, g.k = s.k;
    auto direct_call = [&] {
      kiln::cpu::RunBlasDot(g, args[0].untyped_data(), args[1].untyped_data(),
                            direct.untyped_data(), &pool);
    };
    double direct_ms = MedianMs(runs, direct_call);
    double kiln_ms = MedianMs(runs, [&] { out = *(*exe)->Run(args); });
    direct_ms = std::min(direct_ms, MedianMs(runs, direct_call));
    double diff = 0;
    for (int64_t i = 0; i < s.m * s.n; ++i)
      diff = std::max(diff, double(std::fabs(out.data<float>()[i] - direct.data<float>()[i])));
    std::printf(
        "dot f32 %lldx%lldx%lld: kiln (BLAS) %.4f ms %.1f GFLOP/s | library direct "
        "%.4f ms %.1f GFLOP/s | max diff %.2e\n",
        (long long)s.m, (long long)s.k, (long long)s.n, kiln_ms, gflop / kiln_ms * 1e3, direct_ms,
        gflop / direct_ms * 1e3, diff);
    if (s.emitted) {
      auto eexe = (*emit_compiler)->Compile(mod);
      if (!eexe.ok()) return 1;
      double emit_ms = MedianMs(s.m * s.n * s.k > (1 << 20) ? std::min(runs, 3) : runs,
                                [&] { out = *(*eexe)->Run(args); });
      std::printf("  emitted loop (KILN threads): %.4f ms %.1f GFLOP/s\n", emit_ms,
                  gflop / emit_ms * 1e3);
    }
  }
  return 0;
}
