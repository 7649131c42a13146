// The CPU JIT: compiles kernels from the elemental emitter with LLVM for the host CPU (its
// own features, O3 with loop and SLP vectorization) into object code, loads it with ORC and
// hands back function pointers. No LLVM types in this header: only the codegen's own files
// include LLVM.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/common/disk_cache.h"
#include "plugins/cpu_llvm/loop_schedule.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::cpu {

// The entry point of every kernel: `buffers` holds the inputs, then the outputs; [begin,
// end) is the range of the outer dimension to compute when the kernel's spec has
// `partition_outer` (ignored otherwise).
using KernelFn = void (*)(void** buffers, int64_t begin, int64_t end);

struct JitOptions {
  int opt_level = 3;                // 0..3
  bool vectorize = true;            // loop and SLP vectorizers
  bool vector_math_library = true;  // map exp/log/sin/cos to glibc's libmvec when vectorizing
};

// Where compile time went, summed over a CpuJit's compiles (milliseconds of wall time per
// phase; with several groups in parallel, the phases of all groups are summed).
struct JitStats {
  int64_t compiles = 0;         // Compile calls
  int64_t codegen_modules = 0;  // LLVM modules optimized and compiled to objects
  int64_t cache_loads = 0;      // compiles whose objects came from the object cache
  int64_t shared_kernels = 0;   // kernels served by an identical kernel's code
  double emit_ms = 0, optimize_ms = 0, codegen_ms = 0, load_ms = 0;
};

struct JitRequest {
  std::string* ir_out = nullptr;  // receives the optimized LLVM IR (tests, debugging)
  // Kernels are split into up to pool->size() LLVM modules optimized and compiled in parallel.
  ThreadPool* pool = nullptr;
  // With a cache and a key: load the objects from it, or compile and store them.
  const DiskCache* cache = nullptr;
  std::string cache_key;
  // Objects a previous Compile of the same kernels produced (a deserialized executable):
  // loaded as they are, nothing is compiled. A load failure is the call's error.
  const std::vector<std::string>* objects = nullptr;
  // Receives the objects the entry points come from (compiled, cached or given).
  std::vector<std::string>* objects_out = nullptr;
  // Loop drivers compiled with the kernels, in the module of the kernels they call so that
  // those are inlined; their entry points go to `drivers_out`, in order (null for one that
  // objects given or cached lack: they were compiled where its loop did not qualify).
  const std::vector<LoopDriverSpec>* drivers = nullptr;
  std::vector<LoopDriverFn>* drivers_out = nullptr;
};

// The objects of one Compile as one byte string, and back (nullopt when malformed).
std::string PackObjects(const std::vector<std::string>& objects);
std::optional<std::vector<std::string>> UnpackObjects(std::string_view data);

class CpuJit {
 public:
  static absl::StatusOr<std::unique_ptr<CpuJit>> Create(const JitOptions& options = {});
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  // Compiles every kernel and returns their entry points in the order of `specs`. They stay
  // valid while this JIT lives. Each call gets its own symbol namespace (JITDylib).
  absl::StatusOr<std::vector<KernelFn>> Compile(const std::vector<llvm_emit::KernelSpec>& specs,
                                                const JitRequest& request = {});

  // The CPU name and feature string the JIT targets, e.g. "skylake-avx512".
  std::string TargetDescription() const;
  // What makes objects from this JIT valid elsewhere: CPU, features and options.
  std::string CacheKey() const;
  JitStats stats() const;

 private:
  struct Impl;
  explicit CpuJit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::cpu
