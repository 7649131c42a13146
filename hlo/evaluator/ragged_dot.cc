// ragged-dot: a dot whose lhs has one ragged dimension cut into consecutive groups by
// group_sizes (shape_inference.cc's RaggedDot gives the three modes). Computed element by
// element, accumulating floats in double and integers exactly: the reference, not a fast path.
#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/evaluator_util.h"

namespace kiln::eval {
namespace {

bool In(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

absl::StatusOr<Literal> EvalRaggedDot(const HloInstruction& instr, Operands ops) {
  if (!instr.attrs().dot_dimension_numbers)
    return InvalidArgument(instr, "ragged-dot without dimension numbers");
  const DotDimensionNumbers& dn = *instr.attrs().dot_dimension_numbers;
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const Literal& sizes = *ops[2];
  const std::vector<int64_t>& ld = lhs.shape().dimensions();
  const std::vector<int64_t>& rd = rhs.shape().dimensions();
  const int64_t ragged = dn.lhs_ragged_dimensions.at(0);
  const bool has_group = !dn.rhs_group_dimensions.empty();
  const int64_t group_dim = has_group ? dn.rhs_group_dimensions[0] : -1;
  const bool ragged_contracting = In(dn.lhs_contracting_dimensions, ragged);
  const bool ragged_batch = In(dn.lhs_batch_dimensions, ragged);
  const int64_t num_groups = sizes.shape().dimensions().back();

  std::vector<int64_t> lhs_free, rhs_free;
  for (int64_t i = 0; i < static_cast<int64_t>(ld.size()); ++i)
    if (!In(dn.lhs_batch_dimensions, i) && !In(dn.lhs_contracting_dimensions, i))
      lhs_free.push_back(i);
  for (int64_t i = 0; i < static_cast<int64_t>(rd.size()); ++i)
    if (!In(dn.rhs_batch_dimensions, i) && !In(dn.rhs_contracting_dimensions, i) && i != group_dim)
      rhs_free.push_back(i);
  // group_sizes is [outer..., g] with outer the batch dimensions and the dimensions of the
  // ragged dimension's kind that come before it; [g] applies to every outer index.
  std::vector<int64_t> outer = dn.lhs_batch_dimensions;
  const std::vector<int64_t>& kind = ragged_contracting ? dn.lhs_contracting_dimensions
                                     : In(dn.lhs_batch_dimensions, ragged) ? dn.lhs_batch_dimensions
                                                                           : lhs_free;
  if (In(dn.lhs_batch_dimensions, ragged)) outer.clear();
  for (int64_t d : kind)
    if (d < ragged && !In(outer, d)) outer.push_back(d);
  const bool broadcast_sizes = sizes.shape().rank() == 1;
  if (!broadcast_sizes && static_cast<int64_t>(outer.size()) + 1 != sizes.shape().rank())
    return InvalidArgument(instr, absl::StrCat("group_sizes ", sizes.shape().ToString(false),
                                               " does not have the outer dimensions of lhs"));
  const std::vector<int64_t> ls = RowMajorStrides(ld), rs = RowMajorStrides(rd);
  const std::vector<int64_t> ss = RowMajorStrides(sizes.shape().dimensions());

  std::vector<int64_t> k_dims;
  for (int64_t d : dn.lhs_contracting_dimensions) k_dims.push_back(ld[d]);
  int64_t k_count = 1;
  for (int64_t d : k_dims) k_count *= d;

  Literal out(instr.shape());
  const std::vector<int64_t>& od = instr.shape().dimensions();
  const int64_t n_out = instr.shape().num_elements();
  const PrimitiveType out_type = instr.shape().element_type();
  if (IsComplex(out_type) || IsComplex(lhs.shape().element_type()))
    return Unimplemented(instr, "complex ragged-dot is not supported by the evaluator");
  const bool integral = !IsFloating(out_type);
  std::vector<int64_t> oi(od.size()), li(ld.size()), ri(rd.size()), ki(k_dims.size());
  for (int64_t linear = 0; linear < n_out; ++linear) {
    int64_t rest = linear;
    for (int d = static_cast<int>(od.size()) - 1; d >= 0; --d) {
      oi[d] = rest % od[d];
      rest /= od[d];
    }
    // Output index: [group,] batch..., lhs free..., rhs free...
    size_t p = ragged_contracting ? 1 : 0;
    for (size_t b = 0; b < dn.lhs_batch_dimensions.size(); ++b, ++p) {
      li[dn.lhs_batch_dimensions[b]] = oi[p];
      ri[dn.rhs_batch_dimensions[b]] = oi[p];
    }
    for (int64_t d : lhs_free) li[d] = oi[p++];
    for (int64_t d : rhs_free) ri[d] = oi[p++];
    double acc = 0;
    int64_t iacc = 0;  // integers accumulate exactly, wrapping as in the type
    for (int64_t k = 0; k < k_count; ++k) {
      int64_t kr = k;
      for (int d = static_cast<int>(k_dims.size()) - 1; d >= 0; --d) {
        ki[d] = kr % k_dims[d];
        kr /= k_dims[d];
      }
      for (size_t c = 0; c < k_dims.size(); ++c) {
        li[dn.lhs_contracting_dimensions[c]] = ki[c];
        ri[dn.rhs_contracting_dimensions[c]] = ki[c];
      }
      // The group holding the ragged coordinate; -1 past the last group. A ragged batch
      // dimension has no group dimension to pick: every batch is an ordinary dot (as JAX).
      int64_t size_base = 0;
      if (!broadcast_sizes)
        for (size_t o = 0; o < outer.size(); ++o) size_base += li[outer[o]] * ss[o];
      int64_t group = ragged_batch ? 0 : -1, start = 0;
      for (int64_t g = 0; g < num_groups && !ragged_batch; ++g) {
        const int64_t n = std::max<int64_t>(sizes.GetAsInt64(size_base + g * ss.back()), 0);
        if (li[ragged] >= start && li[ragged] < start + n) {
          group = g;
          break;
        }
        start += n;
      }
      if (group < 0 || (ragged_contracting && group != oi[0])) continue;
      if (has_group) ri[group_dim] = group;
      int64_t lo = 0, ro = 0;
      for (size_t d = 0; d < ld.size(); ++d) lo += li[d] * ls[d];
      for (size_t d = 0; d < rd.size(); ++d) ro += ri[d] * rs[d];
      if (integral) {
        iacc = static_cast<int64_t>(static_cast<uint64_t>(iacc) +
                                    static_cast<uint64_t>(lhs.GetAsInt64(lo)) *
                                        static_cast<uint64_t>(rhs.GetAsInt64(ro)));
      } else {
        acc += lhs.GetAsDouble(lo) * rhs.GetAsDouble(ro);
      }
    }
    if (!integral) {
      out.SetFromDouble(linear, acc);
    } else if (IsSubByteInt(out_type)) {
      out.data<uint8_t>()[linear] = SubByteBits(out_type, iacc);
    } else {
      PrimitiveTypeSwitch(out_type, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) out.data<T>()[linear] = static_cast<T>(iacc);
      });
    }
  }
  return out;
}

}  // namespace kiln::eval
