// Evaluation of reduce, reduce-window, select-and-scatter, map, sort and topk.
//
// Reducers that are a single add/multiply/maximum/minimum/and/or of the two parameters run
// as native loops (16-bit floats accumulate in f32 and round once at the end, as XLA's CPU
// backend does after float normalization); any other reducer is called per element through
// CallFn, in XLA's order: acc = f(acc, x) starting from the init value, elements in
// row-major order of the reduced (or window) dimensions. Padding and base-dilation holes
// of reduce-window are skipped, which equals combining with the init value when that is
// the reducer's identity (XLA's evaluator skips them too).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/combiner.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_util.h"

namespace kiln::eval {
namespace {

// Runs `comp` on `args` and splits its result into `n` scalar literals.
absl::Status CallAndSplit(const CallFn& call, const HloComputation& comp,
                          const std::vector<const Literal*>& args, size_t n,
                          std::vector<Literal>& results) {
  auto r = call(comp, args);
  if (!r.ok()) return r.status();
  if (n == 1 && !r->IsTuple()) {
    if (r->element_count() != 1)
      return absl::InvalidArgumentError("evaluator: computation '" + comp.name() +
                                        "' must return a scalar");
    results[0] = std::move(*r);
    return absl::OkStatus();
  }
  if (!r->IsTuple() || r->elements().size() != n)
    return absl::InvalidArgumentError(absl::StrCat("evaluator: computation '", comp.name(),
                                                   "' must return a tuple of ", n, " scalars"));
  for (size_t i = 0; i < n; ++i) {
    if (r->elements()[i].IsTuple() || r->elements()[i].element_count() != 1)
      return absl::InvalidArgumentError("evaluator: computation '" + comp.name() +
                                        "' must return scalars");
    results[i] = std::move(r->elements()[i]);
  }
  return absl::OkStatus();
}

// The general path of reduce and reduce-window: folds the N inputs' elements at a linear
// index into the N accumulators by calling the reducer computation.
class ReducerFold {
 public:
  ReducerFold(const HloInstruction& instr, Operands ops, size_t n, const std::vector<Literal>& outs,
              const CallFn& call)
      : instr_(instr), ops_(ops), n_(n), outs_(outs), call_(call), xs_(n), args_(2 * n) {
    for (size_t i = 0; i < n; ++i) xs_[i] = Literal(Shape::Scalar(ops[i]->shape().element_type()));
  }

  absl::Status Fold(int64_t lin, std::vector<Literal>& acc) {
    for (size_t i = 0; i < n_; ++i) {
      StoreScalar(xs_[i], 0, ScalarAt(*ops_[i], lin));
      args_[i] = &acc[i];
      args_[n_ + i] = &xs_[i];
    }
    std::vector<Literal> next(n_);
    if (auto st = CallAndSplit(call_, *instr_.to_apply(), args_, n_, next); !st.ok()) return st;
    for (size_t i = 0; i < n_; ++i) {
      if (next[i].shape().element_type() != outs_[i].shape().element_type())
        return EvalError(instr_, "reducer result type differs from the accumulator type");
      acc[i] = std::move(next[i]);
    }
    return absl::OkStatus();
  }

 private:
  const HloInstruction& instr_;
  Operands ops_;
  size_t n_;
  const std::vector<Literal>& outs_;
  const CallFn& call_;
  std::vector<Literal> xs_;
  std::vector<const Literal*> args_;
};

// The array shapes of a result that is one array (n == 1) or a tuple of n arrays.
absl::StatusOr<std::vector<Shape>> ResultShapes(const HloInstruction& instr, size_t n) {
  const Shape& s = instr.shape();
  if (n == 1 && s.IsArray()) return std::vector<Shape>{s};
  if (s.IsTuple() && s.tuple_size() == static_cast<int>(n)) {
    for (const Shape& e : s.tuple_shapes())
      if (!e.IsArray()) return EvalError(instr, "result tuple elements must be arrays");
    return s.tuple_shapes();
  }
  return EvalError(instr, absl::StrCat("result must be ", n == 1 ? "an array" : "a tuple of ",
                                       n == 1 ? "" : std::to_string(n) + " arrays"));
}

Literal Pack(std::vector<Literal> outs) {
  if (outs.size() == 1) return std::move(outs[0]);
  return Literal::MakeTuple(std::move(outs));
}

// Checks the variadic (inputs..., inits...) operand convention; returns N.
absl::StatusOr<size_t> SplitVariadic(const HloInstruction& instr, Operands ops) {
  if (ops.size() < 2 || ops.size() % 2 != 0)
    return EvalError(instr, "expects N inputs followed by N init values");
  const size_t n = ops.size() / 2;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i] == nullptr || !ops[i]->shape().IsArray())
      return EvalError(instr, absl::StrCat("operand ", i, " is not an array"));
  for (size_t i = 0; i < n; ++i) {
    if (ops[i]->shape().dimensions() != ops[0]->shape().dimensions())
      return EvalError(instr, "inputs must have the same dimensions");
    if (ops[n + i]->element_count() != 1)
      return EvalError(instr, absl::StrCat("init value ", i, " must be a scalar"));
    if (ops[n + i]->shape().element_type() != ops[i]->shape().element_type())
      return EvalError(instr, absl::StrCat("init value ", i, " type differs from its input"));
  }
  if (instr.to_apply() == nullptr) return EvalError(instr, "missing to_apply computation");
  return n;
}

