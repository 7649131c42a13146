// Launch dimensions for the one-thread-per-element kernel form, from the output size.
// Kernels loop grid-stride (element i, i + blocks*threads, ...), so the grid is capped at
// kMaxBlocks and no output is too large to launch; below one full block the block shrinks
// to the elements rounded up to a warp. LLVM-free.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln::gpu {

// 2^16 blocks of 256 threads = 16M threads in flight: more than any current GPU keeps
// resident, well under the 2^31-1 grid limit; larger outputs take more loop iterations.
constexpr int64_t kMaxBlocks = int64_t{1} << 16;
constexpr int kThreadsPerBlock = 256;

struct LaunchDims {
  int64_t blocks = 0;  // 0: nothing to launch
  int threads_per_block = kThreadsPerBlock;
};

inline LaunchDims ComputeLaunchDims(int64_t elements, int64_t max_blocks = kMaxBlocks) {
  LaunchDims d;
  if (elements <= 0) return {0, kThreadsPerBlock};
  if (elements < kThreadsPerBlock)
    d.threads_per_block = static_cast<int>((elements + 31) / 32 * 32);
  d.blocks = std::min((elements + d.threads_per_block - 1) / d.threads_per_block,
                      std::max<int64_t>(max_blocks, 1));
  return d;
}

}  // namespace kiln::gpu
