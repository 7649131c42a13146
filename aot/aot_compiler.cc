// Ahead-of-time compilation: cpu-llvm's planning for one thread, the checks that refuse what
// an artifact cannot hold, the target machine, and the object and header around the kernels
// and NAME_run (driver_emitter.h).
#include "aot/aot_compiler.h"

#include <cctype>
#include <limits>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_header.h"
#include "aot/driver_emitter.h"
#include "hlo/computation.h"
#include "hlo/instruction.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/SubtargetFeature.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/kernel_signature.h"
#include "plugins/cpu_llvm/llvm_pipeline.h"
#include "plugins/kernel_plan/arena_layout.h"
#include "plugins/kernel_plan/kernel_fusion.h"

// The bytes of libkiln_aot_runtime.a (aot/embed_file.py, at build time).
extern const unsigned char kAotRuntimeArchive[];
extern const size_t kAotRuntimeArchive_size;

namespace kiln::cpu::aot {

namespace {

// Dots with batch*m*n*k at least this are emitted as GEMM loop nests (GemmFunction) instead of
// one reduction per output element: the elemental form reads B down its columns.
constexpr int64_t kEmittedGemmMinMnk = int64_t{1} << 12;

// The first step of one computation AOT cannot compile.
absl::Status CheckPlanSteps(const kernel_plan::ComputationPlan& plan, bool entry) {
  for (const kernel_plan::Step& step : plan.steps) {
    const HloInstruction& h = *step.instr;
    auto refuse = [&](std::string_view why) {
      return absl::UnimplementedError(absl::StrCat("cannot compile %", h.name(), " (",
                                                   std::string(HloOpcodeString(h.opcode())),
                                                   ") ahead of time: ", std::string(why)));
    };
    switch (step.kind) {
      case kernel_plan::Disposition::kEvaluator:
        return refuse(absl::StrCat("the code generator cannot emit it (", step.why,
                                   "), and an AOT artifact has no evaluator to fall back on"));
      case kernel_plan::Disposition::kLibrary:
        if (step.conv || !step.gemm) return refuse("a library call the artifact does not link");
        break;
      case kernel_plan::Disposition::kBookkeeping:
        if (entry && h.opcode() == HloOpcode::kParameter && !h.shape().IsArray())
          return refuse("AOT takes array parameters only (pass the leaves of a tuple one by one)");
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

// The first step AOT cannot compile, in the entry or a computation control flow runs, as an
// error naming it.
absl::Status CheckSteps(const kernel_plan::Plan& plan) {
  if (absl::Status st = CheckPlanSteps(plan, /*entry=*/true); !st.ok()) return st;
  for (const kernel_plan::ComputationPlan& c : plan.called) {
    if (absl::Status st = CheckPlanSteps(c, /*entry=*/false); !st.ok()) return st;
  }
  for (const Shape& leaf : FlattenShape(plan.computation->root()->shape())) {
    if (!leaf.IsArray())
      return absl::UnimplementedError(
          absl::StrCat("cannot compile the entry's result ", plan.computation->root()->name(),
                       " ahead of time: it holds a ", leaf.ToString(false), ", not only arrays"));
  }
  return absl::OkStatus();
}

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const AotOptions& o, std::string* error,
                                                       std::string* description) {
  static std::once_flag init;
  std::call_once(init, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
  const std::string host = llvm::sys::getProcessTriple();
  const std::string triple = o.triple.empty() ? host : llvm::Triple::normalize(o.triple);
  const bool is_host = llvm::Triple(triple).getArch() == llvm::Triple(host).getArch();
  std::string cpu = o.cpu, features = o.features;
  if (cpu.empty()) cpu = is_host ? llvm::sys::getHostCPUName().str() : "generic";
  if (features.empty() && is_host && cpu == llvm::sys::getHostCPUName().str()) {
    llvm::SubtargetFeatures f;
    llvm::StringMap<bool> host_features;
    if (llvm::sys::getHostCPUFeatures(host_features))
      for (auto& e : host_features) f.AddFeature(e.first(), e.second);
    features = f.getString();
  }
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, *error);
  if (target == nullptr) return nullptr;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      o.opt_level >= 3 ? llvm::CodeGenOpt::Aggressive : llvm::CodeGenOpt::Default));
  if (tm == nullptr) *error = absl::StrCat("LLVM cannot create a target machine for ", triple);
  *description = absl::StrCat(triple, " ", cpu);
  return tm;
}

}  // namespace

std::string_view AotRuntimeArchive() {
  return std::string_view(reinterpret_cast<const char*>(kAotRuntimeArchive),
                          kAotRuntimeArchive_size);
}

bool IsValidAotName(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

absl::StatusOr<AotArtifact> CompileAot(const HloModule& module, const AotOptions& options) {
  if (!IsValidAotName(options.name))
    return absl::InvalidArgumentError(absl::StrCat(
        "the name '", options.name, "' is not a C identifier ([A-Za-z][A-Za-z0-9_]*)"));
  if (module.entry() == nullptr)
    return absl::InvalidArgumentError("the module has no entry computation");
  // cpu-llvm's planning; for one thread (not --parallel) without partitioned loops or split
  // reductions. Dots and convolutions are emitted unless a GEMM library is linked.
  kernel_plan::PlanOptions po = CpuPlanOptions();
  po.library_call = nullptr;  // an artifact links a BLAS at most, not LAPACK
  if (!options.parallel) po.parallel_min_work = std::numeric_limits<int64_t>::max();
  po.library_convolutions = false;
  po.s8_gemm = false;      // the artifact's GEMM calls are f32/f64 ones
  po.native_sort = false;  // nor does it link the sort
  // Large plain dots are GEMM steps either way: OpenBLAS calls, or the loop nest GemmFunction
  // emits (planned as a device GEMM library, which needs no host BLAS in this build).
  if (options.gemm != AotGemm::kOpenBlas) {
    // f32 only: f64 dots stay generated kernels (oneDNN has no dgemm).
    po.blas_min_mnk = std::numeric_limits<int64_t>::max();
    po.device_gemm_min_mnk =
        options.gemm == AotGemm::kEmitted ? kEmittedGemmMinMnk : CpuPlanOptions().blas_min_mnk;
  }
  absl::StatusOr<kernel_plan::Plan> made = kernel_plan::MakeFusedPlan(module, po);
  if (!made.ok()) return made.status();
  const kernel_plan::Plan& plan = *made;
  const HloModule& planned = plan.fused_module ? *plan.fused_module : module;
  if (absl::Status st = CheckSteps(plan); !st.ok()) return st;
  const kernel_plan::ArenaLayout arena = kernel_plan::LayOutArena(planned, plan);

  std::string error;
  AotArtifact out;
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(options, &error, &out.target);
  if (tm == nullptr) return absl::InvalidArgumentError(absl::StrCat("AOT target: ", error));
  out.host_architecture =
      tm->getTargetTriple().getArch() == llvm::Triple(llvm::sys::getProcessTriple()).getArch();
  if (options.parallel && !out.host_architecture)
    return absl::InvalidArgumentError(
        "--parallel artifacts need the thread pool runtime, which is built for this host's "
        "architecture only");
  llvm::LLVMContext ctx;
  llvm::Module m(options.name, ctx);
  m.setDataLayout(tm->createDataLayout());
  m.setTargetTriple(tm->getTargetTriple().str());
  // Kernels: identical ones (the same fusion layer after layer) are emitted once.
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, std::string> by_signature;
  for (const llvm_emit::KernelSpec& spec : plan.kernels) {
    auto [it, inserted] = by_signature.emplace(KernelSignature(spec), spec.name);
    names.push_back(it->second);
    if (!inserted) continue;
    if (absl::Status st = llvm_emit::EmitKernel(spec, m); !st.ok()) return st;
    ++out.kernels;
  }
  DriverEmitter driver(plan, arena, options, m);
  if (absl::Status st = driver.Emit(names, out); !st.ok()) return st;
  // Only NAME_run and NAME_run_simple are exported: two artifacts link into one program.
  const std::string cpu = std::string(tm->getTargetCPU()),
                    features = std::string(tm->getTargetFeatureString());
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    if (f.getName() != options.name + "_run" && f.getName() != options.name + "_run_simple")
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  SetTargetAttributes(m, cpu, features, PreferredVectorWidth(features));
  std::string broken;
  llvm::raw_string_ostream os(broken);
  if (llvm::verifyModule(m, &os))
    return absl::InternalError(absl::StrCat("AOT produced invalid LLVM IR: ", os.str()));
  JitOptions jit;
  jit.opt_level = options.opt_level;
  // glibc's vector math library is part of libm on x86-64 (-lm links it).
  const bool libmvec = tm->getTargetTriple().getArch() == llvm::Triple::x86_64;
  OptimizeModule(m, *tm, jit, libmvec);
  absl::StatusOr<std::string> object = EmitObjectFile(m, *tm);
  if (!object.ok()) return object.status();
  out.object = *std::move(object);
  for (int i = 0; i < module.entry()->num_parameters(); ++i) {
    const HloInstruction* p = module.entry()->parameter(i);
    out.args.push_back(AotBuffer{p->name(), p->shape()});
  }
  std::vector<Shape> leaves = FlattenShape(module.entry()->root()->shape());
  for (size_t j = 0; j < leaves.size(); ++j)
    out.results.push_back(AotBuffer{absl::StrCat("result", j), leaves[j]});
  out.parallel = options.parallel;
  out.header = MakeAotHeader(module.name(), options.name, out);
  return out;
}

}  // namespace kiln::cpu::aot
