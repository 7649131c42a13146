// A while loop whose condition and body are only kernels over the loop state (a tuple of
// arrays), run without the general runner's per-step bookkeeping. Each kernel's operands and
// results are resolved once, when the executable is made, to a state element, a constant or
// a temporary; a run keeps one buffer per temporary across iterations, and a body result
// becomes the next state by a move, the buffer it replaces becoming that temporary's buffer
// for the next iteration. So an iteration allocates nothing and hashes nothing: for a
// `fori_loop` over a small state, that bookkeeping was most of the time (about 0.4 us a
// kernel). A kernel that updates its operand in place takes the state element's buffer when
// nothing after it reads that element, as the general runner does. Loops with anything else
// in them (evaluator or library steps, nested control flow, a state element that moves to
// another position) run on the general runner (CpuExecutable::RunControlFlow).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/jit.h"
#include "plugins/cpu_llvm/step_profile.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/plan.h"
#include "plugins/kernel_plan/step_values.h"

namespace kiln::cpu {

// What running a kernel needs from the executable.
struct KernelContext {
  const std::vector<KernelFn>* kernels = nullptr;
  ThreadPool* pool = nullptr;
  int64_t parallel_min_work = 0;
  StepProfile* profile = nullptr;  // null when KILN_CPU_PROFILE is off
};

// Runs the kernel of `step` on `table` (its buffers): its outer loop split across the pool
// when the step is partitioned and large enough, a two-stage reduction's combining call
// after its parts. Both runners call kernels through this.
void CallKernel(const KernelContext& context, const kernel_plan::Step& step, void** table);

class FlatLoop {
 public:
  // The loop `step` (a while of `plan`, whose condition and body are plan.called entries)
  // prepared for flat runs, or null when a step of its condition or body is not a kernel or
  // bookkeeping over the state.
  static std::unique_ptr<FlatLoop> Make(const kernel_plan::Step& step,
                                        const kernel_plan::Plan& plan);

  // Runs the loop from `state` (the operand's value; an element it alone holds may be
  // updated in place) to its final state.
  kernel_plan::Value Run(kernel_plan::Value state, const KernelContext& context) const;

 private:
  // Where a kernel's operand lives.
  struct Ref {
    enum Kind { kState, kTemp, kConstant } kind = kState;
    int index = 0;                      // state element or temporary
    const Literal* constant = nullptr;  // kConstant
  };
  struct Kernel {
    const kernel_plan::Step* step = nullptr;
    std::vector<Ref> sources;
    std::vector<int> outputs;  // temporaries, in KernelSpec::outputs order
    int partials = -1;         // temporary of a two-stage reduction's parts, else -1
    // Step::in_place_source, and whether the kernel may take that operand's buffer (nothing
    // after it reads the value) instead of copying it into its output.
    int in_place = -1;
    bool take = false;
  };
  struct Program {
    std::vector<Kernel> kernels;
  };
  struct Buffers;  // one run's state and temporaries

  bool Add(const kernel_plan::ComputationPlan& p, const kernel_plan::Plan& plan, bool is_body,
           Program& out);
  void RunProgram(const Program& p, Buffers& b, const KernelContext& context) const;

  int state_size_ = 0;
  std::vector<Shape> temp_shapes_;
  Program cond_, body_;
  Ref cond_result_;
  std::vector<Ref> next_state_;  // the body's root: per element, a temporary or itself
};

}  // namespace kiln::cpu
