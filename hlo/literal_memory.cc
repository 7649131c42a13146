#include "hlo/literal_memory.h"

#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <utility>

namespace kiln::literal_memory {
namespace {

constexpr size_t kAlignment = 64;
// Smaller blocks come from malloc's heap and are reused anyway; from about 128 KiB up malloc
// maps fresh pages for each (an all-reduce module of 256 KiB per step spent three times the
// all-reduce's time in page faults).
constexpr size_t kCachedMinBytes = size_t{64} << 10;
constexpr size_t kCachedBytes = size_t{256} << 20;
constexpr size_t kCachedBlocks = 64;  // bounds the search for a block of the right size

struct Cache {
  std::mutex mu;
  std::deque<std::pair<void*, size_t>> blocks;  // oldest first
  size_t bytes = 0;
};

Cache& TheCache() {
  static Cache* cache = new Cache;  // never destroyed: literals may die after main returns
  return *cache;
}

// KILN_LITERAL_CACHE_MB overrides kCachedBytes (0 turns the cache off).
size_t CachedBytesLimit() {
  static const size_t limit = [] {
    const char* env = std::getenv("KILN_LITERAL_CACHE_MB");
    char* end = nullptr;
    const unsigned long long mb = env ? std::strtoull(env, &end, 10) : 0;
    return env && end != env && *end == '\0' ? static_cast<size_t>(mb) << 20 : kCachedBytes;
  }();
  return limit;
}

void Release(void* p) { ::operator delete (p, std::align_val_t{kAlignment}); }

}  // namespace

void* Allocate(size_t bytes) {
  if (bytes >= kCachedMinBytes) {
    Cache& c = TheCache();
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto it = c.blocks.rbegin(); it != c.blocks.rend(); ++it) {
      if (it->second != bytes) continue;
      void* p = it->first;
      c.bytes -= bytes;
      c.blocks.erase(std::next(it).base());
      return p;
    }
  }
  return ::operator new (bytes, std::align_val_t{kAlignment});
}

void Free(void* p, size_t bytes) {
  if (p == nullptr) return;
  const size_t limit = CachedBytesLimit();
  if (bytes < kCachedMinBytes || bytes > limit) return Release(p);
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.blocks.emplace_back(p, bytes);
  c.bytes += bytes;
  while (c.bytes > limit || c.blocks.size() > kCachedBlocks) {
    Release(c.blocks.front().first);
    c.bytes -= c.blocks.front().second;
    c.blocks.pop_front();
  }
}

}  // namespace kiln::literal_memory
