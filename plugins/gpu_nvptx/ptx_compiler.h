// PTX generation for the gpu-nvptx plugin: emits GPU-mode kernels with the shared elemental
// emitter, links libdevice for math functions, optimizes for an NVPTX target (sm_80, sm_90,
// ...) and prints PTX text. No LLVM types in this header.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::gpu {

struct PtxOptions {
  std::string sm = "sm_80";  // the NVPTX CPU: sm_80, sm_90, ...
  int opt_level = 3;         // 0..3
  std::string libdevice;     // path of libdevice.10.bc; empty: FindLibdevice()
};

// The libdevice bitcode from the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda,
// /usr/lib/cuda), or "" when none is found.
std::string FindLibdevice();

// The PTX entry name of a kernel spec named `name`: PTX identifiers allow only letters,
// digits, '_' and '$', so every other character (HLO names have '.') becomes '_'.
std::string PtxKernelName(const std::string& name);

// Compiles `specs` (their target is forced to kGpu) into one PTX module holding one
// `.entry` per spec, named PtxKernelName(spec.name). Kernels calling math functions need libdevice.
absl::StatusOr<std::string> CompileToPtx(std::vector<llvm_emit::KernelSpec> specs,
                                         const PtxOptions& options = {});

}  // namespace kiln::gpu
