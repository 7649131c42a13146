// oneDNN direct convolutions on cpu-llvm's pool (see onednn_conv.h).
#include "plugins/cpu_llvm/onednn_conv.h"

#ifdef KILN_HAVE_ONEDNN
#include <dnnl.h>
#include <omp.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#endif

namespace kiln::cpu {

using kernel_plan::ConvGemm;

#ifndef KILN_HAVE_ONEDNN

bool HaveOneDnn() { return false; }
bool RunOneDnnConv(const ConvGemm&, const float*, const float*, float*, ThreadPool*) {
  return false;
}
std::string OneDnnConvImplementation(const ConvGemm&, int) { return ""; }

#else

namespace {

// Primitives kept (one per convolution shape and slice size); past this the cache starts over.
constexpr size_t kMaxCachedPrimitives = 1024;

dnnl_engine_t Engine() {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    return dnnl_engine_create(&e, dnnl_cpu, 0) == dnnl_success ? e : nullptr;
  }();
  return engine;
}

// A stream per thread: oneDNN's streams are not thread-safe.
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

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// A buffer's dimensions and strides (in elements) in oneDNN's logical order: batch or output
// feature first, then input feature, then the spatial dimensions. `order` names the buffer
// dimension of each logical one; the buffer is laid out as `dims`, row-major.
struct Layout {
  int ndims = 0;
  dnnl_dims_t dims, strides;

  Layout(const std::vector<int64_t>& buffer_dims, const std::vector<int64_t>& order)
      : ndims(static_cast<int>(order.size())) {
    const std::vector<int64_t> s = RowMajorStrides(buffer_dims);
    for (int i = 0; i < ndims; ++i) {
      dims[i] = buffer_dims[order[i]];
      strides[i] = s[order[i]];
    }
  }
  // A single image's stride is arbitrary: make it the dense one, so that a band of rows of one
  // image reads as the plain layout oneDNN has kernels for.
  void DenseSingleImage() {
    if (dims[0] != 1) return;
    strides[0] = 1;
    for (int i = 1; i < ndims; ++i) strides[0] = std::max(strides[0], strides[i] * dims[i]);
  }
  bool Describe(dnnl_memory_desc_t* md) const {
    return dnnl_memory_desc_init_by_strides(md, ndims, dims, dnnl_f32, strides) == dnnl_success;
  }
};

// The logical orders of the three buffers.
struct Orders {
  std::vector<int64_t> src, weights, dst;
};

Orders OrdersOf(const ConvGemm& c) {
  const ConvolutionDimensionNumbers& dn = c.dnums;
  Orders o{{dn.input_batch_dimension, dn.input_feature_dimension},
           {dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension},
           {dn.output_batch_dimension, dn.output_feature_dimension}};
  for (size_t i = 0; i < dn.input_spatial_dimensions.size(); ++i) {
    o.src.push_back(dn.input_spatial_dimensions[i]);
    o.weights.push_back(dn.kernel_spatial_dimensions[i]);
    o.dst.push_back(dn.output_spatial_dimensions[i]);
  }
  return o;
}

// One slice: images [b0, b1) and rows [r0, r1) of the output's first spatial dimension.
struct Slice {
  int64_t b0, b1, r0, r1;
};

// What one slice's shape runs.
struct Primitive {
  dnnl_primitive_t conv = nullptr;
  dnnl_primitive_t weights_reorder = nullptr;  // the kernel into the primitive's layout
  dnnl_memory_desc_t src, user_weights, weights, dst;
  size_t weights_bytes = 0, scratch_bytes = 0;
  // Where the slice's first image starts in the input and the output (elements from the
  // image's start): a band of rows starts further in.
  int64_t src_offset = 0, dst_offset = 0;
  std::string implementation;  // "": oneDNN has no native kernel for it

