// Partitions an entry computation into JIT kernels, evaluator steps and bookkeeping.
#include "plugins/kernel_plan/plan.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"

namespace kiln::kernel_plan {

std::string_view DispositionName(Disposition d) {
  switch (d) {
    case Disposition::kKernel:
      return "kernel";
    case Disposition::kInlined:
      return "inlined";
    case Disposition::kLibrary:
      return "library";
    case Disposition::kControlFlow:
      return "control-flow";
    case Disposition::kEvaluator:
      return "evaluator";
    case Disposition::kBookkeeping:
      return "bookkeeping";
  }
  return "?";
}

bool Emittable(const HloInstruction& h, const PlanOptions& options, std::string* why) {
  // The backend's own routine computes it (a running reduction is emittable too, n^2 / 2).
  if (options.library_call != nullptr && options.library_call(h)) {
    if (why) *why = "a library call";
    return false;
  }
  if (!options.complex_kernels && llvm_emit::TouchesComplex(h)) {
    if (why) *why = "complex values are emitted by the CPU runner only";
    return false;
  }
  return llvm_emit::CanEmitElementally(h, why);
}

bool CanEmitFusion(const HloInstruction& fusion, const PlanOptions& options, std::string* why) {
  const HloComputation* comp = fusion.fused_computation();
  if (comp == nullptr || comp->root() == nullptr) {
    if (why) *why = "fusion without a fused computation";
    return false;
  }
  for (const HloInstruction* p : comp->parameters()) {
    if (p == nullptr || !p->shape().IsArray()) {
      if (why) *why = "fusion parameter that is missing or not an array";
      return false;
    }
  }
  const HloInstruction* root = comp->root();
  for (const HloInstruction* i : comp->instructions()) {
    if (i == root && i->opcode() == HloOpcode::kTuple) {
      for (const HloInstruction* op : i->operands()) {
        if (!op->shape().IsArray()) {
          if (why) *why = "multi-output fusion with a nested tuple";
          return false;
        }
      }
      continue;
    }
    std::string reason;
    if (!Emittable(*i, options, &reason)) {
      if (why) *why = absl::StrCat("fused ", i->name(), ": ", reason);
      return false;
    }
  }
  return true;
}

namespace {

bool IsBookkeeping(const HloInstruction& h) {
  switch (h.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return true;
    default:
      return false;
  }
}

// Constants the emitter can embed into a kernel instead of reading them from a buffer.
bool IsInlinableConstant(const HloInstruction& h, const PlanOptions& options) {
  return h.opcode() == HloOpcode::kConstant && Emittable(h, options, nullptr);
}

// Recomputing these per element of a consumer costs a whole loop each: materialize them
// unless the emitter can hoist them out of the consumer's inner loops (RowLevelUses).
bool IsExpensive(const HloInstruction& h) {
  return h.opcode() == HloOpcode::kReduce || h.opcode() == HloOpcode::kDot ||
         h.opcode() == HloOpcode::kConvolution;
}

// How many times a windowed operation reads each element of its input: the taps of its
// window (1 for anything else).
int64_t WindowTaps(const HloInstruction& h) {
  int64_t taps = 1;
  if (h.opcode() == HloOpcode::kConvolution && h.attrs().convolution_dimension_numbers) {
    for (int64_t d : h.attrs().convolution_dimension_numbers->kernel_spatial_dimensions)
      taps *= h.operand(1)->shape().dimensions(d);
  } else if ((h.opcode() == HloOpcode::kReduceWindow ||
              h.opcode() == HloOpcode::kSelectAndScatter) &&
             h.attrs().window) {
    for (const WindowDimension& w : h.attrs().window->dimensions) taps *= w.size;
  }
  return taps;
}

// True when every use of `h` reaches it with an index made of the consumer's loop variables
// and never the innermost one: users are elementwise ops, broadcasts along leading dimensions
// (a row statistic spread over its rows), or reduces reading `h` as their input (each element
// once), up to where a result is materialized. The emitter then generates `h` once per outer
// iteration (before the inner loop) instead of once per element, so a reduce used that way
// can be inlined: softmax and layernorm become one pass over each row.
// Past kMaxRowLevelDepth users in a chain it answers false (materialize): a cheap, safe
// answer that keeps the recursion shallower than any stack on a 100,000-instruction chain.
constexpr int kMaxRowLevelDepth = 64;
template <typename Materialized>
bool RowLevelUses(const HloInstruction* h, const Materialized& materialized, int depth = 0) {
  if (depth > kMaxRowLevelDepth) return false;
  for (const HloInstruction* u : h->users()) {
    if (u->opcode() == HloOpcode::kReduce) continue;
    if (u->opcode() == HloOpcode::kBroadcast) {
      const std::vector<int64_t>& dims = u->dimensions();
      if (u->shape().rank() <= h->shape().rank()) return false;
      for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i] != static_cast<int64_t>(i)) return false;
    } else if (!IsElementwiseOpcode(u->opcode())) {
      return false;
    }
    if (!materialized(u) && !RowLevelUses(u, materialized, depth + 1)) return false;
  }
  return true;
}

int64_t Elements(const Shape& s) { return s.IsArray() ? s.num_elements() : 0; }

// How many reduces read `h` element by element: through elementwise users of its
// dimensions, up to where a result is materialized. Inlined, `h` is generated inside each
// one's loop: a logsumexp's max and sum over values an inner reduce computes (a Gaussian
// mixture's per-component distances) computed every distance twice.
template <typename Materialized>
int ElementwiseReduceReaders(const HloInstruction* h, const Materialized& materialized) {
  absl::flat_hash_set<const HloInstruction*> seen, reduces;
  std::vector<const HloInstruction*> stack{h};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    for (const HloInstruction* u : x->users()) {
      if (u->opcode() == HloOpcode::kReduce) {
        reduces.insert(u);
      } else if (IsElementwiseOpcode(u->opcode()) &&
                 u->shape().dimensions() == h->shape().dimensions() && !materialized(u) &&
                 seen.insert(u).second) {
        stack.push_back(u);
      }
    }
  }
  return static_cast<int>(reduces.size());
}

