// Running reductions as log-step scans (see reduce_window_scan.h).
#include "hlo/passes/reduce_window_scan.h"

#include <optional>

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

bool Rewrite(HloInstruction* rw, int64_t min_length, NameUniquer& names) {
  std::optional<Scan> scan = ScanOf(*rw, min_length);
  if (!scan || rw->to_apply() == nullptr) return false;
  // One add/multiply/minimum/maximum/and/or of the reducer's two parameters: its root.
  if (!MatchReductionKind(*rw->to_apply())) return false;
  const HloOpcode op = rw->to_apply()->root()->opcode();
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
    HloInstruction* both = scan->reverse ? add(op, t, dims, {y, s}) : add(op, t, dims, {s, y});
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
  HloInstruction* out = add(op, t, dims, {init_b, y});
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
