// ORC LLJIT set-up, the optimization pipeline, object code generation (in parallel groups,
// optionally cached on disk) and symbol lookup for CPU kernels.
#include "plugins/cpu_llvm/jit.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "hlo/instruction.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "plugins/cpu_llvm/kernel_signature.h"
#include "plugins/cpu_llvm/llvm_pipeline.h"
#include "plugins/cpu_llvm/loop_driver_emitter.h"

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

using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Instructions generated for a kernel (what its compile time grows with), to balance groups.
int64_t KernelSize(const llvm_emit::KernelSpec& spec) {
  int64_t n = 0;
  llvm_emit::AnyInCone(spec, [&](const HloInstruction&) {
    ++n;
    return false;  // count them all
  });
  return n;
}

// A cache entry holds the objects of all groups: a count, then each as length + bytes.
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
std::string PackObjectList(const std::vector<std::string>& objects) {
  std::string out;
  PutU64(out, objects.size());
  for (const std::string& o : objects) {
    PutU64(out, o.size());
    out += o;
  }
  return out;
}
// Nullopt when `data` is not a well-formed pack (the cache checksums entries, so this only
// guards against an entry written by an incompatible build under the same key).
std::optional<std::vector<std::string>> UnpackObjectList(std::string_view data) {
  size_t pos = 0;
  auto u64 = [&](uint64_t& v) {
    if (data.size() - pos < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(data[pos + i])} << (8 * i);
    pos += 8;
    return true;
  };
  uint64_t count = 0;
  if (!u64(count) || count > data.size()) return std::nullopt;
  std::vector<std::string> objects;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t n = 0;
    if (!u64(n) || data.size() - pos < n) return std::nullopt;
    objects.emplace_back(data.substr(pos, n));
    pos += n;
  }
  if (pos != data.size()) return std::nullopt;
  return objects;
}

// One group of kernels compiled to an object on one thread.
struct GroupResult {
  absl::Status status;
  std::string object, ir;
  double emit_ms = 0, optimize_ms = 0, codegen_ms = 0;
};

}  // namespace

std::string PackObjects(const std::vector<std::string>& objects) { return PackObjectList(objects); }
std::optional<std::vector<std::string>> UnpackObjects(std::string_view data) {
  return UnpackObjectList(data);
}

struct CpuJit::Impl {
  JitOptions options;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb;
  // One target machine per parallel group (a TargetMachine is not shared across threads).
  std::vector<std::unique_ptr<llvm::TargetMachine>> tms;
  std::string cpu, features;
  std::string vector_width;  // decided once: the cache key and the code agree
  bool use_libmvec = false;
  std::mutex mu;
  int64_t next_module = 0;
  JitStats stats;

  // The kernels `specs` and the loop drivers `drivers` (which call kernels by `names`).
  GroupResult CompileGroup(const std::vector<const llvm_emit::KernelSpec*>& specs,
                           const std::vector<const LoopDriverSpec*>& drivers,
                           const std::vector<std::string>& names, llvm::TargetMachine& tm,
                           bool want_ir);
  // Objects (from the cache or compiled) loaded into a fresh JITDylib; the entry points of
  // the functions named `names`.
  absl::StatusOr<std::vector<KernelFn>> Load(const std::vector<std::string>& objects,
                                             const std::vector<std::string>& names,
                                             const std::vector<std::string>& drivers = {},
                                             std::vector<LoopDriverFn>* drivers_out = nullptr);
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
  if (!jtmb)
    return absl::InternalError("cpu-llvm: cannot detect the host CPU: " +
                               ToString(jtmb.takeError()));
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
  impl->vector_width = PreferredVectorWidth(impl->features);
  jtmb->setCodeGenOptLevel(options.opt_level >= 3   ? llvm::CodeGenOpt::Aggressive
                           : options.opt_level == 0 ? llvm::CodeGenOpt::None
                                                    : llvm::CodeGenOpt::Default);
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return absl::InternalError("cpu-llvm: cannot create the target machine: " +
                               ToString(tm.takeError()));
  impl->tms.push_back(std::move(*tm));
  impl->jtmb = *jtmb;
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit)
    return absl::InternalError("cpu-llvm: cannot create the JIT: " + ToString(jit.takeError()));
  impl->jit = std::move(*jit);
  // libm (tanhf, erff, ...), libmvec and the half-precision helpers come from the process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl->jit->getDataLayout().getGlobalPrefix());
  if (!gen)
    return absl::InternalError("cpu-llvm: cannot search the process for symbols: " +
                               ToString(gen.takeError()));
  impl->jit->getMainJITDylib().addGenerator(std::move(*gen));
  impl->use_libmvec = options.vectorize && options.vector_math_library && LoadLibmvec();
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(impl)));
}

std::string CpuJit::TargetDescription() const {
  return absl::StrCat(impl_->cpu, impl_->use_libmvec ? " (libmvec)" : "");
}