// True when a scalar `h` (through scalar elementwise users) is broadcast into an array. A
// reduce to a scalar read that way is hoisted above its kernel's outer loop, so each part of a
// kernel split across threads would compute the whole reduction again (int8 quantization's
// max |x| feeding x / scale: each part of the 2048x1024 kernel read the whole input).
bool BroadcastIntoArray(const HloInstruction* h) {
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack = {h};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    for (const HloInstruction* u : x->users()) {
      if (u->opcode() == HloOpcode::kBroadcast && u->shape().rank() > 0) return true;
      if (IsElementwiseOpcode(u->opcode()) && u->shape().IsArray() && u->shape().rank() == 0 &&
          seen.insert(u).second)
        stack.push_back(u);
    }
  }
  return false;
}

// The most elements a reduce in `h`'s cone reads (0 without one), through elementwise and
// shape operations: a mean of per-row logsumexps reduces 2048 values but generates a million
// exponentials below them.
int64_t ReducedBelow(const HloInstruction* h) {
  constexpr int kMaxVisited = 256;  // a cheap answer, not a whole program's walk
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack = {h};
  int64_t most = 0;
  while (!stack.empty() && static_cast<int>(seen.size()) < kMaxVisited) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (x->opcode() == HloOpcode::kReduce) most = std::max(most, Elements(x->operand(0)->shape()));
    if (x->opcode() != HloOpcode::kReduce && !IsElementwiseOpcode(x->opcode()) &&
        x->opcode() != HloOpcode::kBroadcast && x->opcode() != HloOpcode::kReshape &&
        x->opcode() != HloOpcode::kSlice && x->opcode() != HloOpcode::kGather &&
        x->opcode() != HloOpcode::kConcatenate)
      continue;
    for (const HloInstruction* o : x->operands()) stack.push_back(o);
  }
  return most;
}

// Element operations a kernel performs: every generated instruction's elements, plus the
// inner loops of reductions and dots.
int64_t EstimateWork(const llvm_emit::KernelSpec& spec) {
  int64_t work = 0;
  llvm_emit::AnyInCone(spec, [&](const HloInstruction& h) {
    work += Elements(h.shape());
    if (h.opcode() == HloOpcode::kReduce && h.operand_count() > 0) {
      work += Elements(h.operand(0)->shape());
    } else if (h.opcode() == HloOpcode::kDot && h.attrs().dot_dimension_numbers) {
      int64_t k = 1;
      for (int64_t d : h.attrs().dot_dimension_numbers->lhs_contracting_dimensions)
        if (d >= 0 && d < h.operand(0)->shape().rank()) k *= h.operand(0)->shape().dimensions(d);
      work += Elements(h.shape()) * k;
    }
    return false;  // every instruction
  });
  return work;
}

// Column reductions worth accumulating row by row: an input of at least this many elements.
// Smaller ones walk each column with a stride; from 2^11 elements on, the rows in memory
// order are faster (a vector times a 64x128 matrix, 8,192 elements: 8 -> 2 us).
constexpr int64_t kColumnMinInput = int64_t{1} << 11;

// True when every output of the kernel is small and it computes a large column reduction.
bool ReadsLargeColumnReduction(const llvm_emit::KernelSpec& spec) {
  for (const HloInstruction* o : spec.outputs)
    if (!o->shape().IsArray() || Elements(o->shape()) > llvm_emit::kMaxColumnElements) return false;
  return llvm_emit::AnyInCone(spec, [](const HloInstruction& h) {
    return llvm_emit::IsColumnReduction(h) && Elements(h.operand(0)->shape()) >= kColumnMinInput;
  });
}

// The extent of dimension 0 along which a kernel that computes a large column reduction can
// be partitioned, or -1: every output has the same dimensions, every column reduction in
// the kernel keeps dimension 0 (IsPartitionedColumnReduction) and is read by the outputs
// through elementwise instructions of their dimensions only, so that a part's range of
// output rows reads only the accumulators its own range of input rows made.
int64_t PartitionedColumnExtent(const llvm_emit::KernelSpec& spec) {
  const Shape& first = spec.outputs[0]->shape();
  if (!first.IsArray() || first.rank() == 0) return -1;
  for (const HloInstruction* o : spec.outputs)
    if (!o->shape().IsArray() || o->shape().dimensions() != first.dimensions()) return -1;
  const absl::flat_hash_set<const HloInstruction*> inputs(spec.inputs.begin(), spec.inputs.end());
  // (instruction, read elementwise at the output's index)
  absl::flat_hash_set<std::pair<const HloInstruction*, bool>> seen;
  std::vector<std::pair<const HloInstruction*, bool>> stack;
  for (const HloInstruction* o : spec.outputs) stack.emplace_back(o, true);
  bool large = false;
  while (!stack.empty()) {
    auto [h, aligned] = stack.back();
    stack.pop_back();
    if (inputs.contains(h) || !seen.insert({h, aligned}).second) continue;
    if (llvm_emit::IsColumnReduction(*h) || llvm_emit::IsPartitionedColumnReduction(*h)) {
      if (!aligned || !llvm_emit::IsPartitionedColumnReduction(*h) ||
          h->shape().dimensions() != first.dimensions())
        return -1;
      large = large || Elements(h->operand(0)->shape()) >= kColumnMinInput;
      for (const HloInstruction* o : h->operands()) stack.emplace_back(o, false);
      continue;
    }
    const bool next = aligned && IsElementwiseOpcode(h->opcode()) &&
                      h->shape().dimensions() == first.dimensions();
    for (const HloInstruction* o : h->operands()) stack.emplace_back(o, next);
  }
  return large ? first.dimensions(0) : -1;
}

// True when a reduce over `h`'s dimension 0 reads it while `h`'s cone (what could be generated
// inline with it) holds a large column reduction of `h`'s dimensions that keeps dimension 0.
// In one kernel with that reduce, the accumulation would run on one thread (a Dice loss's
// per-sample sums over pixels, then their mean over the batch); computed into memory, `h`'s
// kernel splits along dimension 0.
bool FeedsBatchReduceOfColumns(const HloInstruction* h,
                               const absl::flat_hash_set<const HloInstruction*>& emittable) {
  if (!h->shape().IsArray() || h->shape().rank() == 0) return false;
  bool reduced_over_0 = false;
  for (const HloInstruction* u : h->users())
    reduced_over_0 |= u->opcode() == HloOpcode::kReduce && u->operand(0) == h &&
                      absl::c_linear_search(u->dimensions(), int64_t{0});
  if (!reduced_over_0) return false;
  constexpr int kMaxVisited = 256;  // a bounded look: this runs inside the fusion decision
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack = {h};
  while (!stack.empty() && static_cast<int>(seen.size()) < kMaxVisited) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (!emittable.contains(x) || !seen.insert(x).second) continue;
    if (x != h && llvm_emit::IsPartitionedColumnReduction(*x) &&
        Elements(x->operand(0)->shape()) >= kColumnMinInput &&
        x->shape().dimensions() == h->shape().dimensions())
      return true;
    for (const HloInstruction* o : x->operands()) stack.push_back(o);
  }
  return false;
}

