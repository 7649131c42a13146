#include "plugins/gpu_nvptx/caching_allocator.h"

#include <algorithm>

namespace kiln::gpu {

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseCachedLocked();
}

absl::StatusOr<DevicePtr> CachingAllocator::Allocate(size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_.lower_bound(size); it != free_.end() && it->first / 2 <= size) {
    DevicePtr p = it->second;
    stats_.cached_bytes -= it->first;
    stats_.live_bytes += it->first;
    free_.erase(it);
    ++stats_.reused;
    return p;
  }
  absl::StatusOr<DevicePtr> p = memory_->Allocate(size);
  if (!p.ok() && absl::IsResourceExhausted(p.status()) && !free_.empty()) {
    ReleaseCachedLocked();
    p = memory_->Allocate(size);
  }
  if (!p.ok()) return p.status();
  ++stats_.device_allocations;
  sizes_[*p] = size;
  stats_.live_bytes += size;
  return *p;
}

void CachingAllocator::Deallocate(DevicePtr p) {
  if (p == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sizes_.find(p);
  if (it == sizes_.end()) return;  // not ours: ignored rather than corrupting the cache
  free_.emplace(it->second, p);
  stats_.live_bytes -= it->second;
  stats_.cached_bytes += it->second;
}

void CachingAllocator::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseCachedLocked();
}

void CachingAllocator::ReleaseCachedLocked() {
  for (const auto& [size, p] : free_) {
    memory_->Deallocate(p);
    sizes_.erase(p);
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace kiln::gpu
