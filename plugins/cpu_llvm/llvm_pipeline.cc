// The new pass manager's default pipelines with the vectorizers the options ask for, and the
// legacy code generator for object files.
#include "plugins/cpu_llvm/llvm_pipeline.h"

#include <cstdlib>

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::cpu {

void OptimizeModule(llvm::Module& m, llvm::TargetMachine& tm, const JitOptions& options,
                    bool use_libmvec) {
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = options.vectorize;
  pto.SLPVectorization = options.vectorize;
  pto.LoopInterleaving = options.vectorize;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, pto);
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