// Marks the kernel's outer loop as partitionable when every output has the same leading
// dimension (of at least 2), and fills the step's extent and work. A large reduction to a
// scalar is split into parts instead.
void SetPartition(llvm_emit::KernelSpec& spec, Step& step, const PlanOptions& options) {
  step.work = EstimateWork(spec);
  if (spec.update_in_place) {  // the loop runs over the update only
    const Shape& update = spec.outputs[0]->operand(1)->shape();
    step.work = std::min(step.work, Elements(update) * 4);
    if (update.rank() == 0 || update.dimensions(0) < 2) return;
    spec.partition_outer = true;
    step.outer_extent = update.dimensions(0);
    return;
  }
  if (options.accumulate_columns) {
    const int64_t extent = PartitionedColumnExtent(spec);
    if (extent >= 2 && step.work >= options.parallel_min_work) {
      spec.accumulate_columns = spec.partition_outer = true;  // parts of dimension 0
      step.outer_extent = extent;
      return;
    }
  }
  if (options.accumulate_columns && ReadsLargeColumnReduction(spec)) {
    spec.accumulate_columns = true;  // one pass over the rows
    // A reduction of dimension 0 in parts of it, each into its own accumulator.
    const HloInstruction* r = llvm_emit::PartedColumnReduction(spec);
    if (r != nullptr && options.reduce_parts >= 2 && step.work >= options.parallel_min_work) {
      const int64_t d0 = r->operand(0)->shape().dimensions(0);
      if (d0 >= 2) spec.reduce_parts = step.reduce_parts = std::min(options.reduce_parts, d0);
    }
    return;
  }
  if (spec.outputs.size() == 1 && spec.outputs[0]->opcode() == HloOpcode::kReduce &&
      spec.outputs[0]->shape().rank() == 0 && spec.outputs[0]->operand(0)->shape().rank() > 0 &&
      options.reduce_parts >= 2 && step.work >= options.parallel_min_work) {
    int64_t d0 = spec.outputs[0]->operand(0)->shape().dimensions(0);
    if (d0 >= 2) spec.reduce_parts = step.reduce_parts = std::min(options.reduce_parts, d0);
    return;
  }
  int64_t extent = -1;
  for (const HloInstruction* o : spec.outputs) {
    if (!o->shape().IsArray() || o->shape().rank() == 0) return;
    int64_t d0 = o->shape().dimensions(0);
    if (extent >= 0 && d0 != extent) return;
    extent = d0;
  }
  // A kernel too small to run on several threads keeps its loop bounds constant: the
  // vectorizer then emits no remainder loop and no vectorized epilogue (a third of the code,
  // and of the compile time, of a long elementwise chain).
  if (extent < 2 || step.work < options.parallel_min_work) return;
  spec.partition_outer = true;
  step.outer_extent = extent;
}

// The index in spec.inputs of the operand a dynamic-update-slice kernel may update in
// place, or -1: the one output is a dynamic-update-slice whose operand 0 is an input that
// nothing else in the kernel (the update, the start indices) reads.
int InPlaceInput(const llvm_emit::KernelSpec& spec) {
  if (spec.outputs.size() != 1 || spec.reduce_parts > 0) return -1;
  const HloInstruction* dus = spec.outputs[0];
  if (dus->opcode() != HloOpcode::kDynamicUpdateSlice) return -1;
  auto it = std::find(spec.inputs.begin(), spec.inputs.end(), dus->operand(0));
  if (it == spec.inputs.end()) return -1;
  absl::flat_hash_set<const HloInstruction*> stop(spec.inputs.begin(), spec.inputs.end());
  absl::flat_hash_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack(dus->operands().begin() + 1, dus->operands().end());
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (h == dus->operand(0)) return -1;
    if (stop.contains(h) || !seen.insert(h).second) continue;
    for (const HloInstruction* o : h->operands()) stack.push_back(o);
  }
  return static_cast<int>(it - spec.inputs.begin());
}

// Marks a kernel that can update its dynamic-update-slice operand in place (before
// SetPartition, whose loop is then the update's).
void SetInPlace(llvm_emit::KernelSpec& spec, Step& step, const PlanOptions& options) {
  if (!options.update_in_place) return;
  const int k = InPlaceInput(spec);
  if (k < 0 || std::count(step.sources.begin(), step.sources.end(), step.sources[k]) != 1) return;
  spec.update_in_place = true;
  step.in_place_source = k;
}

// True when `u` computes its element i from its operands' elements i alone.
bool ReadsAtOwnIndex(const HloInstruction& u) {
  if (IsElementwiseOpcode(u.opcode())) return true;
  const HloOpcode op = u.opcode();
  return (op == HloOpcode::kCopy || op == HloOpcode::kReshape || op == HloOpcode::kBitcast) &&
         u.shape().dimensions() == u.operand(0)->shape().dimensions();
}

