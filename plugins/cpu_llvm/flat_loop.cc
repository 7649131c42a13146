#include "plugins/cpu_llvm/flat_loop.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace kiln::cpu {

using kernel_plan::ComputationPlan;
using kernel_plan::Disposition;
using kernel_plan::Plan;
using kernel_plan::Step;
using kernel_plan::Value;

// Owned buffers are held by pointer: an iteration hands them between the state and the
// temporaries by swapping pointers (moving Literals, each with its Shape, was a fifth of a
// small loop's time).
struct FlatLoop::Buffers {
  std::vector<Value> initial;                   // the operand's elements, read-only
  std::vector<std::unique_ptr<Literal>> owned;  // state elements this run owns
  std::vector<const Literal*> view;             // the state: an owned element or an initial one
  std::vector<std::unique_ptr<Literal>> temps;  // kept across iterations
};

void CallKernel(const KernelContext& context, const Step& step, void** table) {
  const KernelFn fn = (*context.kernels)[step.kernel];
  const int64_t extent = step.reduce_parts > 0 ? step.reduce_parts : step.outer_extent;
  if (extent >= 2 && context.pool != nullptr && context.pool->size() > 1 &&
      step.work >= context.parallel_min_work) {
    context.pool->ParallelFor(extent,
                              [fn, table](int64_t begin, int64_t end) { fn(table, begin, end); });
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
  return flat;
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
  auto pointer = [&b](const Ref& r) -> void* {
    switch (r.kind) {
      case Ref::kState:
        return const_cast<uint8_t*>(b.view[r.index]->untyped_data());
      case Ref::kTemp:
        return b.temps[r.index]->untyped_data();
      case Ref::kConstant:
        break;
    }
    return const_cast<uint8_t*>(r.constant->untyped_data());
  };
  for (const Kernel& k : p.kernels) {
    const Step& s = *k.step;
    const auto start =
        c.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    for (int t : k.outputs)
      if (!b.temps[t])
        b.temps[t] = std::make_unique<Literal>(Literal::Uninitialized(temp_shapes_[t]));
    if (k.partials >= 0 && !b.temps[k.partials])
      b.temps[k.partials] =
          std::make_unique<Literal>(Literal::Uninitialized(temp_shapes_[k.partials]));
    if (k.in_place >= 0) {
      // The output starts as the operand: its buffer when the kernel may take it, else a copy.
      const Ref& r = k.sources[k.in_place];
      std::unique_ptr<Literal>* from = r.kind == Ref::kState  ? &b.owned[r.index]
                                       : r.kind == Ref::kTemp ? &b.temps[r.index]
                                                              : nullptr;
      if (k.take && from != nullptr && *from != nullptr) {
        std::swap(b.temps[k.outputs[0]], *from);  // the operand's value is dead after this
      } else {
        Literal& o = *b.temps[k.outputs[0]];
        std::memcpy(o.untyped_data(), pointer(r), o.size_bytes());
      }
    }
    absl::InlinedVector<void*, 16> table;
    for (size_t i = 0; i < k.sources.size(); ++i)
      table.push_back(static_cast<int>(i) == k.in_place ? b.temps[k.outputs[0]]->untyped_data()
                                                        : pointer(k.sources[i]));
    for (int t : k.outputs) table.push_back(b.temps[t]->untyped_data());
    if (k.partials >= 0) table.push_back(b.temps[k.partials]->untyped_data());
    CallKernel(c, s, table.data());
    if (c.profile)
      c.profile->Add(s.instr, kernel_plan::DispositionName(Disposition::kKernel),
                     std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count());
  }
}

Value FlatLoop::Run(Value state, const KernelContext& context) const {
  Buffers b;
  b.owned.resize(state_size_);
  b.view.resize(state_size_);
  b.temps.resize(temp_shapes_.size());
  for (int i = 0; i < state_size_; ++i) b.initial.push_back(state.Element(i));
  state = Value();
  for (int i = 0; i < state_size_; ++i) {
    const std::shared_ptr<const Literal>& l = b.initial[i].literal;
    // An element the loop alone holds (use_count 1: no other value, not borrowed) is its own.
    if (l.use_count() == 1)
      b.owned[i] = std::make_unique<Literal>(std::move(const_cast<Literal&>(*l)));
    b.view[i] = b.owned[i] ? b.owned[i].get() : l.get();
  }
  for (;;) {
    RunProgram(cond_, b, context);
    const Literal* go = cond_result_.kind == Ref::kTemp ? b.temps[cond_result_.index].get()
                                                        : b.view[cond_result_.index];
    if (!go->data<bool>()[0]) break;
    RunProgram(body_, b, context);
    for (int i = 0; i < state_size_; ++i) {
      const Ref& r = next_state_[i];
      if (r.kind != Ref::kTemp) continue;
      // The buffer the result replaces (if this run owned it) serves the temporary next time.
      std::swap(b.owned[i], b.temps[r.index]);
      b.view[i] = b.owned[i].get();
    }
  }
  Value out;
  for (int i = 0; i < state_size_; ++i)
    out.elements.push_back(b.owned[i] ? Value::Owned(std::move(*b.owned[i]))
                                      : std::move(b.initial[i]));
  return out;
}

}  // namespace kiln::cpu
