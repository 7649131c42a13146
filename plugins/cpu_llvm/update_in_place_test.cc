// dynamic-update-slice kernels that write only the update (KernelSpec::update_in_place):
// which steps the planner marks, and runs against the evaluator where the operand's buffer
// may be taken (a while loop's state, a dead library result) and where it must be copied
// (an argument, a value read again later); an update that reads the operand itself is
// computed into a buffer of its own first.
#include <random>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

// Steps of every planned computation whose kernel updates an operand in place.
int InPlaceSteps(const Plan& plan) {
  int n = 0;
  auto count = [&](const ComputationPlan& p) {
    for (const Step& s : p.steps) n += s.in_place_source >= 0;
  };
  count(plan);
  for (const ComputationPlan& p : plan.called) count(p);
  return n;
}

// Compiles `text`, expects `in_place` in-place steps, and runs it on random arguments with
// each value of the s32 scalar parameter `index_param` (a start index; -1: none), comparing
// with the evaluator and checking that the arguments are left as they were.
void Check(const std::string& text, int in_place, int index_param,
           const std::vector<int32_t>& indexes) {
  auto parsed = ParseHloModule(text, "update_in_place");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module(std::move(*parsed));
  auto compiler = CpuCompiler::Create();
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ(InPlaceSteps((*exe)->plan()), in_place) << PlanToString((*exe)->plan());
  std::mt19937 rng(5);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  for (int32_t index : indexes.empty() ? std::vector<int32_t>{0} : indexes) {
    if (index_param >= 0) args[index_param] = Literal::Scalar<int32_t>(PrimitiveType::S32, index);
    const std::vector<Literal> before = args;
    HloEvaluator evaluator;
    auto want = evaluator.Evaluate(*module, args);
    ASSERT_TRUE(want.ok()) << want.status();
    for (int run = 0; run < 2; ++run) {  // a second run must not see the first one's updates
      auto got = (*exe)->Run(args);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(*got, *want, "index " + std::to_string(index), "jit", 1e-5);
    }
    for (size_t i = 0; i < args.size(); ++i)
      EXPECT_TRUE(args[i] == before[i]) << "argument " << i << " was overwritten";
  }
}

// Scatter-add on the evaluator into a kernel's result (exp(x): an embedding gradient's
// table): the scatter takes the table over (it stays out of the arena for that) instead of
// copying it. Duplicate (3) and out-of-bounds (7 of a window of 1 fits; -1 does not) indices.
// The second module reads the table after the scatter too: there it must be copied.
constexpr const char* kScatterIntoResult = R"(
HloModule scatter_into_result
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8,5], u: f32[6,5]) -> f32[8,5] {
  %x = f32[8,5] parameter(0)
  %u = f32[6,5] parameter(1)
  %t = f32[8,5] exponential(%x)
  %i = s32[6,1] constant({{0}, {3}, {3}, {7}, {-1}, {2}})
  ROOT %s = f32[8,5] scatter(%t, %i, %u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}
)";
constexpr const char* kScatterTableReadLater = R"(
HloModule scatter_table_read_later
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8,5], u: f32[6,5]) -> (f32[8,5], f32[8,5]) {
  %x = f32[8,5] parameter(0)
  %u = f32[6,5] parameter(1)
  %t = f32[8,5] exponential(%x)
  %i = s32[6,1] constant({{0}, {3}, {3}, {7}, {-1}, {2}})
  %s = f32[8,5] scatter(%t, %i, %u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  ROOT %r = (f32[8,5], f32[8,5]) tuple(%s, %t)
}
)";

TEST(UpdateInPlace, ScatterTakesItsTableOrCopiesIt) {
  Check(kScatterIntoResult, 0, -1, {});
  Check(kScatterTableReadLater, 0, -1, {});
}

