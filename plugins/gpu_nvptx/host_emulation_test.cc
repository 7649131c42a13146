// The GPU kernel form checked for values without a GPU: the kernels the GPU path emits
// (KernelTarget::kGpu) are compiled for the host with the thread index read from a global
// and libdevice calls mapped to libm, "launched" by looping over the thread indices, and
// the module's result (run by the same RunPlan as the driver path) is compared with the
// HLO evaluator on the example and NumPy end-to-end modules.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/llvm_emitter/codegen_test_util.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "plugins/gpu_nvptx/gpu_executable.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"

namespace kiln::gpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomLiteral;

using PT = PrimitiveType;
using EmuFn = void (*)(void** buffers);

// Host JIT of GPU-form kernels; `thread` is the emulated global thread index.
struct Emulation {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<EmuFn> kernels;
  int32_t* thread = nullptr;
};

absl::StatusOr<Emulation> Compile(const std::vector<llvm_emit::KernelSpec>& specs) {
  static bool init = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)init;
  Emulation emu;
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) return absl::InternalError(llvm::toString(jit.takeError()));
  emu.jit = std::move(*jit);
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      emu.jit->getDataLayout().getGlobalPrefix());
  if (!gen) return absl::InternalError(llvm::toString(gen.takeError()));
  emu.jit->getMainJITDylib().addGenerator(std::move(*gen));

  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("emu", *ctx);
  m->setDataLayout(emu.jit->getDataLayout());
  m->setTargetTriple(emu.jit->getTargetTriple().str());
  std::vector<std::string> names;
  llvm::IRBuilder<> b(*ctx);
  auto* thread = new llvm::GlobalVariable(*m, b.getInt32Ty(), false,
                                          llvm::GlobalValue::ExternalLinkage, b.getInt32(0),
                                          "kiln_emu_thread");
  for (llvm_emit::KernelSpec spec : specs) {
    spec.target = llvm_emit::KernelTarget::kGpu;
    spec.name = PtxKernelName(spec.name);
    if (absl::Status s = llvm_emit::EmitKernel(spec, *m); !s.ok()) return s;
    llvm::Function* k = m->getFunction(spec.name);
    k->setCallingConv(llvm::CallingConv::C);
    // A wrapper taking the buffer table, so the test can call any arity.
    llvm::Type* ptr = b.getPtrTy();
    auto* w = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
                                     llvm::GlobalValue::ExternalLinkage, spec.name + "_emu", *m);
    b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", w));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < k->arg_size(); ++i)
      args.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, w->getArg(0), i)));
    b.CreateCall(k, args);
    b.CreateRetVoid();
    names.push_back(spec.name + "_emu");
  }
  // Thread index: blockIdx = global index, blockDim = 1, threadIdx = 0.
  std::vector<llvm::Function*> drop;
  for (llvm::Function& f : *m) {
    llvm::StringRef n = f.getName();
    if (!n.startswith("llvm.nvvm.read.ptx.sreg.") && !n.startswith("__nv_")) continue;
    if (n.startswith("__nv_")) {
      f.setName(n.drop_front(5));  // libdevice __nv_expf -> libm expf
      continue;
    }
    for (llvm::User* u : llvm::make_early_inc_range(f.users())) {
      auto* call = llvm::cast<llvm::CallInst>(u);
      b.SetInsertPoint(call);
      llvm::Value* v = n.endswith("ctaid.x") ? static_cast<llvm::Value*>(b.CreateLoad(b.getInt32Ty(), thread))
                       : n.endswith("ntid.x") ? b.getInt32(1)
                                              : b.getInt32(0);
      call->replaceAllUsesWith(v);
      call->eraseFromParent();
    }
    drop.push_back(&f);
  }
  for (llvm::Function* f : drop) f->eraseFromParent();
  if (auto err = emu.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    return absl::InternalError(llvm::toString(std::move(err)));
  for (const std::string& n : names) {
    auto sym = emu.jit->lookup(n);
    if (!sym) return absl::InternalError(llvm::toString(sym.takeError()));
    emu.kernels.push_back(sym->toPtr<EmuFn>());
  }
  auto t = emu.jit->lookup("kiln_emu_thread");
  if (!t) return absl::InternalError(llvm::toString(t.takeError()));
  emu.thread = t->toPtr<int32_t*>();
  return emu;
}



TEST(GpuKernelHostEmulation, ExampleAndE2eModulesMatchEvaluator) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  int checked = 0;
  for (const char* dir : {"/examples/hlo", "/tests/numpy_e2e/modules"}) {
    std::filesystem::path p = std::string(root ? root : ".") + dir;
    ASSERT_TRUE(std::filesystem::exists(p)) << p;
    for (const auto& entry : std::filesystem::directory_iterator(p)) {
      if (entry.path().extension() != ".hlo") continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      std::string name = entry.path().filename().string();
      SCOPED_TRACE(name);
      auto parsed = ParseHloModule(ss.str(), name);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      const HloModule& module = **parsed;
      std::mt19937 rng(1234);
      std::vector<Literal> args;
      std::vector<const Literal*> ptrs;
      for (const HloInstruction* param : module.entry()->parameters())
        args.push_back(RandomLiteral(param->shape(), rng));
      for (const Literal& a : args) ptrs.push_back(&a);
      HloEvaluator evaluator;
      auto want = evaluator.Evaluate(module, args);
      if (!want.ok()) continue;  // evaluator coverage is tested elsewhere
      cpu::Plan plan = cpu::MakePlan(module, GpuPlanOptions());
      auto emu = Compile(plan.kernels);
      ASSERT_TRUE(emu.ok()) << emu.status();
      int launches = 0;
      auto got = RunPlan(module, plan, ptrs,
                         [&](const cpu::Step& step, const std::vector<const Literal*>& inputs,
                             std::vector<Literal>& outputs) -> absl::Status {
                           std::vector<void*> bufs;
                           for (const Literal* in : inputs)
                             bufs.push_back(const_cast<uint8_t*>(in->untyped_data()));
                           int64_t threads = 0;
                           for (const HloInstruction* o : plan.kernels[step.kernel].outputs) {
                             outputs.emplace_back(o->shape());
                             bufs.push_back(outputs.back().untyped_data());
                             threads = std::max(threads, o->shape().num_elements());
                           }
                           // One thread past the end: the bounds checks must keep it out.
                           for (int64_t t = 0; t <= threads; ++t) {
                             *emu->thread = static_cast<int32_t>(t);
                             emu->kernels[step.kernel](bufs.data());
                           }
                           ++launches;
                           return absl::OkStatus();
                         });
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(*got, *want, name, "emulated gpu", 2e-4);
      if (!plan.kernels.empty()) {
        EXPECT_GT(launches, 0);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 3);
}

}  // namespace
}  // namespace kiln::gpu
