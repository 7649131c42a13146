// Which dots and convolutions a GEMM library can compute, and in what form (see
// gemm_match.h). No library call here, so the GPU path links it without a host BLAS.
#include "plugins/kernel_plan/gemm_match.h"

#include "absl/strings/str_cat.h"
#include "hlo/passes/dot_canonicalization.h"

namespace kiln::kernel_plan {
namespace {

// Above this the patch matrix is not worth its memory; the evaluator path is used instead.
constexpr int64_t kMaxPatchBytes = int64_t{1} << 30;
// A float matrix of at most this many elements times a vector is left to the emitter: a
// vectorized reduction over each stored row, fused with what reads it, where the library call
// costs about as much as the product itself (256x256: 3 against 6 us; a power iteration's 200
// steps 0.93 -> 0.40 ms). Larger ones are memory-bound either way (2048x4096: 0.64 against
// 0.58 ms), and the library's split over the pool is the safer.
constexpr int64_t kEmittedMatvecMaxElements = int64_t{1} << 22;
// A batch of at least kMinEmittedBatch matrices each of fewer multiply-adds than
// kMinBatchedLibraryMnk is emitted: a library call per matrix costs about 0.2 us (an
// associative scan's 2048 products of 2x2 matrices: 0.38 ms as calls), the emitted loop a
// few ns per matrix. A few small matrices keep their calls: the overhead is a microsecond.
constexpr int64_t kMinBatchedLibraryMnk = 16 * 16 * 16, kMinEmittedBatch = 64;

}  // namespace

bool HaveBlas() {
#ifdef KILN_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

std::optional<GemmShape> MatchBlasDot(const HloInstruction& dot, int64_t min_mnk, GemmTypes types,
                                      std::string* why) {
  auto no = [&](std::string reason) -> std::optional<GemmShape> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!HaveBlas()) return no("built without a BLAS library");
  std::optional<GemmShape> g = MatchGemmDot(dot, min_mnk, types, why);
  // Only of a vector already in memory: one computed in the kernel would be recomputed for
  // every row (a logistic regression's gradient, sigmoid(x @ w) - y against x^T: 45 us a step
  // emitted, 9 us as a library call).
  const HloOpcode v = dot.operand_count() == 2 ? dot.operand(1)->opcode() : HloOpcode::kTuple;
  const bool stored_vector =
      v == HloOpcode::kParameter || v == HloOpcode::kGetTupleElement || v == HloOpcode::kConstant;
  if (g && g->k <= kMaxEmittedContraction)
    return no("a contraction of a few elements, multiply-adds the emitted kernel fuses");
  if (g && g->batch >= kMinEmittedBatch && g->m * g->n * g->k < kMinBatchedLibraryMnk)
    return no("a batch of matrices small enough for the emitted kernel");
  if (g && (g->type == GemmType::kF32 || g->type == GemmType::kF64) && g->batch == 1 && g->n == 1 &&
      !g->trans_a && g->m * g->k <= kEmittedMatvecMaxElements && stored_vector)
    return no("a matrix-vector product small enough for the emitted kernel");
  return g;
}

std::optional<GemmShape> MatchGemmDot(const HloInstruction& dot, int64_t min_mnk, GemmTypes types,
                                      std::string* why) {
  auto no = [&](std::string reason) -> std::optional<GemmShape> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (dot.opcode() != HloOpcode::kDot || dot.operand_count() != 2 ||
      !dot.attrs().dot_dimension_numbers)
    return no("not a dot");
  const HloInstruction* lhs = dot.operand(0);
  const HloInstruction* rhs = dot.operand(1);
  if (!dot.shape().IsArray() || !lhs->shape().IsArray() || !rhs->shape().IsArray())
    return no("not an array dot");
  const PrimitiveType t = dot.shape().element_type();
  const PrimitiveType lt = lhs->shape().element_type(), rt = rhs->shape().element_type();
  GemmType type;
  if (t == PrimitiveType::F32 && lt == t && rt == t)
    type = GemmType::kF32;
  else if (t == PrimitiveType::F64 && lt == t && rt == t)
    type = GemmType::kF64;
  else if (types.s8 && t == PrimitiveType::S32 && lt == PrimitiveType::S8 &&
           rt == PrimitiveType::S8)
    type = GemmType::kS8S32;
  else if (types.integer && lt == t && rt == t &&
           (t == PrimitiveType::S32 || t == PrimitiveType::U32))
    type = GemmType::kI32;
  else if (types.integer && lt == t && rt == t &&
           (t == PrimitiveType::S64 || t == PrimitiveType::U64))
    type = GemmType::kI64;
  else if (types.bf16 && lt == PrimitiveType::BF16 && rt == PrimitiveType::BF16 &&
           (t == PrimitiveType::F32 || t == PrimitiveType::BF16))
    type = t == PrimitiveType::F32 ? GemmType::kBF16F32 : GemmType::kBF16BF16;
  else
    return no(absl::StrCat("element types are not f32 or f64 throughout",
                           types.s8 ? ", nor s8 x s8 -> s32" : "",
                           types.integer ? ", nor 32- or 64-bit integers throughout" : "",
                           types.bf16 ? ", nor bf16 x bf16 -> f32 or bf16" : ""));
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  if (static_cast<int64_t>(dn.rhs_batch_dimensions.size()) != nb) return no("batch dims differ");
  const std::vector<int64_t>& lc = dn.lhs_contracting_dimensions;
  const std::vector<int64_t>& rc = dn.rhs_contracting_dimensions;
  if (lc.empty() || lc.size() != rc.size()) return no("no contracting dimension");
  const auto& ld = lhs->shape().dimensions();
  const auto& rd = rhs->shape().dimensions();
  const int64_t lr = static_cast<int64_t>(ld.size()), rr = static_cast<int64_t>(rd.size());
  const int64_t nc = static_cast<int64_t>(lc.size());
  for (int64_t j = 0; j < nc; ++j)
    if (lc[j] < nb || lc[j] >= lr || rc[j] < nb || rc[j] >= rr)
      return no("bad contracting dimension");
  // Batch dimensions leading in order, the contracting ones adjacent and first (stored
  // transposed for the lhs) or last among the rest: the rule dot canonicalization makes
  // operands follow.
  if (!GemmReadableDotOperand(lr, dn.lhs_batch_dimensions, lc))
    return no(
        "lhs is not a matrix per batch as stored (batch dims leading, contracting adjacent "
        "and first or last)");
  if (!GemmReadableDotOperand(rr, dn.rhs_batch_dimensions, rc))
    return no(
        "rhs is not a matrix per batch as stored (batch dims leading, contracting adjacent "
        "and first or last)");
  GemmShape g;
  g.type = type;
  for (int64_t i = 0; i < nb; ++i) {
    if (ld[i] != rd[i]) return no("batch sizes differ");
    g.batch *= ld[i];
  }
  for (int64_t j = 0; j < nc; ++j) {
    if (rd[rc[j]] != ld[lc[j]]) return no("contracting sizes differ");
    g.k *= ld[lc[j]];
  }
  for (int64_t i = nb; i < lr; ++i)
    if (i < lc[0] || i >= lc[0] + nc) g.m *= ld[i];
  for (int64_t i = nb; i < rr; ++i)
    if (i < rc[0] || i >= rc[0] + nc) g.n *= rd[i];
  g.trans_a = lc[0] == nb && lr > nb + nc;       // stored [k..., m...]
  g.trans_b = rc[0] + nc == rr && rr > nb + nc;  // stored [n..., k...]
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return no("empty dot");
  if (g.batch * g.m * g.n * g.k < min_mnk) return no("too small for a BLAS call");
  // Past this depth an s8 product sum may overflow s32, where HLO wraps and a library may
  // saturate.
  constexpr int64_t kMaxS8Depth = 131071;  // 131071 * 128 * 128 <= 2^31 - 1
  if (type == GemmType::kS8S32 && g.k > kMaxS8Depth) return no("s8 depth could overflow s32");
  return g;
}

std::optional<ConvGemm> MatchLibraryConv(const HloInstruction& conv, int64_t min_work,
                                         std::string* why) {
  auto no = [&](std::string reason) -> std::optional<ConvGemm> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!HaveBlas()) return no("built without a BLAS library");
  const InstructionAttributes& a = conv.attrs();
  if (conv.opcode() != HloOpcode::kConvolution || conv.operand_count() != 2 || !a.window ||
      !a.convolution_dimension_numbers)
    return no("not a convolution");
  if (a.batch_group_count != 1) return no("batch-grouped convolution");
  const Shape& in = conv.operand(0)->shape();
  const Shape& k = conv.operand(1)->shape();
  const Shape& out = conv.shape();
  if (!in.IsArray() || !k.IsArray() || !out.IsArray()) return no("not an array convolution");
  const PrimitiveType type = out.element_type();
  if (type != PrimitiveType::F32 && type != PrimitiveType::F64) return no("not f32 or f64");
  if (in.element_type() != type || k.element_type() != type) return no("mixed element types");
  ConvGemm c;
  c.type = type;
  c.in_dims = in.dimensions();
  c.kernel_dims = k.dimensions();
  c.out_dims = out.dimensions();
  c.dnums = *a.convolution_dimension_numbers;
  c.window = *a.window;
  const size_t ns = c.dnums.input_spatial_dimensions.size();
  if (c.window.dimensions.size() != ns || c.dnums.kernel_spatial_dimensions.size() != ns ||
      c.dnums.output_spatial_dimensions.size() != ns)
    return no("window rank differs from the spatial rank");
  int64_t positions = 1, kernel_positions = 1;
  for (size_t i = 0; i < ns; ++i) {
    positions *= c.out_dims[c.dnums.output_spatial_dimensions[i]];
    kernel_positions *= c.kernel_dims[c.dnums.kernel_spatial_dimensions[i]];
  }
  c.rows = c.out_dims[c.dnums.output_batch_dimension] * positions;
  c.groups = a.feature_group_count;
  const int64_t group_in = c.kernel_dims[c.dnums.kernel_input_feature_dimension];
  c.depth = kernel_positions * group_in;
  c.out_features = c.out_dims[c.dnums.output_feature_dimension];
  if (c.rows == 0 || c.depth == 0 || c.out_features == 0) return no("empty convolution");
  if (c.groups < 1 || c.out_features % c.groups != 0 ||
      group_in * c.groups != c.in_dims[c.dnums.input_feature_dimension])
    return no("feature groups that do not divide the features");
  // One GEMM per group: worth it for groups of several features each (ResNeXt's); a
  // depthwise convolution (one input feature per group) is an emitted loop's, as is a
  // one-channel filter (jnp.convolve: one input and one output feature), whose patch matrix
  // costs as much to build as the matrix-vector product it feeds (2^16 samples, 129 taps:
  // 58 ms through the library, 8.6 ms emitted).
  if (c.groups > 1 && (group_in < 8 || c.out_features / c.groups < 8))
    return no("grouped convolution with few features per group");
  if (group_in == 1 && c.out_features == 1) return no("one-channel filter");
  if (c.rows * c.depth * c.out_features < min_work) return no("too small for a library call");
  if (c.rows * c.depth * ByteSizeOf(type) > kMaxPatchBytes) return no("patch matrix too large");
  return c;
}

}  // namespace kiln::kernel_plan
