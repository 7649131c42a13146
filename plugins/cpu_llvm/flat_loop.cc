#include "plugins/cpu_llvm/flat_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "plugins/cpu_llvm/library_step.h"

namespace kiln::cpu {

using kernel_plan::ComputationPlan;
using kernel_plan::Disposition;
using kernel_plan::Plan;
using kernel_plan::Step;
using kernel_plan::Value;

// Owned buffers are held by pointer: an iteration hands them between the state and the
// temporaries by swapping pointers (moving Literals, each with its Shape, was a fifth of a
// small loop's time). Slots are the state's elements, then the temporaries.
struct FlatLoop::Buffers {
  std::vector<Value> initial;                   // the operand's elements, read-only
  std::vector<std::unique_ptr<Literal>> slots;  // null for a state element this run borrows
  std::vector<void*> data;                      // each slot's buffer (a borrowed one's initial)
  std::vector<void*> tables;                    // every kernel's table, back to back
  // Per kernel (by ordinal): its entry point when one call on this thread runs it whole (no
  // pool, no parts), else null (CallKernel decides).
  std::vector<KernelFn> serial;
  // A tuple-shaped library step's result, made on its first call of the run and zeroed for
  // each after (allocating it per call was a fifth of the time of a scan whose steps are 8x8
  // factorizations).
  absl::flat_hash_map<const Kernel*, Literal> library_tuples;

