// The new pass manager's default pipelines with the vectorizers the options ask for, and the
// legacy code generator for object files.
#include "plugins/cpu_llvm/llvm_pipeline.h"

#include <cstdlib>

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"

namespace kiln::cpu {

void OptimizeModule(llvm::Module& m, llvm::TargetMachine& tm, const JitOptions& options,
                    bool use_libmvec) {
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = options.vectorize;
  pto.SLPVectorization = options.vectorize;
  pto.LoopInterleaving = options.vectorize;
  // The default unrollers are replaced (below) by ones that unroll loops whole but never in
  // part or by a run-time count: the partial and run-time unrolling the target asks for
  // multiplied the code of vectorized kernels (a transformer layer's 21 kernels: 21k lines of
  // IR, a second of optimization and code generation) for no measured speed.
  pto.LoopUnrolling = false;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerLateLoopOptimizationsEPCallback(
      [](llvm::LoopPassManager& lpm, llvm::OptimizationLevel level) {
        lpm.addPass(llvm::LoopFullUnrollPass(level.getSpeedupLevel()));
      });
  pb.registerOptimizerLastEPCallback(
      [](llvm::ModulePassManager& mpm, llvm::OptimizationLevel level) {
        llvm::FunctionPassManager fpm;
        fpm.addPass(llvm::LoopUnrollPass(
            llvm::LoopUnrollOptions(level.getSpeedupLevel()).setPartial(false).setRuntime(false)));
        fpm.addPass(llvm::InstCombinePass());
        fpm.addPass(llvm::SimplifyCFGPass());
        mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
      });
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  if (use_libmvec)
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                            tm.getTargetTriple());
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
}

std::string PreferredVectorWidth(const std::string& features) {
  if (const char* env = std::getenv("KILN_CPU_VECTOR_WIDTH")) {
    const std::string w = env;
    if (w == "128" || w == "256" || w == "512") return w;
  }
  return features.find("+avx512f") != std::string::npos ? "512" : "";
}

void SetTargetAttributes(llvm::Module& m, const std::string& cpu, const std::string& features,
                         const std::string& vector_width) {
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", cpu);
    if (!features.empty()) f.addFnAttr("target-features", features);
    if (!vector_width.empty()) f.addFnAttr("prefer-vector-width", vector_width);
  }
}

absl::StatusOr<std::string> EmitObjectFile(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
    return absl::InternalError("cpu-llvm: the target cannot emit object files");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace kiln::cpu
