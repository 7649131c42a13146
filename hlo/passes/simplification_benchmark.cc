// Benchmark program (not a test): times the simplification pipeline on one HLO module.
// Usage: simplification_benchmark [MODULE.hlo] [RUNS]
// Default module: tests/hlo_corpus/020_tf_bert_forward_gpu.hlo under KILN_SOURCE_ROOT or ".".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hlo/passes/optimization_pipeline.h"
#include "hlo/text/parser.h"

namespace {

int64_t InstructionCount(const kiln::HloModule& m) {
  int64_t n = 0;
  for (const kiln::HloComputation* c : m.computations()) n += c->instruction_count();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::string path =
      argc > 1 ? argv[1]
               : std::string(root ? root : ".") + "/tests/hlo_corpus/020_tf_bert_forward_gpu.hlo";
  int runs = argc > 2 ? std::atoi(argv[2]) : 20;
  if (runs < 1) runs = 1;
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return 1;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();

  std::vector<double> times;
  std::map<std::string, double> per_pass;
  int64_t before = 0, after = 0;
  size_t rounds = 0;
  for (int r = 0; r < runs + 1; ++r) {  // run 0 is a warm-up
    absl::StatusOr<std::unique_ptr<kiln::HloModule>> m = kiln::ParseHloModule(text, path);
    if (!m.ok()) {
      std::fprintf(stderr, "%s\n", std::string(m.status().message()).c_str());
      return 1;
    }
    before = InstructionCount(**m);
    auto pipeline = kiln::MakeSimplificationPipeline();
    pipeline->set_verify(false);  // as in release builds
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = pipeline->Run(**m);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!changed.ok()) {
      std::fprintf(stderr, "%s\n", std::string(changed.status().message()).c_str());
      return 1;
    }
    after = InstructionCount(**m);
    if (r == 0) continue;
    times.push_back(ms);
    rounds = pipeline->records().size() / 6;
    for (const kiln::PassRecord& rec : pipeline->records())
      per_pass[rec.pass_name] += rec.millis / runs;
  }
  std::sort(times.begin(), times.end());
  std::printf("module: %s\ninstructions: %lld -> %lld\npipeline rounds: %zu\n", path.c_str(),
              static_cast<long long>(before), static_cast<long long>(after), rounds);
  for (const auto& [name, ms] : per_pass) std::printf("  %-18s %8.3f ms\n", name.c_str(), ms);
  std::printf("median_ms=%.3f min_ms=%.3f runs=%d\n", times[times.size() / 2], times.front(), runs);
  return 0;
}
