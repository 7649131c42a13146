// kernel-fusion writes the planner's fusion decision into HLO: softmax becomes one fusion
// holding its row statistics, a library GEMM stays outside with its epilogue fused, the
// planner then sees one kernel per fusion, and values are unchanged (HLO evaluator).
#include "plugins/kernel_plan/kernel_fusion.h"

#include <random>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::kernel_plan {
namespace {

constexpr const char* kSoftmax = R"(HloModule softmax
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[16,128]) -> f32[16,128] {
  %x = f32[16,128] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[16] reduce(f32[16,128] %x, f32[] %ninf), dimensions={1}, to_apply=%max
  %mxb = f32[16,128] broadcast(f32[16] %mx), dimensions={0}
  %d = f32[16,128] subtract(f32[16,128] %x, f32[16,128] %mxb)
  %e = f32[16,128] exponential(f32[16,128] %d)
  %zero = f32[] constant(0)
  %s = f32[16] reduce(f32[16,128] %e, f32[] %zero), dimensions={1}, to_apply=%add
  %sb = f32[16,128] broadcast(f32[16] %s), dimensions={0}
  ROOT %y = f32[16,128] divide(f32[16,128] %e, f32[16,128] %sb)
}
)";

constexpr const char* kDenseRelu = R"(HloModule dense_relu
ENTRY %main (x: f32[64,96], w: f32[96,80], b: f32[80]) -> f32[64,80] {
  %x = f32[64,96] parameter(0)
  %w = f32[96,80] parameter(1)
  %b = f32[80] parameter(2)
  %xw = f32[64,80] dot(f32[64,96] %x, f32[96,80] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[64,80] broadcast(f32[80] %b), dimensions={1}
  %z = f32[64,80] add(f32[64,80] %xw, f32[64,80] %bb)
  %zero = f32[] constant(0)
  %zeros = f32[64,80] broadcast(f32[] %zero), dimensions={}
  ROOT %y = f32[64,80] maximum(f32[64,80] %z, f32[64,80] %zeros)
}
)";

std::vector<Literal> RandomArgs(const HloModule& m) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<Literal> args;
  for (const HloInstruction* p : m.entry()->parameters()) {
    Literal l(p->shape());
    for (float& v : l.data<float>()) v = u(rng);
    args.push_back(std::move(l));
  }
  return args;
}

int Count(const HloComputation& c, HloOpcode op) {
  int n = 0;
  for (const HloInstruction* i : c.instructions()) n += i->opcode() == op;
  return n;
}

// Runs the pass on `text`; checks that it verifies and computes the same values.
std::unique_ptr<HloModule> FuseAndCheck(const char* text, const PlanOptions& options) {
  auto before = ParseHloModule(text, "before");
  auto after = ParseHloModule(text, "after");
  EXPECT_TRUE(before.ok() && after.ok());
  absl::StatusOr<bool> changed = KernelFusion(options).Run(**after);
  EXPECT_TRUE(changed.ok() && *changed);
  EXPECT_TRUE(VerifyModule(**after).ok()) << VerifyModule(**after) << (*after)->ToString();
  std::vector<Literal> args = RandomArgs(**before);
  HloEvaluator ev;
  absl::StatusOr<Literal> want = ev.Evaluate(**before, args);
  absl::StatusOr<Literal> got = ev.Evaluate(**after, args);
  EXPECT_TRUE(want.ok() && got.ok());
  if (want.ok() && got.ok()) {
    for (int64_t i = 0; i < want->element_count(); ++i)
      EXPECT_EQ(got->GetAsDouble(i), want->GetAsDouble(i)) << i;  // same ops, same order
  }
  return std::move(*after);
}

