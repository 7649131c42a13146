// Where literals keep their bytes: 64-byte aligned blocks from the global allocator, except
// that a few large freed blocks are kept for the next literal of the same size. A program
// run in a loop makes the same large outputs every step; without the cache each step maps
// fresh pages that the kernel must fault in and clear (a 64 MiB all-reduce result cost more
// in page faults than the all-reduce itself).
#pragma once

#include <cstddef>

namespace kiln::literal_memory {

inline constexpr size_t kAlignment = 64;
// Blocks from this size up are kept when freed, up to kCachedBytes in all (oldest first out).
inline constexpr size_t kCachedMinBytes = size_t{1} << 20;
inline constexpr size_t kCachedBytes = size_t{256} << 20;

void* Allocate(size_t bytes);
void Free(void* p, size_t bytes);

}  // namespace kiln::literal_memory