absl::StatusOr<Literal> EvalReduce(const HloInstruction& instr, Operands ops, const CallFn& call) {
  auto n_or = SplitVariadic(instr, ops);
  if (!n_or.ok()) return n_or.status();
  const size_t n = *n_or;
  const std::vector<int64_t>& in_dims = ops[0]->shape().dimensions();
  const int rank = static_cast<int>(in_dims.size());
  std::vector<bool> reduced(rank, false);
  for (int64_t d : instr.dimensions()) {
    if (d < 0 || d >= rank || reduced[d])
      return EvalError(instr, absl::StrCat("reduce dimension ", d, " is out of range or repeated"));
    reduced[d] = true;
  }
  std::vector<int64_t> out_dims, red_dims, red_list, keep_list;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      red_dims.push_back(in_dims[d]);
      red_list.push_back(d);
    } else {
      out_dims.push_back(in_dims[d]);
      keep_list.push_back(d);
    }
  }
  auto shapes = ResultShapes(instr, n);
  if (!shapes.ok()) return shapes.status();
  for (size_t i = 0; i < n; ++i)
    if ((*shapes)[i].dimensions() != out_dims ||
        (*shapes)[i].element_type() != ops[i]->shape().element_type())
      return EvalError(instr, "result shape does not match the kept input dimensions");
  std::vector<Literal> outs;
  for (const Shape& s : *shapes) outs.emplace_back(s);
  const int64_t out_n = Product(out_dims);
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);

  const CombinerKind kind = n == 1 ? ClassifyCombiner(*instr.to_apply()) : CombinerKind::kOther;
  bool done = false;
  if (kind != CombinerKind::kOther) {
    PrimitiveTypeSwitch(ops[0]->shape().element_type(), [&](auto tag) {
      using T = decltype(tag);
      using A = SumT<T>;
      if constexpr (CombinerSupports<T>(CombinerKind::kAdd)) {
        if (!CombinerSupports<T>(kind)) return;
        std::vector<A> acc(out_n, CastTo<A>(ops[1]->data<T>()[0]));
        // Output offset strides per input dimension (0 on reduced dimensions).
        std::vector<int64_t> ostr(rank, 0);
        auto out_strides = RowMajorStrides(out_dims);
        for (size_t j = 0; j < keep_list.size(); ++j) ostr[keep_list[j]] = out_strides[j];
        auto in = ops[0]->data<T>();
        const int64_t total = ops[0]->element_count();
        std::vector<int64_t> idx(rank, 0);
        int64_t off = 0;
        for (int64_t i = 0; i < total; ++i) {
          acc[off] = ApplyCombiner<A>(kind, acc[off], CastTo<A>(in[i]));
          for (int d = rank - 1; d >= 0; --d) {
            off += ostr[d];
            if (++idx[d] < in_dims[d]) break;
            off -= ostr[d] * in_dims[d];
            idx[d] = 0;
          }
        }
        auto od = outs[0].data<T>();
        for (int64_t j = 0; j < out_n; ++j) od[j] = CastTo<T>(acc[j]);
        done = true;
      }
    });
  }
  if (done) return Pack(std::move(outs));

  // General path: call the reducer per element.
  std::vector<Literal> acc(n);
  ReducerFold fold(instr, ops, n, outs, call);
  std::vector<int64_t> oi(out_dims.size(), 0), ri(red_dims.size(), 0);
  if (out_n == 0) return Pack(std::move(outs));
  int64_t olinear = 0;
  do {
    int64_t base = 0;
    for (size_t j = 0; j < keep_list.size(); ++j) base += oi[j] * in_strides[keep_list[j]];
    for (size_t i = 0; i < n; ++i) acc[i] = *ops[n + i];
    if (Product(red_dims) > 0) {
      std::fill(ri.begin(), ri.end(), 0);
      do {
        int64_t lin = base;
        for (size_t j = 0; j < red_list.size(); ++j) lin += ri[j] * in_strides[red_list[j]];
        if (auto st = fold.Fold(lin, acc); !st.ok()) return st;
      } while (NextIndex(ri, red_dims));
    }
    for (size_t i = 0; i < n; ++i) StoreScalar(outs[i], olinear, acc[i]);
    ++olinear;
  } while (NextIndex(oi, out_dims));
  return Pack(std::move(outs));
}

