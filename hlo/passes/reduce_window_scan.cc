// Running reductions as log-step scans (see reduce_window_scan.h).
#include "hlo/passes/reduce_window_scan.h"

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "hlo/collectives/reduction.h"
#include "hlo/passes/pass_util.h"

namespace kiln {

std::optional<RunningScan> RunningScanOf(const HloInstruction& rw, int64_t min_length) {
  if (rw.opcode() != HloOpcode::kReduceWindow || rw.operand_count() != 2 || !rw.shape().IsArray() ||
      !rw.attrs().window)
    return std::nullopt;
  const Shape& x = rw.operand(0)->shape();
  if (!x.IsArray() || x.dimensions() != rw.shape().dimensions()) return std::nullopt;
  const std::vector<WindowDimension>& win = rw.attrs().window->dimensions;
  if (static_cast<int>(win.size()) != x.rank()) return std::nullopt;
  std::optional<RunningScan> scan;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const WindowDimension& w = win[d];
    if (w.stride != 1 || w.window_dilation != 1 || w.base_dilation != 1 || w.window_reversal)
      return std::nullopt;
    if (w.size == 1 && w.padding_low == 0 && w.padding_high == 0) continue;
    const int64_t n = x.dimensions(d);
    if (scan || w.size != n || n < min_length) return std::nullopt;
    if (w.padding_low == n - 1 && w.padding_high == 0) {
      scan = RunningScan{d, false};
    } else if (w.padding_low == 0 && w.padding_high == n - 1) {
      scan = RunningScan{d, true};
    } else {
      return std::nullopt;
    }
  }
  return scan;
}

