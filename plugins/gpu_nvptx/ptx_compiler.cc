// Emitted kernels -> optimized LLVM IR (libdevice linked in) -> PTX text via the NVPTX backend.
#include "plugins/gpu_nvptx/ptx_compiler.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/Scalar/InferAddressSpaces.h"
#include "llvm/Transforms/Vectorize/LoadStoreVectorizer.h"

namespace kiln::gpu {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void InitNvptxOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const PtxOptions& o) {
  InitNvptxOnce();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (target == nullptr) return absl::UnavailableError(absl::StrCat("NVPTX target: ", err));
  llvm::TargetOptions opts;
  // Instruction selection runs without DAG optimizations: LLVM 16's NVPTX DAG combiner
  // creates `mul i1` nodes it then cannot select (a fatal error that ends the process, seen on
  // masked-softmax reductions of the corpus), and ptxas optimizes the PTX itself anyway. The
  // IR is still optimized at o.opt_level before this.
  auto level = llvm::CodeGenOpt::None;
  // Empty feature string: the PTX ISA version is the backend's default for this sm.
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(kTriple, o.sm, "", opts, llvm::Reloc::PIC_, std::nullopt, level));
  if (tm == nullptr) return absl::InvalidArgumentError(absl::StrCat("no NVPTX target for ", o.sm));
  return tm;
}

bool UsesLibdevice(const llvm::Module& m) {
  for (const llvm::Function& f : m)
    if (f.isDeclaration() && f.getName().startswith("__nv_")) return true;
  return false;
}

absl::Status LinkLibdevice(llvm::Module& m, const std::string& path) {
  if (path.empty())
    return absl::FailedPreconditionError(
        "kernels call math functions but libdevice.10.bc was not found (set CUDA_HOME)");
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(path, diag, m.getContext());
  if (lib == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read libdevice ", path, ": ", diag.getMessage().str()));
  lib->setTargetTriple(m.getTargetTriple());
  lib->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded))
    return absl::InternalError(absl::StrCat("linking libdevice ", path, " failed"));
  return absl::OkStatus();
}

// LLVM 16's NVPTX instruction selection miscompiles an integer select whose condition tests
// one bit and one of whose values is 0: the DAG turns `select (x & 2) != 0, 3, 0` into
// `(x << 62 >>s 63) & 3` and selects that as an unsigned bit-field extract of the shifted value
// (`bfe.u64 d, x<<62, 63, 2`), 0 or 1 instead of 0 or 3 (a batched dot read the wrong rows on
// an H200). Written as arithmetic, F + zext(c) * (T - F), no such select reaches the DAG.
void SelectsAsArithmetic(llvm::Module& module) {
  std::vector<llvm::SelectInst*> selects;
  for (llvm::Function& f : module)
    for (llvm::Instruction& i : llvm::instructions(f))
      if (auto* s = llvm::dyn_cast<llvm::SelectInst>(&i);
          s && s->getType()->isIntegerTy() && !s->getType()->isIntegerTy(1)) {
        auto* t = llvm::dyn_cast<llvm::ConstantInt>(s->getTrueValue());
        auto* e = llvm::dyn_cast<llvm::ConstantInt>(s->getFalseValue());
        if ((t && t->isZero()) || (e && e->isZero())) selects.push_back(s);
      }
  for (llvm::SelectInst* s : selects) {
    llvm::IRBuilder<> b(s);
    llvm::Value* c = b.CreateZExt(s->getCondition(), s->getType());
    llvm::Value* t = s->getTrueValue();
    llvm::Value* e = s->getFalseValue();
    s->replaceAllUsesWith(b.CreateAdd(e, b.CreateMul(c, b.CreateSub(t, e))));
    s->eraseFromParent();
  }
}

}  // namespace

std::string PtxKernelName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '$';
    if (!ok) c = '_';
  }
  // Concatenation, not out.insert(0, ...): GCC 12 warns (-Wrestrict) about its inlined copy.
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "_" + out;
  return out;
}

