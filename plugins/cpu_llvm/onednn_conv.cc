// oneDNN direct convolutions on cpu-llvm's pool (see onednn_conv.h).
#include "plugins/cpu_llvm/onednn_conv.h"

#ifdef KILN_HAVE_ONEDNN
#include <dnnl.h>
#include <omp.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hlo/shape.h"
#include "plugins/cpu_llvm/onednn_runtime.h"
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

using onednn::Engine;
using onednn::Instantiate;
using onednn::Memories;

// Primitives kept (one per convolution shape and slice size); past this the cache starts over.
constexpr size_t kMaxCachedPrimitives = 1024;

// A buffer's dimensions and strides (in elements) in the logical order of the oneDNN argument
// it plays (batch or output feature first, then input feature, then the spatial dimensions):
// `order` names the buffer dimension of each logical one; the buffer is laid out as `dims`,
// row-major.
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
  // The same dimensions in the layout oneDNN picks.
  bool DescribeAny(dnnl_memory_desc_t* md) const {
    return dnnl_memory_desc_init_by_tag(md, ndims, dims, dnnl_f32, dnnl_format_tag_any) ==
           dnnl_success;
  }
};

// Which oneDNN primitive computes an HLO convolution. XLA writes the gradients of a
// convolution as convolutions too; oneDNN has a primitive for each.
enum class Kind {
  kForward,          // the convolution as written
  kBackwardData,     // lhs dilation s: the gradient of a stride-s convolution by its input
  kBackwardWeights,  // a window larger than the output: the gradient by the kernel
};

// How the three HLO buffers (lhs, rhs, out) play the primitive's arguments, and the window
// of the forward convolution the primitive is described by.
struct Roles {
  Kind kind;
  std::vector<int64_t> lhs, rhs, out;  // logical orders (see Layout)
  int spatial = 0;
  dnnl_dims_t strides, dilates, pad_low, pad_high;
};

std::optional<Roles> RolesOf(const ConvGemm& c) {
  if (c.groups != 1) return std::nullopt;  // grouped: im2col, a GEMM per group
  const ConvolutionDimensionNumbers& dn = c.dnums;
  Roles r;
  r.spatial = static_cast<int>(dn.input_spatial_dimensions.size());
  bool lhs_dilated = false;
  int64_t window = 1, output = 1;
  for (int i = 0; i < r.spatial; ++i) {
    const WindowDimension& w = c.window.dimensions[i];
    if (w.window_reversal) return std::nullopt;  // im2col reverses
    lhs_dilated |= w.base_dilation != 1;
    window *= w.size;
    output *= c.out_dims[dn.output_spatial_dimensions[i]];
  }
  // The forward window of an undilated lhs: the HLO window's, with stride and dilation
  // swapped for a kernel gradient; false for negative padding (a cropped input).
  const auto plain_window = [&](bool swapped) {
    for (int i = 0; i < r.spatial; ++i) {
      const WindowDimension& w = c.window.dimensions[i];
      if (w.padding_low < 0 || w.padding_high < 0) return false;
      r.strides[i] = swapped ? w.window_dilation : w.stride;
      r.dilates[i] = (swapped ? w.stride : w.window_dilation) - 1;  // oneDNN counts the gaps
      r.pad_low[i] = w.padding_low;
      r.pad_high[i] = w.padding_high;
    }
    return true;
  };
  if (lhs_dilated) {
    // out = conv(dilate(lhs), rhs) is the input gradient of conv(out', flip(rhs)) with stride
    // s = the dilation: oneDNN's backward-data primitive, given the flipped kernel.
    r.kind = Kind::kBackwardData;
    r.lhs = {dn.input_batch_dimension, dn.input_feature_dimension};
    r.rhs = {dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension};
    r.out = {dn.output_batch_dimension, dn.output_feature_dimension};
    for (int i = 0; i < r.spatial; ++i) {
      const WindowDimension& w = c.window.dimensions[i];
      const int64_t extent = (w.size - 1) * w.window_dilation + 1;
      if (w.stride != 1 || w.padding_low < 0 || w.padding_high < 0 || w.padding_low >= extent ||
          w.padding_high >= extent)
        return std::nullopt;
      r.strides[i] = w.base_dilation;
      r.dilates[i] = w.window_dilation - 1;  // oneDNN counts the gaps
      r.pad_low[i] = extent - 1 - w.padding_low;
      r.pad_high[i] = extent - 1 - w.padding_high;
    }
  } else if (window > output) {
    // Output positions index the forward kernel and window positions the forward output:
    // oneDNN's backward-weights primitive, with the batch and feature roles of lhs swapped.
    r.kind = Kind::kBackwardWeights;
    r.lhs = {dn.input_feature_dimension, dn.input_batch_dimension};
    r.rhs = {dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension};
    r.out = {dn.output_feature_dimension, dn.output_batch_dimension};
    if (!plain_window(/*swapped=*/true)) return std::nullopt;
  } else {
    r.kind = Kind::kForward;
    r.lhs = {dn.input_batch_dimension, dn.input_feature_dimension};
    r.rhs = {dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension};
    r.out = {dn.output_batch_dimension, dn.output_feature_dimension};
    if (!plain_window(/*swapped=*/false)) return std::nullopt;
  }
  for (int i = 0; i < r.spatial; ++i) {
    r.lhs.push_back(dn.input_spatial_dimensions[i]);
    r.rhs.push_back(dn.kernel_spatial_dimensions[i]);
    r.out.push_back(dn.output_spatial_dimensions[i]);
  }
  return r;
}

