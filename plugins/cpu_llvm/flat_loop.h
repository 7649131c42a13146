// A while loop whose condition and body are only kernels over the loop state (a tuple of
// arrays), while loops of that kind nested in its body and conditionals whose branches are
// of that kind, run without the general runner's per-step bookkeeping. Each kernel's operands and
// results are resolved once, when the executable is made, to a state element, a constant or a
// temporary; a run keeps one buffer per temporary across iterations, and a body result becomes the
// next state by a move, the buffer it replaces becoming that temporary's buffer for the next
// iteration. Every kernel's table of buffer pointers is built once per run and only the entries of
// the two buffers a move exchanges are rewritten. So an iteration allocates nothing, hashes nothing
// and resolves nothing: for a scalar `lax.scan`, building each kernel's table from its operands was
// most of the time (about 30 ns a kernel). A kernel that updates its operand in place takes the
// state element's buffer when nothing after it reads that element, as the general runner does. A
// nested loop's state lives in temporaries of the run, set from its operand on entry; an element
// its body passes on unchanged is read where it lies, not copied (in `jax.scipy.linalg.sqrtm`'s
// triple loop the matrices). A conditional's branches read its operands where they lie, and the
// branch taken copies its result into the conditional's temporaries (a `lax.cond` in a scan's step
// whose branch holds a loop). Library steps (GEMMs, LAPACK calls) run as the general runner runs
// them, on buffers resolved the same way. Loops with anything else in them (evaluator steps,
// calls) run on the general runner (CpuExecutable::RunControlFlow).
//
// When no iteration moves a buffer (elements updated in place or copied) and every kernel
// runs whole on the calling thread, a run is a fixed program (loop_schedule.h); a counted loop
// (`for i in range(i0, N)`, as fori_loop and scan write it, N a constant or a value the loop
// does not change) then skips its condition kernel. The JIT compiles that program with the
// kernels into one function (a loop driver), so a loop of scalar kernels runs as native code;
// without one (KILN_CPU_LOOP_DRIVERS=0) it is interpreted as a list of direct calls.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
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
  // prepared for flat runs, or null when a step of its condition or body (or of a loop or a
  // conditional's branch in it) is not a kernel, bookkeeping, a while or a conditional.
  static std::unique_ptr<FlatLoop> Make(const kernel_plan::Step& step,
                                        const kernel_plan::Plan& plan);

  // Runs the loop from `state` (the operand's value; an element it alone holds may be
  // updated in place) to its final state.
  absl::StatusOr<kernel_plan::Value> Run(kernel_plan::Value state,
                                         const KernelContext& context) const;

  // Whether it is `for (i = i0; i < N; ++i)` on an integer state element (the condition
  // counter < N, the body's next counter counter + 1): its runs without a pool or profile
  // then skip the condition's kernel and run the body N - i0 times.
  bool counted() const { return loops_[0].counter >= 0; }

  // The loop as a fixed program (loop_schedule.h) when no iteration moves a buffer, else
  // null. Runs whose kernels all run serially follow it: through the compiled driver when
  // one is set (the JIT's, compiled with the kernels), else interpreted.
  const LoopSchedule* schedule() const { return schedule_ ? &*schedule_ : nullptr; }
  void set_driver(LoopDriverFn driver) { driver_ = driver; }
  bool has_driver() const { return driver_ != nullptr; }
  // The while instructions of the loops nested in it (run inside its runs).
  std::vector<const HloInstruction*> NestedLoops() const {
    std::vector<const HloInstruction*> out;
    for (size_t l = 1; l < loops_.size(); ++l) out.push_back(loops_[l].step->instr);
    return out;
  }
  // Whether every kernel runs whole on the calling thread under `context` (no pool split,
  // no parts): the runs the schedule serves.
  bool RunsSerially(const KernelContext& context) const;

 private:
  // Where a kernel's operand lives: a slot (the outermost loop's state elements, then the
  // temporaries) or a constant.
  struct Ref {
    enum Kind { kState, kTemp, kConstant } kind = kState;
    int index = 0;                      // state element (of `loop`) or temporary
    const Literal* constant = nullptr;  // kConstant
    int loop = 0;                       // kState: whose state, an index in loops_
    // A value of an enclosing computation that a nested loop or a conditional's branch reads
    // where it lies (or a nested loop's result that aliases it): never taken or written over
    // through this reference.
    bool read_only = false;
    bool operator==(const Ref& o) const {
      return kind == o.kind && index == o.index && constant == o.constant &&
             (kind != kState || loop == o.loop);
    }
  };
  struct Kernel {
    const kernel_plan::Step* step = nullptr;
    // When either is >= 0 the entry runs loops_[nested] (a while step of the computation) or
    // conditionals_[conditional], and the fields below are unused.
    int nested = -1;
    int conditional = -1;
    // A library step (a GEMM, a convolution, a sort, a LAPACK or FFT call) on `sources` into
    // `outputs`: run as the general runner runs it, so the loop has no fixed program.
    bool library = false;
    bool runs_kernel() const { return nested < 0 && conditional < 0 && !library; }
    std::vector<Ref> sources;
    std::vector<int> outputs;  // temporaries, in KernelSpec::outputs order
    int partials = -1;         // temporary of a two-stage reduction's parts, else -1
    // Step::in_place_source, and whether the kernel may take that operand's buffer (nothing
    // after it reads the value) instead of copying it into its output.
    int in_place = -1;
    bool take = false;
    // Else, an index in `sources` of a state element the kernel may write its output over
    // (Step::output_over_sources; nothing after it reads the element), or -1.
    int over = -1;
    int table = 0;    // where its buffer table starts in Buffers::tables
    int ordinal = 0;  // its place among all loops' kernels
  };
  struct Program {
    std::vector<Kernel> kernels;
  };
  // How each state element becomes its next value after the body: unchanged, updated where
  // it lies (its temporary aliases its slot), copied from its temporary (small elements:
  // cheaper than an exchange, which rewrites table entries) or exchanged with it.
  enum class Next { kKeep, kInPlace, kCopy, kExchange };
  struct Loop {
    const kernel_plan::Step* step = nullptr;  // the while
    int state_size = 0;
    std::vector<Shape> state_shapes;
    // A nested loop's state elements are temporaries (-1 for one kept), set on entry from
    // `init` (the while operand's elements in the enclosing computation); an element its body
    // passes on unchanged (`keep`) is read where `init` lies instead. The outermost loop's
    // state is the first slots, and `init` and `keep` are empty.
    std::vector<int> state_temps;
    std::vector<Ref> init;
    std::vector<bool> keep;
    // Elements whose temporary takes `init`'s slot: the enclosing loop's state element that
    // the nested loop's result replaces, read by nothing else (a matrix a middle loop of
    // three updates), updated where it lies instead of copied in and out.
    std::vector<bool> takes;
    Program cond, body;
    Ref cond_result;
    std::vector<Ref> next_state;  // the body's root: per element, a temporary or itself
    // Next values that are not a temporary of their own (another state element, as in
    // `(a, b) -> (b, a + b)`, a constant, a value read where it lies, a temporary that is two
    // elements' next value): copied after the body into a temporary of the element, before
    // any element takes its next value.
    std::vector<std::pair<Ref, int>> moves;  // (the value, the temporary)
    std::vector<Next> next;
    // A counted loop: the condition is counter < limit (a constant or a value the loop does
    // not change), the body's next counter is counter + 1. A fixed run then skips the
    // condition and runs the body limit - counter times.
    int counter = -1;  // state element, or -1
    Ref limit;
    // The body kernel computing counter + 1 when nothing else reads its result: a counted run
    // stores the next counter itself instead of calling it. Else -1.
    int counter_kernel = -1;
  };
  // A conditional of a loop's computation: each branch reads the conditional's operands
  // where they lie, and its result is copied into the conditional's temporaries.
  struct Branch {
    Program program;
    std::vector<Ref> result;  // the branch root's elements
  };
  struct Conditional {
    Ref selector;  // a pred (true: branch 0) or s32 (out of range: the last branch) scalar
    bool pred = false;
    std::vector<Branch> branches;
    std::vector<int> result_temps;
  };
  struct Buffers;    // one run's state, temporaries and kernel tables
  struct Fixed;      // a fixed run's direct calls
  struct FixedCall;  // one of them

  int NewTemp(const Shape& shape);
  bool AddLoop(int loop, const kernel_plan::Step& step, const kernel_plan::Plan& plan);
  // How a computation's parameter is read, and whether its steps may take its state.
  struct Scope {
    int loop = -1;  // the loop whose condition or body it is; -1: a conditional's branch
    bool is_body = false;
    std::vector<Ref> param;  // a branch: its operand's elements (one for an array)
  };
  // The steps of `p` appended to `out`; its root's elements (one for an array) in `root`.
  bool Add(const Scope& scope, const kernel_plan::ComputationPlan& p, const kernel_plan::Plan& plan,
           Program& out, std::vector<Ref>& root);
  // A conditional step reading `selector` and, per branch, `operands`; its result's elements
  // (temporaries) in `results`.
  bool AddConditional(const kernel_plan::Step& step, const kernel_plan::Plan& plan,
                      const Ref& selector, const std::vector<std::vector<Ref>>& operands,
                      std::vector<Ref>& results, Program& out);
  // A while step of a loop's computation as a nested loop reading `operands`; its result's
  // elements in `results`.
  // `may_take(i)`: whether operand i is an element of the enclosing loop's state that only
  // the operand reads and that the result's element i replaces.
  bool AddNested(const kernel_plan::Step& step, const kernel_plan::Plan& plan,
                 const std::vector<Ref>& operands, const std::function<bool(int)>& may_take,
                 std::vector<Ref>& results, Program& out);
  // Gives a temporary the state element's slot when it is that element's next value made in
  // place from it, so the state is updated where it lies; chooses how the other replaced
  // elements become their next values.
  void AliasInPlaceUpdates(int loop);
  // Lays out every kernel's buffer table: which table entries hold each slot's pointer.
  void LayOutTables();
  int StateSlot(int loop, int i) const {
    const Loop& l = loops_[loop];
    return l.state_temps.empty() ? i : temp_slot_[l.state_temps[i]];
  }
  int Slot(const Ref& r) const {
    return r.kind == Ref::kState ? StateSlot(r.loop, r.index) : temp_slot_[r.index];
  }
  const void* Data(const Buffers& b, const Ref& r) const;  // where `r` lies in a run
  // An in-place kernel's operand when its output does not lie where the operand does (the
  // output then starts as a copy of it, or takes its buffer), else null.
  const Ref* OperandElsewhere(const Kernel& k) const;
  absl::Status RunLoop(int loop, Buffers& b, const KernelContext& context) const;
  absl::Status RunProgram(const Program& p, Buffers& b, const KernelContext& context) const;
  absl::Status RunLibrary(const Kernel& k, Buffers& b, const KernelContext& context) const;
  const Literal& LiteralOf(const Buffers& b, const Ref& r) const;  // where `r` lies, as a Literal
  // Whether no iteration moves a buffer (every replaced element is updated in place or
  // copied, every in-place kernel's output is its operand's slot): tables stay as a run
  // starts them, and a run whose kernels all run serially is a fixed list of calls.
  bool BuffersStayPut() const;
  // The loop `for (i = i0; i < N; ++i)` on an integer state element: its element and N.
  void FindCounter(int loop, const kernel_plan::Plan& plan);
  void RunFixed(const Fixed& fixed, int loop) const;
  void RunCalls(const Fixed& fixed, const std::vector<FixedCall>& calls) const;
  // The schedule: made once; resolved against a run's buffers for the interpreter.
  void MakeSchedule();
  LoopSchedule::Place PlaceOf(const Ref& r);  // a constant gets an index in constants_
  int ConstantIndex(const void* data);        // its index in constants_ (added if new)
  Fixed MakeFixed(const Buffers& b, const KernelContext& context) const;
  kernel_plan::Value Finish(Buffers& b) const;  // the final state

  // loops_[0] is the loop itself, then the loops nested in it (a deque: adding one keeps
  // references to the others).
  std::deque<Loop> loops_;
  std::deque<Conditional> conditionals_;
  // Every program: each loop's condition and body, each conditional's branches.
  std::vector<const Program*> Programs() const;
  std::vector<Program*> MutablePrograms();
  // Per state element of the loop itself: whether a run writes it where it lies (a borrowed
  // one is then copied first).
  std::vector<bool> written_;
  std::vector<Shape> temp_shapes_;
  std::vector<int> temp_slot_;  // per temporary: its slot (its own, or an aliased state's)
  std::optional<LoopSchedule> schedule_;
  std::vector<const void*> constants_;  // the constants schedule_ reads
  LoopDriverFn driver_ = nullptr;
  int table_size_ = 0;  // entries of all kernels' tables
  int kernel_count_ = 0;
  std::vector<const void*> constant_entries_;  // per table entry: its constant, else null
  std::vector<std::vector<int>> sites_;        // per slot: the table entries that hold it
};

}  // namespace kiln::cpu