namespace {

// True when every instruction of `reducer` is a scalar parameter, constant or elementwise op
// (jax.lax.cumlogsumexp's logaddexp: max, subtract, abs, exp, log1p, select on isnan).
bool IsElementwiseReducer(const HloComputation& reducer) {
  if (reducer.num_parameters() != 2 || reducer.root() == nullptr) return false;
  for (const HloInstruction* i : reducer.instructions()) {
    if (!i->shape().IsArray() || i->shape().rank() != 0) return false;
    const HloOpcode op = i->opcode();
    if (op != HloOpcode::kParameter && op != HloOpcode::kConstant && !IsElementwiseOpcode(op))
      return false;
  }
  // One op of the two parameters must be an associative one (add, multiply, minimum,
  // maximum, and, or); a subtract's window has one order only.
  if (reducer.instruction_count() == 3 && !MatchReductionKind(reducer)) return false;
  return true;
}

// Elements [start, start + len) of `v` along dimension d.
HloInstruction* SliceAlong(HloComputation* comp, NameUniquer& names, HloInstruction* v, int64_t d,
                           int64_t start, int64_t len) {
  const std::vector<int64_t>& dims = v->shape().dimensions();
  std::vector<int64_t> kept = dims;
  kept[d] = len;
  HloInstruction* s = AddArrayInstruction(comp, names, HloOpcode::kSlice, v->shape().element_type(),
                                          kept, {v}, v->shape());
  InstructionAttributes& a = s->mutable_attrs();
  a.slice_starts.assign(dims.size(), 0);
  a.slice_limits = dims;
  a.slice_strides.assign(dims.size(), 1);
  a.slice_starts[d] = start;
  a.slice_limits[d] = start + len;
  return s;
}

// `v` padded along dimension d with `low` and `high` copies of the scalar `value`.
HloInstruction* PadAlong(HloComputation* comp, NameUniquer& names, HloInstruction* v,
                         HloInstruction* value, int64_t d, int64_t low, int64_t high) {
  std::vector<int64_t> padded = v->shape().dimensions();
  padded[d] += low + high;
  HloInstruction* p = AddArrayInstruction(comp, names, HloOpcode::kPad, v->shape().element_type(),
                                          padded, {v, value}, v->shape());
  PaddingConfig pads(padded.size());
  pads[d].edge_padding_low = low;
  pads[d].edge_padding_high = high;
  p->mutable_attrs().padding_config = pads;
  return p;
}

bool Rewrite(HloInstruction* rw, int64_t min_length, NameUniquer& names) {
  std::optional<RunningScan> scan = RunningScanOf(*rw, min_length);
  const HloComputation* reducer = rw->to_apply();
  if (!scan || reducer == nullptr || !IsElementwiseReducer(*reducer)) return false;
  HloInstruction* x = rw->operand(0);
  HloInstruction* init = rw->operand(1);
  const PrimitiveType t = x->shape().element_type();
  const std::vector<int64_t> dims = x->shape().dimensions();
  const int64_t d = scan->dim, n = dims[d];
  HloComputation* comp = rw->parent();
  auto add = [&](HloOpcode o, PrimitiveType type, std::vector<int64_t> shape,
                 std::vector<HloInstruction*> operands) {
    return AddArrayInstruction(comp, names, o, type, std::move(shape), std::move(operands),
                               x->shape());
  };
  // reducer(a, b) on arrays of `dims`: one add/multiply/... of the parameters as that op,
  // a longer reducer instruction by instruction, its scalar constants broadcast.
  auto combine = [&](HloInstruction* a, HloInstruction* b) {
    absl::flat_hash_map<const HloInstruction*, HloInstruction*> value;
    for (HloInstruction* i : reducer->MakeInstructionPostOrder()) {
      const PrimitiveType it = i->shape().element_type();
      if (i->opcode() == HloOpcode::kParameter) {
        value[i] = i->parameter_number() == 0 ? a : b;
      } else if (i->opcode() == HloOpcode::kConstant) {
        HloInstruction* c = add(HloOpcode::kConstant, it, {}, {});
        c->mutable_attrs().literal = i->literal();
        value[i] = add(HloOpcode::kBroadcast, it, dims, {c});
        value[i]->mutable_attrs().has_dimensions = true;
      } else {
        std::vector<HloInstruction*> operands;
        for (HloInstruction* o : i->operands()) operands.push_back(value[o]);
        HloInstruction* n = add(i->opcode(), it, dims, std::move(operands));
        n->mutable_attrs() = i->attrs();  // a compare's direction, a convert's nothing
        value[i] = n;
      }
    }
    return value[reducer->root()];
  };
  HloInstruction* iota = add(HloOpcode::kIota, PrimitiveType::S32, dims, {});
  iota->mutable_attrs().iota_dimension = d;
  HloInstruction* y = x;
  for (int64_t k = 1; k < n; k *= 2) {
    // s[i] = y[i - k] (forward) or y[i + k] (reverse) where that exists.
    HloInstruction* part = SliceAlong(comp, names, y, d, scan->reverse ? k : 0, n - k);
    HloInstruction* s = scan->reverse ? PadAlong(comp, names, part, init, d, 0, k)
                                      : PadAlong(comp, names, part, init, d, k, 0);
    // Earlier elements on the left, as the window combines them.
    HloInstruction* both = scan->reverse ? combine(y, s) : combine(s, y);
    HloInstruction* bound = AddScalarConstant(comp, names, PrimitiveType::S32,
                                              static_cast<double>(scan->reverse ? n - k : k));
    HloInstruction* bounds = add(HloOpcode::kBroadcast, PrimitiveType::S32, dims, {bound});
    bounds->mutable_attrs().has_dimensions = true;
    HloInstruction* has = add(HloOpcode::kCompare, PrimitiveType::PRED, dims, {iota, bounds});
    has->mutable_attrs().comparison_direction =
        scan->reverse ? ComparisonDirection::kLt : ComparisonDirection::kGe;
    y = add(HloOpcode::kSelect, t, dims, {has, both, y});
  }
  HloInstruction* init_b = add(HloOpcode::kBroadcast, t, dims, {init});
  init_b->mutable_attrs().has_dimensions = true;
  HloInstruction* out = combine(init_b, y);
  return ReplaceUsesIfCompatible(rw, out);
}

// A max or min window of `size` >= min_length along one dimension (stride 1, no dilation,
// padding >= 0): log2(size) steps of doubling, m_2k[i] = max(m_k[i], m_k[i + k]) on the
// input padded with the init value, then one max of two overlapping runs (max and min are
// idempotent, so the runs may overlap). Exact, and each step is a vectorized elementwise
// kernel instead of `size` compares per element.
bool RewriteSliding(HloInstruction* rw, int64_t min_length, NameUniquer& names) {
  const HloComputation* reducer = rw->to_apply();
  if (rw->operand_count() != 2 || !rw->shape().IsArray() || !rw->attrs().window ||
      reducer == nullptr)
    return false;
  const std::optional<ReductionKind> kind = MatchReductionKind(*reducer);
  if (kind != ReductionKind::kMax && kind != ReductionKind::kMin) return false;
  HloInstruction* x = rw->operand(0);
  HloInstruction* init = rw->operand(1);
  const std::vector<WindowDimension>& win = rw->attrs().window->dimensions;
  if (!x->shape().IsArray() || static_cast<int>(win.size()) != x->shape().rank()) return false;
  int64_t d = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(win.size()); ++i) {
    const WindowDimension& w = win[i];
    if (w.stride != 1 || w.window_dilation != 1 || w.base_dilation != 1 || w.window_reversal ||
        w.padding_low < 0 || w.padding_high < 0)
      return false;
    if (w.size == 1 && w.padding_low == 0 && w.padding_high == 0) continue;
    if (d >= 0 || w.size < min_length) return false;
    d = i;
  }
  if (d < 0) return false;
  const HloOpcode op = kind == ReductionKind::kMax ? HloOpcode::kMaximum : HloOpcode::kMinimum;
  const PrimitiveType t = x->shape().element_type();
  HloComputation* comp = rw->parent();
  const int64_t size = win[d].size;
  std::vector<int64_t> dims = x->shape().dimensions();
  const int64_t out_len = rw->shape().dimensions(d);
  auto add = [&](HloOpcode o, std::vector<int64_t> shape, std::vector<HloInstruction*> operands) {
    return AddArrayInstruction(comp, names, o, t, std::move(shape), std::move(operands),
                               x->shape());
  };
  HloInstruction* cur = x;
  int64_t len = dims[d] + win[d].padding_low + win[d].padding_high;
  if (len - size + 1 != out_len) return false;
  if (win[d].padding_low > 0 || win[d].padding_high > 0)
    cur = PadAlong(comp, names, x, init, d, win[d].padding_low, win[d].padding_high);
  // cur[i] = the reducer over k consecutive elements from i.
  int64_t k = 1;
  for (; 2 * k <= size; k *= 2) {
    std::vector<int64_t> shape = cur->shape().dimensions();
    shape[d] = len - k;
    cur = add(
        op, shape,
        {SliceAlong(comp, names, cur, d, 0, len - k), SliceAlong(comp, names, cur, d, k, len - k)});
    len -= k;
  }
  std::vector<int64_t> out_dims = rw->shape().dimensions();
  HloInstruction* out = cur;
  if (k < size || len != out_len)
    out = add(op, out_dims,
              {SliceAlong(comp, names, cur, d, 0, out_len),
               SliceAlong(comp, names, cur, d, size - k, out_len)});
  HloInstruction* init_b = add(HloOpcode::kBroadcast, out_dims, {init});
  init_b->mutable_attrs().has_dimensions = true;
  return ReplaceUsesIfCompatible(rw, add(op, out_dims, {init_b, out}));
}

}  // namespace

absl::StatusOr<bool> ReduceWindowScan::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kReduceWindow || (keep_ && keep_(*instr))) continue;
      if (Rewrite(instr, min_length_, names) || RewriteSliding(instr, min_length_, names))
        dead.push_back(instr);
    }
    RemoveDeadFrom(comp, dead);
    changed |= !dead.empty();
  }
  return changed;
}

}  // namespace kiln