  Primitive() = default;
  Primitive(const Primitive&) = delete;
  ~Primitive() {
    if (conv != nullptr) dnnl_primitive_destroy(conv);
    if (weights_reorder != nullptr) dnnl_primitive_destroy(weights_reorder);
  }
};

// Creates the primitive (and the kernel's reorder) from a primitive descriptor; the
// descriptor is destroyed either way. False when oneDNN refused.
bool Instantiate(dnnl_primitive_desc_t pd, dnnl_primitive_t* out, size_t* scratch) {
  const dnnl_memory_desc_t* s = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  *scratch = std::max(*scratch, s != nullptr ? dnnl_memory_desc_get_size(s) : 0);
  const bool ok = dnnl_primitive_create(out, pd) == dnnl_success;
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

std::shared_ptr<const Primitive> Create(const ConvGemm& c, const Slice& slice) {
  // oneDNN fixes a primitive's thread count when it makes it: one, as it will run.
  omp_set_num_threads(1);
  auto p = std::make_shared<Primitive>();
  const Orders o = OrdersOf(c);
  Layout src(c.in_dims, o.src), weights(c.kernel_dims, o.weights), dst(c.out_dims, o.dst);
  dnnl_dims_t strides, dilates, pad_low, pad_high;
  for (size_t i = 0; i < c.window.dimensions.size(); ++i) {
    const WindowDimension& w = c.window.dimensions[i];
    if (w.base_dilation != 1 || w.window_reversal || w.padding_low < 0 || w.padding_high < 0)
      return p;
    strides[i] = w.stride;
    dilates[i] = w.window_dilation - 1;  // oneDNN counts the gaps
    pad_low[i] = w.padding_low;
    pad_high[i] = w.padding_high;
  }
  src.dims[0] = dst.dims[0] = slice.b1 - slice.b0;
  if (src.ndims > 2 && (slice.r0 != 0 || slice.r1 != dst.dims[2])) {
    // A band of output rows reads input rows [first, last) of the padded input: the part
    // inside the input, and the padding on either side of it.
    const WindowDimension& w = c.window.dimensions[0];
    const int64_t first = slice.r0 * w.stride - w.padding_low;
    const int64_t last =
        (slice.r1 - 1) * w.stride - w.padding_low + (w.size - 1) * w.window_dilation + 1;
    const int64_t in_first = std::max<int64_t>(first, 0), in_last = std::min(last, src.dims[2]);
    if (in_last <= in_first) return p;  // a band of padding alone
    p->src_offset = in_first * src.strides[2];
    p->dst_offset = slice.r0 * dst.strides[2];
    src.dims[2] = in_last - in_first;
    dst.dims[2] = slice.r1 - slice.r0;
    pad_low[0] = in_first - first;
    pad_high[0] = last - in_last;
  }
  src.DenseSingleImage();
  dst.DenseSingleImage();
  dnnl_memory_desc_t any_weights;
  if (!src.Describe(&p->src) || !weights.Describe(&p->user_weights) || !dst.Describe(&p->dst) ||
      dnnl_memory_desc_init_by_tag(&any_weights, weights.ndims, weights.dims, dnnl_f32,
                                   dnnl_format_tag_any) != dnnl_success)
    return p;
  dnnl_convolution_desc_t desc;
  if (dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, dnnl_convolution_direct, &p->src, &any_weights, nullptr,
          &p->dst, strides, dilates, pad_low, pad_high) != dnnl_success)
    return p;
  // Scratch memory comes with each call: a primitive may run on two threads at once.
  dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return p;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_primitive_desc_create(&pd, &desc, attr, Engine(), nullptr) != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return p;
  }
  const char* name = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
  const std::string implementation = name != nullptr ? name : "";
  p->weights = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  p->weights_bytes = dnnl_memory_desc_get_size(&p->weights);
  // The reference implementation walks every element through generic index code: im2col and
  // the GEMM library are faster.
  if (implementation.empty() || implementation.rfind("ref", 0) == 0) {
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return p;
  }
  if (!Instantiate(pd, &p->conv, &p->scratch_bytes)) {
    dnnl_primitive_attr_destroy(attr);
    return p;
  }
  if (!dnnl_memory_desc_equal(&p->weights, &p->user_weights)) {
    dnnl_primitive_desc_t rpd = nullptr;
    if (dnnl_reorder_primitive_desc_create(&rpd, &p->user_weights, Engine(), &p->weights, Engine(),
                                           attr) != dnnl_success ||
        !Instantiate(rpd, &p->weights_reorder, &p->scratch_bytes)) {
      dnnl_primitive_attr_destroy(attr);
      return p;
    }
  }
  dnnl_primitive_attr_destroy(attr);
  p->implementation = implementation;
  return p;
}

