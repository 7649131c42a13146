// The GPU kernel form checked for values without a GPU: the kernels the GPU path emits
// (KernelTarget::kGpu) are compiled for the host with the thread index read from a global
// and libdevice calls mapped to libm, "launched" by looping over the thread indices, and
// the module's result (run by the same RunPlanOnDevice as the driver path, on a host
// "device") is compared with the
// HLO evaluator on the example and NumPy end-to-end modules.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
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
#include "plugins/gpu_nvptx/caching_allocator.h"
#include "plugins/gpu_nvptx/device_plan_runner.h"
#include "plugins/gpu_nvptx/gpu_executable.h"
#include "plugins/gpu_nvptx/launch_dims.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"

namespace kiln::gpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomArgs;
using codegen_testing::RandomArguments;
using codegen_testing::RandomLiteral;

using PT = PrimitiveType;
using EmuFn = void (*)(void** buffers);

// Host JIT of GPU-form kernels; `thread` is the emulated global thread index.
struct Emulation {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<EmuFn> kernels;
  int32_t* thread = nullptr;
  int32_t* grid = nullptr;  // the emulated number of threads (nctaid.x; ntid.x is 1)
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
  auto* grid = new llvm::GlobalVariable(*m, b.getInt32Ty(), false,
                                        llvm::GlobalValue::ExternalLinkage, b.getInt32(1),
                                        "kiln_emu_grid");
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
  // Thread index: blockIdx = global index, blockDim = 1, threadIdx = 0, gridDim = threads.
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
      llvm::Value* v = n.endswith("nctaid.x") ? static_cast<llvm::Value*>(b.CreateLoad(b.getInt32Ty(), grid))
                       : n.endswith("ctaid.x") ? static_cast<llvm::Value*>(b.CreateLoad(b.getInt32Ty(), thread))
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
  auto g = emu.jit->lookup("kiln_emu_grid");
  if (!g) return absl::InternalError(llvm::toString(g.takeError()));
  emu.grid = g->toPtr<int32_t*>();
  return emu;
}