// Input position of window element `w` for output position `o` along one dimension, or
// -1 when it falls on padding or a base-dilation hole.
inline int64_t WindowInput(const WindowDimension& wd, int64_t o, int64_t w, int64_t in_size) {
  int64_t pos = o * wd.stride - wd.padding_low + w * wd.window_dilation;
  if (pos < 0) return -1;
  if (wd.base_dilation != 1) {  // the divisions cost more than the rest of a visit
    if (pos % wd.base_dilation != 0) return -1;
    pos /= wd.base_dilation;
  }
  return pos < in_size ? pos : -1;
}

absl::StatusOr<std::vector<WindowDimension>> GetWindow(const HloInstruction& instr, int rank) {
  if (!instr.attrs().window) {
    if (rank == 0) return std::vector<WindowDimension>{};
    return EvalError(instr, "missing window");
  }
  const auto& w = instr.attrs().window->dimensions;
  if (static_cast<int>(w.size()) != rank)
    return EvalError(instr,
                     absl::StrCat("window has ", w.size(), " dimensions, operand rank is ", rank));
  for (const WindowDimension& d : w)
    if (d.stride < 1 || d.base_dilation < 1 || d.window_dilation < 1 || d.size < 0)
      return EvalError(instr, "window sizes, strides and dilations must be positive");
  return w;
}

absl::StatusOr<Literal> EvalReduceWindow(const HloInstruction& instr, Operands ops,
                                         const CallFn& call) {
  auto n_or = SplitVariadic(instr, ops);
  if (!n_or.ok()) return n_or.status();
  const size_t n = *n_or;
  const std::vector<int64_t>& in_dims = ops[0]->shape().dimensions();
  const int rank = static_cast<int>(in_dims.size());
  auto win_or = GetWindow(instr, rank);
  if (!win_or.ok()) return win_or.status();
  const std::vector<WindowDimension>& win = *win_or;
  auto shapes = ResultShapes(instr, n);
  if (!shapes.ok()) return shapes.status();
  for (size_t i = 0; i < n; ++i)
    if ((*shapes)[i].rank() != rank ||
        (*shapes)[i].element_type() != ops[i]->shape().element_type())
      return EvalError(instr, "result rank or type does not match the inputs");
  const std::vector<int64_t>& out_dims = (*shapes)[0].dimensions();
  std::vector<Literal> outs;
  for (const Shape& s : *shapes) outs.emplace_back(s);
  if (outs[0].element_count() == 0) return Pack(std::move(outs));
  std::vector<int64_t> wsize(rank);
  for (int d = 0; d < rank; ++d) wsize[d] = win[d].size;
  const auto in_strides = RowMajorStrides(in_dims);

  // Visits the input linear index of every in-bounds element of the window at `oi`.
  std::vector<int64_t> wi(rank, 0);
  auto for_window = [&](const std::vector<int64_t>& oi, auto&& visit) -> absl::Status {
    if (Product(wsize) == 0) return absl::OkStatus();
    std::fill(wi.begin(), wi.end(), 0);
    do {
      int64_t lin = 0;
      bool valid = true;
      for (int d = 0; d < rank; ++d) {
        int64_t p = WindowInput(win[d], oi[d], wi[d], in_dims[d]);
        if (p < 0) {
          valid = false;
          break;
        }
        lin += p * in_strides[d];
      }
      if (valid)
        if (auto st = visit(lin); !st.ok()) return st;
    } while (NextIndex(wi, wsize));
    return absl::OkStatus();
  };

  const CombinerKind kind = n == 1 ? ClassifyCombiner(*instr.to_apply()) : CombinerKind::kOther;
  bool done = false;
  if (kind != CombinerKind::kOther) {
    PrimitiveTypeSwitch(ops[0]->shape().element_type(), [&](auto tag) {
      using T = decltype(tag);
      using A = SumT<T>;
      if constexpr (CombinerSupports<T>(CombinerKind::kAdd)) {
        if (!CombinerSupports<T>(kind)) return;
        auto in = ops[0]->data<T>();
        auto od = outs[0].data<T>();
        const A init = CastTo<A>(ops[1]->data<T>()[0]);
        std::vector<int64_t> oi(rank, 0);
        int64_t olinear = 0;
        do {
          A acc = init;
          (void)for_window(oi, [&](int64_t lin) {
            acc = ApplyCombiner<A>(kind, acc, CastTo<A>(in[lin]));
            return absl::OkStatus();
          });
          od[olinear++] = CastTo<T>(acc);
        } while (NextIndex(oi, out_dims));
        done = true;
      }
    });
  }
  if (done) return Pack(std::move(outs));

  std::vector<Literal> acc(n);
  ReducerFold fold(instr, ops, n, outs, call);
  std::vector<int64_t> oi(rank, 0);
  int64_t olinear = 0;
  do {
    for (size_t i = 0; i < n; ++i) acc[i] = *ops[n + i];
    auto st = for_window(oi, [&](int64_t lin) -> absl::Status { return fold.Fold(lin, acc); });
    if (!st.ok()) return st;
    for (size_t i = 0; i < n; ++i) StoreScalar(outs[i], olinear, acc[i]);
    ++olinear;
  } while (NextIndex(oi, out_dims));
  return Pack(std::move(outs));
}