std::string Key(const ConvGemm& c, const Slice& slice) {
  const ConvolutionDimensionNumbers& dn = c.dnums;
  std::string key = absl::StrCat(
      absl::StrJoin(c.in_dims, ","), ";", absl::StrJoin(c.kernel_dims, ","), ";",
      absl::StrJoin(c.out_dims, ","), ";", slice.b1 - slice.b0, ";", slice.r0, ",", slice.r1, ";");
  for (const std::vector<int64_t>* v :
       {&dn.input_spatial_dimensions, &dn.kernel_spatial_dimensions, &dn.output_spatial_dimensions})
    absl::StrAppend(&key, absl::StrJoin(*v, ","), ";");
  absl::StrAppend(&key, dn.input_batch_dimension, ",", dn.input_feature_dimension, ",",
                  dn.kernel_input_feature_dimension, ",", dn.kernel_output_feature_dimension, ",",
                  dn.output_batch_dimension, ",", dn.output_feature_dimension);
  for (const WindowDimension& w : c.window.dimensions)
    absl::StrAppend(&key, ";", w.size, ",", w.stride, ",", w.padding_low, ",", w.padding_high, ",",
                    w.window_dilation, ",", w.base_dilation, ",", w.window_reversal);
  return key;
}

// Primitives are slow to make (oneDNN generates their code): one per shape, kept.
std::shared_ptr<const Primitive> Cached(const ConvGemm& c, const Slice& slice) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Primitive> > cache;
  std::string key = Key(c, slice);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  return cache.emplace(std::move(key), Create(c, slice)).first->second;
}

// How the convolution is cut across a pool of `threads`: by images, else each image into
// bands of output rows; empty when neither gives every thread work.
std::vector<Slice> SlicesFor(const ConvGemm& c, int threads) {
  const int64_t batch = c.in_dims[c.dnums.input_batch_dimension];
  const int64_t rows = c.dnums.output_spatial_dimensions.empty()
                           ? 1
                           : c.out_dims[c.dnums.output_spatial_dimensions[0]];
  if (threads <= 1) return {{0, batch, 0, rows}};
  std::vector<Slice> slices;
  if (batch >= threads) {
    for (int i = 0; i < threads; ++i)
      slices.push_back({batch * i / threads, batch * (i + 1) / threads, 0, rows});
    return slices;
  }
  const int64_t bands = (threads + batch - 1) / batch;
  if (bands > rows) return {};
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < bands; ++j)
      slices.push_back({b, b + 1, rows * j / bands, rows * (j + 1) / bands});
  return slices;
}

// The memory objects of one execution, destroyed with it.
class Memories {
 public:
  ~Memories() {
    for (dnnl_memory_t m : owned_) dnnl_memory_destroy(m);
  }
  // False when oneDNN could not make the object.
  bool Add(int arg, const dnnl_memory_desc_t& md, const void* data) {
    dnnl_memory_t m = nullptr;
    if (dnnl_memory_create(&m, &md, Engine(), const_cast<void*>(data)) != dnnl_success)
      return false;
    owned_.push_back(m);
    args_.push_back({arg, m});
    return true;
  }
  bool Execute(dnnl_primitive_t p) {
    dnnl_stream_t s = ThreadStream();
    return dnnl_primitive_execute(p, s, static_cast<int>(args_.size()), args_.data()) ==
               dnnl_success &&
           dnnl_stream_wait(s) == dnnl_success;
  }

