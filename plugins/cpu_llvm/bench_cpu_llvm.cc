// Benchmark (not a test): cpu-llvm JIT vs the HLO evaluator vs hand-written C++ loops, in one
// run, on reduce_sum(x + y*z) over three f32[2^24] and softmax over f32[4096,1024].
// Usage: bench_cpu_llvm [runs]   (median of `runs` timed runs after one warm-up)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/bench_util.h"
#include "plugins/cpu_llvm/cpu_compiler.h"

namespace {

using Clock = std::chrono::steady_clock;

using kiln::bench::MedianMs;
using kiln::bench::RandomF32;

std::shared_ptr<const kiln::HloModule> Parse(const char* text) {
  auto m = kiln::ParseHloModule(text, "bench");
  if (!m.ok()) {
    std::fprintf(stderr, "parse error: %s\n", std::string(m.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*m);
}

constexpr const char* kReduceSum = R"(
HloModule reduce_sum_fma
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[16777216], y: f32[16777216], z: f32[16777216]) -> f32[] {
  %x = f32[16777216]{0} parameter(0)
  %y = f32[16777216]{0} parameter(1)
  %z = f32[16777216]{0} parameter(2)
  %yz = f32[16777216]{0} multiply(%y, %z)
  %s = f32[16777216]{0} add(%x, %yz)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%s, %zero), dimensions={0}, to_apply=%add
})";

constexpr const char* kSoftmax = R"(
HloModule softmax_4096x1024
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4096,1024]) -> f32[4096,1024] {
  %x = f32[4096,1024]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  %rowmax = f32[4096]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %bmax = f32[4096,1024]{1,0} broadcast(%rowmax), dimensions={0}
  %sh = f32[4096,1024]{1,0} subtract(%x, %bmax)
  %e = f32[4096,1024]{1,0} exponential(%sh)
  %zero = f32[] constant(0)
  %rowsum = f32[4096]{0} reduce(%e, %zero), dimensions={1}, to_apply=%add
  %bsum = f32[4096,1024]{1,0} broadcast(%rowsum), dimensions={0}
  ROOT %y = f32[4096,1024]{1,0} divide(%e, %bsum)
})";

struct Result {
  double jit_ms, eval_ms, hand_ms;
};