// Reads a pred (or any) scalar result as a bool.
absl::StatusOr<bool> CallPredicate(const CallFn& call, const HloComputation& comp,
                                   const std::vector<const Literal*>& args) {
  auto r = call(comp, args);
  if (!r.ok()) return r.status();
  if (r->IsTuple() || r->element_count() != 1)
    return absl::InvalidArgumentError("evaluator: computation '" + comp.name() +
                                      "' must return a scalar pred");
  return r->GetAsDouble(0) != 0;
}

// Select-and-scatter with a plain compare and a combiner the fast paths know (a max-pool's
// gradient: ge, add), on typed pointers: no scalar literals or type switch per visit.
template <typename T>
void TypedSelectAndScatter(const std::vector<WindowDimension>& win,
                           const std::vector<int64_t>& in_dims,
                           const std::vector<int64_t>& src_dims, const T* operand, const T* source,
                           T* out, const SimpleCompare& cmp, CombinerKind kind) {
  using A = AccumT<T>;
  const int rank = static_cast<int>(in_dims.size());
  const auto in_strides = RowMajorStrides(in_dims);
  std::vector<int64_t> si(rank, 0), wi(rank, 0), wsize(rank);
  for (int d = 0; d < rank; ++d) wsize[d] = win[d].size;
  // Without base dilation, a window wholly inside the input is its first position plus
  // fixed offsets, one per window element (in row-major order, as the general loop visits).
  bool plain = true;
  for (const WindowDimension& w : win) plain &= w.base_dilation == 1;
  std::vector<int64_t> offsets;
  if (plain && Product(wsize) > 0) {
    do {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) off += wi[d] * win[d].window_dilation * in_strides[d];
      offsets.push_back(off);
    } while (NextIndex(wi, wsize));
  }
  const auto better = [&](int64_t selected, int64_t lin) {
    T a = operand[selected], b = operand[lin];
    if (cmp.lhs_param == 1) std::swap(a, b);
    return !CompareScalars<T>(a, b, cmp.direction, cmp.total_order);
  };
  int64_t slinear = 0;
  do {
    int64_t selected = -1;
    bool whole = plain;
    int64_t first = 0;
    for (int d = 0; d < rank && whole; ++d) {
      const int64_t p = si[d] * win[d].stride - win[d].padding_low;
      whole = p >= 0 && p + (wsize[d] - 1) * win[d].window_dilation < in_dims[d];
      first += p * in_strides[d];
    }
    if (whole) {
      selected = first + offsets[0];
      for (size_t k = 1; k < offsets.size(); ++k)
        if (better(selected, first + offsets[k])) selected = first + offsets[k];
    } else {
      std::fill(wi.begin(), wi.end(), 0);
      do {
        int64_t lin = 0;
        bool valid = true;
        for (int d = 0; d < rank && valid; ++d) {
          const int64_t p = WindowInput(win[d], si[d], wi[d], in_dims[d]);
          valid = p >= 0;
          lin += p * in_strides[d];
        }
        if (!valid) continue;
        if (selected < 0 || better(selected, lin)) selected = lin;
      } while (NextIndex(wi, wsize));
    }
    if (selected >= 0)
      out[selected] =
          CastTo<T>(ApplyCombiner<A>(kind, CastTo<A>(out[selected]), CastTo<A>(source[slinear])));
    ++slinear;
  } while (NextIndex(si, src_dims));
}