// One slice: images [b0, b1) (logical dimension 0 of lhs) and, for a forward convolution,
// rows [r0, r1) of the output's first spatial dimension.
struct Slice {
  int64_t b0, b1, r0, r1;
};

// What one slice's shape runs. The kernel-like argument (the weights, or the weights'
// gradient) is in oneDNN's layout: a reorder takes it from or to the HLO buffer's.
struct Primitive {
  dnnl_primitive_t conv = nullptr;
  dnnl_primitive_t reorder = nullptr;  // null: the buffer's layout is the primitive's
  dnnl_memory_desc_t lhs, rhs, out;    // as the HLO buffers lie (the kernel-like one whole)
  dnnl_memory_desc_t kernel;           // the kernel-like argument as the primitive wants it
  size_t kernel_bytes = 0, scratch_bytes = 0;
  // Where the slice starts in lhs and out, beyond its first image: a band of rows.
  int64_t lhs_offset = 0, out_offset = 0;
  std::string implementation;  // "": oneDNN has no native kernel for it

  Primitive() = default;
  Primitive(const Primitive&) = delete;
  ~Primitive() {
    if (conv != nullptr) dnnl_primitive_destroy(conv);
    if (reorder != nullptr) dnnl_primitive_destroy(reorder);
  }
};

// A primitive descriptor for `desc` (with the forward descriptor `hint_desc` for a backward
// one), or null.
dnnl_primitive_desc_t PrimitiveDescriptor(const dnnl_convolution_desc_t& desc,
                                          const dnnl_convolution_desc_t* hint_desc,
                                          dnnl_primitive_attr_t attr) {
  dnnl_primitive_desc_t hint = nullptr, pd = nullptr;
  if (hint_desc != nullptr &&
      dnnl_primitive_desc_create(&hint, hint_desc, nullptr, Engine(), nullptr) != dnnl_success)
    return nullptr;
  if (dnnl_primitive_desc_create(&pd, &desc, attr, Engine(), hint) != dnnl_success) pd = nullptr;
  if (hint != nullptr) dnnl_primitive_desc_destroy(hint);
  return pd;
}

