// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): the few types and entry
// points the gpu-nvptx plugin uses, declared here (no cuda.h, no link against libcuda), and
// CUresult codes turned into absl::Status with clear messages. LLVM-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/gpu_nvptx/caching_allocator.h"
#include "plugins/gpu_nvptx/device_runtime.h"
#include "plugins/gpu_nvptx/launch_dims.h"

namespace kiln::gpu {

// Opaque driver handles and the result code, as the driver ABI defines them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorOutOfMemory = 2;
constexpr CUresult kCudaErrorNotReady = 600;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

// The loaded driver: function pointers into libcuda, with device 0's primary context, and
// the device memory of that context (with its caching allocator, shared by all executables).
class CudaDriver : public DeviceMemory {
 public:
  // dlopen + cuInit + device 0 + its primary context. The error (UNAVAILABLE) is the reason
  // the plugin reports, e.g. "no CUDA driver: libcuda.so.1 not found".
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load();
  ~CudaDriver() override;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  const std::string& device_name() const { return device_name_; }
  // The GPU's PCI bus id ("0000:19:00.0"), or its name when the driver cannot say: with the
  // host name, what tells two processes whether they share a GPU.
  const std::string& bus_id() const { return bus_id_; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }  // 80, 90, ...
  // The device's memory in bytes (cuDeviceTotalMem), or -1 when the driver did not say.
  int64_t total_memory() const { return total_memory_; }
  // The NVPTX CPU to generate for: the device's own sm when LLVM 16 knows it, else sm_80/sm_90.
  std::string TargetSm() const;

  // Makes the primary context current on the calling thread.
  absl::Status MakeCurrent();
  absl::StatusOr<CUmodule> LoadModule(const std::string& ptx);
  void UnloadModule(CUmodule m);
  absl::StatusOr<CUfunction> GetFunction(CUmodule m, const std::string& name);
  // Out of memory becomes RESOURCE_EXHAUSTED naming the size.
  absl::StatusOr<CUdeviceptr> Alloc(size_t bytes);
  void Free(CUdeviceptr p);
  absl::Status CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes);
  absl::Status CopyToHost(void* dst, CUdeviceptr src, size_t bytes);
  absl::StatusOr<CUstream> CreateStream();
  void DestroyStream(CUstream st);
  absl::Status SynchronizeStream(CUstream st);
  // True once everything queued on `st` has finished (cuStreamQuery), false while it runs.
  absl::StatusOr<bool> StreamDone(CUstream st);
  absl::Status CopyToDeviceAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream st);
  // One-dimensional launch (launch_dims.h), queued on `st`.
  absl::Status Launch(CUfunction f, const std::string& name, const LaunchDims& dims, void** params,
                      CUstream st);

  // DeviceMemory (makes the context current first).
  absl::StatusOr<DevicePtr> Allocate(size_t bytes) override;
  void Deallocate(DevicePtr p) override;
  CachingAllocator& allocator() { return *allocator_; }

  // Turns a driver result into a status naming `what` and the driver's own error text.
  absl::Status Check(CUresult r, const std::string& what) const;

 private:
  struct Api;
  CudaDriver(void* handle, std::unique_ptr<Api> api);
  void* handle_;
  std::unique_ptr<Api> api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string device_name_, bus_id_;
  int cc_major_ = 0, cc_minor_ = 0;
  int64_t total_memory_ = -1;
  std::unique_ptr<CachingAllocator> allocator_;
};

}  // namespace kiln::gpu