absl::StatusOr<Literal> EvalSelectAndScatter(const HloInstruction& instr, Operands ops,
                                             const CallFn& call) {
  if (auto st = ExpectOperands(instr, ops, 3); !st.ok()) return st;
  if (instr.called_computations().size() != 2)
    return EvalError(instr, "expects select and scatter computations");
  const HloComputation& select = *instr.select();
  const HloComputation& scatter = *instr.scatter();
  const Literal& operand = *ops[0];
  const Literal& source = *ops[1];
  const Literal& init = *ops[2];
  const std::vector<int64_t>& in_dims = operand.shape().dimensions();
  const int rank = static_cast<int>(in_dims.size());
  auto win_or = GetWindow(instr, rank);
  if (!win_or.ok()) return win_or.status();
  const std::vector<WindowDimension>& win = *win_or;
  if (source.shape().rank() != rank) return EvalError(instr, "source rank differs from operand");
  if (init.element_count() != 1) return EvalError(instr, "init value must be a scalar");
  const PrimitiveType type = operand.shape().element_type();
  if (source.shape().element_type() != type || init.shape().element_type() != type)
    return EvalError(instr, "operand, source and init value types differ");
  if (!instr.shape().IsArray() || instr.shape().dimensions() != in_dims)
    return EvalError(instr, "result shape must equal the operand shape");

  Literal out(instr.shape());
  FillWithScalar(out, init);
  const auto in_strides = RowMajorStrides(in_dims);
  std::vector<int64_t> wsize(rank);
  for (int d = 0; d < rank; ++d) wsize[d] = win[d].size;
  const std::optional<SimpleCompare> sel_fast = ClassifyCompare(select);
  const bool sel_is_fast = sel_fast && sel_fast->lhs_param != sel_fast->rhs_param &&
                           sel_fast->lhs_param < 2 && sel_fast->rhs_param < 2 && !IsComplex(type);
  const CombinerKind scat_kind = ClassifyCombiner(scatter);

  Literal cur(Shape::Scalar(type)), cand(Shape::Scalar(type)), src(Shape::Scalar(type));
  std::vector<int64_t> si(rank, 0), wi(rank, 0);
  if (source.element_count() == 0 || Product(wsize) == 0) return out;
  if (sel_is_fast && scat_kind != CombinerKind::kOther) {
    const bool typed = PrimitiveTypeSwitch(type, [&](auto tag) {
      using T = decltype(tag);
      if (!CombinerSupports<T>(scat_kind)) return false;
      TypedSelectAndScatter<T>(win, in_dims, source.shape().dimensions(), operand.data<T>().data(),
                               source.data<T>().data(), out.data<T>().data(), *sel_fast, scat_kind);
      return true;
    });
    if (typed) return out;
  }
  int64_t slinear = 0;
  do {
    // Pick the selected element of this window.
    int64_t selected = -1;
    std::fill(wi.begin(), wi.end(), 0);
    do {
      int64_t lin = 0;
      bool valid = true;
      for (int d = 0; d < rank && valid; ++d) {
        int64_t p = WindowInput(win[d], si[d], wi[d], in_dims[d]);
        if (p < 0) valid = false;
        lin += p * in_strides[d];
      }
      if (!valid) continue;
      if (selected < 0) {
        selected = lin;
        continue;
      }
      // select(current, candidate) true keeps the current selection.
      bool keep;
      if (sel_is_fast) {
        keep = PrimitiveTypeSwitch(type, [&](auto tag) {
          using T = decltype(tag);
          T a = operand.data<T>()[selected], b = operand.data<T>()[lin];
          if (sel_fast->lhs_param == 1) std::swap(a, b);
          return CompareScalars<T>(a, b, sel_fast->direction, sel_fast->total_order);
        });
      } else {
        StoreScalar(cur, 0, ScalarAt(operand, selected));
        StoreScalar(cand, 0, ScalarAt(operand, lin));
        auto k = CallPredicate(call, select, {&cur, &cand});
        if (!k.ok()) return k.status();
        keep = *k;
      }
      if (!keep) selected = lin;
    } while (NextIndex(wi, wsize));
    if (selected >= 0) {
      bool fast = false;
      if (scat_kind != CombinerKind::kOther) {
        fast = PrimitiveTypeSwitch(type, [&](auto tag) {
          using T = decltype(tag);
          using A = AccumT<T>;
          if (!CombinerSupports<T>(scat_kind)) return false;
          T& o = out.data<T>()[selected];
          o = CastTo<T>(
              ApplyCombiner<A>(scat_kind, CastTo<A>(o), CastTo<A>(source.data<T>()[slinear])));
          return true;
        });
      }
      if (!fast) {
        StoreScalar(cur, 0, ScalarAt(out, selected));
        StoreScalar(src, 0, ScalarAt(source, slinear));
        std::vector<Literal> res(1);
        if (auto st = CallAndSplit(call, scatter, {&cur, &src}, 1, res); !st.ok()) return st;
        if (res[0].shape().element_type() != type)
          return EvalError(instr, "scatter computation result type differs from the operand");
        StoreScalar(out, selected, res[0]);
      }
    }
    ++slinear;
  } while (NextIndex(si, source.shape().dimensions()));
  return out;
}