// Fills Step::output_over_sources. The kernel's one output is stored after every element it
// reads at the same index, so writing it over an input read only at that index never
// overwrites an element still to be read. Kernels that store anything else first (a stashed
// row statistic writes the output row before the output loop reads its inputs) are left out.
void SetOutputOverSources(const llvm_emit::KernelSpec& spec, Step& step) {
  if (spec.outputs.size() != 1 || spec.update_in_place || spec.reduce_parts > 0) return;
  const HloInstruction* out = spec.outputs[0];
  if (!out->shape().IsArray() || llvm_emit::StashableRowStatistic(spec) != nullptr) return;
  // The kernel's generated instructions: the cone of the output down to its inputs.
  absl::flat_hash_set<const HloInstruction*> inputs(spec.inputs.begin(), spec.inputs.end());
  absl::flat_hash_set<const HloInstruction*> members;
  std::vector<const HloInstruction*> stack = {out};
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (inputs.contains(h) || !members.insert(h).second) continue;
    for (const HloInstruction* o : h->operands()) stack.push_back(o);
  }
  auto aligned = [&](const HloInstruction* in) {
    if (!in->shape().IsArray() || in->shape().element_type() != out->shape().element_type() ||
        in->shape().dimensions() != out->shape().dimensions())
      return false;
    absl::flat_hash_set<const HloInstruction*> seen;
    std::vector<const HloInstruction*> users = {in};
    while (!users.empty()) {
      const HloInstruction* h = users.back();
      users.pop_back();
      for (const HloInstruction* u : h->users()) {
        if (!members.contains(u) || !seen.insert(u).second) continue;
        if (!ReadsAtOwnIndex(*u) || u->shape().dimensions() != out->shape().dimensions())
          return false;
        users.push_back(u);
      }
    }
    return true;
  };
  for (size_t i = 0; i < spec.inputs.size() && i < step.sources.size(); ++i) {
    if (std::count(step.sources.begin(), step.sources.end(), step.sources[i]) == 1 &&
        aligned(spec.inputs[i]))
      step.output_over_sources.push_back(static_cast<int>(i));
  }
}

// Calls `f` on each instruction whose value a step reads.
template <typename F>
void ForEachRead(const Step& step, F f) {
  if (step.kind == Disposition::kEvaluator || step.kind == Disposition::kBookkeeping) {
    for (const HloInstruction* o : step.instr->operands()) f(o);
  } else {
    for (const HloInstruction* o : step.sources) f(o);
  }
}

// Fills Step::last_uses: each value is released after its last reader (a value nothing
// reads, after its own step); the root is kept.
void MarkLastUses(ComputationPlan& plan) {
  absl::flat_hash_map<const HloInstruction*, size_t> last;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    last.try_emplace(plan.steps[i].instr, i);
    ForEachRead(plan.steps[i], [&](const HloInstruction* r) { last[r] = i; });
  }
  for (const HloInstruction* h : plan.computation->MakeInstructionPostOrder()) {
    auto it = last.find(h);
    if (it != last.end() && h != plan.computation->root())
      plan.steps[it->second].last_uses.push_back(h);
  }
}

// Fills Step::moves_element.
void MarkMovedElements(ComputationPlan& plan) {
  for (Step& s : plan.steps) {
    const HloInstruction* h = s.instr;
    if (s.kind != Disposition::kBookkeeping || h->opcode() != HloOpcode::kGetTupleElement) continue;
    const HloInstruction* tuple = h->operand(0);
    if (tuple == plan.computation->root()) continue;
    int readers = 0;
    bool only_elements = true;
    for (const HloInstruction* u : tuple->users()) {
      only_elements &= u->opcode() == HloOpcode::kGetTupleElement;
      readers += u->opcode() == HloOpcode::kGetTupleElement && u->tuple_index() == h->tuple_index();
    }
    s.moves_element = only_elements && readers == 1;
  }
}

// Control flow nested deeper than this stays on the evaluator, which refuses what is
// deeper than its own bound (Evaluator::kMaxCallDepth) with a clear error: planning and
// running sub-plans recurse once per level.
constexpr size_t kMaxPlannedCallDepth = 64;

// Computations already planned (index into Plan::called) and those being planned (a call
// cycle is bad input: it falls back to the evaluator, which reports it).
struct CalledPlans {
  absl::flat_hash_map<const HloComputation*, int> index;
  absl::flat_hash_set<const HloComputation*> active;
};

void PlanComputation(const HloComputation* entry, const PlanOptions& options, Plan& plan,
                     CalledPlans& called);

bool IsControlFlow(const HloInstruction& h) { return IsControlFlowOpcode(h.opcode()); }

// The shapes the runner relies on; anything else stays on the evaluator, which reports it.
bool ControlFlowWellFormed(const HloInstruction& h, std::string* why) {
  const std::vector<HloComputation*>& comps = h.called_computations();
  for (const HloComputation* c : comps) {
    if (c == nullptr || c->root() == nullptr) {
      *why = "missing called computation";
      return false;
    }
  }
  auto params_are = [&](const HloComputation* c, int n) {
    if (c->num_parameters() == n) return true;
    *why = absl::StrCat("%", c->name(), " takes ", c->num_parameters(), " parameters, not ", n);
    return false;
  };
  if (h.opcode() == HloOpcode::kWhile) {
    if (comps.size() != 2 || h.operand_count() != 1) {
      *why = "while needs one operand, a condition and a body";
      return false;
    }
    const Shape& p = comps[0]->root()->shape();
    if (!p.IsArray() || p.element_type() != PrimitiveType::PRED || p.num_elements() != 1) {
      *why = "while condition must return a pred scalar";
      return false;
    }
    return params_are(comps[0], 1) && params_are(comps[1], 1);
  }
  if (h.opcode() == HloOpcode::kConditional) {
    const Shape& sel = h.operand(0)->shape();
    bool by_pred = sel.IsArray() && sel.element_type() == PrimitiveType::PRED;
    bool by_index = sel.IsArray() && sel.element_type() == PrimitiveType::S32;
    if (comps.empty() || h.operand_count() != static_cast<int64_t>(comps.size()) + 1 ||
        !(by_pred ? comps.size() == 2 : by_index) || sel.num_elements() != 1) {
      *why =
          "conditional needs a pred (two branches) or s32 scalar selector and one operand per "
          "branch";
      return false;
    }
    for (const HloComputation* c : comps)
      if (!params_are(c, 1)) return false;
    return true;
  }
  if (comps.size() != 1) {
    *why = "call needs one computation";
    return false;
  }
  return params_are(comps[0], static_cast<int>(h.operand_count()));
}