std::string FindLibdevice() {
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') roots.push_back(v);
  roots.push_back("/usr/local/cuda");
  roots.push_back("/usr/lib/cuda");
  for (const std::string& r : roots) {
    std::filesystem::path p = std::filesystem::path(r) / "nvvm" / "libdevice" / "libdevice.10.bc";
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

absl::StatusOr<std::string> CompileToPtx(std::vector<llvm_emit::KernelSpec> specs,
                                         const PtxOptions& options) {
  auto tm = MakeTargetMachine(options);
  if (!tm.ok()) return tm.status();
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>("kiln_gpu", ctx);
  module->setTargetTriple(kTriple);
  module->setDataLayout((*tm)->createDataLayout());
  std::set<std::string> kernels;
  for (llvm_emit::KernelSpec& spec : specs) {
    spec.target = llvm_emit::KernelTarget::kGpu;
    spec.name = PtxKernelName(spec.name);
    if (kernels.count(spec.name))
      return absl::InvalidArgumentError(absl::StrCat("two kernels are both named ", spec.name));
    if (absl::Status s = llvm_emit::EmitKernel(spec, *module); !s.ok()) return s;
    kernels.insert(spec.name);
  }
  if (UsesLibdevice(*module)) {
    // libdevice reads this flag through __nvvm_reflect: keep denormals (no flush to zero).
    module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
    if (absl::Status s =
            LinkLibdevice(*module, options.libdevice.empty() ? FindLibdevice() : options.libdevice);
        !s.ok())
      return s;
    // Only the kernel entries (a kernel may have several, e.g. a split reduction's combine
    // stage) are entry points: everything libdevice brought in may be inlined and dropped.
    for (llvm::Function& f : *module)
      if (!f.isDeclaration() && f.getCallingConv() != llvm::CallingConv::PTX_Kernel)
        f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }

  // IR optimization with the target's own pass callbacks (NVVMReflect among them).
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // No vectorization: each thread computes one element. No unrolling either (smaller
  // kernels; ptxas unrolls where it pays).
  llvm::PipelineTuningOptions pto;
  pto.LoopUnrolling = false;
  pto.LoopVectorization = false;
  pto.SLPVectorization = false;
  llvm::PassBuilder pb(tm->get(), pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = options.opt_level >= 3   ? llvm::OptimizationLevel::O3
                                  : options.opt_level == 2 ? llvm::OptimizationLevel::O2
                                  : options.opt_level == 1 ? llvm::OptimizationLevel::O1
                                                           : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  // Generic pointers that provably point to global or shared memory become ld.global /
  // ld.shared (the codegen, which runs at CodeGenOpt::None below, does not infer them).
  // Before the optimizer, once the bodies are inlined into the entries: later, instcombine
  // would have folded the entries' global round trips away.
  auto infer_address_spaces = [&] {
    llvm::FunctionPassManager fpm;
    fpm.addPass(llvm::InferAddressSpacesPass());
    llvm::ModulePassManager m;
    m.addPass(llvm::AlwaysInlinerPass());
    m.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
    m.run(*module, mam);
  };
  if (level != llvm::OptimizationLevel::O0) infer_address_spaces();
  mpm.run(*module, mam);
  if (level != llvm::OptimizationLevel::O0) {
    infer_address_spaces();  // shared memory
    // Adjacent loads and stores of a thread (vector_width elements) become vector accesses;
    // the codegen below runs at CodeGenOpt::None and would not do it.
    llvm::FunctionPassManager fpm;
    fpm.addPass(llvm::LoadStoreVectorizerPass());
    llvm::ModulePassManager m;
    m.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
    m.run(*module, mam);
  }
  SelectsAsArithmetic(*module);
  // KILN_GPU_DUMP_IR=1 prints the optimized IR that goes to the NVPTX backend (debugging).
  if (std::getenv("KILN_GPU_DUMP_IR") != nullptr) module->print(llvm::errs(), nullptr);

  llvm::SmallString<0> ptx;
  {
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager pm;
    if ((*tm)->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile))
      return absl::InternalError("the NVPTX target cannot emit PTX");
    pm.run(*module);
  }
  return std::string(ptx.str());
}

}  // namespace kiln::gpu