absl::StatusOr<Literal> EvalMap(const HloInstruction& instr, Operands ops, const CallFn& call) {
  if (ops.empty()) return EvalError(instr, "expects at least one operand");
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ops[i]->shape().IsArray() || ops[i]->shape().dimensions() != ops[0]->shape().dimensions())
      return EvalError(instr, "operands must be arrays of the same dimensions");
  if (instr.to_apply() == nullptr) return EvalError(instr, "missing to_apply computation");
  if (!instr.shape().IsArray() || instr.shape().dimensions() != ops[0]->shape().dimensions())
    return EvalError(instr, "result dimensions must equal the operands'");
  Literal out(instr.shape());
  std::vector<Literal> xs;
  for (const Literal* o : ops) xs.emplace_back(Shape::Scalar(o->shape().element_type()));
  std::vector<const Literal*> args;
  for (const Literal& x : xs) args.push_back(&x);
  for (int64_t i = 0; i < out.element_count(); ++i) {
    for (size_t j = 0; j < ops.size(); ++j) StoreScalar(xs[j], 0, ScalarAt(*ops[j], i));
    std::vector<Literal> res(1);
    if (auto st = CallAndSplit(call, *instr.to_apply(), args, 1, res); !st.ok()) return st;
    if (res[0].shape().element_type() != out.shape().element_type())
      return EvalError(instr, "mapped computation result type differs from the result");
    StoreScalar(out, i, res[0]);
  }
  return out;
}

// Permutes, along `dim`, each of `arrays` (same dims) by the per-slice orders that
// `order_slice(base, stride, len, perm)` produces; returns the permuted copies.
template <typename OrderFn>
absl::StatusOr<std::vector<Literal>> SortSlices(const std::vector<const Literal*>& arrays,
                                                int64_t dim, OrderFn&& order_slice) {
  const std::vector<int64_t>& dims = arrays[0]->shape().dimensions();
  std::vector<Literal> outs;
  for (const Literal* a : arrays) outs.emplace_back(a->shape());
  if (arrays[0]->element_count() == 0) return outs;
  const auto strides = RowMajorStrides(dims);
  const int64_t len = dims[dim], stride = strides[dim];
  std::vector<int64_t> outer = dims;
  outer[dim] = 1;
  std::vector<int64_t> oi(dims.size(), 0), perm(len);
  do {
    int64_t base = 0;
    for (size_t d = 0; d < dims.size(); ++d) base += oi[d] * strides[d];
    std::iota(perm.begin(), perm.end(), 0);
    if (auto st = order_slice(base, stride, len, perm); !st.ok()) return st;
    for (size_t a = 0; a < arrays.size(); ++a) {
      const int64_t esize = ByteSizeOf(arrays[a]->shape().element_type());
      for (int64_t j = 0; j < len; ++j)
        std::memcpy(outs[a].untyped_data() + (base + j * stride) * esize,
                    arrays[a]->untyped_data() + (base + perm[j] * stride) * esize, esize);
    }
  } while (NextIndex(oi, outer));
  return outs;
}

// A float sort as JAX writes its comparator: keys with -0 made +0 and every NaN made one
// NaN, compared in total order (NaN after +inf ascending), the other operands ignored.
struct CanonicalKeyOrder {
  size_t key;
  ComparisonDirection dir;
};

double Canonical(double v) {
  if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
  return v == 0 ? 0.0 : v;
}

// Which operand and direction `cmp` orders by in that way, found by calling it on pairs of
// telling keys (zeros of both signs, NaNs of both signs, infinities, ties) with the other
// operands set two ways; nullopt when it computes anything else.
std::optional<CanonicalKeyOrder> ProbeCanonicalKeyOrder(const HloComputation& cmp,
                                                        const std::vector<const Literal*>& arrays,
                                                        const CallFn& call) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double keys[] = {-inf, -2, -0.0, 0.0, 0.5, 2, inf, nan, -nan};
  const size_t n = arrays.size();
  for (size_t k = 0; k < n; ++k) {
    const PrimitiveType kt = arrays[k]->shape().element_type();
    if (!IsFloating(kt) || IsComplex(kt)) continue;
    for (ComparisonDirection dir : {ComparisonDirection::kLt, ComparisonDirection::kGt}) {
      bool all = true;
      for (double a : keys) {
        for (double b : keys) {
          for (double other : {0.0, 1.0}) {
            std::vector<Literal> values;
            for (size_t o = 0; o < n; ++o) {
              const Shape scalar = Shape::Scalar(arrays[o]->shape().element_type());
              values.push_back(Literal::FromDoubles(scalar, {o == k ? a : other}));
              values.push_back(Literal::FromDoubles(scalar, {o == k ? b : 1 - other}));
            }
            std::vector<const Literal*> args;
            for (const Literal& v : values) args.push_back(&v);
            absl::StatusOr<bool> got = CallPredicate(call, cmp, args);
            const bool want = CompareScalars<double>(Canonical(a), Canonical(b), dir, true);
            if (!got.ok() || *got != want) {
              all = false;
              break;
            }
          }
          if (!all) break;
        }
        if (!all) break;
      }
      if (all) return CanonicalKeyOrder{k, dir};
    }
  }
  return std::nullopt;
}