// Plans the computations a while/conditional/call runs, each once; their indexes in
// Plan::called, or nullopt with `why`.
std::optional<std::vector<int>> PlanCalled(const HloInstruction& h, const PlanOptions& options,
                                           Plan& plan, CalledPlans& called, std::string* why) {
  if (!ControlFlowWellFormed(h, why)) return std::nullopt;
  std::vector<int> out;
  for (const HloComputation* c : h.called_computations()) {
    if (auto it = called.index.find(c); it != called.index.end()) {
      out.push_back(it->second);
      continue;
    }
    if (called.active.size() >= kMaxPlannedCallDepth) {
      *why = absl::StrCat("control flow nested deeper than ", kMaxPlannedCallDepth,
                          " levels (entering %", c->name(), ")");
      return std::nullopt;
    }
    if (!called.active.insert(c).second) {
      *why = absl::StrCat("%", c->name(), " calls itself");
      return std::nullopt;
    }
    // Plan into plan.steps/dispositions, then move them into the sub-plan.
    ComputationPlan outer = std::move(static_cast<ComputationPlan&>(plan));
    static_cast<ComputationPlan&>(plan) = ComputationPlan();
    plan.computation = c;
    PlanComputation(c, options, plan, called);
    ComputationPlan sub = std::move(static_cast<ComputationPlan&>(plan));
    static_cast<ComputationPlan&>(plan) = std::move(outer);
    called.active.erase(c);
    called.index[c] = static_cast<int>(plan.called.size());
    out.push_back(static_cast<int>(plan.called.size()));
    plan.called.push_back(std::move(sub));
  }
  return out;
}

// The GEMM a library computes for `h` (a large enough dot of a plain form), if any.
std::optional<GemmShape> LibraryGemm(const HloInstruction& h, const PlanOptions& options) {
  if (h.opcode() != HloOpcode::kDot) return std::nullopt;
  std::optional<GemmShape> g =
      options.device_gemm_min_mnk > 0
          ? MatchGemmDot(h, options.device_gemm_min_mnk, GemmTypes{})
          : MatchBlasDot(h, options.blas_min_mnk,
                         {options.s8_gemm, options.integer_gemm, options.bf16_gemm});
  // f32 only on the device
  if (g && options.device_gemm_min_mnk > 0 && g->type != GemmType::kF32) g.reset();
  return g;
}

std::optional<ConvGemm> LibraryConv(const HloInstruction& h, const PlanOptions& options) {
  if (h.opcode() != HloOpcode::kConvolution || !options.library_convolutions) return std::nullopt;
  return MatchLibraryConv(h, options.blas_min_mnk);
}

