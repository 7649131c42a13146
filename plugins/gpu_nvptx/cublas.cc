// Loading cuBLAS with dlopen and issuing the row-major GEMM as its column-major call.
#include "plugins/gpu_nvptx/cublas.h"

#include <dlfcn.h>

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "plugins/gpu_nvptx/cublas_mapping.h"

namespace kiln::gpu {

// cublasStatus_t is an int enum (0: success); cublasOperation_t: 0 = N, 1 = T.
struct Cublas::Api {
  int (*create)(void**);
  int (*destroy)(void*);
  int (*set_stream)(void*, CUstream);
  int (*sgemm_strided_batched)(void*, int, int, int, int, int, const float*, const float*, int,
                               long long, const float*, int, long long, const float*, float*, int,
                               long long, int);
};

absl::StatusOr<std::unique_ptr<Cublas>> Cublas::Load() {
  std::unique_ptr<Cublas> c(new Cublas());
  for (const char* name :
       {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}) {
    c->handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (c->handle_ != nullptr) {
      c->library_ = name;
      break;
    }
  }
  if (c->handle_ == nullptr) return absl::UnavailableError("no cuBLAS: libcublas.so not found");
  c->api_ = std::make_unique<Api>();
  auto resolve = [&](const char* sym, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(::dlsym(c->handle_, sym));
    return out != nullptr;
  };
  if (!resolve("cublasCreate_v2", c->api_->create) ||
      !resolve("cublasDestroy_v2", c->api_->destroy) ||
      !resolve("cublasSetStream_v2", c->api_->set_stream) ||
      !resolve("cublasSgemmStridedBatched", c->api_->sgemm_strided_batched))
    return absl::UnavailableError(
        absl::StrCat("no cuBLAS: ", c->library_, " lacks an entry point"));
  if (int r = c->api_->create(&c->blas_); r != 0)
    return absl::UnavailableError(
        absl::StrCat("no cuBLAS: cublasCreate_v2 failed (status ", r, ")"));
  return c;
}

Cublas::~Cublas() {
  if (blas_ != nullptr) api_->destroy(blas_);
}

absl::Status Cublas::Sgemm(const kernel_plan::GemmShape& g, CUdeviceptr a, CUdeviceptr b,
                           CUdeviceptr out, CUstream stream) {
  if (g.type != kernel_plan::GemmType::kF32)
    return absl::InternalError("gpu-nvptx: cuBLAS step for a dot that is not f32");
  const ColumnMajorGemm c = MapRowMajorGemm(g);
  constexpr int64_t kIntMax = 2147483647;
  if (c.m > kIntMax || c.n > kIntMax || c.k > kIntMax || c.batch > kIntMax)
    return absl::InvalidArgumentError("gpu-nvptx: dot too large for one cuBLAS call");
  if (int r = api_->set_stream(blas_, stream); r != 0)
    return absl::InternalError(absl::StrCat("cublasSetStream_v2 failed (status ", r, ")"));
  const float alpha = 1.0f, beta = 0.0f;
  const CUdeviceptr first = c.first_is_b ? b : a, second = c.first_is_b ? a : b;
  int r = api_->sgemm_strided_batched(
      blas_, c.trans_first ? 1 : 0, c.trans_second ? 1 : 0, static_cast<int>(c.m),
      static_cast<int>(c.n), static_cast<int>(c.k), &alpha, reinterpret_cast<const float*>(first),
      static_cast<int>(c.ld_first), c.stride_first, reinterpret_cast<const float*>(second),
      static_cast<int>(c.ld_second), c.stride_second, &beta, reinterpret_cast<float*>(out),
      static_cast<int>(c.ldc), c.stride_c, static_cast<int>(c.batch));
  if (r != 0)
    return absl::InternalError(absl::StrCat("cublasSgemmStridedBatched (", c.m, "x", c.n, "x", c.k,
                                            " batch ", c.batch, ") failed (status ", r, ")"));
  return absl::OkStatus();
}

}  // namespace kiln::gpu
