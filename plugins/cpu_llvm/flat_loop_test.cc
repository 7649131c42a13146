// While loops run flat (flat_loop.h) against the HLO evaluator: a small state, a state
// element updated in place, pass-through elements, a multi-output kernel and every way an
// element becomes its next value (updated where it lies, traded buffers, copies); arguments the
// loop only borrows stay unchanged, a donated one is updated where it is; and the loops that
// must stay on the general runner.
#include "plugins/cpu_llvm/flat_loop.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/text_module_test_util.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;

using testing::CompiledText;

// The module compiled, and its first while loop as the runner sees it (the plan's module,
// after kernel-fusion, holds the instructions).
struct Compiled : CompiledText {
  const HloInstruction* loop = nullptr;
};

Compiled Compile(const std::string& text) {
  Compiled c;
  static_cast<CompiledText&>(c) = testing::CompileText(text);
  if (c.exe == nullptr) return c;
  auto find = [&](const ComputationPlan& p) {
    for (const Step& s : p.steps)
      if (c.loop == nullptr && s.instr->opcode() == HloOpcode::kWhile) c.loop = s.instr;
  };
  find(c.exe->plan());
  for (const ComputationPlan& p : c.exe->plan().called) find(p);
  return c;
}

std::vector<Literal> Args(const HloModule& m, uint32_t seed) {
  return codegen_testing::RandomArguments(m, seed).values;
}

void ExpectMatchesEvaluator(const Compiled& c, const std::vector<Literal>& args,
                            const std::string& what) {
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, what, "flat");
}

// The same, and the first argument, which the loop only borrows, unchanged after the run.
void ExpectMatchesLeavingTheArgumentAlone(const Compiled& c, uint32_t seed,
                                          const std::string& what) {
  std::vector<Literal> args = Args(*c.module, seed);
  const Literal before = args[0];
  ExpectMatchesEvaluator(c, args, what);
  ExpectClose(args[0], before, what + ": argument after the run", "flat", 0);
}

// x <- x * 0.5 + sin(x) for 100 iterations beside a counter: three kernels an iteration.
constexpr char kSmallState[] = R"(
HloModule small
cond {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[64] get-tuple-element(p), index=1
  half = f32[] constant(0.5)
  halves = f32[64] broadcast(half), dimensions={}
  scaled = f32[64] multiply(x, halves)
  s = f32[64] sine(x)
  y = f32[64] add(scaled, s)
  ROOT t = (s32[], f32[64]) tuple(next, y)
}
ENTRY main {
  x = f32[64] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[64]) tuple(zero, x)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  ROOT out = f32[64] get-tuple-element(w), index=1
}
)";

TEST(FlatLoop, SmallStateMatchesTheEvaluator) {
  Compiled c = Compile(kSmallState);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  for (uint32_t seed : {1u, 2u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), "small state");
}

// Rows 0 to 9 of a 16-row table set to row * (i + 1) in place (rows 10 to 15 keep the
// argument's values), the row vector growing each iteration, a scale passed through
// unchanged; the table is the caller's argument.
constexpr char kInPlace[] = R"(
HloModule in_place
cond {
  p = (s32[], f32[16,8], f32[1,8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[16,8], f32[1,8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  table = f32[16,8] get-tuple-element(p), index=1
  row = f32[1,8] get-tuple-element(p), index=2
  scale = f32[] get-tuple-element(p), index=3
  one = s32[] constant(1)
  next = s32[] add(i, one)
  fi = f32[] convert(next)
  f = f32[] multiply(fi, scale)
  fs = f32[1,8] broadcast(f), dimensions={}
  update = f32[1,8] multiply(row, fs)
  zero = s32[] constant(0)
  written = f32[16,8] dynamic-update-slice(table, update, i, zero)
  ones = f32[1,8] broadcast(scale), dimensions={}
  grown = f32[1,8] add(row, ones)
  ROOT t = (s32[], f32[16,8], f32[1,8], f32[]) tuple(next, written, grown, scale)
}
ENTRY main {
  table = f32[16,8] parameter(0)
  row = f32[1,8] parameter(1)
  scale = f32[] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[16,8], f32[1,8], f32[]) tuple(zero, table, row, scale)
  w = (s32[], f32[16,8], f32[1,8], f32[]) while(init), condition=cond, body=body
  ROOT out = f32[16,8] get-tuple-element(w), index=1
}
)";

TEST(FlatLoop, InPlaceUpdateLeavesBorrowedArgumentsAlone) {
  Compiled c = Compile(kInPlace);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  std::vector<Literal> args = Args(*c.module, 3);
  const Literal before = args[0];
  ExpectMatchesEvaluator(c, args, "first run");
  // The table was the caller's: the loop copied it once and updated its own copy.
  ExpectClose(args[0], before, "argument after the run", "flat", 0);
  ExpectMatchesEvaluator(c, args, "second run");
}

TEST(FlatLoop, DonatedArgumentIsUpdatedWhereItIs) {
  Compiled c = Compile(kInPlace);
  ASSERT_NE(c.exe, nullptr);
  std::vector<Literal> args = Args(*c.module, 4);
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto table = std::make_shared<const Literal>(args[0]);
  const uint8_t* where = table->untyped_data();
  std::vector<std::shared_ptr<const Literal>> shared = {std::move(table),
                                                        std::make_shared<const Literal>(args[1]),
                                                        std::make_shared<const Literal>(args[2])};
  auto got = c.exe->RunShared(std::move(shared));
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "donated", "flat");
  EXPECT_EQ(got->untyped_data(), where) << "the donated table was copied";
}