 private:
  std::vector<dnnl_memory_t> owned_;
  std::vector<dnnl_exec_arg_t> args_;
};

// Runs one slice on the calling thread (oneDNN single-threaded there); false on an error.
bool RunSlice(const ConvGemm& c, const Primitive& p, const Slice& s, const float* input,
              const float* kernel, float* out) {
  omp_set_num_threads(1);  // per calling thread in OpenMP: cpu-llvm's pool is the only one
  const ConvolutionDimensionNumbers& dn = c.dnums;
  const std::vector<int64_t> is = RowMajorStrides(c.in_dims), os = RowMajorStrides(c.out_dims);
  const float* src = input + s.b0 * is[dn.input_batch_dimension] + p.src_offset;
  float* dst = out + s.b0 * os[dn.output_batch_dimension] + p.dst_offset;
  thread_local std::vector<uint8_t> scratch, weights;
  scratch.resize(std::max<size_t>(p.scratch_bytes, 1));
  dnnl_memory_desc_t scratch_md;
  const dnnl_dims_t scratch_dims = {static_cast<int64_t>(scratch.size())};
  if (dnnl_memory_desc_init_by_tag(&scratch_md, 1, scratch_dims, dnnl_u8, dnnl_a) != dnnl_success)
    return false;
  const void* conv_weights = kernel;
  if (p.weights_reorder != nullptr) {
    weights.resize(p.weights_bytes);
    Memories reorder;
    if (!reorder.Add(DNNL_ARG_FROM, p.user_weights, kernel) ||
        !reorder.Add(DNNL_ARG_TO, p.weights, weights.data()) ||
        !reorder.Add(DNNL_ARG_SCRATCHPAD, scratch_md, scratch.data()) ||
        !reorder.Execute(p.weights_reorder))
      return false;
    conv_weights = weights.data();
  }
  Memories conv;
  return conv.Add(DNNL_ARG_SRC, p.src, src) &&
         conv.Add(DNNL_ARG_WEIGHTS, p.weights, conv_weights) &&
         conv.Add(DNNL_ARG_DST, p.dst, dst) &&
         conv.Add(DNNL_ARG_SCRATCHPAD, scratch_md, scratch.data()) && conv.Execute(p.conv);
}

}  // namespace

bool HaveOneDnn() { return true; }

bool RunOneDnnConv(const ConvGemm& c, const float* input, const float* kernel, float* out,
                   ThreadPool* pool) {
  if (Engine() == nullptr) return false;
  const std::vector<Slice> slices = SlicesFor(c, pool != nullptr ? pool->size() : 1);
  std::vector<std::shared_ptr<const Primitive> > primitives;
  for (const Slice& s : slices) {
    primitives.push_back(Cached(c, s));
    if (primitives.back()->implementation.empty()) return false;
  }
  if (slices.empty()) return false;
  std::atomic<bool> failed{false};
  const auto run = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      if (!RunSlice(c, *primitives[i], slices[i], input, kernel, out)) failed = true;
  };
  const int n = static_cast<int>(slices.size());
  if (n == 1)
    run(0, 1);
  else
    pool->ParallelFor(n, run, n);
  return !failed;  // on an error the caller computes it all again another way
}

std::string OneDnnConvImplementation(const ConvGemm& c, int threads) {
  if (Engine() == nullptr) return "";
  const std::vector<Slice> slices = SlicesFor(c, threads);
  std::string implementation;
  for (const Slice& s : slices) {
    std::shared_ptr<const Primitive> p = Cached(c, s);
    if (p->implementation.empty()) return "";
    implementation = p->implementation;
  }
  return implementation;
}

#endif  // KILN_HAVE_ONEDNN

}  // namespace kiln::cpu
