// cuBLAS, loaded at run time with dlopen (libcublas.so.12, .11, then libcublas.so): the few
// entry points gpu-nvptx uses for large f32 dots, declared here (no cublas headers, no link).
// Missing cuBLAS is not fatal: the plan then emits dots as kernels. Needs the CUDA driver's
// context current when loaded (the handle belongs to it). LLVM-free.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/gpu_nvptx/cuda_driver.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::gpu {

class Cublas {
 public:
  // dlopen + cublasCreate_v2. UNAVAILABLE with the reason when there is no usable cuBLAS.
  static absl::StatusOr<std::unique_ptr<Cublas>> Load();
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  const std::string& library() const { return library_; }  // the file name that loaded

  // Queues the row-major f32 GEMM `g` on `stream` (one cublasSgemmStridedBatched call, via
  // MapRowMajorGemm's column-major arguments).
  absl::Status Sgemm(const kernel_plan::GemmShape& g, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
                     CUstream stream);

 private:
  struct Api;
  Cublas() = default;
  void* handle_ = nullptr;  // dlopen handle (kept loaded, like libcuda)
  void* blas_ = nullptr;    // cublasHandle_t
  std::unique_ptr<Api> api_;
  std::string library_;
};

}  // namespace kiln::gpu