TEST(KernelFusion, SoftmaxIsOneFusionWithItsRowStatistics) {
  std::unique_ptr<HloModule> m = FuseAndCheck(kSoftmax, PlanOptions());
  const HloComputation& entry = *m->entry();
  EXPECT_EQ(entry.instruction_count(), 2) << m->ToString();  // the parameter and the fusion
  ASSERT_EQ(entry.root()->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(Count(*entry.root()->fused_computation(), HloOpcode::kReduce), 2);
  // The planner consumes it as one kernel.
  PlanOptions consume;
  consume.fuse_unfused = false;
  Plan plan = MakePlan(*m, consume);
  EXPECT_EQ(plan.kernels.size(), 1u);
}

TEST(KernelFusion, LibraryGemmStaysOutsideItsFusedEpilogue) {
  PlanOptions options;
  options.blas_min_mnk = 1;                          // every plain dot is a library GEMM ...
  if (!HaveBlas()) options.device_gemm_min_mnk = 1;  // ... or a device one without a BLAS
  std::unique_ptr<HloModule> m = FuseAndCheck(kDenseRelu, options);
  const HloComputation& entry = *m->entry();
  EXPECT_EQ(Count(entry, HloOpcode::kDot), 1) << m->ToString();
  EXPECT_EQ(Count(entry, HloOpcode::kFusion), 1) << m->ToString();
  ASSERT_EQ(entry.root()->opcode(), HloOpcode::kFusion);
  int dot_operands = 0;
  for (const HloInstruction* o : entry.root()->operands())
    dot_operands += o->opcode() == HloOpcode::kDot;
  EXPECT_EQ(dot_operands, 1) << m->ToString();
}

// int8 quantization's scale: max |x| over the whole array, broadcast back over it.
std::string ScaledByItsMaximum(int rows, int cols) {
  const std::string shape = "f32[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
  return "HloModule quantize\n"
         "%max (a: f32[], b: f32[]) -> f32[] {\n"
         "  %a = f32[] parameter(0)\n"
         "  %b = f32[] parameter(1)\n"
         "  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)\n"
         "}\n"
         "ENTRY %main (x: " +
         shape + ") -> " + shape +
         " {\n"
         "  %x = " +
         shape +
         " parameter(0)\n"
         "  %ax = " +
         shape + " abs(" + shape +
         " %x)\n"
         "  %ninf = f32[] constant(-inf)\n"
         "  %mx = f32[] reduce(" +
         shape +
         " %ax, f32[] %ninf), dimensions={0,1}, to_apply=%max\n"
         "  %q = f32[] constant(127)\n"
         "  %scale = f32[] divide(f32[] %mx, f32[] %q)\n"
         "  %sb = " +
         shape +
         " broadcast(f32[] %scale), dimensions={}\n"
         "  ROOT %y = " +
         shape + " divide(" + shape + " %x, " + shape +
         " %sb)\n"
         "}\n";
}

TEST(KernelFusion, LargeReductionToAScalarBroadcastBackIsAKernelOfItsOwn) {
  // Inlined, it would be hoisted above the kernel's outer loop and recomputed by every part
  // of the kernel the thread pool runs.
  const std::string large = ScaledByItsMaximum(256, 512);
  std::unique_ptr<HloModule> m = FuseAndCheck(large.c_str(), PlanOptions());
  const HloComputation& entry = *m->entry();
  ASSERT_EQ(entry.root()->opcode(), HloOpcode::kFusion) << m->ToString();
  EXPECT_EQ(Count(*entry.root()->fused_computation(), HloOpcode::kReduce), 0) << m->ToString();
  // A small one runs on one thread: computing it inside the kernel saves a kernel call.
  const std::string small = ScaledByItsMaximum(16, 128);
  m = FuseAndCheck(small.c_str(), PlanOptions());
  EXPECT_EQ(m->entry()->instruction_count(), 2) << m->ToString();  // the parameter, the fusion
  ASSERT_EQ(m->entry()->root()->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(Count(*m->entry()->root()->fused_computation(), HloOpcode::kReduce), 1);
}

// A Gaussian mixture's log-likelihood: per-component distances (an inner reduce over 16),
// then a logsumexp over the components (a max and a sum reading them element by element).
// With `both` false only the sum reads them.
std::string MixtureLogLikelihood(bool both) {
  std::string text = R"(HloModule gmm
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[64,16], mu: f32[32,16]) -> f32[64] {
  %x = f32[64,16] parameter(0)
  %mu = f32[32,16] parameter(1)
  %xb = f32[64,32,16] broadcast(f32[64,16] %x), dimensions={0,2}
  %mb = f32[64,32,16] broadcast(f32[32,16] %mu), dimensions={1,2}
  %d = f32[64,32,16] subtract(f32[64,32,16] %xb, f32[64,32,16] %mb)
  %d2 = f32[64,32,16] multiply(f32[64,32,16] %d, f32[64,32,16] %d)
  %zero = f32[] constant(0)
  %dist = f32[64,32] reduce(f32[64,32,16] %d2, f32[] %zero), dimensions={2}, to_apply=%add
  %lp = f32[64,32] negate(f32[64,32] %dist)
)";
  if (both) {
    text += R"(  %ninf = f32[] constant(-inf)
  %m = f32[64] reduce(f32[64,32] %lp, f32[] %ninf), dimensions={1}, to_apply=%max
  %mb2 = f32[64,32] broadcast(f32[64] %m), dimensions={0}
  %c = f32[64,32] subtract(f32[64,32] %lp, f32[64,32] %mb2)
  %e = f32[64,32] exponential(f32[64,32] %c)
  %s = f32[64] reduce(f32[64,32] %e, f32[] %zero), dimensions={1}, to_apply=%add
  %l = f32[64] log(f32[64] %s)
  ROOT %y = f32[64] add(f32[64] %l, f32[64] %m)
}
)";
  } else {
    text += R"(  %e = f32[64,32] exponential(f32[64,32] %lp)
  %s = f32[64] reduce(f32[64,32] %e, f32[] %zero), dimensions={1}, to_apply=%add
  ROOT %y = f32[64] log(f32[64] %s)
}
)";
  }
  return text;
}

