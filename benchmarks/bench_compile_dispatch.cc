// Benchmark (not a test): compile and dispatch costs of a plugin through the C ABI (the
// core/plugin.h wrappers over the KILN_Api table):
//   cold compile  - examples/hlo/mlp_train_step.hlo compiled in a fresh process (this program
//                   re-runs itself with --cold-child; median over the children), plus the
//                   plugin's load+initialize+client time in that process;
//   cache hit     - compiling the same text again in one client (median of many);
//   dispatch      - ExecuteBuffers on a cached f32[4] add with inputs on the device, outputs
//                   released, median per call of many.
// Usage: bench_compile_dispatch [PLUGIN.so] [MODULE.hlo] [cold_runs]
//        (defaults: the build tree's cpu-llvm plugin, the MLP training step, 5)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/plugin.h"

namespace {

using Clock = std::chrono::steady_clock;

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "bench_compile_dispatch: %s: %s\n", what.c_str(),
               std::string(s.message()).c_str());
  std::exit(1);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) Die(path, absl::NotFoundError("cannot read"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<kiln::Plugin> Load(const std::string& path) {
  auto plugin = kiln::Plugin::Load(path);
  if (!plugin.ok()) Die(path, plugin.status());
  if (!(*plugin)->available()) Die(path, absl::UnavailableError((*plugin)->unavailable_reason()));
  return std::move(*plugin);
}

// The child: one cold compile in this fresh process. Prints `load_us=.. cold_compile_us=..`.
int ColdChild(const std::string& plugin_path, const std::string& module_path) {
  std::string text = ReadFile(module_path);
  auto t0 = Clock::now();
  auto plugin = Load(plugin_path);
  auto t1 = Clock::now();
  auto exe = plugin->CompileText(text);
  auto t2 = Clock::now();
  if (!exe.ok()) Die("compile " + module_path, exe.status());
  std::printf("load_us=%.1f cold_compile_us=%.1f\n", Us(t0, t1), Us(t1, t2));
  return 0;
}

constexpr const char* kTinyAdd = R"(HloModule tiny_add
ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  ROOT %s = f32[4] add(f32[4] %a, f32[4] %b)
})";

}  // namespace

int main(int argc, char** argv) {
  std::string plugin_path = KILN_BENCH_PLUGIN_DIR "/libkiln_plugin_cpu_llvm.so";
  std::string module_path = KILN_BENCH_SOURCE_ROOT "/examples/hlo/mlp_train_step.hlo";
  if (argc > 2 && std::string(argv[1]) == "--cold-child") {
    return ColdChild(argv[2], argv[3 < argc ? 3 : 2]);
  }
  if (argc > 1) plugin_path = argv[1];
  if (argc > 2) module_path = argv[2];
  int cold_runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;

  // Cold compiles, each in a fresh process (the cache is per client, in memory).
  std::vector<double> load_us, cold_us;
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) {
    Die("/proc/self/exe", absl::InternalError("cannot find this program to re-run it"));
  }
  for (int i = 0; i < cold_runs; ++i) {
    std::string cmd =
        std::string("'") + self + "' --cold-child '" + plugin_path + "' '" + module_path + "'";
    FILE* p = popen(cmd.c_str(), "r");
    double load = 0, cold = 0;
    if (p == nullptr || std::fscanf(p, "load_us=%lf cold_compile_us=%lf", &load, &cold) != 2) {
      if (p) pclose(p);
      Die("cold child", absl::InternalError("no result from " + cmd));
    }
    if (pclose(p) != 0) Die("cold child", absl::InternalError("failed: " + cmd));
    load_us.push_back(load);
    cold_us.push_back(cold);
  }

  auto plugin = Load(plugin_path);
  std::string text = ReadFile(module_path);
  auto first = plugin->CompileText(text);
  if (!first.ok()) Die("compile " + module_path, first.status());
  std::vector<double> hit_us;
  for (int i = 0; i < 200; ++i) {
    auto t0 = Clock::now();
    auto exe = plugin->CompileText(text);
    auto t1 = Clock::now();
    if (!exe.ok()) Die("cache-hit compile", exe.status());
    hit_us.push_back(Us(t0, t1));
  }

  auto tiny = plugin->CompileText(kTinyAdd);
  if (!tiny.ok()) Die("compile tiny_add", tiny.status());
  kiln::Literal host(kiln::Shape(kiln::PrimitiveType::F32, {4}));
  for (int i = 0; i < 4; ++i) host.data<float>()[i] = float(i);
  auto a = plugin->ToDevice(host), b = plugin->ToDevice(host);
  if (!a.ok() || !b.ok()) Die("ToDevice", a.ok() ? b.status() : a.status());
  const kiln::DeviceBuffer* args[] = {&*a, &*b};
  // The result must be right, or the timing means nothing.
  auto check = (*tiny)->ExecuteBuffers(args);
  if (!check.ok()) Die("execute tiny_add", check.status());
  auto out = (*check)[0].ToLiteral();
  if (!out.ok() || out->data<float>()[3] != 6.0f)
    Die("tiny_add", absl::InternalError("wrong result"));
  std::vector<double> call_us;
  for (int i = 0; i < 20000; ++i) {
    auto t0 = Clock::now();
    {
      auto r = (*tiny)->ExecuteBuffers(args);
      if (!r.ok()) Die("execute tiny_add", r.status());
    }
    auto t1 = Clock::now();
    if (i >= 1000) call_us.push_back(Us(t0, t1));  // the first 1000 are warm-up
  }

  std::printf("plugin: %s  module: %s\n", plugin_path.c_str(), module_path.c_str());
  std::printf("plugin load+initialize+client (fresh process, median of %d): %.1f ms\n", cold_runs,
              Median(load_us) / 1e3);
  std::printf("cold compile (fresh process, median of %d): %.1f ms  (goal < 200 ms)\n", cold_runs,
              Median(cold_us) / 1e3);
  std::printf("cache-hit compile (median of %zu): %.1f us  (goal < 50 us)\n", hit_us.size(),
              Median(hit_us));
  std::printf(
      "dispatch, cached f32[4] add, buffers on device (median of %zu): %.2f us  (goal < 5 us)\n",
      call_us.size(), Median(call_us));
  std::printf("cold_compile_ms=%.3f cache_hit_us=%.3f dispatch_us=%.3f\n", Median(cold_us) / 1e3,
              Median(hit_us), Median(call_us));
  return 0;
}