  void Point(int slot, void* to, const std::vector<std::vector<int>>& sites) {
    data[slot] = to;
    for (int entry : sites[slot]) tables[entry] = to;
  }
  // Hands slot `b`'s buffer to slot `a` and `a`'s to `b`. A borrowed `a` (null) takes `b`'s
  // and `b` gets a new one of `shape`: the borrowed value stays the caller's.
  void Exchange(int a, int b, const Shape& shape, const std::vector<std::vector<int>>& sites) {
    if (slots[a] == nullptr) {
      slots[a] = std::move(slots[b]);
      slots[b] = std::make_unique<Literal>(Literal::Uninitialized(shape));
    } else {
      std::swap(slots[a], slots[b]);
    }
    Point(a, slots[a]->untyped_data(), sites);
    Point(b, slots[b]->untyped_data(), sites);
  }
};

// A run as direct calls, its pointers fixed for the run (BuffersStayPut).
struct FlatLoop::FixedCall {
  KernelFn fn;
  void** table;
  int64_t extent;
  int nested;       // a nested loop's index in loops_ instead of a kernel, else -1
  int conditional;  // a conditional's index in conditionals_ instead, else -1
  // The operand copied into the output before the kernel (LoopSchedule::Call::operand).
  void* operand_to = nullptr;
  const void* operand_from = nullptr;
  size_t operand_bytes = 0;
};

struct FlatLoop::Fixed {
  struct Copy {
    void* to;
    const void* from;
    size_t bytes;
  };
  struct Loop {
    std::vector<FixedCall> cond, body;
    std::vector<Copy> entry;   // a nested loop's state from its operand
    std::vector<Copy> copies;  // next state elements copied after the body
    const bool* go = nullptr;
    // A counted loop: its counter, its limit and their type, whether the run stores the
    // next counter itself (Loop::counter_kernel).
    void* counter = nullptr;
    const void* limit = nullptr;
    bool s32 = false;
    bool store_counter = false;
  };
  struct Branch {
    std::vector<FixedCall> calls;
    std::vector<Copy> results;
  };
  struct Conditional {
    const void* selector = nullptr;
    bool pred = false;
    std::vector<Branch> branches;
  };
  std::vector<Loop> loops;
  std::vector<Conditional> conditionals;
};

// Whether CallKernel splits the step's outer loop (or its parts) across the pool.
static bool Parallel(const KernelContext& context, const Step& step) {
  const int64_t extent = step.reduce_parts > 0 ? step.reduce_parts : step.outer_extent;
  return extent >= 2 && context.pool != nullptr && context.pool->size() > 1 &&
         step.work >= context.parallel_min_work;
}

// Whether one call on the calling thread runs the step's kernel whole (no pool, no parts).
static bool RunsWhole(const KernelContext& context, const Step& step) {
  return step.reduce_parts == 0 && !Parallel(context, step);
}

// A kernel of at least this much work (Step::work: about a millisecond on one core) may stay
// on the pool while other processes contend for the cores (ThreadPool::ParallelFor's
// large_cost, which tries both ways): on the caller alone it gets one core when lucky and
// half of one when the scheduler keeps it beside a busy process (layernorm+GELU
// f32[8192,768] beside two busy processes: about 3 ms or 7 ms a run, by the process).
constexpr int64_t kLargeKernelWork = int64_t{1} << 23;

void CallKernel(const KernelContext& context, const Step& step, void** table) {
  const KernelFn fn = (*context.kernels)[step.kernel];
  const int64_t extent = step.reduce_parts > 0 ? step.reduce_parts : step.outer_extent;
  if (Parallel(context, step)) {
    context.pool->ParallelFor(
        extent, [fn, table](int64_t begin, int64_t end) { fn(table, begin, end); }, 0,
        /*even=*/true, step.work >= kLargeKernelWork ? step.work : 0);
  } else {
    fn(table, 0, extent);
  }
  if (step.reduce_parts > 0) fn(table, extent, extent + 1);
}

std::unique_ptr<FlatLoop> FlatLoop::Make(const Step& step, const Plan& plan) {
  std::unique_ptr<FlatLoop> flat(new FlatLoop);
  flat->loops_.emplace_back();
  if (!flat->AddLoop(0, step, plan)) return nullptr;
  const int state_size = flat->loops_[0].state_size;
  flat->temp_slot_.resize(flat->temp_shapes_.size());
  for (size_t t = 0; t < flat->temp_shapes_.size(); ++t)
    flat->temp_slot_[t] = state_size + static_cast<int>(t);
  // Enclosing loops come first, so the slot a nested loop takes is settled.
  for (size_t l = 1; l < flat->loops_.size(); ++l) {
    const Loop& loop = flat->loops_[l];
    for (int i = 0; i < loop.state_size; ++i)
      if (loop.takes[i]) flat->temp_slot_[loop.state_temps[i]] = flat->Slot(loop.init[i]);
  }
  // A kernel updating a temporary in place that nothing reads after it writes its output
  // where the temporary lies (programs in order, so a chain of them shares one slot).
  for (const Program* p : flat->Programs())
    for (const Kernel& k : p->kernels)
      if (k.runs_kernel() && k.take && k.sources[k.in_place].kind == Ref::kTemp)
        flat->temp_slot_[k.outputs[0]] = flat->Slot(k.sources[k.in_place]);
  for (size_t l = 0; l < flat->loops_.size(); ++l) {
    flat->AliasInPlaceUpdates(static_cast<int>(l));
    flat->FindCounter(static_cast<int>(l), plan);
  }
  flat->LayOutTables();
  // The state elements a run writes where they lie: updated in place or copied into, or
  // taken by a nested loop.
  const Loop& top = flat->loops_[0];
  for (int i = 0; i < state_size; ++i)
    flat->written_.push_back(top.next[i] == Next::kCopy || top.next[i] == Next::kInPlace);
  for (size_t l = 1; l < flat->loops_.size(); ++l) {
    const Loop& loop = flat->loops_[l];
    for (int i = 0; i < loop.state_size; ++i)
      if (const int slot = flat->Slot(loop.init[i]); loop.takes[i] && slot < state_size)
        flat->written_[slot] = true;
  }
  if (flat->BuffersStayPut()) flat->MakeSchedule();
  return flat;
}

std::vector<FlatLoop::Program*> FlatLoop::MutablePrograms() {
  std::vector<Program*> out;
  for (Loop& l : loops_) {
    out.push_back(&l.cond);
    out.push_back(&l.body);
  }
  for (Conditional& c : conditionals_)
    for (Branch& b : c.branches) out.push_back(&b.program);
  return out;
}

std::vector<const FlatLoop::Program*> FlatLoop::Programs() const {
  std::vector<Program*> all = const_cast<FlatLoop*>(this)->MutablePrograms();
  return {all.begin(), all.end()};
}

bool FlatLoop::BuffersStayPut() const {
  for (const Loop& l : loops_)
    for (Next n : l.next)
      if (n == Next::kExchange) return false;
  for (const Program* p : Programs())
    for (const Kernel& k : p->kernels) {
      if (k.library) return false;  // run as the general runner runs them
      // A kernel that takes its operand's buffer moves it, unless it writes where it lies.
      if (k.runs_kernel() && k.take && OperandElsewhere(k) != nullptr) return false;
    }
  return true;
}

namespace {

// What a kernel instruction computes: its fused computation's root, or itself.
const HloInstruction* Computed(const HloInstruction& kernel) {
  return kernel.opcode() == HloOpcode::kFusion ? kernel.fused_computation()->root() : &kernel;
}

// `x`, read inside kernel instruction `kernel`, as an instruction of the loop computation
// (a fusion parameter is the fusion's operand).
const HloInstruction* Outside(const HloInstruction& kernel, const HloInstruction* x) {
  if (kernel.opcode() == HloOpcode::kFusion && x->opcode() == HloOpcode::kParameter &&
      x->parent() == kernel.fused_computation())
    return kernel.operand(static_cast<int>(x->parameter_number()));
  return x;
}

bool IsCounterType(const Shape& s) {
  return s.IsArray() && s.rank() == 0 &&
         (s.element_type() == PrimitiveType::S32 || s.element_type() == PrimitiveType::S64);
}

// The state element `x` reads directly (get-tuple-element of the loop parameter), else -1.
int StateElement(const HloInstruction* x, const HloInstruction* param) {
  return x->opcode() == HloOpcode::kGetTupleElement && x->operand(0) == param &&
                 IsCounterType(x->shape())
             ? static_cast<int>(x->tuple_index())
             : -1;
}

std::optional<int64_t> IntConstant(const HloInstruction* x) {
  if (x->opcode() != HloOpcode::kConstant || !IsCounterType(x->shape())) return std::nullopt;
  return x->literal().GetAsInt64(0);
}

}  // namespace

void FlatLoop::FindCounter(int l, const Plan& plan) {
  Loop& loop = loops_[l];
  if (loop.cond.kernels.size() != 1 || !loop.cond.kernels[0].runs_kernel() ||
      loop.cond_result.kind != Ref::kTemp)
    return;
  const HloInstruction& test = *loop.cond.kernels[0].step->instr;
  const HloInstruction* lt = Computed(test);
  if (lt->opcode() != HloOpcode::kCompare || !lt->attrs().comparison_direction) return;
  const HloInstruction* cond_param = plan.called[loop.step->called[0]].computation->parameter(0);
  int counter = -1;
  const HloInstruction* bound = nullptr;
  const HloInstruction* a = Outside(test, lt->operand(0));
  const HloInstruction* b = Outside(test, lt->operand(1));
  if (*lt->attrs().comparison_direction == ComparisonDirection::kLt) {
    counter = StateElement(a, cond_param);
    bound = b;
  } else if (*lt->attrs().comparison_direction == ComparisonDirection::kGt) {
    counter = StateElement(b, cond_param);
    bound = a;
  }
  // Its next value copied, or written over it by its kernel (both a single store).
  if (counter < 0 || (loop.next[counter] != Next::kCopy && loop.next[counter] != Next::kInPlace) ||
      loop.next_state[counter].kind != Ref::kTemp)
    return;
  // The limit: a constant, or a state element the body passes on unchanged.
  Ref limit;
  if (IntConstant(bound)) {
    limit = Ref{Ref::kConstant, 0, &bound->literal()};
  } else if (const int j = StateElement(bound, cond_param);
             j >= 0 && j != counter && loop.next[j] == Next::kKeep) {
    limit = loop.keep.empty() || !loop.keep[j] ? Ref{Ref::kState, j, nullptr, l} : loop.init[j];
  } else {
    return;
  }
  // The body's next counter: a kernel of its own computing counter + 1.
  const HloInstruction* body_param = plan.called[loop.step->called[1]].computation->parameter(0);
  const int next = loop.next_state[counter].index;
  for (size_t n = 0; n < loop.body.kernels.size(); ++n) {
    const Kernel& k = loop.body.kernels[n];
    if (!k.runs_kernel() || k.outputs.size() != 1 || k.outputs[0] != next) continue;
    const HloInstruction& step = *k.step->instr;
    const HloInstruction* add = Computed(step);
    if (add->opcode() != HloOpcode::kAdd) return;
    for (int side : {0, 1}) {
      const std::optional<int64_t> one = IntConstant(Outside(step, add->operand(1 - side)));
      if (StateElement(Outside(step, add->operand(side)), body_param) == counter && one &&
          *one == 1) {
        loop.counter = counter;
        loop.limit = limit;
        loop.counter_kernel = static_cast<int>(n);
      }
    }
    break;
  }
  // Anything else reading the next counter needs its kernel (a nested loop reads its
  // enclosing values through its `init`, a conditional its selector and its branches'
  // results).
  const Ref next_ref{Ref::kTemp, next, nullptr};
  std::vector<Ref> read;
  for (const Loop& other : loops_) read.insert(read.end(), other.init.begin(), other.init.end());
  for (const Conditional& c : conditionals_) {
    read.push_back(c.selector);
    for (const Branch& b : c.branches) read.insert(read.end(), b.result.begin(), b.result.end());
  }
  for (const Program* p : Programs())
    for (const Kernel& k : p->kernels) read.insert(read.end(), k.sources.begin(), k.sources.end());
  if (std::find(read.begin(), read.end(), next_ref) != read.end()) loop.counter_kernel = -1;
}

void FlatLoop::AliasInPlaceUpdates(int l) {
  Loop& loop = loops_[l];
  // A copy this small costs less than rewriting the table entries an exchange touches, and
  // keeps the loop a fixed program (compiled into a driver): JAX's insertion sort copies its
  // f32[256] (1 KB) each outer step, 0.17 -> 0.04 ms with the driver.
  constexpr int64_t kCopyBytes = 4096;
  loop.next.assign(loop.state_size, Next::kKeep);
  for (int i = 0; i < loop.state_size; ++i) {
    if (loop.next_state[i].kind != Ref::kTemp) continue;
    const int t = loop.next_state[i].index;
    // Its next value is made where it lies: updated in place, or written over it by an
    // elementwise kernel (a scan's carry c + x[i]) that is its last reader.
    for (const Kernel& k : loop.body.kernels) {
      if (!k.runs_kernel() || k.outputs.empty() || k.outputs[0] != t) continue;
      const int at = k.take ? k.in_place : k.over;
      if (at < 0) continue;
      if (k.sources[at] == Ref{Ref::kState, i, nullptr, l}) temp_slot_[t] = StateSlot(l, i);
    }
    loop.next[i] = temp_slot_[t] == StateSlot(l, i)            ? Next::kInPlace
                   : temp_shapes_[t].byte_size() <= kCopyBytes ? Next::kCopy
                                                               : Next::kExchange;
  }
}

void FlatLoop::LayOutTables() {
  sites_.assign(loops_[0].state_size + temp_shapes_.size(), {});
  constant_entries_.clear();
  kernel_count_ = 0;
  auto entry = [this](int slot, const void* constant) {
    if (slot >= 0) sites_[slot].push_back(static_cast<int>(constant_entries_.size()));
    constant_entries_.push_back(constant);
  };
  for (Program* program : MutablePrograms()) {
    for (Kernel& k : program->kernels) {
      if (!k.runs_kernel()) continue;
      k.table = static_cast<int>(constant_entries_.size());
      k.ordinal = kernel_count_++;
      for (size_t i = 0; i < k.sources.size(); ++i) {
        const Ref& r = k.sources[i];
        // An operand updated in place is read from the output, which starts as it.
        if (static_cast<int>(i) == k.in_place)
          entry(temp_slot_[k.outputs[0]], nullptr);
        else if (r.kind == Ref::kConstant)
          entry(-1, r.constant->untyped_data());
        else
          entry(Slot(r), nullptr);
      }
      for (int t : k.outputs) entry(temp_slot_[t], nullptr);
      if (k.partials >= 0) entry(temp_slot_[k.partials], nullptr);
    }
  }
  table_size_ = static_cast<int>(constant_entries_.size());
}

int FlatLoop::NewTemp(const Shape& shape) {
  temp_shapes_.push_back(shape);
  return static_cast<int>(temp_shapes_.size()) - 1;
}

bool FlatLoop::AddLoop(int l, const Step& step, const Plan& plan) {
  const HloInstruction& w = *step.instr;
  if (w.opcode() != HloOpcode::kWhile || step.called.size() != 2 || !w.shape().IsTuple())
    return false;
  for (const Shape& s : w.shape().tuple_shapes())
    if (!s.IsArray()) return false;
  Loop& loop = loops_[l];  // a deque's elements stay where they are as nested loops are added
  loop.step = &step;
  loop.state_size = static_cast<int>(w.shape().tuple_size());
  loop.state_shapes = w.shape().tuple_shapes();
  std::vector<Ref> go, next;
  if (!Add(Scope{l, false, {}}, plan.called[step.called[0]], plan, loop.cond, go) ||
      !Add(Scope{l, true, {}}, plan.called[step.called[1]], plan, loop.body, next))
    return false;
  const Shape& go_shape = plan.called[step.called[0]].computation->root()->shape();
  if (go.size() != 1 || go[0].kind == Ref::kConstant || !go_shape.IsArray() ||
      go_shape.element_type() != PrimitiveType::PRED || go_shape.rank() != 0 ||
      static_cast<int>(next.size()) != loop.state_size)
    return false;
  loop.cond_result = go[0];
  std::vector<bool> seen(temp_shapes_.size(), false);
  for (int i = 0; i < loop.state_size; ++i) {
    // A state element stays in place or is replaced by a temporary of its own.
    const Ref unchanged{Ref::kState, i, nullptr, l};
    const Ref& r = next[i];
    if ((!loop.keep.empty() && loop.keep[i]) || r == unchanged) {
      loop.next_state.push_back(unchanged);
      continue;
    }
    if (r.kind != Ref::kTemp || r.read_only || seen[r.index]) {
      const int t = NewTemp(loop.state_shapes[i]);
      loop.moves.emplace_back(r, t);
      loop.next_state.push_back(Ref{Ref::kTemp, t, nullptr});
      continue;
    }
    seen[r.index] = true;
    loop.next_state.push_back(r);
  }
  return true;
}

bool FlatLoop::AddNested(const Step& step, const Plan& plan, const std::vector<Ref>& operands,
                         const std::function<bool(int)>& may_take, std::vector<Ref>& results,
                         Program& out) {
  const HloInstruction& w = *step.instr;
  if (step.called.size() != 2 || !w.shape().IsTuple() ||
      w.shape().tuple_size() != static_cast<int64_t>(operands.size()))
    return false;
  for (const Shape& s : w.shape().tuple_shapes())
    if (!s.IsArray()) return false;
  const HloComputation& body = *plan.called[step.called[1]].computation;
  if (body.num_parameters() != 1) return false;
  const HloInstruction* root = body.root();
  const bool tuple_root =
      root->opcode() == HloOpcode::kTuple && root->operand_count() == w.shape().tuple_size();
  const int n = static_cast<int>(loops_.size());
  Loop& inner = loops_.emplace_back();
  for (size_t i = 0; i < operands.size(); ++i) {
    const HloInstruction* passed = tuple_root ? root->operand(static_cast<int>(i)) : nullptr;
    const bool keep = passed != nullptr && passed->opcode() == HloOpcode::kGetTupleElement &&
                      passed->operand(0) == body.parameter(0) &&
                      passed->tuple_index() == static_cast<int64_t>(i);
    Ref init = operands[i];
    init.read_only = keep;
    inner.keep.push_back(keep);
    inner.takes.push_back(!keep && may_take(static_cast<int>(i)));
    inner.init.push_back(init);
    inner.state_temps.push_back(keep ? -1 : NewTemp(w.shape().tuple_shapes(i)));
  }
  if (!AddLoop(n, step, plan)) return false;
  results.clear();
  for (size_t i = 0; i < operands.size(); ++i)
    results.push_back(inner.keep[i] ? inner.init[i] : Ref{Ref::kTemp, inner.state_temps[i]});
  Kernel k;
  k.step = &step;
  k.nested = n;
  out.kernels.push_back(std::move(k));
  return true;
}

bool FlatLoop::AddConditional(const Step& step, const Plan& plan, const Ref& selector,
                              const std::vector<std::vector<Ref>>& operands,
                              std::vector<Ref>& results, Program& out) {
  const HloInstruction& h = *step.instr;
  const Shape& which = h.operand(0)->shape();
  if (step.called.size() != operands.size() || operands.empty() || !which.IsArray() ||
      which.rank() != 0 ||
      (which.element_type() != PrimitiveType::PRED && which.element_type() != PrimitiveType::S32))
    return false;
  const std::vector<Shape> shapes =
      h.shape().IsTuple() ? h.shape().tuple_shapes() : std::vector<Shape>{h.shape()};
  for (const Shape& s : shapes)
    if (!s.IsArray()) return false;
  const int c = static_cast<int>(conditionals_.size());
  Conditional& cond = conditionals_.emplace_back();
  cond.selector = selector;
  cond.pred = which.element_type() == PrimitiveType::PRED;
  for (const Shape& s : shapes) cond.result_temps.push_back(NewTemp(s));
  cond.branches.resize(operands.size());
  for (size_t b = 0; b < operands.size(); ++b) {
    Scope scope;
    scope.param = operands[b];
    for (Ref& r : scope.param) r.read_only = true;
    Branch& branch = cond.branches[b];
    if (!Add(scope, plan.called[step.called[b]], plan, branch.program, branch.result) ||
        branch.result.size() != shapes.size())
      return false;
  }
  results.clear();
  for (int t : cond.result_temps) results.push_back(Ref{Ref::kTemp, t});
  Kernel k;
  k.step = &step;
  k.conditional = c;
  out.kernels.push_back(std::move(k));
  return true;
}

bool FlatLoop::Add(const Scope& scope, const ComputationPlan& p, const Plan& plan, Program& out,
                   std::vector<Ref>& root) {
  const int l = scope.loop;
  const bool is_body = scope.is_body;
  const Loop* loop = l >= 0 ? &loops_[l] : nullptr;
  absl::flat_hash_map<const HloInstruction*, Ref> refs;
  // Tuple values: a multi-output kernel's outputs, a tuple, a nested loop's final state, a
  // conditional's result.
  absl::flat_hash_map<const HloInstruction*, std::vector<Ref>> tuples;
  // Values a nested loop's result reads where they lie, so nothing may take them after it.
  std::vector<Ref> pinned;
  auto may_take = [&pinned](const Ref& r) {
    return !r.read_only && std::find(pinned.begin(), pinned.end(), r) == pinned.end();
  };
  const HloInstruction* param =
      p.computation->num_parameters() == 1 ? p.computation->parameter(0) : nullptr;
  if (param == nullptr) return false;
  // How many get-tuple-elements read each state element: a kernel may take an element's
  // buffer only when it reads the one that is the element's only reader.
  std::vector<int> readers(loop != nullptr ? loop->state_size : 0, 0);
  // The parameter's elements, for a conditional that takes the whole parameter as its
  // operand (the tuple simplifier makes tuple(gte 0, gte 1, ...) the parameter itself).
  std::vector<Ref> elements = scope.param;
  if (loop != nullptr || param->shape().IsTuple()) {
    const int64_t size =
        loop != nullptr ? loop->state_size : static_cast<int64_t>(scope.param.size());
    if (loop == nullptr && param->shape().tuple_size() != size) return false;
    bool whole = false;
    for (const HloInstruction* u : param->users()) {
      if (u->opcode() == HloOpcode::kConditional) {
        whole = true;
        continue;
      }
      if (u->opcode() != HloOpcode::kGetTupleElement) return false;
      if (u->tuple_index() < 0 || u->tuple_index() >= size) return false;
      if (loop != nullptr) ++readers[u->tuple_index()];
    }
    if (loop != nullptr) {
      elements.clear();
      for (int i = 0; i < loop->state_size; ++i) {
        elements.push_back(loop->keep.empty() || !loop->keep[i] ? Ref{Ref::kState, i, nullptr, l}
                                                                : loop->init[i]);
        // Read by the conditional as well: no kernel takes it.
        if (whole) ++readers[i];
      }
    }
  } else {
    if (scope.param.size() != 1) return false;
    refs[param] = scope.param[0];
  }
  // A conditional reads its operand tuples' elements where they lie: no step that computes
  // may run between a tuple and it (one could take an element the branch reads).
  int computed = 0;
  absl::flat_hash_map<const HloInstruction*, int> made_at;
  const Step* previous = nullptr;  // the step before, inlined ones aside
  for (const Step& s : p.steps) {
    const HloInstruction* h = s.instr;
    if (s.kind == Disposition::kInlined) continue;
    const Step* before_step = std::exchange(previous, &s);
    if (s.kind == Disposition::kKernel) {
      ++computed;
      const llvm_emit::KernelSpec& spec = plan.kernels[s.kernel];
      Kernel k;
      k.step = &s;
      for (const HloInstruction* source : s.sources) {
        auto it = refs.find(source);
        if (it == refs.end()) return false;
        k.sources.push_back(it->second);
      }
      for (const HloInstruction* o : spec.outputs) {
        if (!o->shape().IsArray()) return false;
        k.outputs.push_back(NewTemp(o->shape()));
      }
      if (s.reduce_parts > 0) k.partials = NewTemp(llvm_emit::PartialsShape(spec));
      if (s.in_place_source >= 0) {
        k.in_place = s.in_place_source;
        const Ref& r = k.sources[k.in_place];
        const bool last = s.IsLastUse(s.sources[k.in_place]) && may_take(r);
        // The condition leaves the state to the body; the body may take an element when
        // its one reader dies here (the root does not pass it on).
        k.take = r.kind == Ref::kTemp    ? last
                 : r.kind == Ref::kState ? is_body && last && readers[r.index] == 1
                                         : false;
      }
      if (is_body && k.in_place < 0 && k.outputs.size() == 1) {
        for (int i : s.output_over_sources) {
          const Ref& r = k.sources[i];
          if (r.kind == Ref::kState && may_take(r) && readers[r.index] == 1 &&
              s.IsLastUse(s.sources[i])) {
            k.over = i;
            break;
          }
        }
      }
      if (h->shape().IsTuple()) {
        for (int t : k.outputs) tuples[h].push_back(Ref{Ref::kTemp, t, nullptr});
      } else {
        if (k.outputs.size() != 1) return false;
        refs[h] = Ref{Ref::kTemp, k.outputs[0], nullptr};
      }
      out.kernels.push_back(std::move(k));
      continue;
    }
    if (s.kind == Disposition::kLibrary) {
      ++computed;
      Kernel k;
      k.step = &s;
      k.library = true;
      for (const HloInstruction* source : s.sources) {
        auto it = refs.find(source);
        if (it == refs.end()) return false;
        k.sources.push_back(it->second);
      }
      if ((s.gemm || s.conv) && k.sources.size() != 2) return false;
      const std::vector<Shape> shapes =
          h->shape().IsTuple() ? h->shape().tuple_shapes() : std::vector<Shape>{h->shape()};
      for (const Shape& shape : shapes) {
        if (!shape.IsArray()) return false;
        k.outputs.push_back(NewTemp(shape));
      }
      if (h->shape().IsTuple()) {
        for (int t : k.outputs) tuples[h].push_back(Ref{Ref::kTemp, t, nullptr});
      } else {
        refs[h] = Ref{Ref::kTemp, k.outputs[0], nullptr};
      }
      out.kernels.push_back(std::move(k));
      continue;
    }
    if (s.kind == Disposition::kControlFlow && h->opcode() == HloOpcode::kWhile) {
      ++computed;
      // Its operand is the tuple made just before it, so nothing between could have taken an
      // element the nested loop reads where it lies.
      auto in = tuples.find(h->operand(0));
      if (in == tuples.end() || before_step == nullptr || before_step->instr != h->operand(0))
        return false;
      // The loop may update an element of this loop's state where it lies when the operand
      // (once, not also as another element) was the element's last reader: the element's
      // next value is made later (the nested result itself, or a kernel updating it in place
      // as insertion sort's scatter does), so nothing reads it again this iteration.
      auto may_take_state = [&](int i) {
        const Ref& r = in->second[i];
        const HloInstruction* source = h->operand(0)->operand(i);
        return is_body && r.kind == Ref::kState && r.loop == l && may_take(r) &&
               readers[r.index] == 1 && before_step->IsLastUse(source) &&
               std::count(in->second.begin(), in->second.end(), r) == 1;
      };
      std::vector<Ref> results;
      if (!AddNested(s, plan, in->second, may_take_state, results, out)) return false;
      for (const HloInstruction* u : h->users())
        if (u->opcode() == HloOpcode::kGetTupleElement && results[u->tuple_index()].read_only)
          pinned.push_back(results[u->tuple_index()]);
      tuples[h] = std::move(results);
      continue;
    }
    if (s.kind == Disposition::kControlFlow && h->opcode() == HloOpcode::kConditional) {
      auto selector = refs.find(h->operand(0));
      if (selector == refs.end()) return false;
      std::vector<std::vector<Ref>> operands;
      for (int b = 1; b < h->operand_count(); ++b) {
        const HloInstruction* o = h->operand(b);
        if (o == param && param->shape().IsTuple()) {
          operands.push_back(elements);
        } else if (auto t = tuples.find(o); t != tuples.end()) {
          if (!made_at.contains(o) || made_at[o] != computed) return false;
          operands.push_back(t->second);
        } else if (auto r = refs.find(o); r != refs.end()) {
          operands.push_back({r->second});
        } else {
          return false;
        }
      }
      ++computed;
      std::vector<Ref> results;
      if (!AddConditional(s, plan, selector->second, operands, results, out)) return false;
      if (h->shape().IsTuple())
        tuples[h] = std::move(results);
      else
        refs[h] = results[0];
      continue;
    }
    if (s.kind != Disposition::kBookkeeping) return false;
    switch (h->opcode()) {
      case HloOpcode::kParameter:
        if (h != param) return false;
        break;
      case HloOpcode::kConstant: {
        absl::StatusOr<const Literal*> c = kernel_plan::ConstantValue(*h);
        if (!c.ok() || !h->shape().IsArray()) return false;
        refs[h] = Ref{Ref::kConstant, 0, *c};
        break;
      }
      case HloOpcode::kGetTupleElement: {
        if (!h->shape().IsArray()) return false;
        const int i = static_cast<int>(h->tuple_index());
        if (h->operand(0) == param) {
          // A nested loop reads an element its body passes on where its operand's lies; a
          // branch reads its operand's elements where they lie.
          refs[h] = elements[i];
          break;
        }
        auto it = tuples.find(h->operand(0));
        if (it == tuples.end() || i < 0 || i >= static_cast<int>(it->second.size())) return false;
        refs[h] = it->second[i];
        break;
      }
      case HloOpcode::kTuple: {
        std::vector<Ref>& elements = tuples[h];
        for (const HloInstruction* o : h->operands()) {
          auto it = refs.find(o);
          if (it == refs.end()) return false;
          elements.push_back(it->second);
        }
        made_at[h] = computed;
        break;
      }
      default:
        return false;
    }
  }
  const HloInstruction* r = p.computation->root();
  if (auto t = tuples.find(r); t != tuples.end()) {
    root = t->second;
  } else if (auto a = refs.find(r); a != refs.end()) {
    root = {a->second};
  } else if (r == param && loop == nullptr) {
    root = scope.param;  // a branch that returns its operand
  } else {
    return false;
  }
  return true;
}

const FlatLoop::Ref* FlatLoop::OperandElsewhere(const Kernel& k) const {
  if (k.in_place < 0) return nullptr;
  const Ref& r = k.sources[k.in_place];
  return r.kind == Ref::kConstant || Slot(r) != temp_slot_[k.outputs[0]] ? &r : nullptr;
}

const void* FlatLoop::Data(const Buffers& b, const Ref& r) const {
  return r.kind == Ref::kConstant ? r.constant->untyped_data() : b.data[Slot(r)];
}

absl::Status FlatLoop::RunProgram(const Program& p, Buffers& b, const KernelContext& c) const {
  for (const Kernel& k : p.kernels) {
    const Step& s = *k.step;
    const auto start =
        c.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    auto profile = [&](Disposition d) {
      if (c.profile)
        c.profile->Add(s.instr, kernel_plan::DispositionName(d),
                       std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count());
    };
    if (k.nested >= 0) {
      if (absl::Status st = RunLoop(k.nested, b, c); !st.ok()) return st;
      profile(Disposition::kControlFlow);
      continue;
    }
    if (k.library) {
      if (absl::Status st = RunLibrary(k, b, c); !st.ok()) return st;
      profile(Disposition::kLibrary);
      continue;
    }
    if (k.conditional >= 0) {
      const Conditional& cond = conditionals_[k.conditional];
      const Branch& branch = cond.branches[kernel_plan::ConditionalBranch(
          Data(b, cond.selector), cond.pred, static_cast<int64_t>(cond.branches.size()))];
      if (absl::Status st = RunProgram(branch.program, b, c); !st.ok()) return st;
      for (size_t i = 0; i < cond.result_temps.size(); ++i) {
        const int t = cond.result_temps[i];
        std::memcpy(b.data[temp_slot_[t]], Data(b, branch.result[i]), temp_shapes_[t].byte_size());
      }
      profile(Disposition::kControlFlow);
      continue;
    }
    if (const Ref* r = OperandElsewhere(k)) {
      // The output starts as the operand: its buffer when the kernel may take it (the
      // operand's value is dead after this), else a copy.
      const int out = temp_slot_[k.outputs[0]];
      if (k.take && b.slots[Slot(*r)] != nullptr)
        b.Exchange(out, Slot(*r), temp_shapes_[k.outputs[0]], sites_);
      else
        std::memcpy(b.data[out], Data(b, *r), temp_shapes_[k.outputs[0]].byte_size());
    }
    if (const KernelFn fn = b.serial[k.ordinal])
      fn(&b.tables[k.table], 0, s.outer_extent);
    else
      CallKernel(c, s, &b.tables[k.table]);
    profile(Disposition::kKernel);
  }
  return absl::OkStatus();
}

const Literal& FlatLoop::LiteralOf(const Buffers& b, const Ref& r) const {
  if (r.kind == Ref::kConstant) return *r.constant;
  const int slot = Slot(r);
  return b.slots[slot] != nullptr ? *b.slots[slot] : *b.initial[slot].literal;
}

absl::Status FlatLoop::RunLibrary(const Kernel& k, Buffers& b, const KernelContext& c) const {
  absl::InlinedVector<const Literal*, 4> operands;
  for (const Ref& r : k.sources) operands.push_back(&LiteralOf(b, r));
  const HloInstruction& h = *k.step->instr;
  // An array result is written into its temporary; a tuple's (zeroed, as the routines
  // expect) is copied into its elements' temporaries.
  Literal* out = h.shape().IsTuple() ? nullptr : b.slots[temp_slot_[k.outputs[0]]].get();
  if (out == nullptr) {
    auto [tuple, made] = b.library_tuples.try_emplace(&k, h.shape());
    if (!made)
      for (Literal& e : tuple->second.elements()) std::memset(e.untyped_data(), 0, e.size_bytes());
    out = &tuple->second;
  }
  if (absl::Status st = RunLibraryStep(*k.step, operands, *out, *c.kernels, c.pool); !st.ok())
    return st;
  if (h.shape().IsTuple())
    for (size_t i = 0; i < k.outputs.size(); ++i)
      std::memcpy(b.data[temp_slot_[k.outputs[i]]], out->elements()[i].untyped_data(),
                  temp_shapes_[k.outputs[i]].byte_size());
  return absl::OkStatus();
}

absl::Status FlatLoop::RunLoop(int l, Buffers& b, const KernelContext& context) const {
  const Loop& loop = loops_[l];
  // A nested loop's state starts as its operand (already there for an element it takes).
  for (size_t i = 0; i < loop.init.size(); ++i)
    if (!loop.keep[i] && !loop.takes[i])
      std::memcpy(b.data[StateSlot(l, static_cast<int>(i))], Data(b, loop.init[i]),
                  loop.state_shapes[i].byte_size());
  for (;;) {
    if (absl::Status st = RunProgram(loop.cond, b, context); !st.ok()) return st;
    if (!*static_cast<const bool*>(b.data[Slot(loop.cond_result)])) break;
    if (absl::Status st = RunProgram(loop.body, b, context); !st.ok()) return st;
    for (const auto& [from, t] : loop.moves)
      std::memcpy(b.data[temp_slot_[t]], Data(b, from), temp_shapes_[t].byte_size());
    for (int i = 0; i < loop.state_size; ++i) {
      const int t = loop.next_state[i].index;
      if (loop.next[i] == Next::kCopy) {
        std::memcpy(b.data[StateSlot(l, i)], b.data[temp_slot_[t]],
                    loop.state_shapes[i].byte_size());
      } else if (loop.next[i] == Next::kExchange) {
        // The buffer the result replaces (if this run owned it) serves the temporary next
        // time.
        b.Exchange(StateSlot(l, i), temp_slot_[t], temp_shapes_[t], sites_);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> FlatLoop::Run(Value state, const KernelContext& context) const {
  const Loop& top = loops_[0];
  Buffers b;
  const int slots = top.state_size + static_cast<int>(temp_shapes_.size());
  b.slots.resize(slots);
  b.data.resize(slots);
  for (int i = 0; i < top.state_size; ++i) b.initial.push_back(state.Element(i));
  state = Value();
  for (int i = 0; i < top.state_size; ++i) {
    const std::shared_ptr<const Literal>& l = b.initial[i].literal;
    // An element the loop alone holds (use_count 1: no other value, not borrowed) is its own.
    if (l.use_count() == 1) {
      b.slots[i] = std::make_unique<Literal>(std::move(const_cast<Literal&>(*l)));
    } else if (written_[i]) {
      // Updated where it lies: a borrowed element is copied once.
      b.slots[i] = std::make_unique<Literal>(Literal::Uninitialized(l->shape()));
      std::memcpy(b.slots[i]->untyped_data(), l->untyped_data(), l->size_bytes());
    }
    b.data[i] = b.slots[i] ? b.slots[i]->untyped_data() : const_cast<uint8_t*>(l->untyped_data());
  }
  for (size_t t = 0; t < temp_shapes_.size(); ++t) {
    const int own = top.state_size + static_cast<int>(t);
    if (temp_slot_[t] != own) continue;  // aliases a state's
    b.slots[own] = std::make_unique<Literal>(Literal::Uninitialized(temp_shapes_[t]));
    b.data[own] = b.slots[own]->untyped_data();
  }
  b.tables.resize(table_size_);
  for (int e = 0; e < table_size_; ++e) b.tables[e] = const_cast<void*>(constant_entries_[e]);
  for (int slot = 0; slot < slots; ++slot) b.Point(slot, b.data[slot], sites_);
  b.serial.assign(kernel_count_, nullptr);
  bool serial = true;
  for (const Program* p : Programs())
    for (const Kernel& k : p->kernels) {
      if (!k.runs_kernel()) continue;
      if (RunsWhole(context, *k.step))
        b.serial[k.ordinal] = (*context.kernels)[k.step->kernel];
      else
        serial = false;
    }
  if (schedule_ && serial && context.profile == nullptr) {
    if (driver_ != nullptr)
      driver_(b.tables.data(), b.data.data(), constants_.data());
    else
      RunFixed(MakeFixed(b, context), 0);
  } else {
    if (absl::Status st = RunLoop(0, b, context); !st.ok()) return st;
  }
  return Finish(b);
}

Value FlatLoop::Finish(Buffers& b) const {
  Value out;
  for (int i = 0; i < loops_[0].state_size; ++i)
    out.elements.push_back(b.slots[i] ? Value::Owned(std::move(*b.slots[i]))
                                      : std::move(b.initial[i]));
  return out;
}

LoopSchedule::Place FlatLoop::PlaceOf(const Ref& r) {
  if (r.kind != Ref::kConstant) return {Slot(r), -1};
  return {-1, ConstantIndex(r.constant->untyped_data())};
}

int FlatLoop::ConstantIndex(const void* data) {
  auto it = std::find(constants_.begin(), constants_.end(), data);
  if (it == constants_.end()) it = constants_.insert(it, data);
  return static_cast<int>(it - constants_.begin());
}

void FlatLoop::MakeSchedule() {
  LoopSchedule& s = schedule_.emplace();
  s.table.resize(table_size_);
  for (size_t slot = 0; slot < sites_.size(); ++slot)
    for (int e : sites_[slot]) s.table[e].slot = static_cast<int>(slot);
  for (int e = 0; e < table_size_; ++e)
    if (constant_entries_[e] != nullptr) s.table[e].constant = ConstantIndex(constant_entries_[e]);
  s.slots = static_cast<int>(sites_.size());
  auto calls = [&](const Program& p, const Kernel* skip) {
    std::vector<LoopSchedule::Call> out;
    for (const Kernel& k : p.kernels) {
      if (k.runs_kernel() && &k == skip) continue;
      if (k.runs_kernel()) {
        LoopSchedule::Call& c = out.emplace_back();
        c.kernel = k.step->kernel;
        c.table = k.table;
        c.extent = k.step->outer_extent;
        if (const Ref* r = OperandElsewhere(k))
          c.operand = {temp_slot_[k.outputs[0]], PlaceOf(*r),
                       temp_shapes_[k.outputs[0]].byte_size()};
      } else
        out.push_back({-1, 0, 0, k.nested, k.conditional});
    }
    return out;
  };
  for (size_t l = 0; l < loops_.size(); ++l) {
    const Loop& loop = loops_[l];
    const int li = static_cast<int>(l);
    LoopSchedule::Loop& f = s.loops.emplace_back();
    f.store_counter = loop.counter >= 0 && loop.counter_kernel >= 0;
    f.cond = calls(loop.cond, nullptr);
    f.body = calls(loop.body, f.store_counter ? &loop.body.kernels[loop.counter_kernel] : nullptr);
    for (size_t i = 0; i < loop.init.size(); ++i)
      if (!loop.keep[i] && !loop.takes[i])
        f.entry.push_back({StateSlot(li, static_cast<int>(i)), PlaceOf(loop.init[i]),
                           loop.state_shapes[i].byte_size()});
    for (const auto& [from, t] : loop.moves)
      f.copies.push_back({temp_slot_[t], PlaceOf(from), temp_shapes_[t].byte_size()});
    for (int i = 0; i < loop.state_size; ++i)
      if (loop.next[i] == Next::kCopy && !(f.store_counter && i == loop.counter))
        f.copies.push_back({StateSlot(li, i),
                            {temp_slot_[loop.next_state[i].index], -1},
                            loop.state_shapes[i].byte_size()});
    f.go = PlaceOf(loop.cond_result);
    if (loop.counter >= 0) {
      f.counter = StateSlot(li, loop.counter);
      f.limit = PlaceOf(loop.limit);
      f.s32 = loop.state_shapes[loop.counter].element_type() == PrimitiveType::S32;
    }
  }
  for (const Conditional& c : conditionals_) {
    LoopSchedule::Conditional& f = s.conditionals.emplace_back();
    f.selector = PlaceOf(c.selector);
    f.pred = c.pred;
    for (const Branch& branch : c.branches) {
      LoopSchedule::Branch& fb = f.branches.emplace_back();
      fb.calls = calls(branch.program, nullptr);
      for (size_t i = 0; i < c.result_temps.size(); ++i) {
        const int t = c.result_temps[i];
        fb.results.push_back(
            {temp_slot_[t], PlaceOf(branch.result[i]), temp_shapes_[t].byte_size()});
      }
    }
  }
  s.constants = static_cast<int>(constants_.size());
}

bool FlatLoop::RunsSerially(const KernelContext& context) const {
  for (const Program* p : Programs())
    for (const Kernel& k : p->kernels)
      if (k.runs_kernel() && !RunsWhole(context, *k.step)) return false;
  return true;
}

FlatLoop::Fixed FlatLoop::MakeFixed(const Buffers& b, const KernelContext& context) const {
  const LoopSchedule& s = *schedule_;
  auto at = [&](const LoopSchedule::Place& p) -> const void* {
    return p.slot >= 0 ? b.data[p.slot] : constants_[p.constant];
  };
  auto calls = [&](const std::vector<LoopSchedule::Call>& in) {
    std::vector<FixedCall> out;
    for (const LoopSchedule::Call& c : in) {
      FixedCall& f = out.emplace_back();
      f = {c.kernel >= 0 ? (*context.kernels)[c.kernel] : nullptr,
           const_cast<void**>(&b.tables[c.table]), c.extent, c.nested, c.conditional};
      if (c.operand.bytes > 0) {
        f.operand_to = b.data[c.operand.to];
        f.operand_from = at(c.operand.from);
        f.operand_bytes = static_cast<size_t>(c.operand.bytes);
      }
    }
    return out;
  };
  auto copies = [&](const std::vector<LoopSchedule::Copy>& in) {
    std::vector<Fixed::Copy> out;
    for (const LoopSchedule::Copy& c : in)
      out.push_back({b.data[c.to], at(c.from), static_cast<size_t>(c.bytes)});
    return out;
  };
  Fixed fixed;
  for (const LoopSchedule::Loop& l : s.loops) {
    Fixed::Loop& f = fixed.loops.emplace_back();
    f.cond = calls(l.cond);
    f.body = calls(l.body);
    f.entry = copies(l.entry);
    f.copies = copies(l.copies);
    f.go = static_cast<const bool*>(at(l.go));
    if (l.counter >= 0) {
      f.counter = b.data[l.counter];
      f.limit = at(l.limit);
    }
    f.s32 = l.s32;
    f.store_counter = l.store_counter;
  }
  for (const LoopSchedule::Conditional& c : s.conditionals) {
    Fixed::Conditional& f = fixed.conditionals.emplace_back();
    f.selector = at(c.selector);
    f.pred = c.pred;
    for (const LoopSchedule::Branch& branch : c.branches)
      f.branches.push_back({calls(branch.calls), copies(branch.results)});
  }
  return fixed;
}

void FlatLoop::RunCalls(const Fixed& fixed, const std::vector<FixedCall>& calls) const {
  for (const FixedCall& k : calls) {
    if (k.nested >= 0) {
      RunFixed(fixed, k.nested);
    } else if (k.conditional >= 0) {
      const Fixed::Conditional& c = fixed.conditionals[k.conditional];
      const Fixed::Branch& branch = c.branches[kernel_plan::ConditionalBranch(
          c.selector, c.pred, static_cast<int64_t>(c.branches.size()))];
      RunCalls(fixed, branch.calls);
      for (const Fixed::Copy& r : branch.results) std::memcpy(r.to, r.from, r.bytes);
    } else {
      if (k.operand_bytes > 0) std::memcpy(k.operand_to, k.operand_from, k.operand_bytes);
      k.fn(k.table, 0, k.extent);
    }
  }
}

void FlatLoop::RunFixed(const Fixed& fixed, int l) const {
  const Fixed::Loop& f = fixed.loops[l];
  for (const Fixed::Copy& c : f.entry) std::memcpy(c.to, c.from, c.bytes);
  auto iterate = [&] {
    RunCalls(fixed, f.body);
    for (const Fixed::Copy& c : f.copies) std::memcpy(c.to, c.from, c.bytes);
  };
  if (f.counter != nullptr) {
    auto read = [&f](const void* at) {
      return f.s32 ? int64_t{*static_cast<const int32_t*>(at)} : *static_cast<const int64_t*>(at);
    };
    const int64_t first = read(f.counter), limit = read(f.limit);
    for (int64_t i = first; i < limit; ++i) {
      iterate();
      // i + 1 <= limit fits the counter's type.
      if (!f.store_counter) continue;
      if (f.s32)
        *static_cast<int32_t*>(f.counter) = static_cast<int32_t>(i + 1);
      else
        *static_cast<int64_t*>(f.counter) = i + 1;
    }
    return;
  }
  for (;;) {
    RunCalls(fixed, f.cond);
    if (!*f.go) return;
    iterate();
  }
}

}  // namespace kiln::cpu
