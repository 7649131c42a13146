// A reduce read under a broadcast inside another reduce (jnp.argmin: the minimum, then the
// first index holding it) is generated once per output element, before the second reduce's
// loop, also where the output loop is one merged loop whose index is divided back into
// dimensions ([64,8] outputs): the emitted kernel's loops nest two deep (output, reduce),
// where generating the minimum per element nested them three deep (the minimum's loop inside
// the index reduce's: 256 times the work, 4.2 s against 0.07 for [8192,8,256]). Values are
// the evaluator's.
#include <memory>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "plugins/cpu_llvm/text_module_test_util.h"
#include "plugins/llvm_emitter/codegen_test_util.h"
#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::cpu {
namespace {

// jnp.argmin(jnp.transpose(p, (2, 0, 1)), -1) of an f32[8,256,64] p, as JAX lowers it.
constexpr char kArgMin[] = R"(HloModule argmin
region_0.1 {
  reduce.4 = f32[] parameter(0)
  reduce.6 = f32[] parameter(2)
  lt.2 = pred[] compare(reduce.4, reduce.6), direction=LT
  ne.1 = pred[] compare(reduce.4, reduce.4), direction=NE
  or.2 = pred[] or(lt.2, ne.1)
  select_n.2 = f32[] select(or.2, reduce.4, reduce.6)
  eq.1 = pred[] compare(reduce.4, reduce.6), direction=EQ
  reduce.5 = s32[] parameter(1)
  reduce.7 = s32[] parameter(3)
  lt.3 = pred[] compare(reduce.5, reduce.7), direction=LT
  and.1 = pred[] and(eq.1, lt.3)
  or.3 = pred[] or(or.2, and.1)
  select_n.3 = s32[] select(or.3, reduce.5, reduce.7)
  ROOT tuple.1 = (f32[], s32[]) tuple(select_n.2, select_n.3)
}
ENTRY main.3 {
  p.1 = f32[8,256,64]{2,1,0} parameter(0)
  transpose.1 = f32[64,8,256]{0,2,1} transpose(p.1), dimensions={2,0,1}
  iota.2 = s32[256]{0} iota(), iota_dimension=0
  iota.3 = s32[64,8,256]{2,1,0} broadcast(iota.2), dimensions={2}
  constant.3 = f32[] constant(inf)
  constant.2 = s32[] constant(0)
  reduce.11 = (f32[64,8]{1,0}, s32[64,8]{1,0}) reduce(transpose.1, iota.3, constant.3, constant.2), dimensions={2}, to_apply=region_0.1
  ROOT reduce.13 = s32[64,8]{1,0} get-tuple-element(reduce.11), index=1
}
)";

// The deepest loop nesting of the kernels `c` plans, as emitted (before LLVM's passes).
int DeepestLoopNest(const testing::CompiledText& c) {
  int deepest = 0;
  for (const llvm_emit::KernelSpec& spec : c.exe->plan().kernels) {
    llvm::LLVMContext ctx;
    llvm::Module module("k", ctx);
    const absl::Status emitted = llvm_emit::EmitKernel(spec, module);
    EXPECT_TRUE(emitted.ok()) << emitted;
    for (llvm::Function& f : module) {
      if (f.isDeclaration()) continue;
      llvm::DominatorTree dt(f);
      llvm::LoopInfo loops(dt);
      for (llvm::BasicBlock& b : f) deepest = std::max<int>(deepest, loops.getLoopDepth(&b));
    }
  }
  return deepest;
}

TEST(HoistedReduction, ArgMinGeneratesItsMinimumOncePerOutputElement) {
  for (int threads : {1, 2}) {
    CompileOptions opts;
    opts.threads = threads;
    const testing::CompiledText c = testing::CompileText(kArgMin, opts);
    ASSERT_NE(c.exe, nullptr);
    EXPECT_EQ(DeepestLoopNest(c), 2);
    codegen_testing::RandomArgs args = codegen_testing::RandomArguments(*c.module, 11);
    HloEvaluator evaluator;
    auto want = evaluator.Evaluate(*c.module, args.values);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = c.exe->Run(args.values);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->shape().dimensions(), want->shape().dimensions());
    for (int64_t i = 0; i < want->element_count(); ++i)
      ASSERT_EQ(got->GetAsDouble(i), want->GetAsDouble(i)) << i;
  }
}

// jnp.argmax(x, 0) of a u8[255,9] x: 9 outputs, each a reduce down 255 rows. The output loop
// holding that reduce's loop stays a loop: unrolled whole, it was 9 copies of the reduce's
// vector loop (4171 instructions, 162 ms of LLVM's optimization).
TEST(HoistedReduction, AnOutputLoopHoldingALongReduceStaysALoop) {
  const std::string text = R"(HloModule argmax
region_0.1 {
  reduce.4 = u8[] parameter(0)
  reduce.6 = u8[] parameter(2)
  gt.1 = pred[] compare(reduce.4, reduce.6), direction=GT
  select_n.2 = u8[] select(gt.1, reduce.4, reduce.6)
  eq.1 = pred[] compare(reduce.4, reduce.6), direction=EQ
  reduce.5 = s32[] parameter(1)
  reduce.7 = s32[] parameter(3)
  lt.1 = pred[] compare(reduce.5, reduce.7), direction=LT
  and.1 = pred[] and(eq.1, lt.1)
  or.1 = pred[] or(gt.1, and.1)
  select_n.3 = s32[] select(or.1, reduce.5, reduce.7)
  ROOT tuple.1 = (u8[], s32[]) tuple(select_n.2, select_n.3)
}
ENTRY main {
  x = u8[255,9]{1,0} parameter(0)
  iota.2 = s32[255]{0} iota(), iota_dimension=0
  iota.3 = s32[255,9]{1,0} broadcast(iota.2), dimensions={0}
  constant.5 = u8[] constant(0)
  constant.4 = s32[] constant(0)
  reduce.11 = (u8[9]{0}, s32[9]{0}) reduce(x, iota.3, constant.5, constant.4), dimensions={0}, to_apply=region_0.1
  ROOT reduce.13 = s32[9]{0} get-tuple-element(reduce.11), index=1
}
)";
  for (int threads : {1, 2}) {
    const std::string ir = testing::CompareTextWithEvaluator(text, threads, 0);
    size_t vector_loops = 0;
    for (size_t at = ir.find("\nvector.body"); at != std::string::npos;
         at = ir.find("\nvector.body", at + 1))
      ++vector_loops;
    EXPECT_LE(vector_loops, 1u) << ir.substr(0, 4000);
  }
}

}  // namespace
}  // namespace kiln::cpu
