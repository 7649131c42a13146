// bf16 GEMM blocks through oneDNN's matmul primitive (see onednn_matmul.h).
#include "plugins/cpu_llvm/onednn_matmul.h"

#ifdef KILN_HAVE_ONEDNN
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "plugins/cpu_llvm/onednn_runtime.h"
#endif

namespace kiln::cpu {

using kernel_plan::GemmShape;
using kernel_plan::GemmType;

#ifndef KILN_HAVE_ONEDNN

bool HaveBf16Gemm() { return false; }
bool OneDnnBf16GemmBlock(const GemmShape&, const void*, const void*, void*, int64_t, int64_t,
                         int64_t, int64_t, int64_t) {
  return false;
}

#else

namespace {

// Primitives kept (one per block shape); past this the cache starts over.
constexpr size_t kMaxCachedPrimitives = 1024;

// A block's GEMM as oneDNN sees it: sizes, the stored matrices' leading dimensions, which
// operands are stored transposed, and the result type.
struct BlockShape {
  int64_t m, n, k, lda, ldb, ldc;
  bool trans_a, trans_b, bf16_out;
  auto Tie() const { return std::tie(m, n, k, lda, ldb, ldc, trans_a, trans_b, bf16_out); }
  bool operator<(const BlockShape& o) const { return Tie() < o.Tie(); }
};

struct Primitive {
  dnnl_primitive_t matmul = nullptr;  // null: oneDNN has no usable kernel for the block
  dnnl_memory_desc_t a, b, c;
  size_t scratch_bytes = 0;
  std::string implementation;

  Primitive() = default;
  Primitive(const Primitive&) = delete;
  ~Primitive() {
    if (matmul != nullptr) dnnl_primitive_destroy(matmul);
  }
};

// A row-major matrix of rows x cols with leading dimension ld, or its transpose as stored.
bool Describe(dnnl_memory_desc_t* md, int64_t rows, int64_t cols, int64_t ld, bool transposed,
              dnnl_data_type_t type) {
  const dnnl_dims_t dims = {rows, cols};
  const dnnl_dims_t strides = {transposed ? 1 : ld, transposed ? ld : 1};
  return dnnl_memory_desc_init_by_strides(md, 2, dims, type, strides) == dnnl_success;
}

std::shared_ptr<const Primitive> Create(const BlockShape& s) {
  omp_set_num_threads(1);  // oneDNN fixes a primitive's thread count when it makes it
  auto p = std::make_shared<Primitive>();
  if (onednn::Engine() == nullptr || !Describe(&p->a, s.m, s.k, s.lda, s.trans_a, dnnl_bf16) ||
      !Describe(&p->b, s.k, s.n, s.ldb, s.trans_b, dnnl_bf16) ||
      !Describe(&p->c, s.m, s.n, s.ldc, false, s.bf16_out ? dnnl_bf16 : dnnl_f32))
    return p;
  dnnl_matmul_desc_t desc;
  if (dnnl_matmul_desc_init(&desc, &p->a, &p->b, nullptr, &p->c) != dnnl_success) return p;
  // Scratch memory comes with each call: a primitive may run on two threads at once.
  dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return p;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_primitive_desc_t pd = nullptr;
  const bool described =
      dnnl_primitive_desc_create(&pd, &desc, attr, onednn::Engine(), nullptr) == dnnl_success;
  dnnl_primitive_attr_destroy(attr);
  if (!described) return p;
  const char* name = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
  const std::string implementation = name != nullptr ? name : "";
  // A reference loop is far slower than the f32 GEMM of upcast operands.
  if (implementation.empty() || implementation.rfind("ref", 0) == 0) {
    dnnl_primitive_desc_destroy(pd);
    return p;
  }
  if (!onednn::Instantiate(pd, &p->matmul, &p->scratch_bytes)) {
    p->matmul = nullptr;
    return p;
  }
  p->implementation = implementation;
  return p;
}

// Primitives are slow to make (oneDNN generates their code): one per block shape, kept.
std::shared_ptr<const Primitive> Cached(const BlockShape& s) {
  static std::mutex mu;
  static std::map<BlockShape, std::shared_ptr<const Primitive> > cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(s);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  return cache.emplace(s, Create(s)).first->second;
}

}  // namespace

bool HaveBf16Gemm() {
  static const bool native = [] {
    // oneDNN picks its kernel by the CPU: a bf16 one (AVX512-BF16 dot products, AMX tiles)
    // only where the CPU has those instructions; elsewhere it would emulate them.
    std::shared_ptr<const Primitive> probe =
        Cached(BlockShape{64, 64, 64, 64, 64, 64, false, false, false});
    const std::string& impl = probe->implementation;
    return probe->matmul != nullptr &&
           (impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos);
  }();
  const char* env = std::getenv("KILN_CPU_BF16_GEMM");
  return native && (env == nullptr || std::string_view(env) != "0");
}

bool OneDnnBf16GemmBlock(const GemmShape& g, const void* a, const void* b, void* out, int64_t i,
                         int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if ((g.type != GemmType::kBF16F32 && g.type != GemmType::kBF16BF16) || !HaveBf16Gemm())
    return false;
  // Leading dimensions of the stored matrices; a block keeps them and moves its pointers
  // (as blas_dot.cc's f32 blocks do).
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n, ldc = g.n;
  const bool bf16_out = g.type == GemmType::kBF16BF16;
  std::shared_ptr<const Primitive> p =
      Cached(BlockShape{r1 - r0, c1 - c0, g.k, lda, ldb, ldc, g.trans_a, g.trans_b, bf16_out});
  if (p->matmul == nullptr) return false;
  const int64_t a_off = i * g.m * g.k + (g.trans_a ? r0 : r0 * lda);
  const int64_t b_off = i * g.k * g.n + (g.trans_b ? c0 * ldb : c0);
  const int64_t c_off = i * g.m * g.n + r0 * ldc + c0;
  const size_t out_bytes = bf16_out ? 2 : 4;
  omp_set_num_threads(1);  // per calling thread in OpenMP: cpu-llvm's pool is the only one
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(std::max<size_t>(p->scratch_bytes, 1));
  onednn::Memories m;
  return m.Add(DNNL_ARG_SRC, p->a, static_cast<const uint16_t*>(a) + a_off) &&
         m.Add(DNNL_ARG_WEIGHTS, p->b, static_cast<const uint16_t*>(b) + b_off) &&
         m.Add(DNNL_ARG_DST, p->c, static_cast<uint8_t*>(out) + c_off * out_bytes) &&
         m.AddScratchpad(scratch.size(), scratch.data()) && m.Execute(p->matmul);
}

#endif  // KILN_HAVE_ONEDNN

}  // namespace kiln::cpu
