#include "plugins/cpu_llvm/flat_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"

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

// Whether CallKernel splits the step's outer loop (or its parts) across the pool.
static bool Parallel(const KernelContext& context, const Step& step) {
  const int64_t extent = step.reduce_parts > 0 ? step.reduce_parts : step.outer_extent;
  return extent >= 2 && context.pool != nullptr && context.pool->size() > 1 &&
         step.work >= context.parallel_min_work;
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
  const HloInstruction& loop = *step.instr;
  if (loop.opcode() != HloOpcode::kWhile || step.called.size() != 2 || !loop.shape().IsTuple())
    return nullptr;
  for (const Shape& s : loop.shape().tuple_shapes())
    if (!s.IsArray()) return nullptr;
  std::unique_ptr<FlatLoop> flat(new FlatLoop);
  flat->state_size_ = loop.shape().tuple_size();
  if (!flat->Add(plan.called[step.called[0]], plan, /*is_body=*/false, flat->cond_) ||
      !flat->Add(plan.called[step.called[1]], plan, /*is_body=*/true, flat->body_))
    return nullptr;
  flat->AliasInPlaceUpdates();
  flat->LayOutTables();
  flat->buffers_stay_put_ = flat->BuffersStayPut();
  flat->FindCounter(plan.called[step.called[0]], plan.called[step.called[1]]);
  return flat;
}

