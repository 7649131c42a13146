// ORC LLJIT set-up, the optimization pipeline and symbol lookup for CPU kernels.
#include "plugins/cpu_llvm/jit.h"

#include <atomic>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace kiln::cpu {

namespace {

std::string ToString(llvm::Error err) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << err;
  return os.str();
}

// glibc's vector math library, loaded into the process so the JIT can resolve the vector
// variants (e.g. _ZGVdN8v_expf) the loop vectorizer calls. False when it is missing.
bool LoadLibmvec() {
  static const bool loaded = [] {
    std::string err;
    return !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1", &err);
  }();
  return loaded;
}

}  // namespace

struct CpuJit::Impl {
  JitOptions options;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string cpu, features;
  bool use_libmvec = false;
  std::mutex mu;
  int64_t next_module = 0;

  absl::Status Optimize(llvm::Module& m);
};

CpuJit::CpuJit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuJit::~CpuJit() = default;

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create(const JitOptions& options) {
  static std::once_flag init;
  std::call_once(init, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> jtmb =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return absl::InternalError("cpu-llvm: cannot detect the host CPU: " + ToString(jtmb.takeError()));
  // Target the CPU this process runs on, with all its features (what -march=native does).
  impl->cpu = llvm::sys::getHostCPUName().str();
  jtmb->setCPU(impl->cpu);
  llvm::SubtargetFeatures features;
  llvm::StringMap<bool> host_features;
  if (llvm::sys::getHostCPUFeatures(host_features)) {
    for (auto& f : host_features) features.AddFeature(f.first(), f.second);
  }
  jtmb->setFeatures(features.getString());
  impl->features = features.getString();
  jtmb->setCodeGenOptLevel(options.opt_level >= 3 ? llvm::CodeGenOpt::Aggressive
                           : options.opt_level == 0 ? llvm::CodeGenOpt::None
                                                    : llvm::CodeGenOpt::Default);
  auto tm = jtmb->createTargetMachine();
  if (!tm) return absl::InternalError("cpu-llvm: cannot create the target machine: " + ToString(tm.takeError()));
  impl->tm = std::move(*tm);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) return absl::InternalError("cpu-llvm: cannot create the JIT: " + ToString(jit.takeError()));
  impl->jit = std::move(*jit);
  // libm (tanhf, erff, ...), libmvec and the half-precision helpers come from the process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl->jit->getDataLayout().getGlobalPrefix());
  if (!gen) return absl::InternalError("cpu-llvm: cannot search the process for symbols: " + ToString(gen.takeError()));
  impl->jit->getMainJITDylib().addGenerator(std::move(*gen));
  impl->use_libmvec = options.vectorize && options.vector_math_library && LoadLibmvec();
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(impl)));
}

std::string CpuJit::TargetDescription() const {
  return absl::StrCat(impl_->cpu, impl_->use_libmvec ? " (libmvec)" : "");
}

absl::Status CpuJit::Impl::Optimize(llvm::Module& m) {
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = options.vectorize;
  pto.SLPVectorization = options.vectorize;
  pto.LoopInterleaving = options.vectorize;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(tm.get(), pto);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::TargetLibraryInfoImpl tlii(tm->getTargetTriple());
  if (use_libmvec)
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                            tm->getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
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
  mpm.run(m, mam);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<KernelFn>> CpuJit::Compile(
    const std::vector<llvm_emit::KernelSpec>& specs, std::string* ir_out) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  // Kernel names are made unique per compile: all modules share one JITDylib.
  std::string prefix = absl::StrCat("kiln_m", impl_->next_module++, "_");
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(prefix + "module", *ctx);
  module->setDataLayout(impl_->jit->getDataLayout());
  module->setTargetTriple(impl_->tm->getTargetTriple().str());
  std::vector<std::string> names;
  for (const llvm_emit::KernelSpec& spec : specs) {
    llvm_emit::KernelSpec renamed = spec;
    renamed.name = prefix + spec.name;
    absl::Status st = llvm_emit::EmitKernel(renamed, *module);
    if (!st.ok()) return st;
    names.push_back(renamed.name);
  }
  // Function attributes the backend reads for the host CPU (the vectorizers use TTI).
  for (llvm::Function& f : *module) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", impl_->cpu);
    f.addFnAttr("target-features", impl_->features);
  }
  absl::Status st = impl_->Optimize(*module);
  if (!st.ok()) return st;
  if (ir_out != nullptr) {
    llvm::raw_string_ostream os(*ir_out);
    module->print(os, nullptr);
  }
  llvm::Error err = impl_->jit->addIRModule(
      llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx)));
  if (err) return absl::InternalError("cpu-llvm: cannot add the module to the JIT: " + ToString(std::move(err)));
  std::vector<KernelFn> fns;
  for (const std::string& name : names) {
    auto sym = impl_->jit->lookup(name);
    if (!sym) return absl::InternalError(absl::StrCat("cpu-llvm: cannot compile kernel ", name, ": ", ToString(sym.takeError())));
    fns.push_back(sym->toPtr<KernelFn>());
  }
  return fns;
}

}  // namespace kiln::cpu
