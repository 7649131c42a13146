// Fusion report over HLO modules (a program, not a test): for each module, kernels before
// and after the fusion pipeline, bytes of intermediates that no longer touch memory, memory
// traffic, and the buffer assignment's peak live bytes against the sum of intermediates.
// Usage: fusion_benchmark [FILE.hlo | DIR]...   (default: examples/hlo)
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hlo/analysis/buffer_assignment.h"
#include "hlo/analysis/cost_model.h"
#include "hlo/passes/fusion_pipeline.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"

namespace {

namespace fs = std::filesystem;

struct Snapshot {
  kiln::ComputationCost cost;
  kiln::BufferStats buffers;
  int fusions = 0;
};

bool Measure(const kiln::HloModule& m, Snapshot* s) {
  s->cost = kiln::EstimateCost(*m.entry());
  auto ba = kiln::BufferAssignment::Run(m);
  if (!ba.ok()) {
    std::fprintf(stderr, "%s: buffer assignment: %s\n", m.name().c_str(),
                 std::string(ba.status().message()).c_str());
    return false;
  }
  s->buffers = ba->stats();
  s->fusions = 0;
  for (const kiln::HloInstruction* i : m.entry()->instructions())
    s->fusions += i->opcode() == kiln::HloOpcode::kFusion;
  return true;
}

std::string Bytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%.2fMiB", b / 1048576.0);
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1fKiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(b));
  return buf;
}

int Report(const fs::path& path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    return 1;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto parsed = kiln::ParseHloModule(ss.str(), path.string());
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
    return 1;
  }
  kiln::HloModule& m = **parsed;
  Snapshot before, after;
  if (!Measure(m, &before)) return 1;
  auto start = std::chrono::steady_clock::now();
  auto pipeline = kiln::MakeFusionPipeline();
  if (absl::Status s = kiln::VerifyModule(m); !s.ok()) {
    // Verification after each pass would blame the pass for the input's defect.
    std::printf("%s: note: the input does not verify (%s); fusing without verification\n",
                path.filename().c_str(), std::string(s.message()).c_str());
    pipeline->set_verify(false);
  }
  auto changed = pipeline->Run(m);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!changed.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), std::string(changed.status().message()).c_str());
    return 1;
  }
  if (!Measure(m, &after)) return 1;
  std::string per_pass;
  for (const kiln::PassRecord& r : pipeline->records()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.2fms", r.pass_name.c_str(), r.millis);
    per_pass += buf;
  }
  int64_t eliminated = before.buffers.sum_intermediate_bytes - after.buffers.sum_intermediate_bytes;
  std::printf("%s\n", path.filename().c_str());
  std::printf("  kernels: %lld -> %lld (%d fusions), fusion pipeline %.2f ms (%s)\n",
              static_cast<long long>(before.cost.kernels),
              static_cast<long long>(after.cost.kernels), after.fusions, ms, per_pass.c_str() + 1);
  std::printf("  intermediates: %s -> %s (%s eliminated)\n",
              Bytes(before.buffers.sum_intermediate_bytes).c_str(),
              Bytes(after.buffers.sum_intermediate_bytes).c_str(), Bytes(eliminated).c_str());
  std::printf("  memory traffic (read+write): %s -> %s\n",
              Bytes(before.cost.bytes_read + before.cost.bytes_written).c_str(),
              Bytes(after.cost.bytes_read + after.cost.bytes_written).c_str());
  std::printf(
      "  after fusion: peak live %s, allocated %s in %lld allocations, sum of intermediates %s\n",
      Bytes(after.buffers.peak_live_bytes).c_str(),
      Bytes(after.buffers.total_allocation_bytes).c_str(),
      static_cast<long long>(after.buffers.allocation_count),
      Bytes(after.buffers.sum_intermediate_bytes).c_str());
  std::printf("  before fusion: peak live %s, allocated %s\n",
              Bytes(before.buffers.peak_live_bytes).c_str(),
              Bytes(before.buffers.total_allocation_bytes).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) inputs.emplace_back(argv[i]);
  if (inputs.empty()) inputs.emplace_back("examples/hlo");
  std::vector<fs::path> files;
  for (const fs::path& p : inputs) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".hlo") files.push_back(e.path());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "no .hlo files found\n");
    return 1;
  }
  int failures = 0;
  for (const fs::path& f : files) failures += Report(f);
  return failures ? 1 : 0;
}