bool FlatLoop::BuffersStayPut() const {
  for (Next n : next_)
    if (n == Next::kExchange) return false;
  for (const Program* p : {&cond_, &body_})
    for (const Kernel& k : p->kernels) {
      if (k.in_place < 0) continue;
      const Ref& r = k.sources[k.in_place];
      if (r.kind == Ref::kConstant || Slot(r) != temp_slot_[k.outputs[0]]) return false;
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

void FlatLoop::FindCounter(const ComputationPlan& cond, const ComputationPlan& body) {
  if (cond_.kernels.size() != 1 || cond_result_.kind != Ref::kTemp) return;
  const HloInstruction& test = *cond_.kernels[0].step->instr;
  const HloInstruction* lt = Computed(test);
  if (lt->opcode() != HloOpcode::kCompare || !lt->attrs().comparison_direction) return;
  const HloInstruction* cond_param = cond.computation->parameter(0);
  int counter = -1;
  std::optional<int64_t> limit;
  const HloInstruction* a = Outside(test, lt->operand(0));
  const HloInstruction* b = Outside(test, lt->operand(1));
  if (*lt->attrs().comparison_direction == ComparisonDirection::kLt) {
    counter = StateElement(a, cond_param);
    limit = IntConstant(b);
  } else if (*lt->attrs().comparison_direction == ComparisonDirection::kGt) {
    counter = StateElement(b, cond_param);
    limit = IntConstant(a);
  }
  // Its next value copied, or written over it by its kernel (both a single store).
  if (counter < 0 || !limit ||
      (next_[counter] != Next::kCopy && next_[counter] != Next::kInPlace) ||
      next_state_[counter].kind != Ref::kTemp)
    return;
  // The body's next counter: a kernel of its own computing counter + 1.
  const HloInstruction* body_param = body.computation->parameter(0);
  const int next = next_state_[counter].index;
  for (size_t n = 0; n < body_.kernels.size(); ++n) {
    const Kernel& k = body_.kernels[n];
    if (k.outputs.size() != 1 || k.outputs[0] != next) continue;
    const HloInstruction& step = *k.step->instr;
    const HloInstruction* add = Computed(step);
    if (add->opcode() != HloOpcode::kAdd) return;
    for (int side : {0, 1}) {
      const std::optional<int64_t> one = IntConstant(Outside(step, add->operand(1 - side)));
      if (StateElement(Outside(step, add->operand(side)), body_param) == counter && one &&
          *one == 1) {
        counter_ = counter;
        limit_ = *limit;
        counter_kernel_ = static_cast<int>(n);
      }
    }
    break;
  }
  for (const Kernel& k : body_.kernels)
    for (const Ref& r : k.sources)
      if (r.kind == Ref::kTemp && r.index == next) counter_kernel_ = -1;
}

void FlatLoop::AliasInPlaceUpdates() {
  temp_slot_.resize(temp_shapes_.size());
  for (size_t t = 0; t < temp_shapes_.size(); ++t) temp_slot_[t] = state_size_ + t;
  // A copy this small costs less than rewriting the table entries an exchange touches.
  constexpr int64_t kCopyBytes = 256;
  next_.assign(state_size_, Next::kKeep);
  for (int i = 0; i < state_size_; ++i) {
    if (next_state_[i].kind != Ref::kTemp) continue;
    const int t = next_state_[i].index;
    // Its next value is made where it lies: updated in place, or written over it by an
    // elementwise kernel (a scan's carry c + x[i]) that is its last reader.
    for (const Kernel& k : body_.kernels) {
      if (k.outputs.empty() || k.outputs[0] != t) continue;
      const int at = k.take ? k.in_place : k.over;
      if (at < 0) continue;
      const Ref& from = k.sources[at];
      if (from.kind == Ref::kState && from.index == i) temp_slot_[t] = i;
    }
    next_[i] = temp_slot_[t] == i                          ? Next::kInPlace
               : temp_shapes_[t].byte_size() <= kCopyBytes ? Next::kCopy
                                                           : Next::kExchange;
  }
}

void FlatLoop::LayOutTables() {
  sites_.assign(state_size_ + temp_shapes_.size(), {});
  constant_entries_.clear();
  kernel_count_ = 0;
  auto entry = [this](int slot, const void* constant) {
    if (slot >= 0) sites_[slot].push_back(static_cast<int>(constant_entries_.size()));
    constant_entries_.push_back(constant);
  };
  for (Program* p : {&cond_, &body_}) {
    for (Kernel& k : p->kernels) {
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

bool FlatLoop::Add(const ComputationPlan& p, const Plan& plan, bool is_body, Program& out) {
  absl::flat_hash_map<const HloInstruction*, Ref> refs;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> tuple_outputs;
  const HloInstruction* param =
      p.computation->num_parameters() == 1 ? p.computation->parameter(0) : nullptr;
  if (param == nullptr) return false;
  // How many get-tuple-elements read each state element: a kernel may take an element's
  // buffer only when it reads the one that is the element's only reader.
  std::vector<int> readers(state_size_, 0);
  for (const HloInstruction* u : param->users()) {
    if (u->opcode() != HloOpcode::kGetTupleElement) return false;
    if (u->tuple_index() < 0 || u->tuple_index() >= state_size_) return false;
    ++readers[u->tuple_index()];
  }
  auto new_temp = [this](const Shape& s) {
    temp_shapes_.push_back(s);
    return static_cast<int>(temp_shapes_.size()) - 1;
  };
  for (const Step& s : p.steps) {
    const HloInstruction* h = s.instr;
    if (s.kind == Disposition::kInlined) continue;
    if (s.kind == Disposition::kKernel) {
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
        k.outputs.push_back(new_temp(o->shape()));
      }
      if (s.reduce_parts > 0) k.partials = new_temp(llvm_emit::PartialsShape(spec));
      if (s.in_place_source >= 0) {
        k.in_place = s.in_place_source;
        const Ref& r = k.sources[k.in_place];
        const bool last = s.IsLastUse(s.sources[k.in_place]);
        // The condition leaves the state to the body; the body may take an element when
        // its one reader dies here (the root does not pass it on).
        k.take = r.kind == Ref::kTemp    ? last
                 : r.kind == Ref::kState ? is_body && last && readers[r.index] == 1
                                         : false;
      }
      if (is_body && k.in_place < 0 && k.outputs.size() == 1) {
        for (int i : s.output_over_sources) {
          const Ref& r = k.sources[i];
          if (r.kind == Ref::kState && readers[r.index] == 1 && s.IsLastUse(s.sources[i])) {
            k.over = i;
            break;
          }
        }
      }
      if (h->shape().IsTuple()) {
        tuple_outputs[h] = k.outputs;
      } else {
        if (k.outputs.size() != 1) return false;
        refs[h] = Ref{Ref::kTemp, k.outputs[0], nullptr};
      }
      out.kernels.push_back(std::move(k));
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
          refs[h] = Ref{Ref::kState, i, nullptr};
          break;
        }
        auto it = tuple_outputs.find(h->operand(0));
        if (it == tuple_outputs.end() || i < 0 || i >= static_cast<int>(it->second.size()))
          return false;
        refs[h] = Ref{Ref::kTemp, it->second[i], nullptr};
        break;
      }
      case HloOpcode::kTuple: {
        if (!is_body || h != p.computation->root() || h->operand_count() != state_size_)
          return false;
        std::vector<bool> seen(temp_shapes_.size(), false);
        for (int i = 0; i < state_size_; ++i) {
          auto it = refs.find(h->operand(i));
          if (it == refs.end()) return false;
          const Ref& r = it->second;
          // A state element stays in place or is replaced by a temporary of its own.
          if (r.kind == Ref::kConstant || (r.kind == Ref::kState && r.index != i)) return false;
          if (r.kind == Ref::kTemp) {
            if (seen[r.index]) return false;
            seen[r.index] = true;
          }
          next_state_.push_back(r);
        }
        break;
      }
      default:
        return false;
    }
  }
  if (is_body) return static_cast<int>(next_state_.size()) == state_size_;
  auto it = refs.find(p.computation->root());
  if (it == refs.end() || it->second.kind == Ref::kConstant ||
      p.computation->root()->shape().element_type() != PrimitiveType::PRED ||
      p.computation->root()->shape().rank() != 0)
    return false;
  cond_result_ = it->second;
  return true;
}

void FlatLoop::RunProgram(const Program& p, Buffers& b, const KernelContext& c) const {
  for (const Kernel& k : p.kernels) {
    const Step& s = *k.step;
    const auto start =
        c.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    const int out = k.in_place >= 0 ? temp_slot_[k.outputs[0]] : -1;
    const Ref* r = k.in_place >= 0 ? &k.sources[k.in_place] : nullptr;
    if (r != nullptr && (r->kind == Ref::kConstant || Slot(*r) != out)) {
      // The output starts as the operand: its buffer when the kernel may take it (the
      // operand's value is dead after this), else a copy. Nothing to do when they share a slot.
      if (k.take && b.slots[Slot(*r)] != nullptr)
        b.Exchange(out, Slot(*r), temp_shapes_[k.outputs[0]], sites_);
      else
        std::memcpy(b.data[out],
                    r->kind == Ref::kConstant ? r->constant->untyped_data() : b.data[Slot(*r)],
                    temp_shapes_[k.outputs[0]].byte_size());
    }
    if (const KernelFn fn = b.serial[k.ordinal])
      fn(&b.tables[k.table], 0, s.outer_extent);
    else
      CallKernel(c, s, &b.tables[k.table]);
    if (c.profile)
      c.profile->Add(s.instr, kernel_plan::DispositionName(Disposition::kKernel),
                     std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count());
  }
}

Value FlatLoop::Run(Value state, const KernelContext& context) const {
  Buffers b;
  const int slots = state_size_ + static_cast<int>(temp_shapes_.size());
  b.slots.resize(slots);
  b.data.resize(slots);
  for (int i = 0; i < state_size_; ++i) b.initial.push_back(state.Element(i));
  state = Value();
  for (int i = 0; i < state_size_; ++i) {
    const std::shared_ptr<const Literal>& l = b.initial[i].literal;
    // An element the loop alone holds (use_count 1: no other value, not borrowed) is its own.
    if (l.use_count() == 1) {
      b.slots[i] = std::make_unique<Literal>(std::move(const_cast<Literal&>(*l)));
    } else if (next_[i] == Next::kCopy || next_[i] == Next::kInPlace) {
      // Updated where it lies: a borrowed element is copied once.
      b.slots[i] = std::make_unique<Literal>(Literal::Uninitialized(l->shape()));
      std::memcpy(b.slots[i]->untyped_data(), l->untyped_data(), l->size_bytes());
    }
    b.data[i] = b.slots[i] ? b.slots[i]->untyped_data() : const_cast<uint8_t*>(l->untyped_data());
  }
  for (size_t t = 0; t < temp_shapes_.size(); ++t) {
    if (temp_slot_[t] != state_size_ + static_cast<int>(t)) continue;  // aliases a state's
    b.slots[state_size_ + t] = std::make_unique<Literal>(Literal::Uninitialized(temp_shapes_[t]));
    b.data[state_size_ + t] = b.slots[state_size_ + t]->untyped_data();
  }
  b.tables.resize(table_size_);
  for (int e = 0; e < table_size_; ++e) b.tables[e] = const_cast<void*>(constant_entries_[e]);
  for (int slot = 0; slot < slots; ++slot) b.Point(slot, b.data[slot], sites_);
  b.serial.assign(kernel_count_, nullptr);
  for (const Program* p : {&cond_, &body_})
    for (const Kernel& k : p->kernels)
      if (k.step->reduce_parts == 0 && !Parallel(context, *k.step))
        b.serial[k.ordinal] = (*context.kernels)[k.step->kernel];
  const bool serial =
      std::all_of(b.serial.begin(), b.serial.end(), [](KernelFn f) { return f != nullptr; });
  if (buffers_stay_put_ && serial && context.profile == nullptr) {
    RunFixed(b);
    return Finish(b);
  }
  const int go = Slot(cond_result_);
  for (;;) {
    RunProgram(cond_, b, context);
    if (!*static_cast<const bool*>(b.data[go])) break;
    RunProgram(body_, b, context);
    for (int i = 0; i < state_size_; ++i) {
      const int t = next_state_[i].index;
      if (next_[i] == Next::kCopy) {
        std::memcpy(b.data[i], b.data[temp_slot_[t]], b.slots[i]->size_bytes());
      } else if (next_[i] == Next::kExchange) {
        // The buffer the result replaces (if this run owned it) serves the temporary next
        // time.
        b.Exchange(i, temp_slot_[t], temp_shapes_[t], sites_);
      }
    }
  }
  return Finish(b);
}

Value FlatLoop::Finish(Buffers& b) const {
  Value out;
  for (int i = 0; i < state_size_; ++i)
    out.elements.push_back(b.slots[i] ? Value::Owned(std::move(*b.slots[i]))
                                      : std::move(b.initial[i]));
  return out;
}

void FlatLoop::RunFixed(Buffers& b) const {
  struct Call {
    KernelFn fn;
    void** table;
    int64_t extent;
  };
  // A counted run stores the counter itself where it can (counter_kernel_).
  const bool store_counter = counter_ >= 0 && counter_kernel_ >= 0;
  auto calls = [&](const Program& p) {
    std::vector<Call> out;
    for (const Kernel& k : p.kernels)
      if (!store_counter || &k != &body_.kernels[counter_kernel_])
        out.push_back({b.serial[k.ordinal], &b.tables[k.table], k.step->outer_extent});
    return out;
  };
  const std::vector<Call> cond = calls(cond_), body = calls(body_);
  struct Copy {
    void* to;
    const void* from;
    size_t bytes;
  };
  std::vector<Copy> copies;
  for (int i = 0; i < state_size_; ++i)
    if (next_[i] == Next::kCopy && !(store_counter && i == counter_))
      copies.push_back({b.data[i], b.data[temp_slot_[next_state_[i].index]],
                        static_cast<size_t>(b.slots[i]->size_bytes())});
  auto iterate = [&] {
    for (const Call& k : body) k.fn(k.table, 0, k.extent);
    for (const Copy& c : copies) std::memcpy(c.to, c.from, c.bytes);
  };
  if (counter_ >= 0) {
    void* at = b.data[counter_];
    const bool s32 = b.slots[counter_]->shape().element_type() == PrimitiveType::S32;
    const int64_t first =
        s32 ? int64_t{*static_cast<const int32_t*>(at)} : *static_cast<const int64_t*>(at);
    for (int64_t i = first; i < limit_; ++i) {
      iterate();
      // i + 1 <= limit_ fits the counter's type.
      if (!store_counter) continue;
      if (s32)
        *static_cast<int32_t*>(at) = static_cast<int32_t>(i + 1);
      else
        *static_cast<int64_t*>(at) = i + 1;
    }
    return;
  }
  const bool* go = static_cast<const bool*>(b.data[Slot(cond_result_)]);
  for (;;) {
    for (const Call& k : cond) k.fn(k.table, 0, k.extent);
    if (!*go) return;
    iterate();
  }
}

}  // namespace kiln::cpu