void Report(const char* name, double compile_ms, double hit_ms, int kernels, const Result& r,
            double max_err_hand, double max_err_eval) {
  std::printf("%s: compile %.1f ms (cache hit %.3f ms, %d kernels)\n", name, compile_ms, hit_ms,
              kernels);
  std::printf("  jit %.3f ms | evaluator %.3f ms | hand C++ %.3f ms\n", r.jit_ms, r.eval_ms,
              r.hand_ms);
  std::printf(
      "  evaluator/jit = %.1fx   hand/jit = %.2fx   max |jit-hand| %.2e  max |jit-eval| %.2e\n",
      r.eval_ms / r.jit_ms, r.hand_ms / r.jit_ms, max_err_hand, max_err_eval);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  auto compiler = kiln::cpu::CpuCompiler::Create();
  if (!compiler.ok()) {
    std::fprintf(stderr, "%s\n", std::string(compiler.status().message()).c_str());
    return 1;
  }
  std::printf("target: %s, runs: %d (median after one warm-up; evaluator: 1 run)\n",
              (*compiler)->jit().TargetDescription().c_str(), runs);
  kiln::HloEvaluator evaluator;

  {  // reduce_sum(x + y*z)
    auto module = Parse(kReduceSum);
    const int64_t n = int64_t{1} << 24;
    std::vector<kiln::Literal> args = {RandomF32({n}, 1), RandomF32({n}, 2), RandomF32({n}, 3)};
    auto t0 = Clock::now();
    auto exe = (*compiler)->Compile(module);
    double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    t0 = Clock::now();
    auto hit = (*compiler)->Compile(module);
    double hit_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!exe.ok() || !hit.ok()) {
      std::fprintf(stderr, "compile failed: %s\n", std::string(exe.status().message()).c_str());
      return 1;
    }
    Result r;
    float jit_value = 0, hand_value = 0, eval_value = 0;
    r.jit_ms = MedianMs(runs, [&] { jit_value = (*exe)->Run(args)->data<float>()[0]; });
    const float* x = args[0].data<float>().data();
    const float* y = args[1].data<float>().data();
    const float* z = args[2].data<float>().data();
    // The loop a C++ programmer writes; g++ -O2 keeps the float sum in order (not vectorized).
    r.hand_ms = MedianMs(runs, [&] {
      float acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += x[i] + y[i] * z[i];
      hand_value = acc;
    });
    auto t1 = Clock::now();
    auto ev = evaluator.Evaluate(*module, args);
    r.eval_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    if (ev.ok()) {
      eval_value = ev->data<float>()[0];
    } else {
      std::printf("  (evaluator unavailable: %s)\n", std::string(ev.status().message()).c_str());
      r.eval_ms = NAN;
      eval_value = NAN;
    }
    // A double-precision reference tells how far each float sum is from the exact value.
    double exact = 0;
    for (int64_t i = 0; i < n; ++i) exact += double(x[i]) + double(y[i]) * double(z[i]);
    Report("reduce_sum(x + y*z), 3 x f32[2^24]", compile_ms, hit_ms, (*exe)->kernel_count(), r,
           std::fabs(jit_value - hand_value), std::fabs(jit_value - eval_value));
    std::printf("  sums: jit %.4f hand %.4f evaluator %.4f exact(double) %.4f\n", jit_value,
                hand_value, eval_value, exact);
  }

  {  // softmax
    auto module = Parse(kSoftmax);
    const int64_t R = 4096, C = 1024;
    std::vector<kiln::Literal> args = {RandomF32({R, C}, 4)};
    auto t0 = Clock::now();
    auto exe = (*compiler)->Compile(module);
    double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    t0 = Clock::now();
    auto hit = (*compiler)->Compile(module);
    double hit_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!exe.ok() || !hit.ok()) {
      std::fprintf(stderr, "compile failed: %s\n", std::string(exe.status().message()).c_str());
      return 1;
    }
    Result r;
    kiln::Literal jit_out;
    r.jit_ms = MedianMs(runs, [&] { jit_out = *(*exe)->Run(args); });
    const float* x = args[0].data<float>().data();
    std::vector<float> hand(R * C);
    r.hand_ms = MedianMs(runs, [&] {
      for (int64_t i = 0; i < R; ++i) {
        const float* row = x + i * C;
        float* out = hand.data() + i * C;
        float m = -INFINITY;
        for (int64_t j = 0; j < C; ++j) m = std::max(m, row[j]);
        float s = 0;
        for (int64_t j = 0; j < C; ++j) {
          out[j] = std::exp(row[j] - m);
          s += out[j];
        }
        for (int64_t j = 0; j < C; ++j) out[j] /= s;
      }
    });
    auto t1 = Clock::now();
    auto ev = evaluator.Evaluate(*module, args);
    r.eval_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    double err_hand = 0, err_eval = ev.ok() ? 0 : NAN;
    if (!ev.ok()) {
      std::printf("  (evaluator unavailable: %s)\n", std::string(ev.status().message()).c_str());
      r.eval_ms = NAN;
    }
    for (int64_t i = 0; i < R * C; ++i) {
      err_hand = std::max(err_hand, double(std::fabs(jit_out.data<float>()[i] - hand[i])));
      if (ev.ok())
        err_eval =
            std::max(err_eval, double(std::fabs(jit_out.data<float>()[i] - ev->data<float>()[i])));
    }
    Report("softmax f32[4096,1024]", compile_ms, hit_ms, (*exe)->kernel_count(), r, err_hand,
           err_eval);
  }
  return 0;
}
