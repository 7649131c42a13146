// Evaluation of gather and scatter with full XLA dimension numbers (batching dims,
// index_vector_dim == rank meaning an implicit trailing index dimension of size 1).
//
// Gather clamps each start index so the whole slice stays in bounds, as XLA does. Scatter
// skips an update window whose start would put any part of the window out of bounds (XLA's
// CPU and GPU backends do the same); batching-dimension indices are never out of bounds.
// Updates apply in row-major order of the update indices. Update computations that are a
// single add/multiply/max/min/and/or of the parameters, or `ROOT = parameter(1)`, run as
// native loops; others are called per element through CallFn.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/combiner.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_util.h"

namespace kiln::eval {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The indices array viewed with an explicit index-vector dimension: when
// index_vector_dim == rank, a trailing dimension of size 1 is appended.
struct IndexView {
  const Literal* lit;
  std::vector<int64_t> dims;  // with the index vector dimension
  int64_t ivd;
  std::vector<int64_t> strides;
  // Dims of the "batch" (scatter/gather) positions: dims without ivd, in order.
  std::vector<int64_t> batch_dims;

  int64_t Get(const std::vector<int64_t>& full_index) const {
    int64_t lin = 0;
    for (size_t d = 0; d < dims.size(); ++d) lin += full_index[d] * strides[d];
    return lit->GetAsInt64(lin);
  }
};

absl::StatusOr<IndexView> MakeIndexView(const HloInstruction& instr, const Literal& indices,
                                        int64_t ivd) {
  IndexView v;
  v.lit = &indices;
  v.dims = indices.shape().dimensions();
  if (!IsInteger(indices.shape().element_type()))
    return EvalError(instr, "indices must have an integer type");
  if (ivd < 0 || ivd > static_cast<int64_t>(v.dims.size()))
    return EvalError(instr, absl::StrCat("index_vector_dim ", ivd, " is out of range"));
  if (ivd == static_cast<int64_t>(v.dims.size())) v.dims.push_back(1);
  v.ivd = ivd;
  v.strides = RowMajorStrides(v.dims);
  for (size_t d = 0; d < v.dims.size(); ++d)
    if (static_cast<int64_t>(d) != ivd) v.batch_dims.push_back(v.dims[d]);
  return v;
}

// Full index into the index view for batch position `bi` (over batch_dims), with the index
// vector component left at 0.
// The index of batch position `bi` in the indices array, index vector element 0, into `full`
// (reused: the loops below call this once per window and must not allocate each time).
void FullIndex(const IndexView& v, const std::vector<int64_t>& bi, std::vector<int64_t>& full) {
  full.assign(v.dims.size(), 0);
  size_t j = 0;
  for (size_t d = 0; d < v.dims.size(); ++d)
    if (static_cast<int64_t>(d) != v.ivd) full[d] = bi[j++];
}

absl::Status CheckOperandDims(const HloInstruction& instr, const std::vector<int64_t>& dims,
                              int64_t rank, const char* what) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d])
      return EvalError(instr, absl::StrCat(what, " dimension ", d, " out of range or repeated"));
    seen[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> EvalGather(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 2); !st.ok()) return st;
  if (!instr.attrs().gather_dimension_numbers)
    return EvalError(instr, "missing gather dimension numbers");
  const GatherDimensionNumbers& dn = *instr.attrs().gather_dimension_numbers;
  const Literal& operand = *ops[0];
  const std::vector<int64_t>& odims = operand.shape().dimensions();
  const int64_t orank = operand.shape().rank();
  const std::vector<int64_t>& slice = instr.attrs().gather_slice_sizes;
  if (static_cast<int64_t>(slice.size()) != orank)
    return EvalError(instr, "slice_sizes must have one entry per operand dimension");
  for (int64_t d = 0; d < orank; ++d)
    if (slice[d] < 0 || slice[d] > odims[d])
      return EvalError(instr,
                       absl::StrCat("slice size ", slice[d], " exceeds operand dimension ", d));
  auto iv = MakeIndexView(instr, *ops[1], dn.index_vector_dim);
  if (!iv.ok()) return iv.status();
  if (static_cast<int64_t>(dn.start_index_map.size()) != iv->dims[iv->ivd])
    return EvalError(instr, "start_index_map size differs from the index vector length");
  if (dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size())
    return EvalError(instr, "operand and start-indices batching dimension counts differ");
  for (auto st : {CheckOperandDims(instr, dn.start_index_map, orank, "start_index_map"),
                  CheckOperandDims(instr, dn.collapsed_slice_dims, orank, "collapsed slice"),
                  CheckOperandDims(instr, dn.operand_batching_dims, orank, "operand batching")})
    if (!st.ok()) return st;
  for (int64_t d : dn.start_indices_batching_dims)
    if (d < 0 || d >= static_cast<int64_t>(iv->dims.size()) || d == iv->ivd)
      return EvalError(instr, "start_indices_batching_dims entry out of range");
  // Operand dims that appear as offset dims in the output, ascending.
  std::vector<int64_t> window_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d))
      window_dims.push_back(d);
  if (window_dims.size() != dn.offset_dims.size())
    return EvalError(instr, "offset_dims count does not match the uncollapsed slice dimensions");
  const Shape& rs = instr.shape();
  const int64_t out_rank = static_cast<int64_t>(iv->batch_dims.size() + window_dims.size());
  if (!rs.IsArray() || rs.rank() != out_rank || rs.element_type() != operand.shape().element_type())
    return EvalError(instr, "result shape does not match the gather");
  std::vector<int64_t> out_batch_pos, window_sizes;
  for (int64_t d = 0; d < out_rank; ++d)
    if (!Contains(dn.offset_dims, d)) out_batch_pos.push_back(d);
  for (size_t j = 0; j < window_dims.size(); ++j) {
    window_sizes.push_back(slice[window_dims[j]]);
    if (dn.offset_dims[j] < 0 || dn.offset_dims[j] >= out_rank ||
        rs.dimensions(dn.offset_dims[j]) != slice[window_dims[j]])
      return EvalError(instr, "result offset dimension sizes do not match slice_sizes");
  }
  for (size_t j = 0; j < out_batch_pos.size(); ++j)
    if (rs.dimensions(out_batch_pos[j]) != iv->batch_dims[j])
      return EvalError(instr, "result batch dimension sizes do not match the indices");

  Literal out(rs);
  if (out.element_count() == 0) return out;
  // A collapsed slice dimension may have size 0 (XLA allows bounds 0 and 1), so an empty
  // operand can still give a non-empty result: there is nothing to read, and the result is
  // zeros, as XLA's simplifier makes a gather from a zero-element operand.
  if (operand.element_count() == 0) return out;
  const int64_t esize = ByteSizeOf(rs.element_type());
  const auto ostr = RowMajorStrides(odims);
  const auto rstr = RowMajorStrides(rs.dimensions());
  std::vector<int64_t> bi(iv->batch_dims.size(), 0), wi(window_dims.size(), 0);
  std::vector<int64_t> full, start(orank, 0);
  do {
    FullIndex(*iv, bi, full);
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
      full[iv->ivd] = static_cast<int64_t>(k);
      const int64_t d = dn.start_index_map[k];
      start[d] = std::clamp<int64_t>(iv->Get(full), 0, odims[d] - slice[d]);
    }
    full[iv->ivd] = 0;
    for (size_t k = 0; k < dn.operand_batching_dims.size(); ++k)
      start[dn.operand_batching_dims[k]] = full[dn.start_indices_batching_dims[k]];
    int64_t obase = 0, rbase = 0;
    for (int64_t d = 0; d < orank; ++d) obase += start[d] * ostr[d];
    for (size_t j = 0; j < out_batch_pos.size(); ++j) rbase += bi[j] * rstr[out_batch_pos[j]];
    std::fill(wi.begin(), wi.end(), 0);
    do {
      int64_t o = obase, r = rbase;
      for (size_t j = 0; j < window_dims.size(); ++j) {
        o += wi[j] * ostr[window_dims[j]];
        r += wi[j] * rstr[dn.offset_dims[j]];
      }
      std::memcpy(out.untyped_data() + r * esize, operand.untyped_data() + o * esize, esize);
    } while (NextIndex(wi, window_sizes));
  } while (NextIndex(bi, iv->batch_dims));
  return out;
}

