#include "hlo/literal_memory.h"

#include <deque>
#include <mutex>
#include <new>
#include <utility>

namespace kiln::literal_memory {
namespace {

struct Cache {
  std::mutex mu;
  std::deque<std::pair<void*, size_t>> blocks;  // oldest first
  size_t bytes = 0;
};

Cache& TheCache() {
  static Cache* cache = new Cache;  // never destroyed: literals may die after main returns
  return *cache;
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
  if (bytes < kCachedMinBytes || bytes > kCachedBytes) return Release(p);
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.blocks.emplace_back(p, bytes);
  c.bytes += bytes;
  while (c.bytes > kCachedBytes) {
    Release(c.blocks.front().first);
    c.bytes -= c.blocks.front().second;
    c.blocks.pop_front();
  }
}

}  // namespace kiln::literal_memory