// A two-output kernel (a value and its square, read through get-tuple-element) and a
// condition on a state element computed by the body.
constexpr char kTwoOutputs[] = R"(
HloModule two_outputs
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
fused {
  a = f32[32] parameter(0)
  b = f32[32] parameter(1)
  s = f32[32] add(a, b)
  q = f32[32] multiply(s, s)
  ROOT t = (f32[32], f32[32]) tuple(s, q)
}
cond {
  p = (f32[32], f32[32], pred[]) parameter(0)
  ROOT go = pred[] get-tuple-element(p), index=2
}
body {
  p = (f32[32], f32[32], pred[]) parameter(0)
  a = f32[32] get-tuple-element(p), index=0
  b = f32[32] get-tuple-element(p), index=1
  f = (f32[32], f32[32]) fusion(a, b), kind=kLoop, calls=fused
  s = f32[32] get-tuple-element(f), index=0
  q = f32[32] get-tuple-element(f), index=1
  small = f32[] constant(0.01)
  scaled = f32[32] broadcast(small), dimensions={}
  qs = f32[32] multiply(q, scaled)
  zero = f32[] constant(0)
  total = f32[] reduce(qs, zero), dimensions={0}, to_apply=sum
  limit = f32[] constant(1000)
  go = pred[] compare(total, limit), direction=LT
  ROOT t = (f32[32], f32[32], pred[]) tuple(s, qs, go)
}
ENTRY main {
  a = f32[32] parameter(0)
  b = f32[32] parameter(1)
  t = pred[] constant(true)
  init = (f32[32], f32[32], pred[]) tuple(a, b, t)
  w = (f32[32], f32[32], pred[]) while(init), condition=cond, body=body
  ROOT out = f32[32] get-tuple-element(w), index=0
}
)";

TEST(FlatLoop, MultiOutputKernelsAndAConditionOnTheState) {
  Compiled c = Compile(kTwoOutputs);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  ExpectMatchesEvaluator(c, Args(*c.module, 5), "two outputs");
}

