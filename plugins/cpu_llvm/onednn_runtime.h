// What cpu-llvm's oneDNN calls share (onednn_conv.cc, onednn_matmul.cc): the CPU engine, a
// stream per thread, the memory objects of one execution and primitive creation. Included
// only where KILN_HAVE_ONEDNN is defined.
#pragma once

#include <dnnl.h>

#include <cstddef>
#include <vector>

namespace kiln::cpu::onednn {

// The CPU engine, made once; null when oneDNN could not make it.
dnnl_engine_t Engine();

// The calling thread's stream: oneDNN's streams are not thread-safe.
dnnl_stream_t ThreadStream();

// Creates a primitive from its descriptor, which is destroyed either way; false when oneDNN
// refused. Grows *scratch to the user scratchpad it needs.
bool Instantiate(dnnl_primitive_desc_t pd, dnnl_primitive_t* out, size_t* scratch);

// The memory objects of one execution, destroyed with it.
class Memories {
 public:
  Memories() = default;
  Memories(const Memories&) = delete;
  ~Memories();
  // False when oneDNN could not make the object.
  bool Add(int arg, const dnnl_memory_desc_t& md, const void* data);
  // A user scratchpad of `bytes` (at least 1) at `data`.
  bool AddScratchpad(size_t bytes, void* data);
  // Runs `p` on the calling thread's stream and waits for it.
  bool Execute(dnnl_primitive_t p);

 private:
  std::vector<dnnl_memory_t> owned_;
  std::vector<dnnl_exec_arg_t> args_;
};

}  // namespace kiln::cpu::onednn
