// The arena of temporaries (plugins/kernel_plan/arena_layout.h) on real modules: no two
// results of one computation whose live ranges overlap (computed here from the plan's steps
// and the users of each result) share bytes, except a dynamic-update-slice written in place
// over its dying operand; results of different computations (the entry, a loop body) never
// share bytes; every range lies inside the arena; and runs with the arena agree with the
// evaluator, run after run, on the examples and the JAX-lowered models.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

std::string SourceRoot() {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  return root ? root : ".";
}

std::shared_ptr<const HloModule> Load(const std::string& relative) {
  std::ifstream in(SourceRoot() + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ParseHloModule(text.str(), relative);
  EXPECT_TRUE(parsed.ok()) << relative << ": " << parsed.status();
  if (!parsed.ok()) return nullptr;
  return std::shared_ptr<const HloModule>(std::move(*parsed));
}

struct Range {
  const HloInstruction* h;
  int computation;                // 0: the entry, i: Plan::called[i - 1]
  int64_t first_step, last_step;  // defined at, last read at
  int64_t begin, end;             // bytes in the arena
  const HloInstruction* in_place_on = nullptr;
};

// Checks the layout of `exe` against live ranges computed from its plan; returns how many
// results it holds in the entry's region and in the called computations' regions.
std::pair<int64_t, int64_t> CheckLayout(const CpuExecutable& exe, const std::string& name) {
  const ArenaLayout& layout = exe.arena_layout();
  std::vector<const ComputationPlan*> plans = {&exe.plan()};
  for (const ComputationPlan& p : exe.plan().called) plans.push_back(&p);
  struct Where {
    int computation;
    int64_t step;
  };
  absl::flat_hash_map<const HloInstruction*, Where> step_of;
  for (size_t c = 0; c < plans.size(); ++c)
    for (size_t i = 0; i < plans[c]->steps.size(); ++i)
      step_of[plans[c]->steps[i].instr] = {static_cast<int>(c), static_cast<int64_t>(i)};
  std::vector<Range> ranges;
  std::pair<int64_t, int64_t> counts = {0, 0};
  // A result at `offset` of `bytes`, live from its step to the last user of `readers`.
  auto check = [&](const HloInstruction* h, int64_t offset, int64_t bytes,
                   const std::vector<const HloInstruction*>& readers) {
    EXPECT_TRUE(step_of.contains(h)) << name << ": " << h->name() << " is not a step";
    const Where w = step_of[h];
    Range r{h, w.computation, w.step, w.step, offset, offset + bytes};
    for (const HloInstruction* reader : readers) {
      for (const HloInstruction* u : reader->users()) {
        EXPECT_TRUE(step_of.contains(u)) << name << ": user " << u->name() << " is not a step";
        EXPECT_EQ(step_of[u].computation, w.computation) << name << ": " << u->name();
        r.last_step = std::max(r.last_step, step_of[u].step);
      }
    }
    const Step& s = plans[w.computation]->steps[r.first_step];
    if (s.in_place_source >= 0) r.in_place_on = s.sources[s.in_place_source];
    EXPECT_EQ(offset % 64, 0) << name << ": " << h->name();
    EXPECT_GE(r.begin, 0) << name;
    EXPECT_LE(r.end, layout.size) << name << ": " << h->name() << " ends past the arena";
    EXPECT_NE(h, plans[w.computation]->computation->root()) << name << ": the root is the caller's";
    (w.computation == 0 ? counts.first : counts.second)++;
    ranges.push_back(r);
  };
  // An output of a multi-output kernel lives from that kernel's step to the last reader of
  // its get-tuple-elements (listed in `offsets` too, for the runner: checked here as the
  // output they read).
  for (const auto& [key, offset] : layout.element_offsets) {
    const auto& [h, index] = key;
    std::vector<const HloInstruction*> readers;
    for (const HloInstruction* g : h->users()) {
      if (g->tuple_index() != index) continue;
      EXPECT_EQ(layout.OffsetOf(g), offset) << name << ": " << g->name();
      readers.push_back(g);
    }
    check(h, offset, h->shape().tuple_shapes(static_cast<int>(index)).byte_size(), readers);
  }
  for (const auto& [h, offset] : layout.offsets)
    if (h->opcode() != HloOpcode::kGetTupleElement)  // checked above
      check(h, offset, h->shape().byte_size(), {h});
  for (const Range& a : ranges) {
    for (const Range& b : ranges) {
      if (&a == &b) continue;
      const bool share_bytes = a.begin < b.end && b.begin < a.end;
      if (a.computation != b.computation) {  // a body may run while the entry's values live
        EXPECT_FALSE(share_bytes) << name << ": " << a.h->name() << " and " << b.h->name()
                                  << " of different computations share bytes";
        continue;
      }
      if (a.first_step > b.first_step) continue;
      // Two outputs of one kernel are written by the same step: both live then.
      const bool live_together = b.first_step <= a.last_step;
      const bool in_place = b.in_place_on == a.h && a.last_step == b.first_step;
      EXPECT_FALSE(live_together && share_bytes && !in_place)
          << name << ": " << a.h->name() << " [" << a.first_step << "," << a.last_step << "] and "
          << b.h->name() << " [" << b.first_step << "," << b.last_step << "] share bytes";
    }
  }
  return counts;
}

// Compiles `module`, checks its layout and three runs against the evaluator; the layout, for
// more checks (empty when compiling failed).
ArenaLayout CheckRuns(std::shared_ptr<const HloModule> module, const std::string& name,
                      bool expect_entry, bool expect_called = false) {
  auto compiler = CpuCompiler::Create();
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  if (!compiler.ok()) return {};
  auto exe = (*compiler)->Compile(module);
  EXPECT_TRUE(exe.ok()) << name << ": " << exe.status();
  if (!exe.ok()) return {};
  const auto [entry, called] = CheckLayout(**exe, name);
  if (expect_entry) {
    EXPECT_GT(entry, 0) << name << ": nothing of the entry went into the arena";
  }
  if (expect_called) {
    EXPECT_GT(called, 0) << name << ": nothing of a loop body went into the arena";
  }
  std::mt19937 rng(11);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  EXPECT_TRUE(want.ok()) << name << ": " << want.status();
  for (int run = 0; want.ok() && run < 3; ++run) {  // later runs reuse earlier runs' arena
    auto got = (*exe)->Run(args);
    EXPECT_TRUE(got.ok()) << name << ": " << got.status();
    if (got.ok()) ExpectClose(*got, *want, name + " run " + std::to_string(run), "jit", 2e-3);
  }
  return (*exe)->arena_layout();
}

void CheckModule(const std::string& file, bool expect_entry, bool expect_called = false) {
  std::shared_ptr<const HloModule> module = Load(file);
  ASSERT_NE(module, nullptr);
  CheckRuns(module, file, expect_entry, expect_called);
}

TEST(Arena, MlpTrainStep) { CheckModule("examples/hlo/mlp_train_step.hlo", true); }
TEST(Arena, Softmax) { CheckModule("examples/hlo/softmax.hlo", false); }
TEST(Arena, ModelFn) { CheckModule("examples/hlo/model_fn.hlo", false); }
TEST(Arena, LstmStacked) { CheckModule("examples/hlo/lstm_stacked.hlo", true); }
TEST(Arena, LstmStackedWhile) { CheckModule("examples/hlo/lstm_stacked_while.hlo", false, true); }
TEST(Arena, JaxMnist) { CheckModule("tests/jax_lowered/mnist.hlo", true); }
TEST(Arena, JaxResnet8) { CheckModule("tests/jax_lowered/resnet8.hlo", true); }
TEST(Arena, JaxBert) { CheckModule("tests/jax_lowered/bert.hlo", true); }

// exp(tanh(exp(x))) and tanh(sin(tanh(x))), each read by a row and a column reduction, are
// computed into memory (too costly to generate in both) by one kernel with two outputs
// (sibling merging): both outputs go into the arena.
TEST(Arena, MultiOutputKernelOutputs) {
  const std::string text = R"(HloModule two_outputs
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,128] parameter(0)
  zero = f32[] constant(0)
  e1 = f32[64,128] exponential(x)
  e2 = f32[64,128] tanh(e1)
  e = f32[64,128] exponential(e2)
  t1 = f32[64,128] tanh(x)
  t2 = f32[64,128] sine(t1)
  t = f32[64,128] tanh(t2)
  re = f32[64] reduce(e, zero), dimensions={1}, to_apply=add
  ce = f32[128] reduce(e, zero), dimensions={0}, to_apply=add
  rt = f32[64] reduce(t, zero), dimensions={1}, to_apply=add
  ct = f32[128] reduce(t, zero), dimensions={0}, to_apply=add
  ROOT out = (f32[64], f32[128], f32[64], f32[128]) tuple(re, ce, rt, ct)
})";
  auto parsed = ParseHloModule(text, "two_outputs");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const ArenaLayout layout =
      CheckRuns(std::shared_ptr<const HloModule>(std::move(*parsed)), "two_outputs", true);
  EXPECT_EQ(layout.element_offsets.size(), 2u);
}

// Several threads running one executable at once each get an arena of their own.
TEST(Arena, ConcurrentRunsAgree) {
  std::shared_ptr<const HloModule> module = Load("examples/hlo/mlp_train_step.hlo");
  ASSERT_NE(module, nullptr);
  auto compiler = CpuCompiler::Create();
  ASSERT_TRUE(compiler.ok());
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::mt19937 rng(3);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  auto want = (*exe)->Run(args);
  ASSERT_TRUE(want.ok());
  std::vector<std::thread> threads;
  std::vector<int> bad(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        auto got = (*exe)->Run(args);
        if (!got.ok() || !(*got == *want)) ++bad[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln::cpu