std::shared_ptr<const Primitive> Create(const ConvGemm& c, const Roles& r, const Slice& slice) {
  // oneDNN fixes a primitive's thread count when it makes it: one, as it will run.
  omp_set_num_threads(1);
  auto p = std::make_shared<Primitive>();
  Layout lhs(c.in_dims, r.lhs), rhs(c.kernel_dims, r.rhs), out(c.out_dims, r.out);
  dnnl_dims_t pad_low, pad_high;
  std::copy(r.pad_low, r.pad_low + r.spatial, pad_low);
  std::copy(r.pad_high, r.pad_high + r.spatial, pad_high);
  // The sliced dimension: images (the forward batch) for lhs and the buffer beside it.
  Layout& batched = r.kind == Kind::kBackwardWeights ? rhs : out;
  lhs.dims[0] = batched.dims[0] = slice.b1 - slice.b0;
  if (lhs.ndims > 2 && (slice.r0 != 0 || slice.r1 != out.dims[2])) {
    // A band of output rows (kForward) reads input rows [first, last) of the padded input:
    // the part inside the input, and the padding on either side of it.
    const int64_t first = slice.r0 * r.strides[0] - r.pad_low[0];
    const int64_t last =
        (slice.r1 - 1) * r.strides[0] - r.pad_low[0] + (rhs.dims[2] - 1) * (r.dilates[0] + 1) + 1;
    const int64_t in_first = std::max<int64_t>(first, 0), in_last = std::min(last, lhs.dims[2]);
    if (in_last <= in_first) return p;  // a band of padding alone
    p->lhs_offset = in_first * lhs.strides[2];
    p->out_offset = slice.r0 * out.strides[2];
    lhs.dims[2] = in_last - in_first;
    out.dims[2] = slice.r1 - slice.r0;
    pad_low[0] = in_first - first;
    pad_high[0] = last - in_last;
  }
  lhs.DenseSingleImage();
  batched.DenseSingleImage();
  const Layout& kernel = r.kind == Kind::kBackwardWeights ? out : rhs;
  dnnl_memory_desc_t any_kernel;
  if (!lhs.Describe(&p->lhs) || !rhs.Describe(&p->rhs) || !out.Describe(&p->out) ||
      !kernel.DescribeAny(&any_kernel))
    return p;
  // The descriptor, and for a backward primitive the forward one it is the gradient of.
  dnnl_convolution_desc_t desc, forward;
  const dnnl_alg_kind_t alg = dnnl_convolution_direct;
  bool described = false;
  switch (r.kind) {
    case Kind::kForward:
      described = dnnl_dilated_convolution_forward_desc_init(
                      &desc, dnnl_forward_inference, alg, &p->lhs, &any_kernel, nullptr, &p->out,
                      r.strides, r.dilates, pad_low, pad_high) == dnnl_success;
      break;
    case Kind::kBackwardData:  // the forward convolution maps out to lhs
      described = dnnl_dilated_convolution_forward_desc_init(
                      &forward, dnnl_forward_training, alg, &p->out, &any_kernel, nullptr, &p->lhs,
                      r.strides, r.dilates, pad_low, pad_high) == dnnl_success &&
                  dnnl_dilated_convolution_backward_data_desc_init(
                      &desc, alg, &p->out, &any_kernel, &p->lhs, r.strides, r.dilates, pad_low,
                      pad_high) == dnnl_success;
      break;
    case Kind::kBackwardWeights:  // the forward convolution maps lhs to rhs
      described = dnnl_dilated_convolution_forward_desc_init(
                      &forward, dnnl_forward_training, alg, &p->lhs, &any_kernel, nullptr, &p->rhs,
                      r.strides, r.dilates, pad_low, pad_high) == dnnl_success &&
                  dnnl_dilated_convolution_backward_weights_desc_init(
                      &desc, alg, &p->lhs, &any_kernel, nullptr, &p->rhs, r.strides, r.dilates,
                      pad_low, pad_high) == dnnl_success;
      break;
  }
  if (!described) return p;
  // Scratch memory comes with each call: a primitive may run on two threads at once.
  dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return p;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_primitive_desc_t pd =
      PrimitiveDescriptor(desc, r.kind == Kind::kForward ? nullptr : &forward, attr);
  if (pd == nullptr) {
    dnnl_primitive_attr_destroy(attr);
    return p;
  }
  const char* name = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
  const std::string implementation = name != nullptr ? name : "";
  p->kernel = *dnnl_primitive_desc_query_md(
      pd, r.kind == Kind::kBackwardWeights ? dnnl_query_diff_weights_md : dnnl_query_weights_md, 0);
  p->kernel_bytes = dnnl_memory_desc_get_size(&p->kernel);
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
  const dnnl_memory_desc_t& user = r.kind == Kind::kBackwardWeights ? p->out : p->rhs;
  if (!dnnl_memory_desc_equal(&p->kernel, &user)) {
    const bool to_user = r.kind == Kind::kBackwardWeights;
    dnnl_primitive_desc_t rpd = nullptr;
    if (dnnl_reorder_primitive_desc_create(&rpd, to_user ? &p->kernel : &user, Engine(),
                                           to_user ? &user : &p->kernel, Engine(),
                                           attr) != dnnl_success ||
        !Instantiate(rpd, &p->reorder, &p->scratch_bytes)) {
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
std::shared_ptr<const Primitive> Cached(const ConvGemm& c, const Roles& r, const Slice& slice) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Primitive> > cache;
  std::string key = Key(c, slice);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  return cache.emplace(std::move(key), Create(c, r, slice)).first->second;
}

// How the convolution is cut across a pool of `threads`: by images; else a forward one into
// bands of output rows of each image (empty when there are too few rows), and a backward one
// not at all (oneDNN on one thread still beats im2col's gathering of mostly zeros).
std::vector<Slice> SlicesFor(const ConvGemm& c, const Roles& r, int threads) {
  const int64_t images = c.in_dims[r.lhs[0]];
  const int64_t rows = r.spatial == 0 ? 1 : c.out_dims[r.out[2]];
  if (threads <= 1) return {{0, images, 0, rows}};
  std::vector<Slice> slices;
  if (images >= threads) {
    for (int i = 0; i < threads; ++i)
      slices.push_back({images * i / threads, images * (i + 1) / threads, 0, rows});
    return slices;
  }
  if (r.kind != Kind::kForward) return {{0, images, 0, rows}};
  const int64_t bands = (threads + images - 1) / images;
  if (bands > rows) return {};
  for (int64_t b = 0; b < images; ++b)
    for (int64_t j = 0; j < bands; ++j)
      slices.push_back({b, b + 1, rows * j / bands, rows * (j + 1) / bands});
  return slices;
}

// Runs one slice on the calling thread (oneDNN single-threaded there); false on an error.
// `out` is where this slice's result goes: the output, or (a kernel gradient over part of
// the images) a partial sum the caller adds.
bool RunSlice(const ConvGemm& c, const Roles& r, const Primitive& p, const Slice& s,
              const float* lhs, const float* rhs, float* out) {
  omp_set_num_threads(1);  // per calling thread in OpenMP: cpu-llvm's pool is the only one
  const std::vector<int64_t> ls = RowMajorStrides(c.in_dims), rs = RowMajorStrides(c.kernel_dims),
                             os = RowMajorStrides(c.out_dims);
  lhs += s.b0 * ls[r.lhs[0]] + p.lhs_offset;
  if (r.kind == Kind::kBackwardWeights)
    rhs += s.b0 * rs[r.rhs[0]];
  else
    out += s.b0 * os[r.out[0]] + p.out_offset;
  thread_local std::vector<uint8_t> scratch, kernel;
  scratch.resize(std::max<size_t>(p.scratch_bytes, 1));
  // The kernel-like argument: the HLO buffer itself, or oneDNN's layout of it.
  const bool gradient = r.kind == Kind::kBackwardWeights;
  const void* kernel_data = gradient ? static_cast<const void*>(out) : rhs;
  if (p.reorder != nullptr) {
    kernel.resize(p.kernel_bytes);
    kernel_data = kernel.data();
  }
  const auto reorder = [&](const dnnl_memory_desc_t& from, const void* from_data,
                           const dnnl_memory_desc_t& to, const void* to_data) {
    Memories m;
    return m.Add(DNNL_ARG_FROM, from, from_data) && m.Add(DNNL_ARG_TO, to, to_data) &&
           m.AddScratchpad(scratch.size(), scratch.data()) && m.Execute(p.reorder);
  };
  if (p.reorder != nullptr && !gradient && !reorder(p.rhs, rhs, p.kernel, kernel_data))
    return false;
  Memories conv;
  bool ok = conv.AddScratchpad(scratch.size(), scratch.data());
  switch (r.kind) {
    case Kind::kForward:
      ok = ok && conv.Add(DNNL_ARG_SRC, p.lhs, lhs) &&
           conv.Add(DNNL_ARG_WEIGHTS, p.kernel, kernel_data) && conv.Add(DNNL_ARG_DST, p.out, out);
      break;
    case Kind::kBackwardData:
      ok = ok && conv.Add(DNNL_ARG_DIFF_DST, p.lhs, lhs) &&
           conv.Add(DNNL_ARG_WEIGHTS, p.kernel, kernel_data) &&
           conv.Add(DNNL_ARG_DIFF_SRC, p.out, out);
      break;
    case Kind::kBackwardWeights:
      ok = ok && conv.Add(DNNL_ARG_SRC, p.lhs, lhs) && conv.Add(DNNL_ARG_DIFF_DST, p.rhs, rhs) &&
           conv.Add(DNNL_ARG_DIFF_WEIGHTS, p.kernel, kernel_data);
      break;
  }
  if (!ok || !conv.Execute(p.conv)) return false;
  return p.reorder == nullptr || !gradient || reorder(p.kernel, kernel_data, p.out, out);
}

// The kernel with its spatial dimensions reversed (a backward-data primitive wants the
// forward kernel; the HLO convolution has it flipped).
std::vector<float> Flipped(const ConvGemm& c, const float* kernel) {
  const std::vector<int64_t>& dims = c.kernel_dims;
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<bool> spatial(dims.size(), false);
  for (int64_t d : c.dnums.kernel_spatial_dimensions) spatial[d] = true;
  const int64_t n = c.depth * c.out_features;  // every kernel element
  std::vector<float> flipped(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t from = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t index = i / strides[d] % dims[d];
      from += (spatial[d] ? dims[d] - 1 - index : index) * strides[d];
    }
    flipped[i] = kernel[from];
  }
  return flipped;
}

// The primitives of each slice, or empty when oneDNN does not take the convolution.
std::vector<std::shared_ptr<const Primitive> > PrimitivesFor(const ConvGemm& c, const Roles& r,
                                                             const std::vector<Slice>& slices) {
  std::vector<std::shared_ptr<const Primitive> > primitives;
  for (const Slice& s : slices) {
    primitives.push_back(Cached(c, r, s));
    if (primitives.back()->implementation.empty()) return {};
  }
  return primitives;
}

}  // namespace