// How state elements become their next values: `a` updated in place but moved to `b`'s
// place (the update takes a's buffer, then the buffers trade), `b` doubled into `a`'s place
// and `c` rewritten by two updates (both too large to copy back: exchanged), the counter and
// the total copied back. All arguments are borrowed.
constexpr char kNextValues[] = R"(
HloModule next_values
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
cond {
  p = (s32[], f32[16,8], f32[16,8], f32[32,8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(12)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[16,8], f32[16,8], f32[32,8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[16,8] get-tuple-element(p), index=1
  b = f32[16,8] get-tuple-element(p), index=2
  c = f32[32,8] get-tuple-element(p), index=3
  total = f32[] get-tuple-element(p), index=4
  one = s32[] constant(1)
  next = s32[] add(i, one)
  zero = s32[] constant(0)
  row = f32[1,8] dynamic-slice(b, i, zero), dynamic_slice_sizes={1,8}
  a2 = f32[16,8] dynamic-update-slice(a, row, i, zero)
  two = f32[] constant(2)
  twos = f32[16,8] broadcast(two), dimensions={}
  b2 = f32[16,8] multiply(b, twos)
  c1 = f32[32,8] dynamic-update-slice(c, row, i, zero)
  fzero = f32[] constant(0)
  c1sum = f32[] reduce(c1, fzero), dimensions={0,1}, to_apply=sum
  total2 = f32[] add(total, c1sum)
  sixteen = s32[] constant(16)
  j = s32[] add(i, sixteen)
  negated = f32[1,8] negate(row)
  c2 = f32[32,8] dynamic-update-slice(c1, negated, j, zero)
  ROOT t = (s32[], f32[16,8], f32[16,8], f32[32,8], f32[]) tuple(next, b2, a2, c2, total2)
}
ENTRY main {
  a = f32[16,8] parameter(0)
  b = f32[16,8] parameter(1)
  c = f32[32,8] parameter(2)
  zero = s32[] constant(0)
  fzero = f32[] constant(0)
  init = (s32[], f32[16,8], f32[16,8], f32[32,8], f32[]) tuple(zero, a, b, c, fzero)
  ROOT w = (s32[], f32[16,8], f32[16,8], f32[32,8], f32[]) while(init), condition=cond, body=body
}
)";

TEST(FlatLoop, InPlaceChainsTradedAndCopiedElements) {
  Compiled c = Compile(kNextValues);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  std::vector<Literal> args = Args(*c.module, 6);
  const std::vector<Literal> before = args;
  ExpectMatchesEvaluator(c, args, "first run");
  for (size_t i = 0; i < args.size(); ++i)
    ExpectClose(args[i], before[i], "argument after the run", "flat", 0);
  ExpectMatchesEvaluator(c, args, "second run");
}

// for (i = i0; i < 17; ++i) x = x * 0.9 + x[i % 8] (a counter the body also reads), with
// the counter's start an argument: before the limit, at it and past it (no iteration), and
// negative. Written as i < 17 and as 17 > i, both counted (the runner stores the next
// counter itself, or runs its kernel when the body reads it), and so is one whose limit is a
// state element the body passes on; a step of 2 is not, and runs the condition each time. All
// agree with the evaluator.
std::string CountedLoop(const std::string& test, const std::string& step,
                        const std::string& index = "i") {
  return R"(
HloModule counted
cond {
  p = (s32[], f32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  m = s32[] get-tuple-element(p), index=2
  n = s32[] constant(17)
  ROOT go = pred[] compare()" +
         test + R"(
}
body {
  p = (s32[], f32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  step = s32[] constant()" +
         step + R"()
  next = s32[] add(i, step)
  x = f32[8] get-tuple-element(p), index=1
  eight = s32[] constant(8)
  r = s32[] remainder()" +
         index + R"(, eight)
  zero = s32[] constant(0)
  neg = pred[] compare(r, zero), direction=LT
  wrapped = s32[] add(r, eight)
  at = s32[] select(neg, wrapped, r)
  xi = f32[1] dynamic-slice(x, at), dynamic_slice_sizes={1}
  xs = f32[] reshape(xi)
  xb = f32[8] broadcast(xs), dimensions={}
  k = f32[] constant(0.9)
  kb = f32[8] broadcast(k), dimensions={}
  y = f32[8] multiply(x, kb)
  z = f32[8] add(y, xb)
  m = s32[] get-tuple-element(p), index=2
  ROOT t = (s32[], f32[8], s32[]) tuple(next, z, m)
}
ENTRY main {
  i0 = s32[] parameter(0)
  x = f32[8] parameter(1)
  m = s32[] constant(17)
  init = (s32[], f32[8], s32[]) tuple(i0, x, m)
  w = (s32[], f32[8], s32[]) while(init), condition=cond, body=body
  i = s32[] get-tuple-element(w), index=0
  y = f32[8] get-tuple-element(w), index=1
  ROOT out = (s32[], f32[8]) tuple(i, y)
}
)";
}

TEST(FlatLoop, CountedLoopsSkipTheCondition) {
  struct Case {
    std::string test, step;
    bool counted;
    std::string index = "i";
  };
  for (const Case& k :
       {Case{"i, n), direction=LT", "1", true}, Case{"n, i), direction=GT", "1", true},
        Case{"i, n), direction=LT", "2", false}, Case{"i, m), direction=LT", "1", true},
        // The next counter read by the body too: its kernel still runs.
        Case{"i, n), direction=LT", "1", true, "next"}}) {
    SCOPED_TRACE(k.test + " step " + k.step);
    Compiled c = Compile(CountedLoop(k.test, k.step, k.index));
    ASSERT_NE(c.exe, nullptr);
    ASSERT_NE(c.loop, nullptr);
    EXPECT_TRUE(c.exe->RunsFlat(c.loop));
    EXPECT_EQ(c.exe->RunsCounted(c.loop), k.counted);
    std::vector<Literal> args = Args(*c.module, 9);
    for (int32_t start : {0, 5, 16, 17, 100, -3}) {
      args[0].data<int32_t>()[0] = start;
      ExpectMatchesEvaluator(c, args, "start " + std::to_string(start));
    }
  }
}

// Elements whose next value an elementwise kernel writes over them: a scan's scalar carry
// (c + xs[i], then stored into ys[i]), a vector one (a * 0.5 + 1) that another kernel also
// reads (b + a, which must see the old a), and one read reversed (not at its own index).
constexpr char kWrittenOver[] = R"(
HloModule written_over
cond {
  p = (s32[], f32[], f32[64], f32[64], f32[8], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(64)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[], f32[64], f32[64], f32[8], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  c = f32[] get-tuple-element(p), index=1
  ys = f32[64] get-tuple-element(p), index=2
  xs = f32[64] get-tuple-element(p), index=3
  a = f32[8] get-tuple-element(p), index=4
  b = f32[8] get-tuple-element(p), index=5
  d = f32[8] get-tuple-element(p), index=6
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[1] dynamic-slice(xs, i), dynamic_slice_sizes={1}
  xv = f32[] reshape(x)
  c2 = f32[] add(c, xv)
  c2r = f32[1] reshape(c2)
  ys2 = f32[64] dynamic-update-slice(ys, c2r, i)
  half = f32[] constant(0.5)
  halves = f32[8] broadcast(half), dimensions={}
  a2 = f32[8] multiply(a, halves)
  fone = f32[] constant(1)
  ones = f32[8] broadcast(fone), dimensions={}
  a3 = f32[8] add(a2, ones)
  b2 = f32[8] add(b, a)
  dr = f32[8] reverse(d), dimensions={0}
  d2 = f32[8] subtract(dr, halves)
  ROOT t = (s32[], f32[], f32[64], f32[64], f32[8], f32[8], f32[8]) tuple(next, c2, ys2, xs, a3, b2, d2)
}
ENTRY main {
  c = f32[] parameter(0)
  ys = f32[64] parameter(1)
  xs = f32[64] parameter(2)
  a = f32[8] parameter(3)
  b = f32[8] parameter(4)
  d = f32[8] parameter(5)
  zero = s32[] constant(0)
  init = (s32[], f32[], f32[64], f32[64], f32[8], f32[8], f32[8]) tuple(zero, c, ys, xs, a, b, d)
  ROOT w = (s32[], f32[], f32[64], f32[64], f32[8], f32[8], f32[8]) while(init), condition=cond, body=body
}
)";

TEST(FlatLoop, ElementsWrittenOverByTheirLastReader) {
  Compiled c = Compile(kWrittenOver);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  EXPECT_TRUE(c.exe->RunsCounted(c.loop));
  std::vector<Literal> args = Args(*c.module, 12);
  const std::vector<Literal> before = args;
  ExpectMatchesEvaluator(c, args, "first run");
  for (size_t i = 0; i < args.size(); ++i)  // borrowed: copied once, never written
    ExpectClose(args[i], before[i], "argument after the run", "flat", 0);
  ExpectMatchesEvaluator(c, args, "second run");
}

// A lax.cond in the step (an s32 index over two cheap branches, as JAX lowers it) becomes a
// select before planning (conditional-to-select): the loop runs flat and counted.
constexpr char kCondInStep[] = R"(
HloModule cond_in_step
down {
  p = (f32[], f32[]) parameter(0)
  c = f32[] get-tuple-element(p), index=0
  x = f32[] get-tuple-element(p), index=1
  h = f32[] constant(0.5)
  m = f32[] multiply(x, h)
  ROOT s = f32[] subtract(c, m)
}
up {
  p = (f32[], f32[]) parameter(0)
  c = f32[] get-tuple-element(p), index=0
  k = f32[] constant(0.99)
  m = f32[] multiply(c, k)
  x = f32[] get-tuple-element(p), index=1
  ROOT a = f32[] add(m, x)
}
cond {
  p = (s32[], f32[], f32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(64)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[], f32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  c = f32[] get-tuple-element(p), index=1
  ys = f32[64] get-tuple-element(p), index=2
  xs = f32[64] get-tuple-element(p), index=3
  x1 = f32[1] dynamic-slice(xs, i), dynamic_slice_sizes={1}
  x = f32[] reshape(x1)
  z = f32[] constant(0)
  gt = pred[] compare(x, z), direction=GT
  b = s32[] convert(gt)
  a = (f32[], f32[]) tuple(c, x)
  c2 = f32[] conditional(b, a, a), branch_computations={down, up}
  c2r = f32[1] reshape(c2)
  ys2 = f32[64] dynamic-update-slice(ys, c2r, i)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[], f32[64], f32[64]) tuple(j, c2, ys2, xs)
}
ENTRY main {
  c = f32[] parameter(0)
  ys = f32[64] parameter(1)
  xs = f32[64] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[], f32[64], f32[64]) tuple(zero, c, ys, xs)
  ROOT w = (s32[], f32[], f32[64], f32[64]) while(init), condition=cond, body=body
}
)";

TEST(FlatLoop, ACheapConditionalInTheStepRunsFlat) {
  Compiled c = Compile(kCondInStep);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  EXPECT_TRUE(c.exe->RunsCounted(c.loop));
  for (uint32_t seed : {3u, 4u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), "run");
}

// A scan over the rows of x whose step is a scan along the row: out[i] = the decayed sum of
// row i's first 2i + 1 values. The inner loop's limit is its state element (set by the outer
// step), the row passes through it unchanged (read where it lies, not copied).
constexpr char kNested[] = R"(
HloModule nested
inner_cond {
  p = (s32[], f32[16], f32[], s32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=3
  ROOT lt = pred[] compare(j, n), direction=LT
}
inner_body {
  p = (s32[], f32[16], f32[], s32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  row = f32[16] get-tuple-element(p), index=1
  acc = f32[] get-tuple-element(p), index=2
  n = s32[] get-tuple-element(p), index=3
  one = s32[] constant(1)
  next = s32[] add(j, one)
  v = f32[1] dynamic-slice(row, j), dynamic_slice_sizes={1}
  vs = f32[] reshape(v)
  k = f32[] constant(0.9)
  decayed = f32[] multiply(acc, k)
  acc2 = f32[] add(decayed, vs)
  ROOT t = (s32[], f32[16], f32[], s32[]) tuple(next, row, acc2, n)
}
outer_cond {
  p = (s32[], f32[8,16], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
outer_body {
  p = (s32[], f32[8,16], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,16] get-tuple-element(p), index=1
  out = f32[8] get-tuple-element(p), index=2
  zero = s32[] constant(0)
  r = f32[1,16] dynamic-slice(x, i, zero), dynamic_slice_sizes={1,16}
  row = f32[16] reshape(r)
  c0 = f32[] constant(0)
  one = s32[] constant(1)
  twice = s32[] add(i, i)
  len = s32[] add(twice, one)
  init = (s32[], f32[16], f32[], s32[]) tuple(zero, row, c0, len)
  w = (s32[], f32[16], f32[], s32[]) while(init), condition=inner_cond, body=inner_body
  acc = f32[] get-tuple-element(w), index=2
  a1 = f32[1] reshape(acc)
  out2 = f32[8] dynamic-update-slice(out, a1, i)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[8,16], f32[8]) tuple(next, x, out2)
}
ENTRY main {
  x = f32[8,16] parameter(0)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  out = f32[8] broadcast(z), dimensions={}
  init = (s32[], f32[8,16], f32[8]) tuple(zero, x, out)
  w = (s32[], f32[8,16], f32[8]) while(init), condition=outer_cond, body=outer_body
  ROOT o = f32[8] get-tuple-element(w), index=2
}
)";

TEST(FlatLoop, NestedLoopsRunInside) {
  Compiled c = Compile(kNested);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  EXPECT_TRUE(c.exe->RunsCounted(c.loop));
  for (uint32_t seed : {10u, 11u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), "nested");
}

// The inner loop reads `a` where it lies, and the outer step reads the loop's pass-through
// of it (r) after updating `a` in place (upd is a's last reader, and comes first): the update
// must not take a's buffer while r still refers to it.
constexpr char kPassThroughReadAfterUpdate[] = R"(
HloModule pinned
inner_cond {
  p = (s32[], f32[16], f32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] constant(16)
  ROOT lt = pred[] compare(j, n), direction=LT
}
inner_body {
  p = (s32[], f32[16], f32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  v = f32[16] get-tuple-element(p), index=1
  acc = f32[] get-tuple-element(p), index=2
  one = s32[] constant(1)
  next = s32[] add(j, one)
  x = f32[1] dynamic-slice(v, j), dynamic_slice_sizes={1}
  xs = f32[] reshape(x)
  acc2 = f32[] add(acc, xs)
  ROOT t = (s32[], f32[16], f32[]) tuple(next, v, acc2)
}
outer_cond {
  p = (s32[], f32[16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
outer_body {
  p = (s32[], f32[16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[16] get-tuple-element(p), index=1
  b = f32[16] get-tuple-element(p), index=2
  zero = s32[] constant(0)
  c0 = f32[] constant(0)
  init = (s32[], f32[16], f32[]) tuple(zero, a, c0)
  w = (s32[], f32[16], f32[]) while(init), condition=inner_cond, body=inner_body
  s = f32[] get-tuple-element(w), index=2
  s1 = f32[1] reshape(s)
  upd = f32[16] dynamic-update-slice(a, s1, i)
  r = f32[16] get-tuple-element(w), index=1
  half = f32[] constant(0.5)
  halves = f32[16] broadcast(half), dimensions={}
  rh = f32[16] multiply(r, halves)
  b2 = f32[16] add(b, rh)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[16], f32[16]) tuple(next, upd, b2)
}
ENTRY main {
  a = f32[16] parameter(0)
  b = f32[16] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[16], f32[16]) tuple(zero, a, b)
  ROOT w = (s32[], f32[16], f32[16]) while(init), condition=outer_cond, body=outer_body
}
)";

TEST(FlatLoop, APassThroughOfANestedLoopKeepsItsValue) {
  Compiled c = Compile(kPassThroughReadAfterUpdate);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  for (uint32_t seed : {12u, 13u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), "pinned");
}

// Row i of the outer state's matrix doubled (plus its column) by an inner loop over the
// columns whose result is the next matrix: the inner loop updates the matrix where it lies.
// It must not when `later` reads the matrix the step started from after the inner loop (m,
// not m2), nor when `read` is from the inner loop's pass-through of that matrix (orig, whose
// row i column 0 the first iteration writes in m).
std::string NestedUpdate(const std::string& later, const std::string& read) {
  return R"(
HloModule nested_update
inner_cond {
  p = (s32[], f32[8,16], s32[], f32[8,16]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] constant(16)
  ROOT lt = pred[] compare(j, n), direction=LT
}
inner_body {
  p = (s32[], f32[8,16], s32[], f32[8,16]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  m = f32[8,16] get-tuple-element(p), index=1
  i = s32[] get-tuple-element(p), index=2
  orig = f32[8,16] get-tuple-element(p), index=3
  one = s32[] constant(1)
  next = s32[] add(j, one)
  zero = s32[] constant(0)
  v = f32[1,1] dynamic-slice()" +
         read + R"(), dynamic_slice_sizes={1,1}
  two = f32[] constant(2)
  twos = f32[1,1] broadcast(two), dimensions={}
  fj = f32[] convert(j)
  fjs = f32[1,1] broadcast(fj), dimensions={}
  d = f32[1,1] multiply(v, twos)
  v2 = f32[1,1] add(d, fjs)
  m2 = f32[8,16] dynamic-update-slice(m, v2, i, j)
  ROOT t = (s32[], f32[8,16], s32[], f32[8,16]) tuple(next, m2, i, orig)
}
outer_cond {
  p = (s32[], f32[8,16], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
outer_body {
  p = (s32[], f32[8,16], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  m = f32[8,16] get-tuple-element(p), index=1
  s = f32[] get-tuple-element(p), index=2
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], s32[], f32[8,16]) tuple(zero, m, i, m)
  w = (s32[], f32[8,16], s32[], f32[8,16]) while(init), condition=inner_cond, body=inner_body
  m2 = f32[8,16] get-tuple-element(w), index=1
  corner = f32[1,1] dynamic-slice()" +
         later + R"(, i, i), dynamic_slice_sizes={1,1}
  c = f32[] reshape(corner)
  s2 = f32[] add(s, c)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[8,16], f32[]) tuple(next, m2, s2)
}
ENTRY main {
  m = f32[8,16] parameter(0)
  s = f32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], f32[]) tuple(zero, m, s)
  ROOT w = (s32[], f32[8,16], f32[]) while(init), condition=outer_cond, body=outer_body
}
)";
}

TEST(FlatLoop, ANestedLoopUpdatesTheStateWhereItLies) {
  for (const auto& [later, read] : std::vector<std::pair<std::string, std::string>>{
           {"m2", "m, i, j"}, {"m", "m, i, j"}, {"m2", "orig, i, zero"}}) {
    SCOPED_TRACE(later + " " + read);
    Compiled c = Compile(NestedUpdate(later, read));
    ASSERT_NE(c.exe, nullptr);
    ASSERT_NE(c.loop, nullptr);
    EXPECT_TRUE(c.exe->RunsFlat(c.loop));
    for (uint32_t seed : {14u, 15u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), later);
  }
}

// A switch in the step of a loop, its index from an argument (0, 1, 2, and -1 and 5: out of
// range, the last branch): branch 0 holds a loop, branch 1 computes on both operands,
// branch 2 returns one of them unchanged. Then a conditional on i % 2 whose result is a
// tuple, its false branch returning its whole operand.
constexpr char kConditionals[] = R"(
HloModule conditionals
heavy_cond {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
heavy_body {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[256] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  k = f32[] constant(1.1)
  ks = f32[256] broadcast(k), dimensions={}
  m = f32[256] multiply(v, ks)
  t = f32[256] tanh(m)
  ROOT r = (s32[], f32[256]) tuple(next, t)
}
branch0 {
  p = (f32[256], f32[256]) parameter(0)
  x = f32[256] get-tuple-element(p), index=0
  zero = s32[] constant(0)
  init = (s32[], f32[256]) tuple(zero, x)
  w = (s32[], f32[256]) while(init), condition=heavy_cond, body=heavy_body
  ROOT r = f32[256] get-tuple-element(w), index=1
}
branch1 {
  p = (f32[256], f32[256]) parameter(0)
  x = f32[256] get-tuple-element(p), index=0
  y = f32[256] get-tuple-element(p), index=1
  ROOT s = f32[256] subtract(x, y)
}
branch2 {
  p = (f32[256], f32[256]) parameter(0)
  ROOT y = f32[256] get-tuple-element(p), index=1
}
on_true {
  p = (f32[256], f32[256]) parameter(0)
  x = f32[256] get-tuple-element(p), index=0
  y = f32[256] get-tuple-element(p), index=1
  a = f32[256] add(x, y)
  ta = f32[256] tanh(a)
  m = f32[256] multiply(x, y)
  tm = f32[256] tanh(m)
  ROOT t = (f32[256], f32[256]) tuple(ta, tm)
}
on_false {
  ROOT p = (f32[256], f32[256]) parameter(0)
}
cond {
  p = (s32[], f32[256], f32[256], s32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[256], f32[256], s32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[256] get-tuple-element(p), index=1
  y = f32[256] get-tuple-element(p), index=2
  sel = s32[8] get-tuple-element(p), index=3
  k = s32[1] dynamic-slice(sel, i), dynamic_slice_sizes={1}
  ks = s32[] reshape(k)
  ops = (f32[256], f32[256]) tuple(x, y)
  c = f32[256] conditional(ks, ops, ops, ops), branch_computations={branch0, branch1, branch2}
  two = s32[] constant(2)
  r = s32[] remainder(i, two)
  zero = s32[] constant(0)
  even = pred[] compare(r, zero), direction=EQ
  ops2 = (f32[256], f32[256]) tuple(c, y)
  d = (f32[256], f32[256]) conditional(even, ops2, ops2), true_computation=on_true, false_computation=on_false
  x2 = f32[256] get-tuple-element(d), index=0
  y2 = f32[256] get-tuple-element(d), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[256], f32[256], s32[8]) tuple(next, x2, y2, sel)
}
ENTRY main {
  x = f32[256] parameter(0)
  y = f32[256] parameter(1)
  sel = s32[8] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[256], f32[256], s32[8]) tuple(zero, x, y, sel)
  ROOT w = (s32[], f32[256], f32[256], s32[8]) while(init), condition=cond, body=body
}
)";

// Of f32[256], and of f32[32]: a state small enough to be copied, so a run is a fixed list
// of calls (BuffersStayPut).
TEST(FlatLoop, ConditionalsInTheStepRunFlat) {
  for (const std::string size : {"256", "32"}) {
    SCOPED_TRACE(size);
    std::string text = kConditionals;
    for (size_t at = text.find("[256]"); at != std::string::npos; at = text.find("[256]", at + 1))
      text.replace(at + 1, 3, size);
    Compiled c = Compile(text);
    ASSERT_NE(c.exe, nullptr);
    ASSERT_NE(c.loop, nullptr);
    EXPECT_TRUE(c.exe->RunsFlat(c.loop));
    std::vector<Literal> args = Args(*c.module, 16);
    const int32_t branches[8] = {0, 1, 2, -1, 5, 0, 1, 0};
    std::copy(branches, branches + 8, args[2].data<int32_t>().begin());
    ExpectMatchesEvaluator(c, args, "switch");
  }
}

// A conditional whose operand is the loop's whole state (what the tuple simplifier leaves of
// tuple(gte 0, gte 1, gte 2)), after a kernel that updates x in place as x's last
// get-tuple-element reader: the update must not take x, which the branches read through the
// state.
constexpr char kWholeStateOperand[] = R"(
HloModule whole_state
t_branch {
  p = (s32[], f32[128], f32[128]) parameter(0)
  x = f32[128] get-tuple-element(p), index=1
  ROOT s = f32[128] sine(x)
}
f_branch {
  p = (s32[], f32[128], f32[128]) parameter(0)
  x = f32[128] get-tuple-element(p), index=1
  h = f32[] constant(0.5)
  hs = f32[128] broadcast(h), dimensions={}
  ROOT m = f32[128] multiply(x, hs)
}
cond {
  p = (s32[], f32[128], f32[128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[128], f32[128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[128] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  fi = f32[] convert(i)
  v = f32[1] reshape(fi)
  xu = f32[128] dynamic-update-slice(x, v, i)
  acc = f32[128] get-tuple-element(p), index=2
  two = s32[] constant(2)
  r = s32[] remainder(i, two)
  zero = s32[] constant(0)
  even = pred[] compare(r, zero), direction=EQ
  z = f32[128] conditional(even, p, p), true_computation=t_branch, false_computation=f_branch
  y = f32[128] add(acc, z)
  ROOT t = (s32[], f32[128], f32[128]) tuple(next, xu, y)
}
ENTRY main {
  x = f32[128] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[128], f32[128]) tuple(zero, x, x)
  ROOT w = (s32[], f32[128], f32[128]) while(init), condition=cond, body=body
}
)";

TEST(FlatLoop, AConditionalReadingTheWholeStateRunsFlat) {
  Compiled c = Compile(kWholeStateOperand);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  for (uint32_t seed : {17u, 18u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), "state");
}

// Library steps in the body (a sort by its generated comparator, a LAPACK triangular solve, a
// GEMM, LAPACK factorizations with tuple results) run inside the flat loop as the general runner
// runs them; the loop then has no fixed program (no driver). A solve's unit diagonal keeps the
// repeated solves well conditioned.
TEST(FlatLoop, LibraryStepsRunInsideAFlatLoop) {
  const std::string sorted = R"(
HloModule sorted
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
cond {
  p = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[16] get-tuple-element(p), index=1
  n = f32[16] negate(x)
  s = f32[16] sort(n), dimensions={0}, to_apply=less
  ROOT t = (s32[], f32[16]) tuple(next, s)
}
ENTRY main {
  x = f32[16] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[16]) tuple(zero, x)
  w = (s32[], f32[16]) while(init), condition=cond, body=body
  ROOT out = f32[16] get-tuple-element(w), index=1
}
)";
  const std::string solved = R"(
HloModule solved
cond {
  p = (s32[], f32[64,64], f32[64,16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[64,64], f32[64,16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  m = f32[64,64] get-tuple-element(p), index=1
  b = f32[64,16] get-tuple-element(p), index=2
  x = f32[64,16] triangular-solve(m, b), left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE
  mb = f32[64,16] dot(m, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[] constant(0.5)
  ss = f32[64,16] broadcast(s), dimensions={}
  y = f32[64,16] multiply(mb, ss)
  z = f32[64,16] add(x, y)
  ROOT t = (s32[], f32[64,64], f32[64,16]) tuple(next, m, z)
}
ENTRY main {
  m = f32[64,64] parameter(0)
  b = f32[64,16] parameter(1)
  s = f32[] constant(0.05)
  ss = f32[64,64] broadcast(s), dimensions={}
  ms = f32[64,64] multiply(m, ss)
  zero = s32[] constant(0)
  init = (s32[], f32[64,64], f32[64,16]) tuple(zero, ms, b)
  w = (s32[], f32[64,64], f32[64,16]) while(init), condition=cond, body=body
  ROOT out = f32[64,16] get-tuple-element(w), index=2
}
)";
  // A tuple result (keys and their positions sorted together): copied into its elements.
  const std::string pairs = R"(
HloModule pairs
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
cond {
  p = (s32[], f32[16], s32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[16], s32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[16] get-tuple-element(p), index=1
  k = s32[16] get-tuple-element(p), index=2
  n = f32[16] negate(x)
  s = (f32[16], s32[16]) sort(n, k), dimensions={0}, to_apply=less
  sx = f32[16] get-tuple-element(s), index=0
  sk = s32[16] get-tuple-element(s), index=1
  ROOT t = (s32[], f32[16], s32[16]) tuple(next, sx, sk)
}
ENTRY main {
  x = f32[16] parameter(0)
  k = s32[16] iota(), iota_dimension=0
  zero = s32[] constant(0)
  init = (s32[], f32[16], s32[16]) tuple(zero, x, k)
  ROOT w = (s32[], f32[16], s32[16]) while(init), condition=cond, body=body
}
)";
  // Two tuple-shaped LAPACK calls of different shapes (Cholesky, then an LU of its factor,
  // as jnp.linalg.solve(cholesky(a), y) does) and a solve by their results, each step: every
  // call fills its own result, factors, pivots and infos carried in the state.
  const std::string factored = R"(
HloModule factored
cond {
  p = (s32[], f32[8,8], f32[8,1], s32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8,8], f32[8,1], s32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  c = f32[8,8] get-tuple-element(p), index=1
  y = f32[8,1] get-tuple-element(p), index=2
  cc = f32[8,8] dot(c, c), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  r = s32[8,8] iota(), iota_dimension=0
  k = s32[8,8] iota(), iota_dimension=1
  on = pred[8,8] compare(r, k), direction=EQ
  eight = f32[] constant(8)
  e8 = f32[8,8] broadcast(eight), dimensions={}
  zero = f32[] constant(0)
  z8 = f32[8,8] broadcast(zero), dimensions={}
  d = f32[8,8] select(on, e8, z8)
  a = f32[8,8] add(cc, d)
  ch = (f32[8,8], s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi", backend_config={uplo = 76 : ui8}
  l = f32[8,8] get-tuple-element(ch), index=0
  tri = pred[8,8] compare(r, k), direction=GE
  lower = f32[8,8] select(tri, l, z8)
  lu = (f32[8,8], s32[8], s32[]) custom-call(lower), custom_call_target="lapack_sgetrf_ffi", backend_config={}
  f = f32[8,8] get-tuple-element(lu), index=0
  piv = s32[8] get-tuple-element(lu), index=1
  info = s32[] get-tuple-element(ch), index=1
  x = f32[8,1] triangular-solve(f, y), left_side=true, lower=false, unit_diagonal=false, transpose_a=NO_TRANSPOSE
  half = f32[] constant(0.5)
  hb = f32[8,8] broadcast(half), dimensions={}
  c2 = f32[8,8] multiply(c, hb)
  ROOT t = (s32[], f32[8,8], f32[8,1], s32[8], s32[]) tuple(next, c2, x, piv, info)
}
ENTRY main {
  c = f32[8,8] parameter(0)
  y = f32[8,1] parameter(1)
  zero = s32[] constant(0)
  p = s32[8] broadcast(zero), dimensions={}
  init = (s32[], f32[8,8], f32[8,1], s32[8], s32[]) tuple(zero, c, y, p, zero)
  ROOT w = (s32[], f32[8,8], f32[8,1], s32[8], s32[]) while(init), condition=cond, body=body
}
)";
  for (const auto& [name, text] : {std::pair{"sort", sorted}, std::pair{"solve", solved},
                                   std::pair{"pairs", pairs}, std::pair{"factored", factored}}) {
    Compiled c = Compile(text);
    ASSERT_NE(c.exe, nullptr) << name;
    ASSERT_NE(c.loop, nullptr) << name;
    EXPECT_TRUE(c.exe->RunsFlat(c.loop)) << name;
    EXPECT_FALSE(c.exe->RunsDriven(c.loop)) << name;
    for (uint32_t seed : {6u, 8u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), name);
  }
}

// A call in the body keeps the loop on the general runner.
TEST(FlatLoop, OtherLoopsStayOnTheGeneralRunner) {
  const std::string called = R"(
HloModule called
twice {
  x = f32[16] parameter(0)
  ROOT y = f32[16] add(x, x)
}
cond {
  p = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[16] get-tuple-element(p), index=1
  n = f32[16] negate(x)
  s = f32[16] call(n), to_apply=twice
  ROOT t = (s32[], f32[16]) tuple(next, s)
}
ENTRY main {
  x = f32[16] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[16]) tuple(zero, x)
  w = (s32[], f32[16]) while(init), condition=cond, body=body
  ROOT out = f32[16] get-tuple-element(w), index=1
}
)";
  Compiled c = Compile(called);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_FALSE(c.exe->RunsFlat(c.loop));
  ExpectMatchesEvaluator(c, Args(*c.module, 6), "call in the body");
}

// Next values that are not a temporary of their own: an element moved to another position
// (`(a, b) -> (b, a + b)`, Fibonacci's and Euclid's loops), a constant, and one kernel's
// result that is two elements' next value. They are copied out after the body, before any
// element takes its next value, and the loop runs flat (driven: its buffers stay put).
constexpr char kMovedElements[] = R"(
HloModule moved
cond {
  p = (s32[], f32[8], f32[8], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8], f32[8], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  a = f32[8] get-tuple-element(p), index=1
  b = f32[8] get-tuple-element(p), index=2
  c = f32[8] add(a, b)
  d = f32[8] get-tuple-element(p), index=3
  e = f32[8] get-tuple-element(p), index=4
  h = f32[8] constant({0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4})
  m = f32[8] multiply(d, e)
  ROOT t = (s32[], f32[8], f32[8], f32[8], f32[8]) tuple(next, b, c, m, m)
}
ENTRY main {
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  d = f32[8] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[8], f32[8], f32[8], f32[8]) tuple(zero, a, b, d, a)
  ROOT w = (s32[], f32[8], f32[8], f32[8], f32[8]) while(init), condition=cond, body=body
}
)";

TEST(FlatLoop, ElementsMovingToAnotherPositionRunFlat) {
  std::string constant_next = kMovedElements;
  const std::string from = "tuple(next, b, c, m, m)";
  constant_next.replace(constant_next.find(from), from.size(), "tuple(next, b, c, m, h)");
  for (const std::string& text : {std::string(kMovedElements), constant_next}) {
    Compiled c = Compile(text);
    ASSERT_NE(c.exe, nullptr);
    ASSERT_NE(c.loop, nullptr);
    EXPECT_TRUE(c.exe->RunsFlat(c.loop));
    EXPECT_TRUE(c.exe->RunsDriven(c.loop));
    ExpectMatchesLeavingTheArgumentAlone(c, 7, "moved elements");
  }
}

// Insertion sort of the first 40 of 1100 values, as JAX writes it: an inner while moves the
// larger values up by one (taking the outer array: its operand is the array's last reader),
// then an in-place update writes the key into the inner loop's result. f32[1100] is more than
// the flat loop copies between iterations, so the loop is a fixed program only when the
// update writes where the inner loop left the array, which is the outer array's buffer.
constexpr char kInsertionSort[] = R"(
HloModule insertion
inner_cond {
  p = (s32[], f32[1100], f32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  zero = s32[] constant(0)
  ge = pred[] compare(j, zero), direction=GE
  a = f32[1100] get-tuple-element(p), index=1
  jc = s32[] maximum(j, zero)
  x = f32[1] dynamic-slice(a, jc), dynamic_slice_sizes={1}
  xs = f32[] reshape(x)
  key = f32[] get-tuple-element(p), index=2
  gt = pred[] compare(xs, key), direction=GT
  ROOT go = pred[] and(ge, gt)
}
inner_body {
  p = (s32[], f32[1100], f32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  a = f32[1100] get-tuple-element(p), index=1
  x = f32[1] dynamic-slice(a, j), dynamic_slice_sizes={1}
  one = s32[] constant(1)
  up = s32[] add(j, one)
  moved = f32[1100] dynamic-update-slice(a, x, up)
  down = s32[] subtract(j, one)
  key = f32[] get-tuple-element(p), index=2
  ROOT t = (s32[], f32[1100], f32[]) tuple(down, moved, key)
}
outer_cond {
  p = (s32[], f32[1100]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(40)
  ROOT lt = pred[] compare(i, n), direction=LT
}
outer_body {
  p = (s32[], f32[1100]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[1100] get-tuple-element(p), index=1
  k = f32[1] dynamic-slice(a, i), dynamic_slice_sizes={1}
  key = f32[] reshape(k)
  one = s32[] constant(1)
  j0 = s32[] subtract(i, one)
  init = (s32[], f32[1100], f32[]) tuple(j0, a, key)
  w = (s32[], f32[1100], f32[]) while(init), condition=inner_cond, body=inner_body
  jf = s32[] get-tuple-element(w), index=0
  af = f32[1100] get-tuple-element(w), index=1
  at = s32[] add(jf, one)
  key1 = f32[1] reshape(key)
  sorted = f32[1100] dynamic-update-slice(af, key1, at)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[1100]) tuple(next, sorted)
}
ENTRY main {
  a = f32[1100] parameter(0)
  one = s32[] constant(1)
  init = (s32[], f32[1100]) tuple(one, a)
  w = (s32[], f32[1100]) while(init), condition=outer_cond, body=outer_body
  ROOT out = f32[1100] get-tuple-element(w), index=1
}
)";

TEST(LoopDriver, AnUpdateOfANestedLoopsResultKeepsTheLoopFixed) {
  Compiled c = Compile(kInsertionSort);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  EXPECT_TRUE(c.exe->RunsDriven(c.loop));
  // The inner loop sorts in the outer loop's buffer: the caller's array was copied first.
  ExpectMatchesLeavingTheArgumentAlone(c, 21, "insertion sort");
}

// The same, reading the key again from the array the step started from after the inner
// loop (as JAX's fusion of insertion sort does): the inner loop may not take the array and
// works on a copy, which the update then takes. The loop stays a fixed program only when the
// update writes where that copy lies (the array, f32[1000], is then copied into the state).
TEST(LoopDriver, AnUpdateTakingATemporaryWritesWhereItLies) {
  std::string text = kInsertionSort;
  auto replace = [&text](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace("1100", "1000");
  replace("key1 = f32[1] reshape(key)",
          "key1 = f32[1] dynamic-slice(a, i), dynamic_slice_sizes={1}");
  Compiled c = Compile(text);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsDriven(c.loop));
  for (uint32_t seed : {22u, 23u}) ExpectMatchesEvaluator(c, Args(*c.module, seed), "reread key");
}

// An inner loop taking the outer array whose result is then negated into a new buffer (the
// state trades buffers: no fixed program): the caller's array must still be copied first.
TEST(LoopDriver, ANestedLoopTakingTheStateLeavesBorrowedArgumentsAlone) {
  std::string text = kInsertionSort;
  const std::string from = "sorted = f32[1100] dynamic-update-slice(af, key1, at)";
  text.replace(text.find(from), from.size(), "sorted = f32[1100] negate(af)");
  Compiled c = Compile(text);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_NE(c.loop, nullptr);
  EXPECT_TRUE(c.exe->RunsFlat(c.loop));
  ExpectMatchesLeavingTheArgumentAlone(c, 24, "negated");
}

// Loops whose runs are a fixed program run through a compiled driver, and the same programs
// interpreted (KILN_CPU_LOOP_DRIVERS=0) agree with the evaluator too: counted and uncounted
// loops, nested loops, conditionals of both kinds, in-place updates, written-over elements.
TEST(LoopDriver, DrivenAndInterpretedRunsMatchTheEvaluator) {
  const std::vector<std::pair<const char*, const char*>> programs = {
      {"small state", kSmallState},
      {"in place", kInPlace},
      {"written over", kWrittenOver},
      {"cond in step", kCondInStep},
      {"nested", kNested},
      {"conditionals", kConditionals},
      {"whole state", kWholeStateOperand},
      {"insertion sort", kInsertionSort}};
  for (const bool driven : {true, false}) {
    if (!driven) setenv("KILN_CPU_LOOP_DRIVERS", "0", 1);
    for (const auto& [name, text] : programs) {
      Compiled c = Compile(text);
      ASSERT_NE(c.exe, nullptr) << name;
      ASSERT_NE(c.loop, nullptr) << name;
      EXPECT_EQ(c.exe->RunsDriven(c.loop), driven) << name;
      for (uint32_t seed : {30u, 31u})
        ExpectMatchesEvaluator(c, Args(*c.module, seed),
                               std::string(name) + (driven ? ", driven" : ", interpreted"));
    }
    unsetenv("KILN_CPU_LOOP_DRIVERS");
  }
}

// A serialized executable brings its drivers (they are in its objects) and runs them.
TEST(LoopDriver, ALoadedExecutableRunsItsDrivers) {
  Compiled c = Compile(kNested);
  ASSERT_NE(c.exe, nullptr);
  ASSERT_TRUE(c.exe->RunsDriven(c.loop));
  auto compiler = CpuCompiler::Create({});
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto loaded = (*compiler)->Load(c.module, c.exe->Serialize());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Compiled l = c;
  l.exe = *loaded;
  l.loop = nullptr;
  for (const ComputationPlan& p : l.exe->plan().called)
    for (const Step& s : p.steps)
      if (l.loop == nullptr && s.instr->opcode() == HloOpcode::kWhile) l.loop = s.instr;
  for (const Step& s : l.exe->plan().steps)
    if (s.instr->opcode() == HloOpcode::kWhile) l.loop = s.instr;
  ASSERT_NE(l.loop, nullptr);
  EXPECT_TRUE(l.exe->RunsDriven(l.loop));
  ExpectMatchesEvaluator(l, Args(*l.module, 32), "loaded");
}

}  // namespace
}  // namespace kiln::cpu
