// Identical kernels under other names share one compiled function; kernels that differ in
// a constant, a reducer or a comparison do not. Results are checked against the evaluator.
#include "plugins/cpu_llvm/kernel_signature.h"

#include <random>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

constexpr const char* kLayers = R"(HloModule layers
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%layer0 (p: f32[16,8]) -> f32[16] {
  %p = f32[16,8]{1,0} parameter(0)
  %c = f32[] constant(2)
  %cb = f32[16,8]{1,0} broadcast(%c), dimensions={}
  %m = f32[16,8]{1,0} multiply(%p, %cb)
  %z = f32[] constant(0)
  ROOT %r = f32[16]{0} reduce(%m, %z), dimensions={1}, to_apply=%add
}
%layer1 (q: f32[16,8]) -> f32[16] {
  %q = f32[16,8]{1,0} parameter(0)
  %two = f32[] constant(2)
  %tb = f32[16,8]{1,0} broadcast(%two), dimensions={}
  %prod = f32[16,8]{1,0} multiply(%q, %tb)
  %zero = f32[] constant(0)
  ROOT %sum = f32[16]{0} reduce(%prod, %zero), dimensions={1}, to_apply=%add
}
%other_constant (p: f32[16,8]) -> f32[16] {
  %p = f32[16,8]{1,0} parameter(0)
  %c = f32[] constant(3)
  %cb = f32[16,8]{1,0} broadcast(%c), dimensions={}
  %m = f32[16,8]{1,0} multiply(%p, %cb)
  %z = f32[] constant(0)
  ROOT %r = f32[16]{0} reduce(%m, %z), dimensions={1}, to_apply=%add
}
%other_reducer (p: f32[16,8]) -> f32[16] {
  %p = f32[16,8]{1,0} parameter(0)
  %c = f32[] constant(2)
  %cb = f32[16,8]{1,0} broadcast(%c), dimensions={}
  %m = f32[16,8]{1,0} multiply(%p, %cb)
  %z = f32[] constant(0)
  ROOT %r = f32[16]{0} reduce(%m, %z), dimensions={1}, to_apply=%max
}
%gt (p: f32[16,8], q: f32[16,8]) -> pred[16,8] {
  %p = f32[16,8]{1,0} parameter(0)
  %q = f32[16,8]{1,0} parameter(1)
  ROOT %c = pred[16,8]{1,0} compare(%p, %q), direction=GT
}
%lt (p: f32[16,8], q: f32[16,8]) -> pred[16,8] {
  %p = f32[16,8]{1,0} parameter(0)
  %q = f32[16,8]{1,0} parameter(1)
  ROOT %c = pred[16,8]{1,0} compare(%p, %q), direction=LT
}
ENTRY %main (x: f32[16,8], y: f32[16,8]) -> (f32[16], f32[16], f32[16], f32[16], pred[16,8], pred[16,8]) {
  %x = f32[16,8]{1,0} parameter(0)
  %y = f32[16,8]{1,0} parameter(1)
  %a = f32[16]{0} fusion(%x), kind=kInput, calls=%layer0
  %b = f32[16]{0} fusion(%y), kind=kInput, calls=%layer1
  %c = f32[16]{0} fusion(%x), kind=kInput, calls=%other_constant
  %d = f32[16]{0} fusion(%y), kind=kInput, calls=%other_reducer
  %g = pred[16,8]{1,0} fusion(%x, %y), kind=kLoop, calls=%gt
  %l = pred[16,8]{1,0} fusion(%x, %y), kind=kLoop, calls=%lt
  ROOT %t = (f32[16]{0}, f32[16]{0}, f32[16]{0}, f32[16]{0}, pred[16,8]{1,0}, pred[16,8]{1,0}) tuple(%a, %b, %c, %d, %g, %l)
})";

TEST(KernelSignature, IdenticalKernelsShareCodeOthersDoNot) {
  auto parsed = ParseHloModule(kLayers, "layers");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  CompileOptions opts;
  opts.cache_dir = "";
  opts.plan.merge_sibling_kernels = false;  // the six kernels as written (%g, %l are siblings)
  auto compiler = CpuCompiler::Create(opts);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  const Plan& plan = (*exe)->plan();
  ASSERT_EQ(plan.kernels.size(), 6u);
  std::vector<std::string> sig;
  for (const llvm_emit::KernelSpec& k : plan.kernels) sig.push_back(KernelSignature(k));
  EXPECT_EQ(sig[0], sig[1]);                            // layer0 and layer1: the same but for names
  for (int i : {2, 3}) EXPECT_NE(sig[0], sig[i]) << i;  // other constant, other reducer
  EXPECT_NE(sig[4], sig[5]);                            // GT vs LT
  EXPECT_EQ((*compiler)->stats().jit.shared_kernels, 1);

  std::mt19937 rng(9);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(codegen_testing::RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = (*exe)->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  codegen_testing::ExpectClose(*got, *want, "layers", "jit", 2e-4);
}

}  // namespace
}  // namespace kiln::cpu