// A "device" in host memory: allocations are malloc'ed blocks, launches loop over the
// thread indices (one past the end, so the kernels' bounds checks are exercised).
class HostDevice : public DeviceMemory, public DeviceRuntime {
 public:
  explicit HostDevice(const Emulation& emu) : emu_(emu) {}
  ~HostDevice() override {
    for (auto& [p, n] : blocks_) std::free(reinterpret_cast<void*>(p));
  }
  absl::StatusOr<DevicePtr> Allocate(size_t bytes) override {
    void* p = std::malloc(bytes);
    if (p == nullptr) return absl::ResourceExhaustedError("host device out of memory");
    blocks_[reinterpret_cast<DevicePtr>(p)] = bytes;
    ++allocations_;
    return reinterpret_cast<DevicePtr>(p);
  }
  void Deallocate(DevicePtr p) override {
    blocks_.erase(p);
    std::free(reinterpret_cast<void*>(p));
  }
  absl::Status CopyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    if (auto s = Check(dst, bytes); !s.ok()) return s;
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (auto s = Check(src, bytes); !s.ok()) return s;
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return absl::OkStatus();
  }
  absl::Status Launch(int kernel, int64_t threads, std::span<const DevicePtr> buffers) override {
    std::vector<void*> bufs;
    for (DevicePtr p : buffers) {
      if (!blocks_.contains(p)) return absl::InternalError("kernel argument is not a live block");
      bufs.push_back(reinterpret_cast<void*>(p));
    }
    // The driver's launch dimensions (grid capped at max_blocks_): every emulated thread
    // loops grid-stride, and the last block's spare threads exercise the bounds checks.
    LaunchDims dims = ComputeLaunchDims(threads, max_blocks_);
    const int64_t n = dims.blocks * dims.threads_per_block;
    *emu_.grid = static_cast<int32_t>(n);
    for (int64_t t = 0; t < n; ++t) {
      *emu_.thread = static_cast<int32_t>(t);
      emu_.kernels[kernel](bufs.data());
    }
    return absl::OkStatus();
  }
  // A smaller grid cap than the driver's, so the grid-stride loops take several steps.
  void set_max_blocks(int64_t b) { max_blocks_ = b; }
  // A plain row-major loop (the definition of GemmShape), independent of the cuBLAS mapping,
  // so the runner's plumbing is checked against the evaluator.
  absl::Status Gemm(const cpu::GemmShape& g, DevicePtr a, DevicePtr b, DevicePtr out) override {
    if (g.f64) return absl::InternalError("host device: f64 GEMM step");
    const size_t sa = g.m * g.k, sb = g.k * g.n, sc = g.m * g.n;
    if (auto s = Check(a, g.batch * sa * 4); !s.ok()) return s;
    if (auto s = Check(b, g.batch * sb * 4); !s.ok()) return s;
    if (auto s = Check(out, g.batch * sc * 4); !s.ok()) return s;
    const float* A = reinterpret_cast<const float*>(a);
    const float* B = reinterpret_cast<const float*>(b);
    float* C = reinterpret_cast<float*>(out);
    for (int64_t t = 0; t < g.batch; ++t)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            float av = g.trans_a ? A[t * sa + p * g.m + i] : A[t * sa + i * g.k + p];
            float bv = g.trans_b ? B[t * sb + j * g.k + p] : B[t * sb + p * g.n + j];
            acc += static_cast<double>(av) * bv;
          }
          C[t * sc + i * g.n + j] = static_cast<float>(acc);
        }
    ++gemms_;
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  int allocations() const { return allocations_; }
  int gemms() const { return gemms_; }

 private:
  // Copies must stay inside one live block.
  absl::Status Check(DevicePtr p, size_t bytes) const {
    auto it = blocks_.find(p);
    if (it == blocks_.end() || it->second < bytes)
      return absl::InternalError("copy outside a live device block");
    return absl::OkStatus();
  }
  const Emulation& emu_;
  std::map<DevicePtr, size_t> blocks_;
  int allocations_ = 0;
  int gemms_ = 0;
  int64_t max_blocks_ = kMaxBlocks;
};

int64_t CountConstants(const HloModule& m) {
  int64_t n = 0;
  for (const HloInstruction* h : m.entry()->instructions())
    n += h->opcode() == HloOpcode::kConstant;
  return n;
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
      RandomArgs random = RandomArguments(module, 1234);
      const std::vector<Literal>& args = random.values;
      const std::vector<const Literal*>& ptrs = random.ptrs;
      HloEvaluator evaluator;
      auto want = evaluator.Evaluate(module, args);
      if (!want.ok()) continue;  // evaluator coverage is tested elsewhere
      cpu::Plan plan = cpu::MakePlan(module, GpuPlanOptions());
      auto emu = Compile(plan.kernels);
      ASSERT_TRUE(emu.ok()) << emu.status();
      HostDevice device(*emu);
      CachingAllocator allocator(&device);
      DeviceRunStats stats;
      auto got = RunPlanOnDevice(module, plan, ptrs, device, allocator, &stats);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(*got, *want, name, "emulated gpu", 2e-4);
      // One block of (at most) 256 threads: every larger output is covered by striding.
      HostDevice one_block(*emu);
      one_block.set_max_blocks(1);
      CachingAllocator one_block_allocator(&one_block);
      auto strided = RunPlanOnDevice(module, plan, ptrs, one_block, one_block_allocator);
      ASSERT_TRUE(strided.ok()) << strided.status();
      ExpectClose(*strided, *want, name, "emulated gpu, 1 block", 2e-4);
      if (!plan.kernels.empty()) {
        EXPECT_GT(stats.launches, 0);
      }
      // Device-resident values: each argument crosses at most once, and only the result
      // (or values a host step needs) comes back.
      EXPECT_LE(stats.uploads, static_cast<int64_t>(args.size()) + CountConstants(module));
      // Every buffer of the run went back to the cache.
      EXPECT_EQ(allocator.stats().live_bytes, 0u);
      ++checked;
    }
  }
  EXPECT_GT(checked, 3);
}