TEST(KernelFusion, InnerReduceReadByTwoReductionsIsMaterialized) {
  // Inlined, every distance would be computed once by the max's loop and again by the sum's.
  const std::string both = MixtureLogLikelihood(true);
  std::unique_ptr<HloModule> m = FuseAndCheck(both.c_str(), PlanOptions());
  EXPECT_EQ(Count(*m->entry(), HloOpcode::kFusion), 2) << m->ToString();
  ASSERT_EQ(m->entry()->root()->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(Count(*m->entry()->root()->fused_computation(), HloOpcode::kReduce), 2)
      << m->ToString();
  // One reader computes each distance once: it stays inside the reader's kernel.
  const std::string one = MixtureLogLikelihood(false);
  m = FuseAndCheck(one.c_str(), PlanOptions());
  EXPECT_EQ(Count(*m->entry(), HloOpcode::kFusion), 1) << m->ToString();
  ASSERT_EQ(m->entry()->root()->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(Count(*m->entry()->root()->fused_computation(), HloOpcode::kReduce), 2)
      << m->ToString();
}

TEST(KernelFusion, CostlyInputOfAWindowIsComputedOnce) {
  // Inlined, the GLU's sigmoid would be generated once per tap: 31 times per element.
  constexpr const char* kGluDepthwise = R"(HloModule glu_depthwise
ENTRY %main (x: f32[2,64,64], w: f32[31,1,32]) -> f32[2,64,32] {
  %x = f32[2,64,64] parameter(0)
  %w = f32[31,1,32] parameter(1)
  %a = f32[2,64,32] slice(f32[2,64,64] %x), slice={[0:2], [0:64], [0:32]}
  %g = f32[2,64,32] slice(f32[2,64,64] %x), slice={[0:2], [0:64], [32:64]}
  %s = f32[2,64,32] logistic(f32[2,64,32] %g)
  %h = f32[2,64,32] multiply(f32[2,64,32] %a, f32[2,64,32] %s)
  ROOT %c = f32[2,64,32] convolution(f32[2,64,32] %h, f32[31,1,32] %w), window={size=31 pad=15_15}, dim_labels=b0f_0io->b0f, feature_group_count=32
}
)";
  std::unique_ptr<HloModule> m = FuseAndCheck(kGluDepthwise, PlanOptions());
  // The convolution is a kernel of its own reading the GLU's kernel (a fusion) from memory.
  const HloInstruction* root = m->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kConvolution) << m->ToString();
  ASSERT_EQ(root->operand(0)->opcode(), HloOpcode::kFusion) << m->ToString();
  EXPECT_EQ(Count(*root->operand(0)->fused_computation(), HloOpcode::kLogistic), 1);
}

TEST(KernelFusion, CostlyOperandOfAMinorTransposeIsComputedInItsOwnOrder) {
  // Inlined, the sigmoid would be generated under the transpose's strided reads (a gather per
  // vector); computed into memory first, the transposing kernel only moves values.
  constexpr const char* kGatedTranspose = R"(HloModule gated_transpose
ENTRY %main (a: f32[32,16,64], b: f32[32,16,64]) -> f32[64,16,32] {
  %a = f32[32,16,64] parameter(0)
  %b = f32[32,16,64] parameter(1)
  %s = f32[32,16,64] logistic(f32[32,16,64] %a)
  %g = f32[32,16,64] multiply(f32[32,16,64] %s, f32[32,16,64] %b)
  ROOT %t = f32[64,16,32] transpose(f32[32,16,64] %g), dimensions={2,1,0}
}
)";
  std::unique_ptr<HloModule> m = FuseAndCheck(kGatedTranspose, PlanOptions());
  const HloInstruction* root = m->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kTranspose) << m->ToString();
  ASSERT_EQ(root->operand(0)->opcode(), HloOpcode::kFusion) << m->ToString();
  EXPECT_EQ(Count(*root->operand(0)->fused_computation(), HloOpcode::kLogistic), 1);
}