// Which emittable instructions of `comp` get a kernel of their own (are materialized); the
// others are generated inside the kernels of their users. `order` is comp's post order.
absl::flat_hash_set<const HloInstruction*> KernelRoots(
    const HloComputation& comp, const std::vector<HloInstruction*>& order,
    const absl::flat_hash_set<const HloInstruction*>& emittable, const PlanOptions& options) {
  const HloComputation* entry = &comp;
  // An emittable instruction gets its own kernel unless every user is an emittable
  // instruction that can generate it inline ...
  std::function<bool(const HloInstruction*)> base_materialized = [&](const HloInstruction* h) {
    if (!options.fuse_unfused || h == entry->root() || h->user_count() == 0) return true;
    for (const HloInstruction* u : h->users())
      if (!emittable.contains(u)) return true;
    if (options.accumulate_columns && FeedsBatchReduceOfColumns(h, emittable)) return true;
    if (h->opcode() == HloOpcode::kReduce && options.inline_row_reductions &&
        (options.row_reduction_filter == nullptr || options.row_reduction_filter(*h))) {
      // A large reduction to a scalar gets a kernel of its own (reduced in parts, in
      // parallel) rather than being recomputed by each part of a kernel it is broadcast into,
      // or run on one thread inside the scalar kernel of what follows it (a mean's division:
      // only a kernel whose output is the reduce itself is split into parts).
      if (h->shape().IsArray() && h->shape().rank() == 0 &&
          4 * std::max(Elements(h->operand(0)->shape()), ReducedBelow(h->operand(0))) >=
              options.parallel_min_work &&
          (BroadcastIntoArray(h) || options.reduce_parts >= 2))
        return true;
      if (!RowLevelUses(h, base_materialized)) return true;
      // Reducing more than a few elements per result, it is computed once into memory
      // rather than once per reduce that reads it.
      constexpr int64_t kMinRecomputedRun = 4;
      return Elements(h->operand(0)->shape()) >= kMinRecomputedRun * Elements(h->shape()) &&
             ElementwiseReduceReaders(h, base_materialized) > 1;
    }
    return IsExpensive(*h);
  };
  // ... and unless it would be generated inside several kernels while costly to generate:
  // a value shared by kernels is then computed once into memory. Without this, a chain such
  // as an LSTM's cell state (c[t] feeds both h[t]'s kernel and c[t+1]) is regenerated from
  // the first step inside every later kernel: quadratic work.
  absl::flat_hash_set<const HloInstruction*> shared;
  {
    // Cost of generating h inline: its inlined cone (transcendentals weigh more, a scalar
    // broadcast is free: the loop holds it in a register), capped.
    constexpr int64_t kCap = 64;
    // softmax's exp(x - max) is duplicated. A cone of only cheap operations is duplicated up
    // to twice that: its operations cost less than the array's trip to memory and back (the
    // rounds of JAX's threefry, shared by the two halves of its state, were three arrays in
    // memory per round; dropout f32[2^20] 14.2 -> 6.9 ms).
    constexpr int64_t kMaxDuplicatedCost = 16, kMaxDuplicatedCheapCost = 32;
    // Below this, a windowed operation's input is generated per tap (a relu before a pool).
    constexpr int64_t kMinWindowedInputCost = 4;
    absl::flat_hash_map<const HloInstruction*, int64_t> cost;
    auto op_cost = [](const HloInstruction& h) -> int64_t {
      if (h.opcode() == HloOpcode::kBroadcast && h.operand(0)->shape().rank() == 0) return 0;
      return IsCostlyElementwiseOpcode(h.opcode()) ? 8 : 1;
    };
    // Whether h's inlined cone holds a row reduction generated inline: its value is stashed
    // once per row by the emitter, not recomputed per element.
    absl::flat_hash_set<const HloInstruction*> row_level;
    // Whether h's inlined cone holds a costly operation (a transcendental, a division).
    absl::flat_hash_set<const HloInstruction*> costly_cone;
    for (const HloInstruction* h : order) {  // operands first
      if (!emittable.contains(h)) continue;
      int64_t c = op_cost(*h);
      bool row = h->opcode() == HloOpcode::kReduce && !base_materialized(h);
      bool costly = IsCostlyElementwiseOpcode(h->opcode());
      for (const HloInstruction* o : h->operands())
        if (emittable.contains(o) && !base_materialized(o)) {
          c += cost[o];
          row |= row_level.contains(o);
          costly |= costly_cone.contains(o);
        }
      cost[h] = std::min(c, kCap);
      if (row) row_level.insert(h);
      if (costly) costly_cone.insert(h);
    }
    auto max_duplicated = [&](const HloInstruction* h) {
      return costly_cone.contains(h) ? kMaxDuplicatedCost : kMaxDuplicatedCheapCost;
    };
    // A value read at two places of itself in one kernel (directly and through a slice or
    // pad of it, as each step of a log-step scan reads its predecessor) would be generated
    // twice per element, and a chain of such steps 2^n times: computed into memory instead
    // when it costs more than one operation.
    for (const HloInstruction* h : order) {
      if (!emittable.contains(h) || base_materialized(h) || cost[h] < 2 || h->user_count() < 2)
        continue;
      // Only as the sliced value: a scan's step index feeding a dynamic-slice's start is read
      // once per kernel call, and in memory it would be a kernel of its own per step.
      for (const HloInstruction* u : h->users())
        if ((u->opcode() == HloOpcode::kSlice || u->opcode() == HloOpcode::kPad ||
             u->opcode() == HloOpcode::kReverse || u->opcode() == HloOpcode::kDynamicSlice) &&
            u->operand(0) == h) {
          shared.insert(h);
          break;
        }
    }
    // Values a consumer would generate many times, or read across lines, are computed into
    // memory when costly. A windowed operation (convolution, reduce-window) generates its
    // input once per window tap: a GLU's sigmoid before a 31-tap depthwise convolution, 31
    // times per element. A transpose that moves the minor dimension reads its operand with a
    // gather per vector: an operand costly per element (sigmoid(a) * b before an einsum's
    // transpose) is better computed in its own order, vectorized, and only moved by the
    // transposing kernel; not one whose costly part is broadcast into it (per-example
    // gradients' outer products of a small tanh gradient with x: 64 MiB in memory, 23x slower).
    auto costly_per_element = [&](const HloInstruction* h) {
      absl::flat_hash_set<const HloInstruction*> seen;
      std::vector<const HloInstruction*> stack = {h};
      while (!stack.empty() && seen.size() < 64) {
        const HloInstruction* x = stack.back();
        stack.pop_back();
        if (!seen.insert(x).second || !IsElementwiseOpcode(x->opcode()) ||
            x->shape().dimensions() != h->shape().dimensions())
          continue;
        if (IsCostlyElementwiseOpcode(x->opcode())) return true;
        for (const HloInstruction* o : x->operands())
          if (emittable.contains(o) && !base_materialized(o)) stack.push_back(o);
      }
      return false;
    };
    for (const HloInstruction* h : order) {
      if (!emittable.contains(h) || base_materialized(h)) continue;
      const auto& users = h->users();
      const bool windowed = (costly_cone.contains(h) || cost[h] >= kMinWindowedInputCost) &&
                            std::any_of(users.begin(), users.end(),
                                        [](const HloInstruction* u) { return WindowTaps(*u) > 1; });
      const bool transposed =
          costly_cone.contains(h) &&
          std::any_of(users.begin(), users.end(),
                      [](const HloInstruction* u) { return llvm_emit::MovesMinorDimension(*u); }) &&
          costly_per_element(h);
      if (windowed || transposed) shared.insert(h);
    }
    // A small value broadcast into a large kernel is generated once per element of the kernel
    // unless it is in memory: a row statistic's arithmetic (layernorm's mean, variance and
    // their gradients' per-row factors, read from reductions in memory) would be repeated 768
    // times per row. Computed into its own small array instead when it costs more than reading
    // it; a statistic of a row reduction generated inline is stashed per row already.
    for (const HloInstruction* h : order) {
      if (h->opcode() != HloOpcode::kBroadcast || !emittable.contains(h)) continue;
      const HloInstruction* o = h->operand(0);
      if (!emittable.contains(o) || base_materialized(o) || cost[o] < 2 || row_level.contains(o))
        continue;
      if (h->shape().IsArray() && o->shape().IsArray() &&
          h->shape().num_elements() >= 8 * o->shape().num_elements())
        shared.insert(o);
    }
    // A value generated inline more than kMaxInlineDepth levels deep is computed into memory
    // instead: the emitter generates an inlined cone recursively, and a chain of 100,000
    // instructions would otherwise be one expression as deep as the program. Returns whether
    // it cut anywhere new.
    auto cut_deep = [&] {
      constexpr int kMaxInlineDepth = 200;
      bool cut = false;
      absl::flat_hash_map<const HloInstruction*, int> depth;
      for (const HloInstruction* h : order) {  // operands first
        if (!emittable.contains(h)) continue;
        int d = 1;
        for (const HloInstruction* o : h->operands()) {
          if (auto it = depth.find(o); it != depth.end()) d = std::max(d, it->second + 1);
        }
        if (d > kMaxInlineDepth && shared.insert(h).second) cut = true;
        if (!base_materialized(h) && !shared.contains(h)) depth[h] = d;
      }
      return cut;
    };
    // Values that several kernels would generate, computed into memory when costly; those in
    // `settled` stay as they are.
    absl::flat_hash_set<const HloInstruction*> settled;
    auto share_duplicated = [&] {
      // Kernels that would generate each value, users before operands.
      absl::flat_hash_map<const HloInstruction*, absl::flat_hash_set<const HloInstruction*>> in;
      std::vector<const HloInstruction*> by_cost;  // shared for their cost, users first
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const HloInstruction* h = *it;
        if (!emittable.contains(h) || base_materialized(h) || settled.contains(h)) continue;
        absl::flat_hash_set<const HloInstruction*> kernels;
        for (const HloInstruction* u : h->users()) {
          if (base_materialized(u) || shared.contains(u)) {
            kernels.insert(u);
          } else {
            const auto& uk = in[u];
            kernels.insert(uk.begin(), uk.end());
          }
        }
        // A broadcast or reshape is no place to cut: in memory it is at least as large as its
        // operand (a row statistic broadcast to the whole matrix), so the operand is computed
        // into memory instead, being as costly.
        const bool forwards = h->opcode() == HloOpcode::kBroadcast ||
                              h->opcode() == HloOpcode::kReshape ||
                              h->opcode() == HloOpcode::kBitcast;
        if (kernels.size() > 1 && cost[h] > max_duplicated(h) && !forwards) {
          shared.insert(h);
          by_cost.push_back(h);
        } else {
          in[h] = std::move(kernels);
        }
      }
      // The costs above count a value's whole cone, before anything in it was shared. Once a
      // value is in memory its users are cheap again: a value shared only because its cone
      // held another shared one (layernorm's gradient: the shared (x - mean) * rsqrt * g, then
      // times rsqrt) is generated inline again when, reading the shared values, it costs no
      // more than kMaxDuplicatedCost. Operands first, so each judgement sees the final state
      // of its cone.
      absl::flat_hash_set<const HloInstruction*> reconsider(by_cost.begin(), by_cost.end());
      absl::flat_hash_map<const HloInstruction*, int64_t> now;
      for (const HloInstruction* h : order) {
        if (!emittable.contains(h)) continue;
        int64_t c = op_cost(*h);
        for (const HloInstruction* o : h->operands())
          if (emittable.contains(o) && !base_materialized(o) && !shared.contains(o)) c += now[o];
        now[h] = std::min(c, kCap);
        if (reconsider.contains(h) && now[h] <= max_duplicated(h)) shared.erase(h);
      }
    };
    // Cutting a deep chain makes new kernels, and each would generate the whole cone behind
    // its cut again (a 1,000-instruction chain whose values are read twice ran 4,785
    // operations in 22 kernels): the values they share are judged again, keeping what is
    // shared already. Sharing more only makes cones shallower, so no cut is needed after.
    share_duplicated();
    if (cut_deep()) {
      settled = shared;
      share_duplicated();
    }
  }
  // A dynamic-update-slice whose update reads the operand being updated (x.at[i].set(x[i-1]
  // * 0.5) in a loop) could not write in place: its update is computed into memory first, a
  // window-sized kernel, so the update kernel writes the window alone, not the whole state.
  if (options.update_in_place) {
    auto inlined = [&](const HloInstruction* h) {
      return emittable.contains(h) && !base_materialized(h) && !shared.contains(h);
    };
    for (const HloInstruction* h : order) {
      if (h->opcode() != HloOpcode::kDynamicUpdateSlice || !emittable.contains(h)) continue;
      const HloInstruction* target = h->operand(0);
      const HloInstruction* update = h->operand(1);
      if (inlined(target) || !inlined(update)) continue;
      absl::flat_hash_set<const HloInstruction*> seen;
      std::vector<const HloInstruction*> stack = {update};
      bool reads_target = false;
      while (!stack.empty() && !reads_target) {
        const HloInstruction* o = stack.back();
        stack.pop_back();
        if (!seen.insert(o).second) continue;
        for (const HloInstruction* oo : o->operands()) {
          reads_target |= oo == target;
          if (inlined(oo)) stack.push_back(oo);
        }
      }
      if (reads_target) shared.insert(update);
    }
  }
  absl::flat_hash_set<const HloInstruction*> roots;
  for (const HloInstruction* h : order) {
    if (emittable.contains(h) && (base_materialized(h) || shared.contains(h))) roots.insert(h);
  }
  return roots;
}