// Two kernels in a row (a row reduction feeding a division): the intermediate stays on the
// device, the arguments go up once, only the result comes down; a second run takes every
// buffer from the cache.
TEST(GpuKernelHostEmulation, ValuesStayOnDeviceAndBuffersAreReused) {
  auto parsed = ParseHloModule(R"(
HloModule chain
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8,33]) -> f32[8,33] {
  %x = f32[8,33] parameter(0)
  %e = f32[8,33] exponential(%x)
  %zero = f32[] constant(0)
  %sum = f32[8] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %b = f32[8,33] broadcast(%sum), dimensions={0}
  ROOT %d = f32[8,33] divide(%e, %b)
}
)", "chain");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloModule& module = **parsed;
  cpu::Plan plan = cpu::MakePlan(module, GpuPlanOptions());
  ASSERT_GE(plan.kernels.size(), 2u);
  auto emu = Compile(plan.kernels);
  ASSERT_TRUE(emu.ok()) << emu.status();
  HostDevice device(*emu);
  CachingAllocator allocator(&device);
  std::mt19937 rng(7);
  Literal x = RandomLiteral(module.entry()->parameter(0)->shape(), rng);
  const Literal* args[] = {&x};
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(module, std::vector<Literal>{x});
  ASSERT_TRUE(want.ok()) << want.status();

  DeviceRunStats first;
  auto got = RunPlanOnDevice(module, plan, args, device, allocator, &first);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "chain", "emulated gpu", 1e-5);
  EXPECT_EQ(first.launches, static_cast<int64_t>(plan.kernels.size()));
  EXPECT_EQ(first.uploads, 1);
  EXPECT_EQ(first.downloads, 1);
  const int allocations = device.allocations();
  EXPECT_EQ(allocator.stats().device_allocations, allocations);

  DeviceRunStats second;
  got = RunPlanOnDevice(module, plan, args, device, allocator, &second);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "chain", "emulated gpu (second run)", 1e-5);
  EXPECT_EQ(device.allocations(), allocations);  // all from the cache
  EXPECT_GT(allocator.stats().reused, 0);
}

