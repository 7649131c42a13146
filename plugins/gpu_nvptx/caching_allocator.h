// Device memory reuse: freed blocks are kept and handed out again to requests of up to their
// size (and at least half of it), so steady-state runs allocate nothing from the driver
// (device allocation synchronizes and costs microseconds to milliseconds). When the device
// runs out, the cached blocks are released and the request retried once. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "plugins/gpu_nvptx/device_runtime.h"

namespace kiln::gpu {

class CachingAllocator {
 public:
  explicit CachingAllocator(DeviceMemory* memory) : memory_(memory) {}
  ~CachingAllocator();  // frees the cached blocks (live ones belong to their users)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  absl::StatusOr<DevicePtr> Allocate(size_t bytes);
  void Deallocate(DevicePtr p);
  // Returns every cached block to the device.
  void ReleaseCached();

  struct Stats {
    int64_t device_allocations = 0;  // calls that reached the device
    int64_t reused = 0;              // requests served from the cache
    size_t live_bytes = 0, cached_bytes = 0;
  };
  Stats stats() const;

  // Requests are rounded up to this many bytes (also the alignment vectorized loads want).
  static constexpr size_t kGranule = 256;

 private:
  void ReleaseCachedLocked();

  DeviceMemory* memory_;
  mutable std::mutex mu_;
  std::multimap<size_t, DevicePtr> free_;         // size -> cached block
  absl::flat_hash_map<DevicePtr, size_t> sizes_;  // every block we hold, live or cached
  Stats stats_;
};

}  // namespace kiln::gpu