// A loop writing one row of its state per iteration (what jax.lax.scan gives); the initial
// state is an argument, read again after the loop.
constexpr const char* kLoopRows = R"(
HloModule loop_rows
%cond (s: (s32[], f32[8,16], f32[1,16])) -> pred[] {
  %s = (s32[], f32[8,16], f32[1,16]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(8)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8,16], f32[1,16])) -> (s32[], f32[8,16], f32[1,16]) {
  %s = (s32[], f32[8,16], f32[1,16]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %ys = f32[8,16] get-tuple-element(%s), index=1
  %row = f32[1,16] get-tuple-element(%s), index=2
  %t = f32[1,16] tanh(%row)
  %z = s32[] constant(0)
  %ys2 = f32[8,16] dynamic-update-slice(%ys, %t, %i, %z)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[8,16], f32[1,16]) tuple(%i2, %ys2, %t)
}
ENTRY %main (x: f32[8,16], r: f32[1,16]) -> (f32[8,16], f32[8,16]) {
  %x = f32[8,16] parameter(0)
  %r = f32[1,16] parameter(1)
  %z = s32[] constant(0)
  %init = (s32[], f32[8,16], f32[1,16]) tuple(%z, %x, %r)
  %w = (s32[], f32[8,16], f32[1,16]) while(%init), condition=%cond, body=%body
  %ys = f32[8,16] get-tuple-element(%w), index=1
  %back = f32[8,16] add(%ys, %x)
  ROOT %out = (f32[8,16], f32[8,16]) tuple(%ys, %back)
}
)";

TEST(UpdateInPlace, WhileLoopWritesOneRowPerIteration) { Check(kLoopRows, 1, -1, {}); }

// The operand is a value the root reads too: its buffer must be copied, not taken. Start
// indices out of range are clamped.
constexpr const char* kOperandReadLater = R"(
HloModule read_later
ENTRY %main (a: f32[6,40], u: f32[2,40], i: s32[]) -> (f32[6,40], f32[6,40]) {
  %a = f32[6,40] parameter(0)
  %u = f32[2,40] parameter(1)
  %i = s32[] parameter(2)
  %e = f32[6,40] exponential(%a)
  %z = s32[] constant(0)
  %d = f32[6,40] dynamic-update-slice(%e, %u, %i, %z)
  ROOT %r = (f32[6,40], f32[6,40]) tuple(%d, %e)
}
)";

