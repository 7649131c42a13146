// oneDNN's engine, streams and memory objects for cpu-llvm (see onednn_runtime.h).
#ifdef KILN_HAVE_ONEDNN
#include "plugins/cpu_llvm/onednn_runtime.h"

#include <algorithm>

namespace kiln::cpu::onednn {

dnnl_engine_t Engine() {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    return dnnl_engine_create(&e, dnnl_cpu, 0) == dnnl_success ? e : nullptr;
  }();
  return engine;
}

dnnl_stream_t ThreadStream() {
  thread_local struct Holder {
    dnnl_stream_t stream = nullptr;
    ~Holder() {
      if (stream != nullptr) dnnl_stream_destroy(stream);
    }
  } holder;
  if (holder.stream == nullptr)
    dnnl_stream_create(&holder.stream, Engine(), dnnl_stream_default_flags);
  return holder.stream;
}

bool Instantiate(dnnl_primitive_desc_t pd, dnnl_primitive_t* out, size_t* scratch) {
  const dnnl_memory_desc_t* s = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  *scratch = std::max(*scratch, s != nullptr ? dnnl_memory_desc_get_size(s) : 0);
  const bool ok = dnnl_primitive_create(out, pd) == dnnl_success;
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

Memories::~Memories() {
  for (dnnl_memory_t m : owned_) dnnl_memory_destroy(m);
}

bool Memories::Add(int arg, const dnnl_memory_desc_t& md, const void* data) {
  dnnl_memory_t m = nullptr;
  if (dnnl_memory_create(&m, &md, Engine(), const_cast<void*>(data)) != dnnl_success) return false;
  owned_.push_back(m);
  args_.push_back({arg, m});
  return true;
}

bool Memories::AddScratchpad(size_t bytes, void* data) {
  dnnl_memory_desc_t md;
  const dnnl_dims_t dims = {static_cast<dnnl_dim_t>(std::max<size_t>(bytes, 1))};
  return dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_u8, dnnl_a) == dnnl_success &&
         Add(DNNL_ARG_SCRATCHPAD, md, data);
}

bool Memories::Execute(dnnl_primitive_t p) {
  dnnl_stream_t s = ThreadStream();
  return dnnl_primitive_execute(p, s, static_cast<int>(args_.size()), args_.data()) ==
             dnnl_success &&
         dnnl_stream_wait(s) == dnnl_success;
}

}  // namespace kiln::cpu::onednn
#endif  // KILN_HAVE_ONEDNN