TEST(KernelFusion, OuterProductOfABroadcastCostlyValueStaysInline) {
  // Per-example gradients summed over a weight's columns: tanh's gradient is costly but only
  // broadcast into the outer products, one multiply per element. In memory they were a
  // [batch, 64, 256] array (23x slower); inline, the reduce reads them as generated.
  constexpr const char* kOuterSum = R"(HloModule outer_sum
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (g: f32[16,8], x: f32[16,32]) -> f32[16,32] {
  %g = f32[16,8] parameter(0)
  %x = f32[16,32] parameter(1)
  %t = f32[16,8] tanh(f32[16,8] %g)
  %b0 = f32[16,8,32] broadcast(f32[16,8] %t), dimensions={0,1}
  %b1 = f32[16,8,32] broadcast(f32[16,32] %x), dimensions={0,2}
  %m = f32[16,8,32] multiply(f32[16,8,32] %b0, f32[16,8,32] %b1)
  %tr = f32[16,32,8] transpose(f32[16,8,32] %m), dimensions={0,2,1}
  %zero = f32[] constant(0)
  ROOT %r = f32[16,32] reduce(f32[16,32,8] %tr, f32[] %zero), dimensions={2}, to_apply=%add
}
)";
  std::unique_ptr<HloModule> m = FuseAndCheck(kOuterSum, PlanOptions());
  const HloInstruction* root = m->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kFusion) << m->ToString();
  EXPECT_EQ(Count(*root->fused_computation(), HloOpcode::kMultiply), 1) << m->ToString();
  EXPECT_EQ(Count(*root->fused_computation(), HloOpcode::kReduce), 1) << m->ToString();
}

TEST(KernelFusion, ChainCutForDepthDoesNotRegenerateWhatLiesBehindTheCut) {
  // 1,000 instructions, each reading the previous value and one six back, a tanh every
  // fifth (benchmarks/compile_scaling.py's chain, with minimum for multiply so that values
  // stay finite). Too deep for one kernel, it is cut; each
  // kernel after a cut regenerated the chain behind it from the parameters: 943 tanh in the
  // fused computations for the chain's 199.
  std::string text =
      "HloModule chain\nENTRY %main (p0: f32[64], p1: f32[64]) -> f32[64] {\n"
      "  %p0 = f32[64] parameter(0)\n  %p1 = f32[64] parameter(1)\n";
  const char* ops[] = {"add", "minimum", "subtract", "maximum"};  // bounded values
  std::vector<std::string> names = {"p0", "p1"};
  for (int i = 0; i < 997; ++i) {
    const std::string a = names.back(), b = names[std::max<int>(0, names.size() - 7)];
    const std::string v = "v" + std::to_string(i);
    if (i % 5 == 4)
      text += "  %" + v + " = f32[64] tanh(f32[64] %" + a + ")\n";
    else
      text += "  %" + v + " = f32[64] " + ops[i % 4] + "(f32[64] %" + a + ", f32[64] %" + b + ")\n";
    names.push_back(v);
  }
  text += "  ROOT %out = f32[64] negate(f32[64] %" + names.back() + ")\n}\n";
  std::unique_ptr<HloModule> m = FuseAndCheck(text.c_str(), PlanOptions());
  int tanh = Count(*m->entry(), HloOpcode::kTanh);
  for (const HloInstruction* i : m->entry()->instructions())
    if (i->opcode() == HloOpcode::kFusion) tanh += Count(*i->fused_computation(), HloOpcode::kTanh);
  EXPECT_GE(tanh, 199);
  EXPECT_LE(tanh, 3 * 199) << "tanh generated " << tanh << " times for 199 in the chain";
}

TEST(KernelFusion, NothingToFuseIsUnchanged) {
  auto m = ParseHloModule(R"(HloModule one
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %n = f32[8] negate(f32[8] %x)
})",
                          "one");
  ASSERT_TRUE(m.ok());
  absl::StatusOr<bool> changed = KernelFusion(PlanOptions()).Run(**m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace kiln::kernel_plan