// With a device GEMM library, large f32 dots (batched, transposed operands) become library
// steps: their operands and results stay on the device between the GEMM and the kernels
// around it, and the result matches the evaluator. Without it the same dots are kernels.
TEST(GpuKernelHostEmulation, LargeDotsGoToDeviceGemm) {
  auto parsed = ParseHloModule(R"(
HloModule gemms
ENTRY %main (x: f32[2,48,64], y: f32[2,80,64], w: f32[64,96]) -> f32[96,96] {
  %x = f32[2,48,64] parameter(0)
  %y = f32[2,80,64] parameter(1)
  %w = f32[64,96] parameter(2)
  %ex = f32[2,48,64] exponential(%x)
  %d1 = f32[2,48,80] dot(%ex, %y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  %t = f32[2,80,48] transpose(%d1), dimensions={0,2,1}
  %d2 = f32[2,48,64] dot(%t, %y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %n = f32[2,48,64] negate(%d2)
  %r = f32[96,64] reshape(%n)
  ROOT %d3 = f32[96,96] dot(%r, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)", "gemms");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloModule& module = **parsed;
  RandomArgs random = RandomArguments(module, 11);
  const std::vector<Literal>& args = random.values;
  const std::vector<const Literal*>& ptrs = random.ptrs;
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  for (bool device_gemm : {true, false}) {
    SCOPED_TRACE(device_gemm ? "device gemm" : "dot kernels");
    cpu::Plan plan = cpu::MakePlan(module, GpuPlanOptions(device_gemm));
    int library = 0;
    bool transposed = false;
    for (const cpu::Step& s : plan.steps)
      if (s.kind == cpu::Disposition::kLibrary) {
        ++library;
        ASSERT_TRUE(s.gemm.has_value());
        transposed |= s.gemm->trans_a || s.gemm->trans_b;
      }
    EXPECT_EQ(library, device_gemm ? 3 : 0);
    if (device_gemm) EXPECT_TRUE(transposed);
    auto emu = Compile(plan.kernels);
    ASSERT_TRUE(emu.ok()) << emu.status();
    HostDevice device(*emu);
    CachingAllocator allocator(&device);
    DeviceRunStats stats;
    auto got = RunPlanOnDevice(module, plan, ptrs, device, allocator, &stats);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(*got, *want, "gemms", "emulated gpu", 2e-4);
    EXPECT_EQ(stats.gemms, library);
    EXPECT_EQ(device.gemms(), library);
    EXPECT_EQ(stats.uploads, 3);    // each argument once
    EXPECT_EQ(stats.downloads, 1);  // only the result
    EXPECT_EQ(allocator.stats().live_bytes, 0u);
  }
}

TEST(LaunchDims, FromTheOutputSize) {
  EXPECT_EQ(ComputeLaunchDims(0).blocks, 0);
  LaunchDims small = ComputeLaunchDims(33);  // one block, rounded up to whole warps
  EXPECT_EQ(small.blocks, 1);
  EXPECT_EQ(small.threads_per_block, 64);
  LaunchDims mid = ComputeLaunchDims(1000);
  EXPECT_EQ(mid.threads_per_block, kThreadsPerBlock);
  EXPECT_EQ(mid.blocks, (1000 + kThreadsPerBlock - 1) / kThreadsPerBlock);
  // Far past the 2^31-1 grid limit: capped, the kernels' loops cover the rest.
  LaunchDims huge = ComputeLaunchDims(int64_t{1} << 40);
  EXPECT_EQ(huge.blocks, kMaxBlocks);
  EXPECT_LE(huge.blocks, 0x7fffffff);
}

TEST(CachingAllocator, ReusesFitsAndReleasesOnOutOfMemory) {
  struct Budget : DeviceMemory {
    size_t left = 4096;
    int allocations = 0;
    std::map<DevicePtr, size_t> live;
    DevicePtr next = 4096;
    absl::StatusOr<DevicePtr> Allocate(size_t bytes) override {
      if (bytes > left) return absl::ResourceExhaustedError("out of budget");
      left -= bytes;
      ++allocations;
      live[next] = bytes;
      next += bytes;
      return next - bytes;
    }
    void Deallocate(DevicePtr p) override {
      left += live.at(p);
      live.erase(p);
    }
  } memory;
  CachingAllocator a(&memory);
  auto p1 = a.Allocate(1000);  // rounded to 1024
  ASSERT_TRUE(p1.ok());
  a.Deallocate(*p1);
  auto p2 = a.Allocate(600);  // fits the cached 1024 block (at least half used)
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(*p2, *p1);
  EXPECT_EQ(memory.allocations, 1);
  a.Deallocate(*p2);
  auto small = a.Allocate(100);  // would waste most of the 1024 block: a new one
  ASSERT_TRUE(small.ok());
  EXPECT_NE(*small, *p1);
  EXPECT_EQ(memory.allocations, 2);
  // 4096 - 1024 (cached) - 256 (live) left: 3000 only fits after the cache is released.
  auto big = a.Allocate(3000);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(a.stats().cached_bytes, 0u);
  auto too_big = a.Allocate(8192);
  EXPECT_TRUE(absl::IsResourceExhausted(too_big.status()));
  a.Deallocate(*big);
  a.Deallocate(*small);
}

}  // namespace
}  // namespace kiln::gpu
