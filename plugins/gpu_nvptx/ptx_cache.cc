#include "plugins/gpu_nvptx/ptx_cache.h"

#include <cstdio>

#include "fmt/format.h"
#include "plugins/common/disk_cache.h"

namespace kiln::gpu {

absl::StatusOr<std::string> CompilePtxCached(const HloModule& module,
                                             const std::vector<llvm_emit::KernelSpec>& kernels,
                                             const PtxOptions& options, bool* cache_hit) {
  if (cache_hit) *cache_hit = false;
  std::optional<DiskCache> cache = DiskCache::FromEnv("KILN_GPU_CACHE_DIR");
  if (!cache) return CompileToPtx(kernels, options);
  const std::string libdevice = options.libdevice.empty() ? FindLibdevice() : options.libdevice;
  const std::string key =
      fmt::format("gpu-nvptx ptx\nbinary={}\nsm={} opt={} libdevice={}\n{}",
                  BinaryIdentity(reinterpret_cast<const void*>(&CompilePtxCached)), options.sm,
                  options.opt_level, libdevice, module.ToString());
  if (std::optional<std::string> ptx = cache->Load(key)) {
    if (cache_hit) *cache_hit = true;
    return *ptx;
  }
  absl::StatusOr<std::string> ptx = CompileToPtx(kernels, options);
  if (!ptx.ok()) return ptx;
  // A cache that cannot be written only costs the next process a compilation.
  if (absl::Status s = cache->Store(key, *ptx); !s.ok())
    std::fprintf(stderr, "kiln: warning: gpu-nvptx: %s\n", std::string(s.message()).c_str());
  return ptx;
}

}  // namespace kiln::gpu