// Plans one computation (the entry, or one run by control flow) into plan.steps and
// plan.dispositions; its kernels are appended to plan.kernels.
void PlanComputation(const HloComputation* entry, const PlanOptions& options, Plan& plan,
                     CalledPlans& called) {
  std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();

  // Which instructions the emitter can generate (outside fusions).
  absl::flat_hash_map<const HloInstruction*, std::string> why_not;
  absl::flat_hash_set<const HloInstruction*> emittable;
  absl::flat_hash_map<const HloInstruction*, GemmShape> gemms;
  absl::flat_hash_map<const HloInstruction*, ConvGemm> convs;
  absl::flat_hash_set<const HloInstruction*> library_calls;  // options.library_call's
  absl::flat_hash_set<const HloInstruction*> sorts;          // options.native_sort's
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> control_flow;
  for (const HloInstruction* h : order) {
    std::string why;
    if (options.native_control_flow && IsControlFlow(*h)) {
      if (auto c = PlanCalled(*h, options, plan, called, &why))
        control_flow[h] = *c;
      else
        why_not[h] = why;
      continue;
    }
    if (options.library_call != nullptr && options.library_call(*h)) {
      library_calls.insert(h);
      continue;
    }
    if (options.native_sort && h->opcode() == HloOpcode::kSort &&
        llvm_emit::CanEmitSortComparator(*h)) {
      sorts.insert(h);
      continue;
    }
    if (std::optional<ConvGemm> c = LibraryConv(*h, options)) {
      convs[h] = *c;
      continue;
    }
    if (std::optional<GemmShape> g = LibraryGemm(*h, options)) {
      // Not emittable: its operands are materialized and its users read its buffer.
      gemms[h] = *g;
      continue;
    }
    if (h->opcode() == HloOpcode::kFusion) {
      if (!CanEmitFusion(*h, options, &why)) why_not[h] = why;
    } else if (!IsBookkeeping(*h)) {
      if (Emittable(*h, options, &why))
        emittable.insert(h);
      else
        why_not[h] = why;
    }
  }
  const absl::flat_hash_set<const HloInstruction*> kernel_roots =
      KernelRoots(*entry, order, emittable, options);
  auto materialized = [&](const HloInstruction* h) { return kernel_roots.contains(h); };

  for (const HloInstruction* h : order) {
    Step step;
    step.instr = h;
    if (IsBookkeeping(*h)) {
      step.kind = Disposition::kBookkeeping;
    } else if (auto g = gemms.find(h); g != gemms.end()) {
      step.kind = Disposition::kLibrary;
      step.gemm = g->second;
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
    } else if (auto c = convs.find(h); c != convs.end()) {
      step.kind = Disposition::kLibrary;
      step.conv = c->second;
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
    } else if (library_calls.contains(h)) {
      step.kind = Disposition::kLibrary;
      if (options.library_call_args != nullptr) step.library_args = options.library_call_args(*h);
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
    } else if (sorts.contains(h)) {
      step.kind = Disposition::kLibrary;
      llvm_emit::KernelSpec spec;
      spec.name = absl::StrCat("k", plan.kernels.size(), "_", h->name(), "_comparator");
      spec.sort = h;
      for (const HloInstruction* op : h->operands()) {
        step.sources.push_back(op);
        spec.inputs.push_back(op);
      }
      step.comparator = static_cast<int>(plan.kernels.size());
      plan.kernels.push_back(std::move(spec));
    } else if (auto w = why_not.find(h); w != why_not.end()) {
      step.kind = Disposition::kEvaluator;
      step.why = w->second;
    } else if (auto c = control_flow.find(h); c != control_flow.end()) {
      step.kind = Disposition::kControlFlow;
      step.called = c->second;
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
    } else if (h->opcode() == HloOpcode::kFusion) {
      step.kind = Disposition::kKernel;
      llvm_emit::KernelSpec spec;
      spec.name = absl::StrCat("k", plan.kernels.size(), "_", h->name());
      const HloComputation* comp = h->fused_computation();
      for (const HloInstruction* p : comp->parameters()) spec.inputs.push_back(p);
      if (comp->root()->opcode() == HloOpcode::kTuple) {
        for (const HloInstruction* op : comp->root()->operands()) spec.outputs.push_back(op);
      } else {
        spec.outputs.push_back(comp->root());
      }
      for (const HloInstruction* op : h->operands()) step.sources.push_back(op);
      step.kernel = static_cast<int>(plan.kernels.size());
      SetInPlace(spec, step, options);
      SetPartition(spec, step, options);
      SetOutputOverSources(spec, step);
      plan.kernels.push_back(std::move(spec));
    } else if (!materialized(h)) {
      plan.dispositions.emplace_back(h, Disposition::kInlined);
      continue;
    } else {
      step.kind = Disposition::kKernel;
      llvm_emit::KernelSpec spec;
      spec.name = absl::StrCat("k", plan.kernels.size(), "_", h->name());
      spec.outputs.push_back(h);
      // Walk the operands: inline what is generated element by element, read the rest.
      absl::flat_hash_set<const HloInstruction*> seen;
      std::vector<const HloInstruction*> stack(h->operands().begin(), h->operands().end());
      while (!stack.empty()) {
        const HloInstruction* o = stack.back();
        stack.pop_back();
        if (!seen.insert(o).second) continue;
        if (IsInlinableConstant(*o, options)) continue;
        if (emittable.contains(o) && !materialized(o)) {
          for (const HloInstruction* oo : o->operands()) stack.push_back(oo);
          continue;
        }
        spec.inputs.push_back(o);
      }
      step.sources = spec.inputs;
      step.kernel = static_cast<int>(plan.kernels.size());
      SetInPlace(spec, step, options);
      SetPartition(spec, step, options);
      SetOutputOverSources(spec, step);
      plan.kernels.push_back(std::move(spec));
    }
    plan.dispositions.emplace_back(h, step.kind);
    plan.steps.push_back(std::move(step));
  }
  MarkLastUses(plan);
  MarkMovedElements(plan);
}

}  // namespace