std::string CpuJit::CacheKey() const {
  const JitOptions& o = impl_->options;
  return absl::StrCat("llvm", LLVM_VERSION_STRING, ";", impl_->jit->getTargetTriple().str(), ";",
                      impl_->cpu, ";", impl_->features, ";vw", impl_->vector_width, ";O",
                      o.opt_level, ";vec", o.vectorize, ";libmvec", impl_->use_libmvec);
}

JitStats CpuJit::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

GroupResult CpuJit::Impl::CompileGroup(const std::vector<const llvm_emit::KernelSpec*>& specs,
                                       const std::vector<const LoopDriverSpec*>& drivers,
                                       const std::vector<std::string>& names,
                                       llvm::TargetMachine& tm, bool want_ir) {
  GroupResult r;
  Clock::time_point t0 = Clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("kiln_kernels", *ctx);
  module->setDataLayout(tm.createDataLayout());
  module->setTargetTriple(tm.getTargetTriple().str());
  for (const llvm_emit::KernelSpec* spec : specs) {
    r.status = llvm_emit::EmitKernel(*spec, *module);
    if (!r.status.ok()) return r;
  }
  for (const LoopDriverSpec* driver : drivers) {
    r.status = EmitLoopDriver(*driver, names, *module);
    if (!r.status.ok()) return r;
  }
  // Function attributes the backend reads for the host CPU (the vectorizers use TTI).
  SetTargetAttributes(*module, cpu, features, vector_width);
  Clock::time_point t1 = Clock::now();
  OptimizeModule(*module, tm, options, use_libmvec);
  Clock::time_point t2 = Clock::now();
  if (want_ir) {
    llvm::raw_string_ostream os(r.ir);
    module->print(os, nullptr);
  }
  absl::StatusOr<std::string> object = EmitObjectFile(*module, tm);
  if (!object.ok()) {
    r.status = object.status();
    return r;
  }
  r.object = *std::move(object);
  Clock::time_point t3 = Clock::now();
  r.emit_ms = Ms(t1 - t0);
  r.optimize_ms = Ms(t2 - t1);
  r.codegen_ms = Ms(t3 - t2);
  return r;
}

absl::StatusOr<std::vector<KernelFn>> CpuJit::Impl::Load(const std::vector<std::string>& objects,
                                                         const std::vector<std::string>& names,
                                                         const std::vector<std::string>& drivers,
                                                         std::vector<LoopDriverFn>* drivers_out) {
  Clock::time_point t0 = Clock::now();
  // A JITDylib per compile: kernel names only need to be unique within one module.
  std::string dylib = absl::StrCat("kiln_m", next_module++);
  auto jd = jit->createJITDylib(dylib);
  if (!jd)
    return absl::InternalError("cpu-llvm: cannot create a JITDylib: " + ToString(jd.takeError()));
  jd->addToLinkOrder(jit->getMainJITDylib());  // libm, libmvec, helpers from the process
  for (size_t i = 0; i < objects.size(); ++i) {
    llvm::Error err = jit->addObjectFile(
        *jd, llvm::MemoryBuffer::getMemBufferCopy(objects[i], absl::StrCat(dylib, "_", i)));
    if (err)
      return absl::InternalError("cpu-llvm: cannot load kernel object: " +
                                 ToString(std::move(err)));
  }
  std::vector<KernelFn> fns;
  for (const std::string& name : names) {
    auto sym = jit->lookup(*jd, name);
    if (!sym)
      return absl::InternalError(
          absl::StrCat("cpu-llvm: cannot load kernel ", name, ": ", ToString(sym.takeError())));
    fns.push_back(sym->toPtr<KernelFn>());
  }
  // A driver the objects lack (compiled where that loop's kernels ran on the pool) is null:
  // its loop is interpreted.
  if (drivers_out != nullptr) drivers_out->clear();
  for (const std::string& name : drivers) {
    auto sym = jit->lookup(*jd, name);
    LoopDriverFn fn = nullptr;
    if (sym)
      fn = sym->toPtr<LoopDriverFn>();
    else
      llvm::consumeError(sym.takeError());
    if (drivers_out != nullptr) drivers_out->push_back(fn);
  }
  stats.load_ms += Ms(Clock::now() - t0);
  return fns;
}

