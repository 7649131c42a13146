// Loading libcuda with dlopen and wrapping the driver calls the plugin makes.
#include "plugins/gpu_nvptx/cuda_driver.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace kiln::gpu {

// Signatures of the driver entry points (versioned names where the driver has them).
struct CudaDriver::Api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

namespace {

template <typename F>
bool Resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

CudaDriver::CudaDriver(void* handle, std::unique_ptr<Api> api)
    : handle_(handle), api_(std::move(api)) {}

CudaDriver::~CudaDriver() {
  allocator_.reset();  // cached blocks go back while the context is alive
  if (context_ != nullptr) api_->cuDevicePrimaryCtxRelease(device_);
  // The driver library stays loaded: unloading libcuda in a live process is not safe.
}

absl::Status CudaDriver::Check(CUresult r, const std::string& what) const {
  if (r == kCudaSuccess) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_->cuGetErrorName) api_->cuGetErrorName(r, &name);
  if (api_->cuGetErrorString) api_->cuGetErrorString(r, &text);
  std::string msg = absl::StrCat(what, " failed: ", name ? name : "CUDA error", " (", r, ")",
                                 text ? absl::StrCat(": ", text) : "");
  if (r == kCudaErrorOutOfMemory) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Load() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::UnavailableError("no CUDA driver: libcuda.so.1 not found");
  auto api = std::make_unique<Api>();
  bool ok = Resolve(handle, "cuInit", api->cuInit) &&
            Resolve(handle, "cuDeviceGetCount", api->cuDeviceGetCount) &&
            Resolve(handle, "cuDeviceGet", api->cuDeviceGet) &&
            Resolve(handle, "cuDeviceGetName", api->cuDeviceGetName) &&
            Resolve(handle, "cuDeviceGetAttribute", api->cuDeviceGetAttribute) &&
            Resolve(handle, "cuDevicePrimaryCtxRetain", api->cuDevicePrimaryCtxRetain) &&
            Resolve(handle, "cuDevicePrimaryCtxRelease_v2", api->cuDevicePrimaryCtxRelease) &&
            Resolve(handle, "cuCtxSetCurrent", api->cuCtxSetCurrent) &&
            Resolve(handle, "cuCtxSynchronize", api->cuCtxSynchronize) &&
            Resolve(handle, "cuModuleLoadData", api->cuModuleLoadData) &&
            Resolve(handle, "cuModuleUnload", api->cuModuleUnload) &&
            Resolve(handle, "cuModuleGetFunction", api->cuModuleGetFunction) &&
            Resolve(handle, "cuMemAlloc_v2", api->cuMemAlloc) &&
            Resolve(handle, "cuMemFree_v2", api->cuMemFree) &&
            Resolve(handle, "cuMemcpyHtoD_v2", api->cuMemcpyHtoD) &&
            Resolve(handle, "cuMemcpyDtoH_v2", api->cuMemcpyDtoH) &&
            Resolve(handle, "cuLaunchKernel", api->cuLaunchKernel) &&
            Resolve(handle, "cuStreamCreate", api->cuStreamCreate) &&
            Resolve(handle, "cuStreamDestroy_v2", api->cuStreamDestroy) &&
            Resolve(handle, "cuStreamSynchronize", api->cuStreamSynchronize) &&
            Resolve(handle, "cuMemcpyHtoDAsync_v2", api->cuMemcpyHtoDAsync);
  Resolve(handle, "cuGetErrorName", api->cuGetErrorName);
  Resolve(handle, "cuDeviceTotalMem_v2", api->cuDeviceTotalMem);
  Resolve(handle, "cuStreamQuery", api->cuStreamQuery);
  Resolve(handle, "cuDeviceGetPCIBusId", api->cuDeviceGetPCIBusId);
  Resolve(handle, "cuGetErrorString", api->cuGetErrorString);
  if (!ok)
    return absl::UnavailableError(
        "CUDA driver libcuda.so.1 is too old: a driver API entry point is missing");
  std::unique_ptr<CudaDriver> d(new CudaDriver(handle, std::move(api)));
  d->allocator_ = std::make_unique<CachingAllocator>(d.get());
  auto unavailable = [](const absl::Status& s) { return absl::UnavailableError(s.message()); };
  if (absl::Status s = d->Check(d->api_->cuInit(0), "cuInit"); !s.ok()) return unavailable(s);
  int count = 0;
  if (absl::Status s = d->Check(d->api_->cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok())
    return unavailable(s);
  if (count == 0) return absl::UnavailableError("the CUDA driver reports no GPU");
  if (absl::Status s = d->Check(d->api_->cuDeviceGet(&d->device_, 0), "cuDeviceGet"); !s.ok())
    return unavailable(s);
  char name[256] = {};
  d->api_->cuDeviceGetName(name, sizeof(name) - 1, d->device_);
  d->device_name_ = name;
  char bus[64] = {};
  d->bus_id_ =
      d->api_->cuDeviceGetPCIBusId != nullptr &&
              d->api_->cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, d->device_) == kCudaSuccess
          ? bus
          : d->device_name_;
  size_t total = 0;  // device_memory_stats' bytes_limit; unknown (-1) if the driver cannot say
  if (d->api_->cuDeviceTotalMem != nullptr &&
      d->api_->cuDeviceTotalMem(&total, d->device_) == kCudaSuccess)
    d->total_memory_ = static_cast<int64_t>(total);
  d->api_->cuDeviceGetAttribute(&d->cc_major_, kAttrComputeCapabilityMajor, d->device_);
  d->api_->cuDeviceGetAttribute(&d->cc_minor_, kAttrComputeCapabilityMinor, d->device_);
  if (d->compute_capability() < 75)
    return absl::UnavailableError(absl::StrCat("GPU ", d->device_name_, " has compute capability ",
                                               d->cc_major_, ".", d->cc_minor_,
                                               "; gpu-nvptx needs 7.5 or newer"));
  if (absl::Status s = d->Check(d->api_->cuDevicePrimaryCtxRetain(&d->context_, d->device_),
                                "cuDevicePrimaryCtxRetain");
      !s.ok())
    return unavailable(s);
  return d;
}