std::vector<KernelGroup> KernelGroups(const HloComputation& comp, const PlanOptions& options) {
  std::vector<HloInstruction*> order = comp.MakeInstructionPostOrder();
  absl::flat_hash_set<const HloInstruction*> emittable;
  for (const HloInstruction* h : order) {
    if (options.native_control_flow && IsControlFlow(*h)) continue;
    if (LibraryConv(*h, options) || LibraryGemm(*h, options)) continue;
    if (h->opcode() == HloOpcode::kFusion || IsBookkeeping(*h)) continue;
    std::string why;
    if (Emittable(*h, options, &why)) emittable.insert(h);
  }
  const absl::flat_hash_set<const HloInstruction*> roots =
      KernelRoots(comp, order, emittable, options);
  std::vector<KernelGroup> groups;
  for (HloInstruction* h : order) {
    if (!roots.contains(h)) continue;
    // The same walk as a kernel's inputs in PlanComputation: what is inlined is a member.
    absl::flat_hash_set<const HloInstruction*> seen;
    std::vector<HloInstruction*> stack(h->operands().begin(), h->operands().end());
    absl::flat_hash_set<const HloInstruction*> members;
    while (!stack.empty()) {
      HloInstruction* o = stack.back();
      stack.pop_back();
      if (!seen.insert(o).second) continue;
      if (IsInlinableConstant(*o, options)) {
        members.insert(o);
        continue;
      }
      if (emittable.contains(o) && !roots.contains(o)) {
        members.insert(o);
        for (HloInstruction* oo : o->operands()) stack.push_back(oo);
      }
    }
    if (members.empty()) continue;
    KernelGroup g;
    g.root = h;
    for (HloInstruction* i : order) {
      if (members.contains(i)) g.inlined.push_back(i);
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

Plan MakePlan(const HloModule& module, const PlanOptions& options) {
  Plan plan;
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return plan;
  plan.computation = entry;
  CalledPlans called;
  called.active.insert(entry);
  PlanComputation(entry, options, plan, called);
  return plan;
}

std::string PlanToString(
    const Plan& plan, const std::function<std::string(const HloInstruction&, Disposition)>& name) {
  std::string out;
  auto print = [&](const ComputationPlan& p) {
    absl::StrAppend(&out, "%", p.computation ? p.computation->name() : "?", ":\n");
    for (const auto& [h, d] : p.dispositions)
      absl::StrAppend(&out, "  ", h->name(), " ",
                      name ? name(*h, d) : std::string(DispositionName(d)), "\n");
  };
  print(plan);
  for (const ComputationPlan& p : plan.called) print(p);
  return out;
}

int EvaluatorStepCount(const Plan& plan) {
  int n = 0;
  auto count = [&](const ComputationPlan& p) {
    for (const auto& [h, d] : p.dispositions) n += d == Disposition::kEvaluator;
  };
  count(plan);
  for (const ComputationPlan& p : plan.called) count(p);
  return n;
}

int64_t ConditionalBranch(const Literal& selector, int64_t branches) {
  return ConditionalBranch(selector.untyped_data(),
                           selector.shape().element_type() == PrimitiveType::PRED, branches);
}

int64_t ConditionalBranch(const void* selector, bool pred, int64_t branches) {
  if (pred) return *static_cast<const bool*>(selector) ? 0 : 1;
  const int64_t branch = *static_cast<const int32_t*>(selector);
  return branch < 0 || branch >= branches ? branches - 1 : branch;
}

absl::StatusOr<const Literal*> ConstantValue(const HloInstruction& constant) {
  if (!constant.attrs().literal.has_value())
    return absl::InvalidArgumentError("constant " + constant.name() +
                                      " has no value (the dump elided it as {...})");
  return &constant.literal();
}

}  // namespace kiln::kernel_plan