bool HaveOneDnn() { return true; }

bool RunOneDnnConv(const ConvGemm& c, const float* input, const float* kernel, float* out,
                   ThreadPool* pool) {
  const std::optional<Roles> r = RolesOf(c);
  if (Engine() == nullptr || !r) return false;
  const std::vector<Slice> slices = SlicesFor(c, *r, pool != nullptr ? pool->size() : 1);
  const std::vector<std::shared_ptr<const Primitive> > primitives = PrimitivesFor(c, *r, slices);
  if (primitives.empty()) return false;
  std::vector<float> flipped;
  if (r->kind == Kind::kBackwardData) {
    flipped = Flipped(c, kernel);
    kernel = flipped.data();
  }
  // A kernel gradient over part of the images is a partial sum: the first slice's goes to
  // the output, the others' beside it, added at the end.
  const int n = static_cast<int>(slices.size());
  const int64_t out_size = c.rows * c.out_features;
  std::vector<std::vector<float> > partial(r->kind == Kind::kBackwardWeights ? n - 1 : 0);
  for (std::vector<float>& p : partial) p.resize(out_size);
  std::atomic<bool> failed{false};
  const auto run = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* to = i == 0 || partial.empty() ? out : partial[i - 1].data();
      if (!RunSlice(c, *r, *primitives[i], slices[i], input, kernel, to)) failed = true;
    }
  };
  if (n == 1)
    run(0, 1);
  else
    pool->ParallelFor(n, run, n);
  for (const std::vector<float>& p : partial)
    for (int64_t i = 0; i < out_size; ++i) out[i] += p[i];
  return !failed;  // on an error the caller computes it all again another way
}

std::string OneDnnConvImplementation(const ConvGemm& c, int threads) {
  const std::optional<Roles> r = RolesOf(c);
  if (Engine() == nullptr || !r) return "";
  const std::vector<std::shared_ptr<const Primitive> > primitives =
      PrimitivesFor(c, *r, SlicesFor(c, *r, threads));
  return primitives.empty() ? "" : primitives.back()->implementation;
}

#endif  // KILN_HAVE_ONEDNN

}  // namespace kiln::cpu
