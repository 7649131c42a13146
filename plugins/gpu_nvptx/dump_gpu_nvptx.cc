// Developer tool (not a test, no GPU needed): prints how gpu-nvptx would run an HLO text file:
// the plan (every instruction's disposition, sub-plans included), each kernel's GPU layout
// and launches, and with --ptx the PTX for sm_90 (or --sm=sm_XX).
// Usage: dump_gpu_nvptx MODULE.hlo [--cublas] [--ptx] [--sm=sm_80]
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "hlo/text/parser.h"
#include "plugins/gpu_nvptx/device_plan.h"
#include "plugins/gpu_nvptx/gpu_executable.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"
#include "plugins/llvm_emitter/gpu_layout.h"

namespace {

const char* KindName(kiln::llvm_emit::GpuLayout::Kind k) {
  using Kind = kiln::llvm_emit::GpuLayout::Kind;
  switch (k) {
    case Kind::kElements:
      return "elements";
    case Kind::kRows:
      return "rows";
    case Kind::kSplitReduce:
      return "split-reduce";
    case Kind::kSplitColumns:
      return "split-columns";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, sm = "sm_90";
  bool cublas = false, ptx = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cublas")
      cublas = true;
    else if (a == "--ptx")
      ptx = true;
    else if (a.rfind("--sm=", 0) == 0)
      sm = a.substr(5);
    else
      path = a;
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: dump_gpu_nvptx MODULE.hlo [--cublas] [--ptx] [--sm=sm_XX]\n");
    return 2;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto module = kiln::ParseHloModule(text.str(), path);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return 1;
  }
  // The module the plugin plans: with cuBLAS, large convolutions become patch kernels + GEMMs.
  auto prepared = kiln::gpu::PrepareModuleForGpu(
      std::shared_ptr<const kiln::HloModule>(std::move(*module)), cublas);
  if (!prepared.ok()) {
    std::fprintf(stderr, "%s\n", std::string(prepared.status().message()).c_str());
    return 1;
  }
  kiln::gpu::DevicePlan dp =
      kiln::gpu::MakeDevicePlan(**prepared, kiln::gpu::GpuPlanOptions(cublas));
  std::printf("%s", kiln::kernel_plan::PlanToString(dp.plan).c_str());
  for (size_t k = 0; k < dp.plan.kernels.size(); ++k) {
    const kiln::llvm_emit::KernelSpec& spec = dp.plan.kernels[k];
    kiln::llvm_emit::GpuLayout layout = kiln::llvm_emit::AnalyzeGpuKernel(spec);
    std::printf("kernel %s: %s", spec.name.c_str(), KindName(layout.kind));
    for (const kiln::gpu::KernelLaunch& l : dp.launches[k].launches) {
      kiln::gpu::LaunchDims d = kiln::gpu::DimsOf(l);
      std::printf(" | %s %lldx%d", l.entry.c_str(), static_cast<long long>(d.blocks),
                  d.threads_per_block);
    }
    if (dp.launches[k].scratch_bytes > 0)
      std::printf(" | scratch %lld B", static_cast<long long>(dp.launches[k].scratch_bytes));
    std::printf("\n");
  }
  if (ptx) {
    kiln::gpu::PtxOptions opts;
    opts.sm = sm;
    auto text_ptx = kiln::gpu::CompileToPtx(dp.plan.kernels, opts);
    if (!text_ptx.ok()) {
      std::fprintf(stderr, "%s\n", std::string(text_ptx.status().message()).c_str());
      return 1;
    }
    std::printf("%s", text_ptx->c_str());
  }
  return 0;
}