absl::StatusOr<std::vector<KernelFn>> CpuJit::Compile(
    const std::vector<llvm_emit::KernelSpec>& specs, const JitRequest& request) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  ++im.stats.compiles;
  if (specs.empty()) return std::vector<KernelFn>();
  const bool use_cache =
      request.cache != nullptr && !request.cache_key.empty() && request.ir_out == nullptr;
  // Identical kernels (the same fusion in every layer) are compiled once: each spec is
  // served by the function of the first spec with its signature.
  std::vector<const llvm_emit::KernelSpec*> unique;
  std::vector<std::string> names;
  std::vector<size_t> served;  // per spec: the index in `unique` of the kernel serving it
  {
    absl::flat_hash_map<std::string, size_t> first;
    for (const llvm_emit::KernelSpec& spec : specs) {
      auto [it, inserted] = first.emplace(KernelSignature(spec), unique.size());
      if (inserted)
        unique.push_back(&spec);
      else
        ++im.stats.shared_kernels;
      names.push_back(unique[it->second]->name);
      served.push_back(it->second);
    }
  }
  std::vector<const LoopDriverSpec*> drivers;
  if (request.drivers != nullptr)
    for (const LoopDriverSpec& d : *request.drivers) drivers.push_back(&d);
  std::vector<std::string> driver_names;
  for (const LoopDriverSpec* d : drivers) driver_names.push_back(d->name);
  auto load_all = [&](const std::vector<std::string>& objects) {
    return im.Load(objects, names, driver_names, request.drivers_out);
  };
  if (request.objects != nullptr) {
    absl::StatusOr<std::vector<KernelFn>> fns = load_all(*request.objects);
    if (fns.ok() && request.objects_out != nullptr) *request.objects_out = *request.objects;
    return fns;
  }
  if (use_cache) {
    if (std::optional<std::string> entry = request.cache->Load(request.cache_key)) {
      std::optional<std::vector<std::string>> objects = UnpackObjectList(*entry);
      absl::StatusOr<std::vector<KernelFn>> fns =
          objects ? load_all(*objects)
                  : absl::DataLossError("the entry does not hold kernel objects");
      if (fns.ok()) {
        ++im.stats.cache_loads;
        if (request.objects_out != nullptr) *request.objects_out = std::move(*objects);
        return fns;
      }
      fmt::print(stderr, "kiln: warning: cpu-llvm object cache {}: {}; recompiling\n",
                 request.cache->PathFor(request.cache_key), std::string(fns.status().message()));
    }
  }
  // Split the kernels into groups of about equal size, one LLVM module per thread.
  int groups = 1;
  if (request.pool != nullptr)
    groups = static_cast<int>(std::min<size_t>(request.pool->size(), unique.size()));
  groups = std::max(groups, 1);
  std::vector<std::vector<const llvm_emit::KernelSpec*>> members(groups);
  std::vector<int64_t> load(groups, 0);
  std::vector<size_t> order(unique.size());
  std::vector<int64_t> size(unique.size());
  for (size_t i = 0; i < unique.size(); ++i) {
    order[i] = i;
    size[i] = KernelSize(*unique[i]);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size[a] > size[b]; });
  // The kernels drivers call go in the first group, with the drivers.
  std::vector<bool> placed(unique.size(), false);
  for (const LoopDriverSpec* d : drivers)
    for (int k : d->schedule->Kernels()) {
      if (placed[served[k]]) continue;
      placed[served[k]] = true;
      members[0].push_back(unique[served[k]]);
      load[0] += size[served[k]];
    }
  for (size_t i : order) {
    if (placed[i]) continue;
    int g = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    members[g].push_back(unique[i]);
    load[g] += size[i];
  }
  while (static_cast<int>(im.tms.size()) < groups) {
    auto tm = im.jtmb->createTargetMachine();
    if (!tm)
      return absl::InternalError("cpu-llvm: cannot create a target machine: " +
                                 ToString(tm.takeError()));
    im.tms.push_back(std::move(*tm));
  }
  std::vector<GroupResult> results(groups);
  auto compile = [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g)
      results[g] =
          im.CompileGroup(members[g], g == 0 ? drivers : std::vector<const LoopDriverSpec*>(),
                          names, *im.tms[g], request.ir_out != nullptr);
  };
  if (groups > 1)
    request.pool->ParallelFor(groups, compile, 0, /*even=*/false);
  else
    compile(0, groups);
  std::vector<std::string> objects;
  for (GroupResult& r : results) {
    if (!r.status.ok()) return r.status;
    im.stats.emit_ms += r.emit_ms;
    im.stats.optimize_ms += r.optimize_ms;
    im.stats.codegen_ms += r.codegen_ms;
    ++im.stats.codegen_modules;
    if (request.ir_out != nullptr) *request.ir_out += r.ir;
    objects.push_back(std::move(r.object));
  }
  // A cache that cannot be written only costs the next process a compilation.
  if (use_cache) {
    if (absl::Status st = request.cache->Store(request.cache_key, PackObjectList(objects));
        !st.ok())
      fmt::print(stderr, "kiln: warning: cpu-llvm: {}\n", std::string(st.message()));
  }
  absl::StatusOr<std::vector<KernelFn>> fns = load_all(objects);
  if (fns.ok() && request.objects_out != nullptr) *request.objects_out = std::move(objects);
  return fns;
}

}  // namespace kiln::cpu
