// Which dots and convolutions a GEMM library can compute, and in what form (see
// gemm_match.h). No library call here, so the GPU path links it without a host BLAS.
#include "plugins/kernel_plan/gemm_match.h"

#include "absl/strings/str_cat.h"
#include "hlo/passes/dot_canonicalization.h"

namespace kiln::kernel_plan {
namespace {

// Above this the patch matrix is not worth its memory; the evaluator path is used instead.
constexpr int64_t kMaxPatchBytes = int64_t{1} << 30;

}  // namespace

bool HaveBlas() {
#ifdef KILN_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

std::optional<GemmShape> MatchBlasDot(const HloInstruction& dot, int64_t min_mnk,
                                      std::string* why) {
  auto no = [&](std::string reason) -> std::optional<GemmShape> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!HaveBlas()) return no("built without a BLAS library");
  return MatchGemmDot(dot, min_mnk, why);
}

std::optional<GemmShape> MatchGemmDot(const HloInstruction& dot, int64_t min_mnk,
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
  PrimitiveType t = dot.shape().element_type();
  if ((t != PrimitiveType::F32 && t != PrimitiveType::F64) || lhs->shape().element_type() != t ||
      rhs->shape().element_type() != t)
    return no("element type is not f32 or f64 throughout");
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  if (static_cast<int64_t>(dn.rhs_batch_dimensions.size()) != nb) return no("batch dims differ");
  if (dn.lhs_contracting_dimensions.size() != 1 || dn.rhs_contracting_dimensions.size() != 1)
    return no("not exactly one contracting dimension");
  const auto& ld = lhs->shape().dimensions();
  const auto& rd = rhs->shape().dimensions();
  const int64_t lc = dn.lhs_contracting_dimensions[0], rc = dn.rhs_contracting_dimensions[0];
  const int64_t lr = static_cast<int64_t>(ld.size()), rr = static_cast<int64_t>(rd.size());
  if (lc < nb || lc >= lr || rc < nb || rc >= rr) return no("bad contracting dimension");
  // Batch dimensions leading in order, the contracting one first (stored transposed for the
  // lhs) or last among the rest: the rule dot canonicalization makes operands follow.
  if (!GemmReadableDotOperand(lr, dn.lhs_batch_dimensions, lc))
    return no(
        "lhs is not a matrix per batch as stored (batch dims leading, contracting first "
        "or last)");
  if (!GemmReadableDotOperand(rr, dn.rhs_batch_dimensions, rc))
    return no(
        "rhs is not a matrix per batch as stored (batch dims leading, contracting first "
        "or last)");
  GemmShape g;
  g.f64 = t == PrimitiveType::F64;
  for (int64_t i = 0; i < nb; ++i) {
    if (ld[i] != rd[i]) return no("batch sizes differ");
    g.batch *= ld[i];
  }
  g.k = ld[lc];
  if (rd[rc] != g.k) return no("contracting sizes differ");
  for (int64_t i = nb; i < lr; ++i)
    if (i != lc) g.m *= ld[i];
  for (int64_t i = nb; i < rr; ++i)
    if (i != rc) g.n *= rd[i];
  g.trans_a = lc == nb && lr > nb + 1;      // stored [k, m...]
  g.trans_b = rc == rr - 1 && rr > nb + 1;  // stored [n..., k]
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return no("empty dot");
  if (g.batch * g.m * g.n * g.k < min_mnk) return no("too small for a BLAS call");
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
  if (a.feature_group_count != 1 || a.batch_group_count != 1) return no("grouped convolution");
  const Shape& in = conv.operand(0)->shape();
  const Shape& k = conv.operand(1)->shape();
  const Shape& out = conv.shape();
  if (!in.IsArray() || !k.IsArray() || !out.IsArray()) return no("not an array convolution");
  for (const Shape* s : {&in, &k, &out})
    if (s->element_type() != PrimitiveType::F32) return no("not f32");
  ConvGemm c;
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
  c.depth = kernel_positions * c.in_dims[c.dnums.input_feature_dimension];
  c.out_features = c.out_dims[c.dnums.output_feature_dimension];
  if (c.rows == 0 || c.depth == 0 || c.out_features == 0) return no("empty convolution");
  if (c.rows * c.depth * c.out_features < min_work) return no("too small for a library call");
  if (c.rows * c.depth * 4 > kMaxPatchBytes) return no("patch matrix too large");
  return c;
}

}  // namespace kiln::kernel_plan
