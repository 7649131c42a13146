// Evaluation of dot (general dimension numbers), convolution, cholesky and triangular-solve.
//
// Numerics: products are accumulated in the result type, except that 16-bit float results
// accumulate in f32 (as XLA's CPU backend does) and pred in s32. f32 dots therefore
// accumulate in f32, summing over the contracting index in ascending order; results differ
// from a double-precision reference by normal float rounding, so tests use tolerances.
// Cholesky and triangular-solve compute in f64 (c128 for complex types) and round once.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_util.h"
#include "hlo/evaluator/matrix_kernels.h"

namespace kiln::eval {
namespace {

// Linear offsets of every multi-index over the dimensions `which` (enumerated row-major in
// the order `which` lists them) in a row-major array with `strides`.
std::vector<int64_t> OffsetsOver(const std::vector<int64_t>& which,
                                 const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& strides) {
  std::vector<int64_t> sub;
  for (int64_t w : which) sub.push_back(dims[w]);
  std::vector<int64_t> out;
  if (Product(sub) == 0) return out;
  out.reserve(Product(sub));
  std::vector<int64_t> idx(sub.size(), 0);
  do {
    int64_t off = 0;
    for (size_t i = 0; i < which.size(); ++i) off += idx[i] * strides[which[i]];
    out.push_back(off);
  } while (NextIndex(idx, sub));
  return out;
}

// Copies `src` into `dst` converted to Acc: dst[(b*R + r)*C + c] = src[bo[b] + ro[r] + co[c]].
template <typename Acc>
void Pack(const Literal& src, const std::vector<int64_t>& bo, const std::vector<int64_t>& ro,
          const std::vector<int64_t>& co, std::vector<Acc>& dst) {
  dst.resize(bo.size() * ro.size() * co.size());
  PrimitiveTypeSwitch(src.shape().element_type(), [&](auto tag) {
    using In = decltype(tag);
    auto data = src.data<In>();
    size_t i = 0;
    for (int64_t b : bo)
      for (int64_t r : ro)
        for (int64_t c : co) dst[i++] = CastTo<Acc>(data[b + r + c]);
  });
}

// Checks that `dims` are distinct, in range for `rank`, and not in `used`; marks them used.
absl::Status CheckDims(const HloInstruction& instr, const std::vector<int64_t>& dims, int rank,
                       std::vector<bool>& used, const char* what) {
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || used[d])
      return EvalError(instr, absl::StrCat(what, " dimension ", d, " is out of range or repeated"));
    used[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> EvalDot(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
  if (!instr.attrs().dot_dimension_numbers)
    return EvalError(instr, "missing dot dimension numbers");
  const DotDimensionNumbers& dn = *instr.attrs().dot_dimension_numbers;
  const Shape& ls = ops[0]->shape();
  const Shape& rs = ops[1]->shape();
  if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size() ||
      dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
    return EvalError(instr, "lhs and rhs batch/contracting dimension counts differ");
  std::vector<bool> lused(ls.rank(), false), rused(rs.rank(), false);
  for (auto st :
       {CheckDims(instr, dn.lhs_batch_dimensions, ls.rank(), lused, "lhs batch"),
        CheckDims(instr, dn.lhs_contracting_dimensions, ls.rank(), lused, "lhs contracting"),
        CheckDims(instr, dn.rhs_batch_dimensions, rs.rank(), rused, "rhs batch"),
        CheckDims(instr, dn.rhs_contracting_dimensions, rs.rank(), rused, "rhs contracting")})
    if (!st.ok()) return st;
  for (size_t i = 0; i < dn.lhs_batch_dimensions.size(); ++i)
    if (ls.dimensions(dn.lhs_batch_dimensions[i]) != rs.dimensions(dn.rhs_batch_dimensions[i]))
      return EvalError(instr, "batch dimension sizes differ");
  for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i)
    if (ls.dimensions(dn.lhs_contracting_dimensions[i]) !=
        rs.dimensions(dn.rhs_contracting_dimensions[i]))
      return EvalError(instr, "contracting dimension sizes differ");
  std::vector<int64_t> lfree, rfree;
  for (int d = 0; d < ls.rank(); ++d)
    if (!lused[d]) lfree.push_back(d);
  for (int d = 0; d < rs.rank(); ++d)
    if (!rused[d]) rfree.push_back(d);

  // Result dims: batch, lhs free, rhs free.
  std::vector<int64_t> out_dims;
  for (int64_t d : dn.lhs_batch_dimensions) out_dims.push_back(ls.dimensions(d));
  for (int64_t d : lfree) out_dims.push_back(ls.dimensions(d));
  for (int64_t d : rfree) out_dims.push_back(rs.dimensions(d));
  const Shape& out_shape = instr.shape();
  if (!out_shape.IsArray() || out_shape.dimensions() != out_dims)
    return EvalError(instr, "result shape " + out_shape.ToString(false) +
                                " does not match batch, lhs free, rhs free dimensions");

  auto lstr = RowMajorStrides(ls.dimensions());
  auto rstr = RowMajorStrides(rs.dimensions());
  auto lb = OffsetsOver(dn.lhs_batch_dimensions, ls.dimensions(), lstr);
  auto lm = OffsetsOver(lfree, ls.dimensions(), lstr);
  auto lk = OffsetsOver(dn.lhs_contracting_dimensions, ls.dimensions(), lstr);
  auto rb = OffsetsOver(dn.rhs_batch_dimensions, rs.dimensions(), rstr);
  auto rk = OffsetsOver(dn.rhs_contracting_dimensions, rs.dimensions(), rstr);
  auto rn = OffsetsOver(rfree, rs.dimensions(), rstr);
  const size_t B = lb.size(), M = lm.size(), K = lk.size(), N = rn.size();

  Literal out(out_shape);
  PrimitiveTypeSwitch(out_shape.element_type(), [&](auto out_tag) {
    using Out = decltype(out_tag);
    using Acc = AccumT<Out>;
    // Pack lhs as [B][M][K] and rhs as [B][K][N] so the inner loop runs over contiguous n.
    std::vector<Acc> a, b;
    Pack<Acc>(*ops[0], lb, lm, lk, a);
    Pack<Acc>(*ops[1], rb, rk, rn, b);
    std::vector<Acc> c(B * M * N, Acc(0));
    for (size_t bi = 0; bi < B; ++bi) {
      for (size_t m = 0; m < M; ++m) {
        Acc* crow = c.data() + (bi * M + m) * N;
        const Acc* arow = a.data() + (bi * M + m) * K;
        for (size_t k = 0; k < K; ++k) {
          const Acc av = arow[k];
          const Acc* brow = b.data() + (bi * K + k) * N;
          for (size_t n = 0; n < N; ++n) crow[n] += av * brow[n];
        }
      }
    }
    auto od = out.data<Out>();
    for (size_t i = 0; i < c.size(); ++i) od[i] = CastTo<Out>(c[i]);
  });
  return out;
}

absl::StatusOr<Literal> EvalConvolution(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
  if (!instr.attrs().convolution_dimension_numbers) return EvalError(instr, "missing dim_labels");
  const ConvolutionDimensionNumbers& dn = *instr.attrs().convolution_dimension_numbers;
  const Shape& ls = ops[0]->shape();
  const Shape& rs = ops[1]->shape();
  const Shape& os = instr.shape();
  const size_t nsp = dn.input_spatial_dimensions.size();
  if (dn.kernel_spatial_dimensions.size() != nsp || dn.output_spatial_dimensions.size() != nsp)
    return EvalError(instr, "input, kernel and output spatial dimension counts differ");
  if (!os.IsArray() || ls.rank() != static_cast<int>(nsp) + 2 ||
      rs.rank() != static_cast<int>(nsp) + 2 || os.rank() != static_cast<int>(nsp) + 2)
    return EvalError(instr, "operand or result rank does not match dim_labels");
  {
    std::vector<bool> lu(ls.rank(), false), ru(rs.rank(), false), ou(os.rank(), false);
    for (auto st :
         {CheckDims(instr, {dn.input_batch_dimension, dn.input_feature_dimension}, ls.rank(), lu,
                    "input"),
          CheckDims(instr, dn.input_spatial_dimensions, ls.rank(), lu, "input spatial"),
          CheckDims(instr, {dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension},
                    rs.rank(), ru, "kernel"),
          CheckDims(instr, dn.kernel_spatial_dimensions, rs.rank(), ru, "kernel spatial"),
          CheckDims(instr, {dn.output_batch_dimension, dn.output_feature_dimension}, os.rank(), ou,
                    "output"),
          CheckDims(instr, dn.output_spatial_dimensions, os.rank(), ou, "output spatial")})
      if (!st.ok()) return st;
  }
  std::vector<WindowDimension> win(nsp);
  if (instr.attrs().window) {
    if (instr.attrs().window->dimensions.size() != nsp)
      return EvalError(instr, "window rank does not match the spatial dimension count");
    win = instr.attrs().window->dimensions;
  }
  const int64_t G = instr.attrs().feature_group_count, BG = instr.attrs().batch_group_count;
  const int64_t N = ls.dimensions(dn.input_batch_dimension);
  const int64_t C = ls.dimensions(dn.input_feature_dimension);
  const int64_t Ci = rs.dimensions(dn.kernel_input_feature_dimension);
  const int64_t O = rs.dimensions(dn.kernel_output_feature_dimension);
  if (G < 1 || BG < 1 || C != Ci * G || O % G != 0 || O % BG != 0 || N % BG != 0)
    return EvalError(instr, absl::StrCat("feature/batch group counts (", G, ", ", BG,
                                         ") do not divide input features ", C, ", kernel features ",
                                         Ci, "x", O, ", batch ", N));
  if (os.dimensions(dn.output_batch_dimension) != N / BG ||
      os.dimensions(dn.output_feature_dimension) != O)
    return EvalError(instr, "result batch or feature size does not match the operands");
  for (size_t s = 0; s < nsp; ++s)
    if (win[s].stride < 1 || win[s].base_dilation < 1 || win[s].window_dilation < 1)
      return EvalError(instr, "window strides and dilations must be positive");

  const auto lstr = RowMajorStrides(ls.dimensions());
  const auto rstr = RowMajorStrides(rs.dimensions());
  std::vector<int64_t> ksp_dims;
  for (int64_t d : dn.kernel_spatial_dimensions) ksp_dims.push_back(rs.dimensions(d));
  const int64_t lfs = lstr[dn.input_feature_dimension],
                rfs = rstr[dn.kernel_input_feature_dimension];

  Literal out(os);
  if (out.element_count() == 0) return out;
  PrimitiveTypeSwitch(os.element_type(), [&](auto out_tag) {
    using Out = decltype(out_tag);
    using Acc = AccumT<Out>;
    const std::vector<Acc> L = ToAcc<Acc>(*ops[0]);
    const std::vector<Acc> R = ToAcc<Acc>(*ops[1]);
    auto od = out.data<Out>();
    std::vector<int64_t> oi(os.rank(), 0), ki(nsp, 0);
    int64_t linear = 0;
    do {
      const int64_t b = oi[dn.output_batch_dimension], o = oi[dn.output_feature_dimension];
      const int64_t g = o / (O / G), bg = o / (O / BG);
      const int64_t in_b = bg * (N / BG) + b;
      const int64_t lbase = in_b * lstr[dn.input_batch_dimension] + g * Ci * lfs;
      const int64_t rbase = o * rstr[dn.kernel_output_feature_dimension];
      Acc acc(0);
      if (Product(ksp_dims) > 0) {
        std::fill(ki.begin(), ki.end(), 0);
        do {
          int64_t loff = lbase, roff = rbase;
          bool valid = true;
          for (size_t s = 0; s < nsp && valid; ++s) {
            const WindowDimension& w = win[s];
            int64_t pos = oi[dn.output_spatial_dimensions[s]] * w.stride - w.padding_low +
                          ki[s] * w.window_dilation;
            if (pos < 0 || pos % w.base_dilation != 0) {
              valid = false;
              break;
            }
            int64_t ip = pos / w.base_dilation;
            if (ip >= ls.dimensions(dn.input_spatial_dimensions[s])) {
              valid = false;
              break;
            }
            loff += ip * lstr[dn.input_spatial_dimensions[s]];
            int64_t kw = w.window_reversal ? ksp_dims[s] - 1 - ki[s] : ki[s];
            roff += kw * rstr[dn.kernel_spatial_dimensions[s]];
          }
          if (!valid) continue;
          for (int64_t c = 0; c < Ci; ++c) acc += L[loff + c * lfs] * R[roff + c * rfs];
        } while (NextIndex(ki, ksp_dims));
      }
      od[linear++] = CastTo<Out>(acc);
    } while (NextIndex(oi, os.dimensions()));
  });
  return out;
}

absl::Status CheckSquareBatch(const HloInstruction& instr, const Shape& s, const char* what) {
  if (s.rank() < 2 || s.dimensions(s.rank() - 1) != s.dimensions(s.rank() - 2))
    return EvalError(
        instr, std::string(what) + " must be a batch of square matrices, got " + s.ToString(false));
  if (!IsFloating(s.element_type()) && !IsComplex(s.element_type()))
    return EvalError(instr, std::string(what) + " must have a floating or complex type");
  return absl::OkStatus();
}

absl::StatusOr<Literal> EvalCholesky(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
  const Shape& s = ops[0]->shape();
  if (auto st = CheckSquareBatch(instr, s, "operand"); !st.ok()) return st;
  const int64_t n = s.dimensions(s.rank() - 1);
  const int64_t batches = n == 0 ? 0 : s.num_elements() / (n * n);
  Literal out(Shape(s.element_type(), s.dimensions()));
  const bool lower = instr.attrs().lower;
  if (IsComplex(s.element_type())) {
    std::vector<std::complex<double>> r;
    CholeskyBatch(LoadWide<std::complex<double>>(*ops[0]), r, n, batches, lower);
    StoreWide(r, out);
  } else {
    std::vector<double> r;
    CholeskyBatch(LoadWide<double>(*ops[0]), r, n, batches, lower);
    StoreWide(r, out);
  }
  return out;
}

absl::StatusOr<Literal> EvalTriangularSolve(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
  const Shape& as = ops[0]->shape();
  const Shape& bs = ops[1]->shape();
  if (auto st = CheckSquareBatch(instr, as, "a"); !st.ok()) return st;
  if (bs.rank() != as.rank() || bs.element_type() != as.element_type())
    return EvalError(instr, "a and b must have the same rank and element type");
  for (int d = 0; d < as.rank() - 2; ++d)
    if (as.dimensions(d) != bs.dimensions(d)) return EvalError(instr, "batch dimensions differ");
  const int64_t m = bs.dimensions(bs.rank() - 2), n = bs.dimensions(bs.rank() - 1);
  const int64_t k = as.dimensions(as.rank() - 1);
  if ((instr.attrs().left_side ? m : n) != k)
    return EvalError(instr, "the order of a does not match b's " +
                                std::string(instr.attrs().left_side ? "rows" : "columns"));
  const int64_t batches = m * n == 0 ? 0 : bs.num_elements() / (m * n);
  Literal out(Shape(bs.element_type(), bs.dimensions()));
  if (IsComplex(as.element_type())) {
    auto b = LoadWide<std::complex<double>>(*ops[1]);
    TriangularSolveBatch(LoadWide<std::complex<double>>(*ops[0]), b, m, n, batches, instr.attrs());
    StoreWide(b, out);
  } else {
    auto b = LoadWide<double>(*ops[1]);
    TriangularSolveBatch(LoadWide<double>(*ops[0]), b, m, n, batches, instr.attrs());
    StoreWide(b, out);
  }
  return out;
}

// `x` times the scale of each element's block, as type `t` (scaled-dot's operands).
Literal Dequantize(const Literal& x, const Literal& scale, PrimitiveType t) {
  Literal out(Shape(t, x.shape().dimensions()));
  const std::vector<int64_t>& dims = x.shape().dimensions();
  const std::vector<int64_t>& sdims = scale.shape().dimensions();
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < x.element_count(); ++i) {
    int64_t s = 0;
    for (size_t d = 0; d < sdims.size(); ++d) s = s * sdims[d] + idx[d] / (dims[d] / sdims[d]);
    out.SetFromDouble(i, x.GetAsDouble(i) * scale.GetAsDouble(s));
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// The operands are scaled in f32 (f64 for an f64 result), then multiplied as a dot.
absl::StatusOr<Literal> EvalScaledDot(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 4); !st.ok()) return st;
  if (!IsFloating(instr.shape().element_type()))
    return EvalError(instr, "scaled-dot needs a floating result");
  const PrimitiveType t =
      instr.shape().element_type() == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  Literal lhs = Dequantize(*ops[0], *ops[2], t);
  Literal rhs = Dequantize(*ops[1], *ops[3], t);
  const Literal* both[] = {&lhs, &rhs};
  return EvalDot(instr, Operands(both, 2));
}

}  // namespace

absl::StatusOr<Literal> EvalLinalg(const HloInstruction& instr, Operands ops) {
  switch (instr.opcode()) {
    case HloOpcode::kDot:
      return EvalDot(instr, ops);
    case HloOpcode::kScaledDot:
      return EvalScaledDot(instr, ops);
    case HloOpcode::kConvolution:
      return EvalConvolution(instr, ops);
    case HloOpcode::kCholesky:
      return EvalCholesky(instr, ops);
    case HloOpcode::kTriangularSolve:
      return EvalTriangularSolve(instr, ops);
    default:
      return EvalError(instr, "not a linear-algebra opcode");
  }
}

}  // namespace kiln::eval