absl::StatusOr<Literal> EvalSort(const HloInstruction& instr, Operands ops, const CallFn& call) {
  if (ops.empty()) return EvalError(instr, "expects at least one operand");
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ops[i]->shape().IsArray() || ops[i]->shape().dimensions() != ops[0]->shape().dimensions())
      return EvalError(instr, "operands must be arrays of the same dimensions");
  if (instr.to_apply() == nullptr) return EvalError(instr, "missing comparator");
  const int rank = ops[0]->shape().rank();
  if (instr.dimensions().size() != 1 || instr.dimensions()[0] < 0 || instr.dimensions()[0] >= rank)
    return EvalError(instr, "expects one sort dimension within the operand rank");
  const int64_t dim = instr.dimensions()[0];
  const size_t n = ops.size();
  auto shapes = ResultShapes(instr, n);
  if (!shapes.ok()) return shapes.status();
  const HloComputation& cmp = *instr.to_apply();
  if (cmp.num_parameters() != static_cast<int>(2 * n))
    return EvalError(instr, "comparator must take 2 scalars per operand");
  std::vector<const Literal*> arrays(ops.begin(), ops.end());

  // Fast path: comparator is compare(p[2k], p[2k+1]) (or reversed) of one operand.
  std::optional<SimpleCompare> sc = ClassifyCompare(cmp);
  if (sc && sc->lhs_param / 2 == sc->rhs_param / 2 && sc->lhs_param != sc->rhs_param &&
      sc->lhs_param < static_cast<int64_t>(2 * n) &&
      !IsComplex(ops[sc->lhs_param / 2]->shape().element_type())) {
    const Literal& key = *ops[sc->lhs_param / 2];
    const bool swapped = sc->lhs_param % 2 == 1;
    auto outs = SortSlices(
        arrays, dim, [&](int64_t base, int64_t stride, int64_t len, std::vector<int64_t>& perm) {
          PrimitiveTypeSwitch(key.shape().element_type(), [&](auto tag) {
            using T = decltype(tag);
            auto d = key.data<T>();
            std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
              T a = d[base + i * stride], b = d[base + j * stride];
              return swapped ? CompareScalars<T>(b, a, sc->direction, sc->total_order)
                             : CompareScalars<T>(a, b, sc->direction, sc->total_order);
            });
          });
          return absl::OkStatus();
        });
    if (!outs.ok()) return outs.status();
    return Pack(std::move(*outs));
  }

  // Fast path: JAX's float comparator (canonical NaN and zero, total order).
  if (std::optional<CanonicalKeyOrder> order = ProbeCanonicalKeyOrder(cmp, arrays, call)) {
    const Literal& key = *arrays[order->key];
    auto outs = SortSlices(
        arrays, dim, [&](int64_t base, int64_t stride, int64_t len, std::vector<int64_t>& perm) {
          std::vector<int64_t> ranks(len);
          PrimitiveTypeSwitch(key.shape().element_type(), [&](auto tag) {
            using T = decltype(tag);
            if constexpr (kIsFloatT<T> || kIsNarrowFloatT<T>) {
              auto d = key.data<T>();
              for (int64_t i = 0; i < len; ++i) {
                const T v = d[base + i * stride];
                double wide;
                if constexpr (std::is_same_v<T, double>) {
                  wide = v;
                } else {
                  wide = static_cast<double>(static_cast<float>(v));
                }
                ranks[i] = TotalOrderKey(Canonical(wide));
              }
            }
          });
          std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
            return CompareScalars<int64_t>(ranks[i], ranks[j], order->dir, false);
          });
          return absl::OkStatus();
        });
    if (!outs.ok()) return outs.status();
    return Pack(std::move(*outs));
  }

  std::vector<Literal> lhs, rhs;
  for (const Literal* a : arrays) {
    lhs.emplace_back(Shape::Scalar(a->shape().element_type()));
    rhs.emplace_back(Shape::Scalar(a->shape().element_type()));
  }
  std::vector<const Literal*> args(2 * n);
  for (size_t k = 0; k < n; ++k) {
    args[2 * k] = &lhs[k];
    args[2 * k + 1] = &rhs[k];
  }
  auto outs = SortSlices(
      arrays, dim,
      [&](int64_t base, int64_t stride, int64_t len, std::vector<int64_t>& perm) -> absl::Status {
        absl::Status error;
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
          if (!error.ok()) return false;
          for (size_t k = 0; k < n; ++k) {
            StoreScalar(lhs[k], 0, ScalarAt(*arrays[k], base + i * stride));
            StoreScalar(rhs[k], 0, ScalarAt(*arrays[k], base + j * stride));
          }
          auto r = CallPredicate(call, cmp, args);
          if (!r.ok()) {
            error = r.status();
            return false;
          }
          return *r;
        });
        return error;
      });
  if (!outs.ok()) return outs.status();
  return Pack(std::move(*outs));
}