// A scatter of rows (an embedding gradient, segment_sum, x.at[idx].add(rows)): one operand,
// a recognized combiner, the window's last dimension the operand's and the update's last, no
// batching dimensions. The indices are read once into int64, each window's offsets found in
// one walk, then each row is combined by one typed loop (CombineRow), with no per-element
// dispatch. `extent` is the window per operand dimension, `window_dims` the operand
// dimensions the update window covers.
void ScatterRows(const IndexView& iv, const ScatterDimensionNumbers& dn, CombinerKind kind,
                 const std::vector<int64_t>& window_dims, const std::vector<int64_t>& extent,
                 const std::vector<int64_t>& upd_scatter_pos, const Literal& updates,
                 Literal& out) {
  const std::vector<int64_t>& odims = out.shape().dimensions();
  const std::vector<int64_t>& udims = updates.shape().dimensions();
  const auto ostr = RowMajorStrides(odims);
  const auto ustr = RowMajorStrides(udims);
  std::vector<int64_t> idx(iv.lit->element_count());
  PrimitiveTypeSwitch(iv.lit->shape().element_type(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I>) {
      const I* p = iv.lit->data<I>().data();
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(p[i]);
    }
  });
  // Rows of the window: their offsets in the operand and in one window of the update.
  const size_t wr = window_dims.size();
  const int64_t row = extent[window_dims.back()];
  std::vector<std::pair<int64_t, int64_t>> rows;
  std::vector<int64_t> outer, oi;
  for (size_t j = 0; j + 1 < wr; ++j) outer.push_back(extent[window_dims[j]]);
  oi.assign(outer.size(), 0);
  do {
    int64_t o = 0, u = 0;
    for (size_t j = 0; j + 1 < wr; ++j) {
      o += oi[j] * ostr[window_dims[j]];
      u += oi[j] * ustr[dn.update_window_dims[j]];
    }
    rows.emplace_back(o, u);
  } while (NextIndex(oi, outer));
  // Per index vector element k: its operand dimension and the last start that fits.
  const size_t kn = dn.scatter_dims_to_operand_dims.size();
  std::vector<int64_t> kstride(kn), klimit(kn);
  for (size_t k = 0; k < kn; ++k) {
    const int64_t d = dn.scatter_dims_to_operand_dims[k];
    kstride[k] = ostr[d];
    klimit[k] = odims[d] - extent[d];
  }
  const int64_t istep = iv.strides[iv.ivd];
  PrimitiveTypeSwitch(out.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>().data();
    const T* src = updates.data<T>().data();
    if (iv.batch_dims.size() == 1 && kn == 1 && rows.size() == 1 && upd_scatter_pos.size() == 1) {
      // One list of row starts (a segment sum, x.at[ids].add(rows)): the general walk's
      // per-update index arithmetic cost more than combining a 32-wide row.
      int64_t bstride = 0;
      for (size_t d = 0; d < iv.dims.size(); ++d)
        if (static_cast<int64_t>(d) != iv.ivd) bstride = iv.strides[d];
      const int64_t ustep = ustr[upd_scatter_pos[0]];
      const auto [o, u] = rows[0];
      for (int64_t b = 0; b < iv.batch_dims[0]; ++b) {
        const int64_t start = idx[b * bstride];
        if (start < 0 || start > klimit[0]) continue;  // does not fit: skipped
        CombineRow<T>(kind, dst + start * kstride[0] + o, src + b * ustep + u, row);
      }
      return;
    }
    std::vector<int64_t> bi(iv.batch_dims.size(), 0);
    do {
      int64_t ioff = 0, ubase = 0;
      for (size_t d = 0, j = 0; d < iv.dims.size(); ++d)
        if (static_cast<int64_t>(d) != iv.ivd) ioff += bi[j++] * iv.strides[d];
      for (size_t j = 0; j < upd_scatter_pos.size(); ++j) ubase += bi[j] * ustr[upd_scatter_pos[j]];
      int64_t obase = 0;
      bool fits = true;
      for (size_t k = 0; k < kn && fits; ++k) {
        const int64_t start = idx[ioff + static_cast<int64_t>(k) * istep];
        fits = start >= 0 && start <= klimit[k];
        obase += start * kstride[k];
      }
      if (!fits) continue;  // scatter skips a window that does not fit
      for (const auto& [o, u] : rows) CombineRow<T>(kind, dst + obase + o, src + ubase + u, row);
    } while (NextIndex(bi, iv.batch_dims));
  });
}

