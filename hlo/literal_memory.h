// Where literals keep their bytes: 64-byte aligned blocks from the global allocator, except
// that a few large freed blocks are kept for the next literal of the same size. A program
// run in a loop makes the same large outputs every step; without the cache each step maps
// fresh pages that the kernel must fault in and clear (a 64 MiB all-reduce result cost more
// in page faults than the all-reduce itself).
#pragma once

#include <cstddef>

namespace kiln::literal_memory {

// 64-byte aligned. Freed blocks of 64 KiB and more are kept, up to 256 MiB in all (oldest
// first out; KILN_LITERAL_CACHE_MB sets another limit, 0 none), and reused for the next
// literal of exactly their size.
void* Allocate(size_t bytes);
void Free(void* p, size_t bytes);

}  // namespace kiln::literal_memory