absl::StatusOr<Literal> EvalTopK(const HloInstruction& instr, Operands ops) {
  if (auto st = ExpectOperands(instr, ops, 1); !st.ok()) return st;
  const Shape& s = ops[0]->shape();
  if (s.rank() < 1) return EvalError(instr, "operand must have rank >= 1");
  const int64_t len = s.dimensions(s.rank() - 1), k = instr.attrs().k;
  if (k < 0 || k > len)
    return EvalError(instr, absl::StrCat("k=", k, " exceeds the last dimension ", len));
  std::vector<int64_t> out_dims = s.dimensions();
  out_dims.back() = k;
  const Shape& rs = instr.shape();
  if (!rs.IsTuple() || rs.tuple_size() != 2 || rs.tuple_shapes(0).dimensions() != out_dims ||
      rs.tuple_shapes(1).dimensions() != out_dims ||
      rs.tuple_shapes(0).element_type() != s.element_type() ||
      !IsInteger(rs.tuple_shapes(1).element_type()))
    return EvalError(instr, "result must be (values, indices) with the last dimension k");
  Literal values(rs.tuple_shapes(0)), indices(rs.tuple_shapes(1));
  const int64_t rows = len == 0 ? 0 : s.num_elements() / len;
  const bool largest = instr.attrs().largest;
  std::vector<int64_t> perm(len), keys(len);
  PrimitiveTypeSwitch(s.element_type(), [&](auto tag) {
    using T = decltype(tag);
    auto d = ops[0]->data<T>();
    auto vd = values.data<T>();
    // Floats order by the total order (NaN above +inf), as one integer key per element;
    // ties keep the lower index first. Only the k first are ordered (partial_sort: n log k,
    // not n log n).
    constexpr bool kKeyed =
        (kIsFloatT<T> || kIsNarrowFloatT<T> || std::is_integral_v<T>)&&!std::is_same_v<T, uint64_t>;
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = d.data() + r * len;
      std::iota(perm.begin(), perm.end(), 0);
      if constexpr (kKeyed) {
        for (int64_t i = 0; i < len; ++i) {
          int64_t key;
          if constexpr (std::is_integral_v<T>) {
            key = static_cast<int64_t>(row[i]);
          } else if constexpr (std::is_same_v<T, double>) {
            key = TotalOrderKey(row[i]);
          } else {
            key = TotalOrderKey(static_cast<double>(static_cast<float>(row[i])));
          }
          keys[i] = key;
        }
        const auto before = [&](int64_t i, int64_t j) {
          if (keys[i] != keys[j]) return largest ? keys[i] > keys[j] : keys[i] < keys[j];
          return i < j;
        };
        if (k <= 64) {
          // A small k: one pass keeping the best k in order, most elements rejected by one
          // comparison with the k-th best (a heap's partial_sort was 3x slower here).
          int64_t n = 0;
          for (int64_t i = 0; i < len; ++i) {
            if (n == k && !before(i, perm[k - 1])) continue;
            int64_t pos = n < k ? n++ : k - 1;
            for (; pos > 0 && before(i, perm[pos - 1]); --pos) perm[pos] = perm[pos - 1];
            perm[pos] = i;
          }
        } else {
          std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), before);
        }
      } else {
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
          return CompareScalars<T>(row[i], row[j],
                                   largest ? ComparisonDirection::kGt : ComparisonDirection::kLt,
                                   /*total_order=*/true);
        });
      }
      for (int64_t j = 0; j < k; ++j) {
        vd[r * k + j] = row[perm[j]];
        indices.SetFromDouble(r * k + j, static_cast<double>(perm[j]));
      }
    }
  });
  return Literal::MakeTuple({std::move(values), std::move(indices)});
}

}  // namespace

absl::StatusOr<Literal> EvalReduction(const HloInstruction& instr, Operands ops,
                                      const CallFn& call) {
  switch (instr.opcode()) {
    case HloOpcode::kReduce:
      return EvalReduce(instr, ops, call);
    case HloOpcode::kReduceWindow:
      return EvalReduceWindow(instr, ops, call);
    case HloOpcode::kSelectAndScatter:
      return EvalSelectAndScatter(instr, ops, call);
    case HloOpcode::kMap:
      return EvalMap(instr, ops, call);
    case HloOpcode::kSort:
      return EvalSort(instr, ops, call);
    case HloOpcode::kTopK:
      return EvalTopK(instr, ops);
    default:
      return EvalError(instr, "not a reduction opcode");
  }
}

}  // namespace kiln::eval