std::string CudaDriver::TargetSm() const {
  int cc = compute_capability();
  // The sm values LLVM 16's NVPTX backend knows (newer GPUs run sm_90 PTX through the JIT).
  for (int known : {90, 89, 87, 86, 80, 75})
    if (cc >= known) return absl::StrCat("sm_", known);
  return "sm_75";
}

absl::Status CudaDriver::MakeCurrent() {
  return Check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

absl::StatusOr<CUmodule> CudaDriver::LoadModule(const std::string& ptx) {
  CUmodule m = nullptr;
  if (absl::Status s =
          Check(api_->cuModuleLoadData(&m, ptx.c_str()), "cuModuleLoadData of the PTX");
      !s.ok())
    return s;
  return m;
}

void CudaDriver::UnloadModule(CUmodule m) {
  if (m != nullptr) api_->cuModuleUnload(m);
}

absl::StatusOr<CUfunction> CudaDriver::GetFunction(CUmodule m, const std::string& name) {
  CUfunction f = nullptr;
  if (absl::Status s = Check(api_->cuModuleGetFunction(&f, m, name.c_str()),
                             absl::StrCat("cuModuleGetFunction(", name, ")"));
      !s.ok())
    return s;
  return f;
}

absl::StatusOr<CUdeviceptr> CudaDriver::Alloc(size_t bytes) {
  CUdeviceptr p = 0;
  // Zero-byte arrays still get a distinct (1-byte) allocation, so every kernel argument is valid.
  CUresult r = api_->cuMemAlloc(&p, bytes == 0 ? 1 : bytes);
  if (r == kCudaErrorOutOfMemory)
    return absl::ResourceExhaustedError(absl::StrCat("out of GPU memory: cuMemAlloc of ", bytes,
                                                     " bytes on ", device_name_, " failed"));
  if (absl::Status s = Check(r, absl::StrCat("cuMemAlloc of ", bytes, " bytes")); !s.ok()) return s;
  return p;
}

void CudaDriver::Free(CUdeviceptr p) {
  if (p != 0) api_->cuMemFree(p);
}

absl::Status CudaDriver::CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (absl::Status s = Check(api_->cuMemcpyHtoD(dst, src, bytes),
                             absl::StrCat("cuMemcpyHtoD of ", bytes, " bytes"));
      !s.ok())
    return s;
  // From pageable memory cuMemcpyHtoD may return once the data is staged, before the DMA
  // lands; kernels run on non-blocking streams, which do not wait for the legacy stream, so a
  // kernel could read the array before it arrived (seen on an H200 under load: a transpose of
  // an uploaded array came out all zeros). Waiting for the legacy stream closes that gap.
  return Check(api_->cuStreamSynchronize(nullptr), "cuStreamSynchronize after cuMemcpyHtoD");
}

absl::Status CudaDriver::CopyToHost(void* dst, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  return Check(api_->cuMemcpyDtoH(dst, src, bytes),
               absl::StrCat("cuMemcpyDtoH of ", bytes, " bytes"));
}

absl::StatusOr<CUstream> CudaDriver::CreateStream() {
  CUstream st = nullptr;
  // 1 = CU_STREAM_NON_BLOCKING: no implicit synchronization with the legacy default stream.
  if (absl::Status s = Check(api_->cuStreamCreate(&st, 1), "cuStreamCreate"); !s.ok()) return s;
  return st;
}

void CudaDriver::DestroyStream(CUstream st) {
  if (st != nullptr) api_->cuStreamDestroy(st);
}

absl::Status CudaDriver::SynchronizeStream(CUstream st) {
  return Check(api_->cuStreamSynchronize(st), "cuStreamSynchronize");
}

absl::StatusOr<bool> CudaDriver::StreamDone(CUstream st) {
  if (api_->cuStreamQuery == nullptr) {
    if (absl::Status s = SynchronizeStream(st); !s.ok()) return s;
    return true;
  }
  const CUresult r = api_->cuStreamQuery(st);
  if (r == kCudaErrorNotReady) return false;
  if (absl::Status s = Check(r, "cuStreamQuery"); !s.ok()) return s;
  return true;
}

absl::Status CudaDriver::CopyToDeviceAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                           CUstream st) {
  if (bytes == 0) return absl::OkStatus();
  return Check(api_->cuMemcpyHtoDAsync(dst, src, bytes, st),
               absl::StrCat("cuMemcpyHtoDAsync of ", bytes, " bytes"));
}

absl::Status CudaDriver::Launch(CUfunction f, const std::string& name, const LaunchDims& dims,
                                void** params, CUstream st) {
  if (dims.blocks <= 0) return absl::OkStatus();
  return Check(api_->cuLaunchKernel(f, static_cast<unsigned>(dims.blocks), 1, 1,
                                    static_cast<unsigned>(dims.threads_per_block), 1, 1, 0, st,
                                    params, nullptr),
               absl::StrCat("cuLaunchKernel(", name, ")"));
}

absl::StatusOr<DevicePtr> CudaDriver::Allocate(size_t bytes) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return Alloc(bytes);
}

void CudaDriver::Deallocate(DevicePtr p) {
  if (MakeCurrent().ok()) Free(p);
}

}  // namespace kiln::gpu
