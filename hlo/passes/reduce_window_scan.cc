// Running reductions as log-step scans (see reduce_window_scan.h).
#include "hlo/passes/reduce_window_scan.h"

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "hlo/collectives/reduction.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// The scanned dimension of `rw` and whether the scan runs backwards, or nullopt when `rw`
// is no running reduction of at least `min_length` elements.
struct Scan {
  int64_t dim;
  bool reverse;
};
std::optional<Scan> ScanOf(const HloInstruction& rw, int64_t min_length) {
  if (rw.operand_count() != 2 || !rw.shape().IsArray() || !rw.attrs().window) return std::nullopt;
  const Shape& x = rw.operand(0)->shape();
  if (!x.IsArray() || x.dimensions() != rw.shape().dimensions()) return std::nullopt;
  const std::vector<WindowDimension>& win = rw.attrs().window->dimensions;
  if (static_cast<int>(win.size()) != x.rank()) return std::nullopt;
  std::optional<Scan> scan;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const WindowDimension& w = win[d];
    if (w.stride != 1 || w.window_dilation != 1 || w.base_dilation != 1 || w.window_reversal)
      return std::nullopt;
    if (w.size == 1 && w.padding_low == 0 && w.padding_high == 0) continue;
    const int64_t n = x.dimensions(d);
    if (scan || w.size != n || n < min_length) return std::nullopt;
    if (w.padding_low == n - 1 && w.padding_high == 0) {
      scan = Scan{d, false};
    } else if (w.padding_low == 0 && w.padding_high == n - 1) {
      scan = Scan{d, true};
    } else {
      return std::nullopt;
    }
  }
  return scan;
}

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

bool Rewrite(HloInstruction* rw, int64_t min_length, NameUniquer& names) {
  std::optional<Scan> scan = ScanOf(*rw, min_length);
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
    std::vector<int64_t> kept = dims;
    kept[d] = n - k;
    HloInstruction* part = add(HloOpcode::kSlice, t, kept, {y});
    InstructionAttributes& sa = part->mutable_attrs();
    sa.slice_starts.assign(dims.size(), 0);
    sa.slice_limits = dims;
    sa.slice_strides.assign(dims.size(), 1);
    if (scan->reverse) {
      sa.slice_starts[d] = k;
    } else {
      sa.slice_limits[d] = n - k;
    }
    HloInstruction* s = add(HloOpcode::kPad, t, dims, {part, init});
    PaddingConfig pads(dims.size());
    (scan->reverse ? pads[d].edge_padding_high : pads[d].edge_padding_low) = k;
    s->mutable_attrs().padding_config = pads;
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

}  // namespace

absl::StatusOr<bool> ReduceWindowScan::Run(HloModule& module) {
  NameUniquer names(module);
  bool changed = false;
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> dead;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kReduceWindow) continue;
      if (Rewrite(instr, min_length_, names)) dead.push_back(instr);
    }
    RemoveDeadFrom(comp, dead);
    changed |= !dead.empty();
  }
  return changed;
}

}  // namespace kiln