// A loop on the general runner (a dot in the body) stacking two outputs into state elements
// that start as one buffer (CSE merged their zero initializations): each get-tuple-element
// of the body's parameter moves its element out (Step::moves_element), so the first update
// finds its stack with no other owner while the parameter's later elements are still unread
// (before, it copied its 512 KB stack every iteration). Against the evaluator. In the second
// module stack 2 is read twice (an update and a sum); neither read moves it.
std::string TwoStacks(bool read_twice) {
  return std::string(R"(
HloModule two_stacks
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
cond {
  p = (s32[], f32[16,128], f32[64,16,128], f32[128,128], f32[64,16,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(24)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[16,128], f32[64,16,128], f32[128,128], f32[64,16,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[16,128] get-tuple-element(p), index=1
  w = f32[128,128] get-tuple-element(p), index=3
  d = f32[16,128] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[] constant(0.05)
  cb = f32[16,128] broadcast(c), dimensions={}
  ds = f32[16,128] multiply(d, cb)
  t = f32[16,128] tanh(ds)
  s = f32[64,16,128] get-tuple-element(p), index=2
  r = f32[1,16,128] reshape(t)
  z = s32[] constant(0)
  s2 = f32[64,16,128] dynamic-update-slice(s, r, i, z, z)
  q = f32[64,16,128] get-tuple-element(p), index=4
  r2 = f32[1,16,128] reshape(d)
  q2 = f32[64,16,128] dynamic-update-slice(q, r2, i, z, z)
)") +
         (read_twice ? R"(  s_again = f32[64,16,128] get-tuple-element(p), index=2
  zf = f32[] constant(0)
  total = f32[16,128] reduce(s_again, zf), dimensions={0}, to_apply=add
  k = f32[] constant(0.001)
  kb = f32[16,128] broadcast(k), dimensions={}
  small = f32[16,128] multiply(total, kb)
  h2 = f32[16,128] add(t, small)
)"
                     : "  h2 = f32[16,128] negate(t)\n") +
         R"(  ROOT o = (s32[], f32[16,128], f32[64,16,128], f32[128,128], f32[64,16,128]) tuple(next, h2, s2, w, q2)
}
ENTRY main {
  h = f32[16,128] parameter(0)
  w = f32[128,128] parameter(1)
  zero = s32[] constant(0)
  zf = f32[] constant(0)
  s = f32[64,16,128] broadcast(zf), dimensions={}
  init = (s32[], f32[16,128], f32[64,16,128], f32[128,128], f32[64,16,128]) tuple(zero, h, s, w, s)
  wl = (s32[], f32[16,128], f32[64,16,128], f32[128,128], f32[64,16,128]) while(init), condition=cond, body=body
  a = f32[64,16,128] get-tuple-element(wl), index=2
  b = f32[64,16,128] get-tuple-element(wl), index=4
  ROOT out = (f32[64,16,128], f32[64,16,128]) tuple(a, b)
}
)";
}

TEST(UpdateInPlace, LoopStatesElementsMoveOutOfTheParameter) {
  for (bool read_twice : {false, true}) {
    SCOPED_TRACE(read_twice);
    const std::string text = TwoStacks(read_twice);
    Check(text, 2, -1, {});
    auto parsed = ParseHloModule(text, "two_stacks");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::shared_ptr<const HloModule> module(std::move(*parsed));
    auto compiler = CpuCompiler::Create();
    ASSERT_TRUE(compiler.ok());
    auto exe = (*compiler)->Compile(module);
    ASSERT_TRUE(exe.ok()) << exe.status();
    // The body's reads of the parameter's stacks (elements 2 and 4).
    int moved = 0, kept = 0;
    for (const ComputationPlan& c : (*exe)->plan().called)
      for (const Step& st : c.steps)
        if (st.instr->opcode() == HloOpcode::kGetTupleElement &&
            st.instr->operand(0)->opcode() == HloOpcode::kParameter &&
            st.instr->shape().dimensions().size() == 3 && c.computation->name() == "body")
          (st.moves_element ? moved : kept) += 1;
    EXPECT_EQ(moved, read_twice ? 1 : 2);
    EXPECT_EQ(kept, read_twice ? 2 : 0);
  }
}

TEST(UpdateInPlace, OperandReadLaterIsCopied) {
  Check(kOperandReadLater, 1, 2, {0, 3, 4, 5, 100, -3});
}

// The update reads the operand (overlapping windows): the update is computed into its own
// buffer by a kernel of its own first, so the update kernel still writes in place and never
// reads an element it has written.
constexpr const char* kUpdateReadsOperand = R"(
HloModule reads_operand
ENTRY %main (a: f32[6,40], i: s32[]) -> f32[6,40] {
  %a = f32[6,40] parameter(0)
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %s = f32[3,40] dynamic-slice(%a, %i, %z), dynamic_slice_sizes={3,40}
  %c = f32[] constant(1)
  %cb = f32[3,40] broadcast(%c), dimensions={}
  %up = f32[3,40] add(%s, %cb)
  ROOT %d = f32[6,40] dynamic-update-slice(%a, %up, %j, %z)
}
)";

TEST(UpdateInPlace, UpdateThatReadsTheOperandIsComputedFirst) {
  Check(kUpdateReadsOperand, 1, 1, {0, 1, 2, 3, 7});
}

// A large update into a dead GEMM result: its buffer is taken, and the update loop is split
// across the thread pool (256 rows of 1024).
constexpr const char* kLargeUpdate = R"(
HloModule large_update
ENTRY %main (a: f32[512,64], b: f32[64,1024], u: f32[256,1024], i: s32[]) -> f32[512,1024] {
  %a = f32[512,64] parameter(0)
  %b = f32[64,1024] parameter(1)
  %u = f32[256,1024] parameter(2)
  %i = s32[] parameter(3)
  %m = f32[512,1024] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z = s32[] constant(0)
  %n = f32[256,1024] negate(%u)
  ROOT %d = f32[512,1024] dynamic-update-slice(%m, %n, %i, %z)
}
)";

TEST(UpdateInPlace, LargeUpdateOfADeadGemmResult) { Check(kLargeUpdate, 1, 3, {0, 100, 300}); }

}  // namespace
}  // namespace kiln::cpu
