// The new pass manager's default pipelines with the vectorizers the options ask for, and the
// legacy code generator for object files.
#include "plugins/cpu_llvm/llvm_pipeline.h"

#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"

namespace kiln::cpu {
namespace {

// glibc's libmvec has more f64 functions than LLVM 16's table of it (sin, cos, exp, log, pow at
// 2 and 4 lanes): without these, an f64 tanh, erf, expm1 or log1p in a vectorized loop was a
// libm call per element (an f64 MLP's tanh layer, 256x1024: 2 ms), and f64 exp at 8 lanes
// under AVX-512 was split into scalar calls. Each name at 2 (SSE), 4 (AVX2) and 8 (AVX-512)
// lanes, the wider ones only where the target has their instructions; libmvec's functions
// are accurate to 4 ulp (glibc's manual).
//
// The table for a target with (or without) AVX2 and AVX-512, built once: VecDesc holds
// StringRefs, so the names live in a deque that never moves them.
const std::vector<llvm::VecDesc>& LibmvecDoubleFunctions(bool avx2, bool avx512) {
  static const std::vector<std::string> kUnary = {
      "acos",  "acosh", "asin",  "asinh", "atan",  "atanh", "cbrt", "cosh", "erf", "erfc",
      "exp10", "exp2",  "expm1", "log10", "log1p", "log2",  "sinh", "tan",  "tanh"};
  static const std::vector<std::string> kBinary = {"atan2", "hypot"};
  // In LLVM's table at 2 and 4 lanes only; with the intrinsics the emitter calls for them.
  static const std::vector<std::string> kWidened = {"exp", "log", "sin", "cos", "pow"};
  static std::mutex mu;
  static std::deque<std::string> names;
  static std::map<std::pair<bool, bool>, std::vector<llvm::VecDesc>> tables;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = tables.try_emplace({avx2, avx512});
  if (!fresh) return it->second;
  auto add = [&](const std::string& scalar, const std::string& fn, char isa, int lanes) {
    const char* params = fn == "pow" || fn == "atan2" || fn == "hypot" ? "vv" : "v";
    const std::string& s = names.emplace_back(scalar);
    const std::string& v = names.emplace_back(std::string("_ZGV") + isa + "N" +
                                              std::to_string(lanes) + params + "_" + fn);
    it->second.push_back({s, v, llvm::ElementCount::getFixed(lanes)});
  };
  for (const std::vector<std::string>* list : {&kUnary, &kBinary})
    for (const std::string& fn : *list) {
      add(fn, fn, 'b', 2);
      if (avx2) add(fn, fn, 'd', 4);
      if (avx512) add(fn, fn, 'e', 8);
    }
  if (avx512)
    for (const std::string& fn : kWidened) {
      add(fn, fn, 'e', 8);
      add("llvm." + fn + ".f64", fn, 'e', 8);
    }
  return it->second;
}

}  // namespace

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
  if (use_libmvec) {
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                            tm.getTargetTriple());
    const std::string features = tm.getTargetFeatureString().str();
    tlii.addVectorizableFunctions(
        LibmvecDoubleFunctions(features.find("+avx2") != std::string::npos,
                               features.find("+avx512f") != std::string::npos));
  }
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