// Scatters into a copy of the operands, or, with `into` (one operand, which `into` is: the
// caller gives its buffer up), into that literal itself, returning an empty literal.
absl::StatusOr<Literal> EvalScatter(const HloInstruction& instr, Operands ops, const CallFn& call,
                                    Literal* into = nullptr) {
  if (ops.size() < 3 || ops.size() % 2 == 0)
    return EvalError(instr, "expects N operands, indices and N updates");
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i] == nullptr || !ops[i]->shape().IsArray())
      return EvalError(instr, absl::StrCat("operand ", i, " is not an array"));
  if (!instr.attrs().scatter_dimension_numbers)
    return EvalError(instr, "missing scatter dimension numbers");
  if (instr.to_apply() == nullptr) return EvalError(instr, "missing update computation");
  const ScatterDimensionNumbers& dn = *instr.attrs().scatter_dimension_numbers;
  const size_t n = (ops.size() - 1) / 2;
  // A copy: with `into`, ops[0] is moved from below.
  const std::vector<int64_t> odims = ops[0]->shape().dimensions();
  const std::vector<int64_t>& udims = ops[n + 1]->shape().dimensions();
  const int64_t orank = static_cast<int64_t>(odims.size());
  for (size_t i = 0; i < n; ++i) {
    if (ops[i]->shape().dimensions() != odims || ops[n + 1 + i]->shape().dimensions() != udims)
      return EvalError(instr, "operands (and updates) must share dimensions");
    if (ops[i]->shape().element_type() != ops[n + 1 + i]->shape().element_type())
      return EvalError(instr, absl::StrCat("update ", i, " type differs from its operand"));
  }
  auto iv = MakeIndexView(instr, *ops[n], dn.index_vector_dim);
  if (!iv.ok()) return iv.status();
  if (static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) != iv->dims[iv->ivd])
    return EvalError(instr,
                     "scatter_dims_to_operand_dims size differs from the index vector length");
  if (dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size())
    return EvalError(instr, "input and indices batching dimension counts differ");
  for (auto st : {CheckOperandDims(instr, dn.scatter_dims_to_operand_dims, orank,
                                   "scatter_dims_to_operand_dims"),
                  CheckOperandDims(instr, dn.inserted_window_dims, orank, "inserted window"),
                  CheckOperandDims(instr, dn.input_batching_dims, orank, "input batching")})
    if (!st.ok()) return st;
  for (int64_t d : dn.scatter_indices_batching_dims)
    if (d < 0 || d >= static_cast<int64_t>(iv->dims.size()) || d == iv->ivd)
      return EvalError(instr, "scatter_indices_batching_dims entry out of range");
  std::vector<int64_t> window_dims;  // operand dims covered by update window dims
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d))
      window_dims.push_back(d);
  const int64_t urank = static_cast<int64_t>(udims.size());
  if (window_dims.size() != dn.update_window_dims.size() ||
      urank != static_cast<int64_t>(window_dims.size() + iv->batch_dims.size()))
    return EvalError(instr, "update rank does not match update_window_dims and the indices");
  std::vector<int64_t> upd_scatter_pos, window_sizes;
  for (int64_t d = 0; d < urank; ++d)
    if (!Contains(dn.update_window_dims, d)) upd_scatter_pos.push_back(d);
  for (size_t j = 0; j < window_dims.size(); ++j) {
    const int64_t ud = dn.update_window_dims[j];
    if (ud < 0 || ud >= urank || udims[ud] > odims[window_dims[j]])
      return EvalError(instr, "update window dimension exceeds the operand");
    window_sizes.push_back(udims[ud]);
  }
  for (size_t j = 0; j < upd_scatter_pos.size(); ++j)
    if (udims[upd_scatter_pos[j]] != iv->batch_dims[j])
      return EvalError(instr, "update scatter dimension sizes do not match the indices");
  // Full window extent per operand dim (1 on inserted and batching dims).
  std::vector<int64_t> extent(orank, 1);
  for (size_t j = 0; j < window_dims.size(); ++j) extent[window_dims[j]] = window_sizes[j];

  std::vector<Literal> outs;
  const PrimitiveType type = ops[0]->shape().element_type();
  if (into != nullptr && (n != 1 || into != ops[0]))
    return EvalError(instr, "an in-place scatter updates its one operand");
  // Two branches, not `?:`: its common type is `const Literal`, which push_back copies.
  for (size_t i = 0; i < n; ++i) {
    if (into != nullptr)
      outs.push_back(std::move(*into));
    else
      outs.push_back(*ops[i]);
  }
  const Shape& rs = instr.shape();
  if (n == 1 ? !(rs.IsArray() && rs.dimensions() == odims)
             : !(rs.IsTuple() && rs.tuple_size() == static_cast<int>(n)))
    return EvalError(instr, "result shape does not match the operands");

  const CombinerKind kind = n == 1 ? ClassifyCombiner(*instr.to_apply()) : CombinerKind::kOther;
  const bool fast = kind != CombinerKind::kOther && PrimitiveTypeSwitch(type, [&](auto tag) {
                      return CombinerSupports<decltype(tag)>(kind);
                    });
  // The fast path's rows: the window's last dimension is the operand's and the update's last.
  const bool contiguous_rows = !window_dims.empty() && window_dims.back() == orank - 1 &&
                               dn.update_window_dims.back() == urank - 1;
  std::vector<Literal> cur(n), upd(n);
  for (size_t i = 0; i < n; ++i) {
    cur[i] = Literal(Shape::Scalar(outs[i].shape().element_type()));
    upd[i] = Literal(Shape::Scalar(ops[i]->shape().element_type()));
  }
  std::vector<const Literal*> args(2 * n);
  for (size_t i = 0; i < n; ++i) {
    args[i] = &cur[i];
    args[n + i] = &upd[i];
  }

  if (ops[n + 1]->element_count() == 0) goto done;
  if (n == 1 && fast && contiguous_rows && dn.input_batching_dims.empty() &&
      Product(window_sizes) > 0) {
    ScatterRows(*iv, dn, kind, window_dims, extent, upd_scatter_pos, *ops[2], outs[0]);
    goto done;
  }
  {
    const auto ostr = RowMajorStrides(odims);
    const auto ustr = RowMajorStrides(udims);
    std::vector<int64_t> bi(iv->batch_dims.size(), 0), wi(window_dims.size(), 0);
    std::vector<int64_t> full, start(orank, 0);
    do {
      FullIndex(*iv, bi, full);
      std::fill(start.begin(), start.end(), 0);
      for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
        full[iv->ivd] = static_cast<int64_t>(k);
        start[dn.scatter_dims_to_operand_dims[k]] = iv->Get(full);
      }
      full[iv->ivd] = 0;
      for (size_t k = 0; k < dn.input_batching_dims.size(); ++k)
        start[dn.input_batching_dims[k]] = full[dn.scatter_indices_batching_dims[k]];
      bool in_bounds = true;
      for (int64_t d = 0; d < orank; ++d)
        if (start[d] < 0 || start[d] + extent[d] > odims[d]) in_bounds = false;
      if (!in_bounds) continue;
      int64_t obase = 0, ubase = 0;
      for (int64_t d = 0; d < orank; ++d) obase += start[d] * ostr[d];
      for (size_t j = 0; j < upd_scatter_pos.size(); ++j) ubase += bi[j] * ustr[upd_scatter_pos[j]];
      std::fill(wi.begin(), wi.end(), 0);
      if (Product(window_sizes) == 0) continue;
      do {
        int64_t o = obase, u = ubase;
        for (size_t j = 0; j < window_dims.size(); ++j) {
          o += wi[j] * ostr[window_dims[j]];
          u += wi[j] * ustr[dn.update_window_dims[j]];
        }
        if (fast) {
          PrimitiveTypeSwitch(type, [&](auto tag) {
            using T = decltype(tag);
            using A = AccumT<T>;
            T& dst = outs[0].data<T>()[o];
            dst = CastTo<T>(
                ApplyCombiner<A>(kind, CastTo<A>(dst), CastTo<A>(ops[n + 1]->data<T>()[u])));
          });
          continue;
        }
        for (size_t i = 0; i < n; ++i) {
          StoreScalar(cur[i], 0, ScalarAt(outs[i], o));
          StoreScalar(upd[i], 0, ScalarAt(*ops[n + 1 + i], u));
        }
        auto r = call(*instr.to_apply(), args);
        if (!r.ok()) return r.status();
        if (n == 1 && !r->IsTuple()) {
          if (r->shape().element_type() != type || r->element_count() != 1)
            return EvalError(instr, "update computation must return a scalar of the operand type");
          StoreScalar(outs[0], o, *r);
        } else {
          if (!r->IsTuple() || r->elements().size() != n)
            return EvalError(instr, absl::StrCat("update computation must return ", n, " scalars"));
          for (size_t i = 0; i < n; ++i) {
            const Literal& e = r->elements()[i];
            if (e.IsTuple() || e.element_count() != 1 ||
                e.shape().element_type() != outs[i].shape().element_type())
              return EvalError(instr, "update computation result has the wrong type");
            StoreScalar(outs[i], o, e);
          }
        }
      } while (NextIndex(wi, window_sizes));
    } while (NextIndex(bi, iv->batch_dims));
  }
done:
  if (into != nullptr) {
    *into = std::move(outs[0]);
    return Literal();
  }
  if (n == 1) return std::move(outs[0]);
  return Literal::MakeTuple(std::move(outs));
}

}  // namespace

absl::Status EvalScatterInto(const HloInstruction& instr, Literal& operand, const Literal& indices,
                             const Literal& updates, const CallFn& call) {
  if (instr.opcode() != HloOpcode::kScatter)
    return EvalError(instr, "an in-place scatter needs a scatter");
  const Literal* ops[] = {&operand, &indices, &updates};
  return EvalScatter(instr, ops, call, &operand).status();
}

absl::StatusOr<Literal> EvalIndexing(const HloInstruction& instr, Operands ops,
                                     const CallFn& call) {
  switch (instr.opcode()) {
    case HloOpcode::kGather:
      return EvalGather(instr, ops);
    case HloOpcode::kScatter:
      return EvalScatter(instr, ops, call);
    default:
      return EvalError(instr, "not a gather or scatter");
  }
}

}  // namespace kiln::eval
