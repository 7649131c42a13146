// The GPU kernel forms checked for values without a GPU: the kernels the GPU path emits
// (KernelTarget::kGpu) are compiled for the host with the PTX special registers, barrier,
// shuffles and shared memory replaced by host equivalents (MakeHostRunnable) and libdevice
// calls mapped to libm. One-thread-per-element kernels run their threads one after another;
// block kernels get a host thread per GPU thread. The module's result (run by the same
// RunPlanOnDevice as the driver path, on a host "device") is compared with the HLO
// evaluator.
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hlo/collectives/local_communicator.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "plugins/gpu_nvptx/caching_allocator.h"
#include "plugins/gpu_nvptx/device_plan.h"
#include "plugins/gpu_nvptx/device_plan_runner.h"
#include "plugins/gpu_nvptx/gpu_executable.h"
#include "plugins/gpu_nvptx/gpu_test_modules.h"
#include "plugins/gpu_nvptx/launch_dims.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"
#include "plugins/llvm_emitter/gpu_layout.h"

namespace kiln::gpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomArgs;
using codegen_testing::RandomArguments;
using codegen_testing::RandomLiteral;
using testing::ColumnReductionsModule;
using testing::ControlFlowModule;
using testing::FewLongRowsModule;
using testing::FourPerThreadModule;
using testing::LayernormGeluModule;
using testing::PersistentStepModule;
using testing::RowReductionsModule;
using testing::ScalarSplitModule;
using testing::SoftmaxModule;

using PT = PrimitiveType;
using EmuFn = void (*)(void** buffers);

// The emulated GPU thread: its special registers, and for block launches the block's
// barrier and shuffle slots. Kernels read them through the kiln_emu_* functions below,
// which replace the NVPTX intrinsics in the host-compiled kernels.
struct EmuBlock {
  explicit EmuBlock(int threads) : barrier(threads), slots(threads) {}
  std::barrier<> barrier;
  std::vector<uint32_t> slots;
};
thread_local int32_t t_tid = 0, t_ntid = 1, t_ctaid = 0, t_nctaid = 1;
thread_local EmuBlock* t_block = nullptr;

extern "C" int32_t kiln_emu_tid() { return t_tid; }
extern "C" int32_t kiln_emu_ntid() { return t_ntid; }
extern "C" int32_t kiln_emu_ctaid() { return t_ctaid; }
extern "C" int32_t kiln_emu_nctaid() { return t_nctaid; }
extern "C" void kiln_emu_barrier() { t_block->barrier.arrive_and_wait(); }
// shfl.sync.bfly over the whole block: every thread of the block must call it, which the
// emitted reductions guarantee (they shuffle in uniform control flow); lane ^ mask stays
// inside the warp for masks below 32.
extern "C" uint32_t kiln_emu_shfl_bfly(uint32_t v, int32_t mask) {
  t_block->slots[t_tid] = v;
  t_block->barrier.arrive_and_wait();
  uint32_t r = t_block->slots[t_tid ^ mask];
  t_block->barrier.arrive_and_wait();
  return r;
}

// Host JIT of GPU-form kernels: kernels[k][e] is launch e of plan kernel k.
struct Emulation {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<std::vector<EmuFn>> kernels;
};

// Replaces the NVPTX-only pieces of `m` with host equivalents: special registers, barrier
// and shuffle become calls to the kiln_emu_* functions, shared-memory globals (one copy per
// block: blocks run one after another) plain globals, libdevice calls libm calls.
void MakeHostRunnable(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  std::vector<llvm::Function*> drop;
  for (llvm::Function& f : m) {
    llvm::StringRef n = f.getName();
    if (n.startswith("__nv_")) {
      // libdevice __nv_expf -> libm expf. A copy: `n` points into the name being replaced,
      // which setName frees before reading the new one (a garbage symbol, now and then).
      f.setName(n.drop_front(5).str());
      continue;
    }
    if (!n.startswith("llvm.nvvm.")) continue;
    for (llvm::User* u : llvm::make_early_inc_range(f.users())) {
      auto* call = llvm::cast<llvm::CallInst>(u);
      b.SetInsertPoint(call);
      auto callee = [&](const char* name, llvm::Type* ret, std::vector<llvm::Type*> params) {
        return m.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
      };
      llvm::Value* v = nullptr;
      if (n.startswith("llvm.nvvm.read.ptx.sreg.")) {
        const char* name = n.endswith("nctaid.x")  ? "kiln_emu_nctaid"
                           : n.endswith("ctaid.x") ? "kiln_emu_ctaid"
                           : n.endswith("ntid.x")  ? "kiln_emu_ntid"
                                                   : "kiln_emu_tid";
        v = b.CreateCall(callee(name, b.getInt32Ty(), {}));
      } else if (n == "llvm.nvvm.barrier0") {
        b.CreateCall(callee("kiln_emu_barrier", b.getVoidTy(), {}));
      } else if (n.startswith("llvm.nvvm.shfl.sync.bfly.i32")) {
        v = b.CreateCall(
            callee("kiln_emu_shfl_bfly", b.getInt32Ty(), {b.getInt32Ty(), b.getInt32Ty()}),
            {call->getArgOperand(1), call->getArgOperand(2)});
      } else {
        ADD_FAILURE() << "no host emulation for " << n.str();
        continue;
      }
      if (v != nullptr) call->replaceAllUsesWith(v);
      call->eraseFromParent();
    }
    drop.push_back(&f);
  }
  for (llvm::Function* f : drop)
    if (f->use_empty()) f->eraseFromParent();
  // The kernel entries' round trips through addrspace(1) (global memory): generic again.
  for (llvm::Function& f : m)
    for (llvm::Instruction& i : llvm::make_early_inc_range(llvm::instructions(f))) {
      auto* back = llvm::dyn_cast<llvm::AddrSpaceCastInst>(&i);
      if (back == nullptr || back->getDestAddressSpace() != 0) continue;
      auto* to_global = llvm::dyn_cast<llvm::AddrSpaceCastInst>(back->getPointerOperand());
      if (to_global == nullptr || to_global->getSrcAddressSpace() != 0) continue;
      back->replaceAllUsesWith(to_global->getPointerOperand());
      back->eraseFromParent();
      if (to_global->use_empty()) to_global->eraseFromParent();
    }
  std::vector<llvm::GlobalVariable*> shared;
  for (llvm::GlobalVariable& g : m.globals())
    if (g.getAddressSpace() == 3) shared.push_back(&g);
  for (llvm::GlobalVariable* g : shared) {
    auto* host = new llvm::GlobalVariable(
        m, g->getValueType(), false, llvm::GlobalValue::InternalLinkage,
        llvm::Constant::getNullValue(g->getValueType()), g->getName() + ".host");
    // The emitter reaches shared memory through addrspacecasts to generic pointers.
    for (llvm::User* u : llvm::make_early_inc_range(g->users())) {
      auto* ce = llvm::dyn_cast<llvm::ConstantExpr>(u);
      ASSERT_TRUE(ce != nullptr && ce->getOpcode() == llvm::Instruction::AddrSpaceCast);
      ce->replaceAllUsesWith(host);
    }
    g->removeDeadConstantUsers();
    g->eraseFromParent();
  }
}

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
  llvm::orc::SymbolMap runtime;
  auto add = [&](const char* name, auto* fn) {
    runtime[emu.jit->mangleAndIntern(name)] = llvm::JITEvaluatedSymbol(
        llvm::pointerToJITTargetAddress(fn), llvm::JITSymbolFlags::Exported);
  };
  add("kiln_emu_tid", &kiln_emu_tid);
  add("kiln_emu_ntid", &kiln_emu_ntid);
  add("kiln_emu_ctaid", &kiln_emu_ctaid);
  add("kiln_emu_nctaid", &kiln_emu_nctaid);
  add("kiln_emu_barrier", &kiln_emu_barrier);
  add("kiln_emu_shfl_bfly", &kiln_emu_shfl_bfly);
  if (auto err = emu.jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(runtime)))
    return absl::InternalError(llvm::toString(std::move(err)));

  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("emu", *ctx);
  m->setDataLayout(emu.jit->getDataLayout());
  m->setTargetTriple(emu.jit->getTargetTriple().str());
  std::vector<std::vector<std::string>> names;
  llvm::IRBuilder<> b(*ctx);
  for (llvm_emit::KernelSpec spec : specs) {
    spec.target = llvm_emit::KernelTarget::kGpu;
    spec.name = PtxKernelName(spec.name);
    if (absl::Status s = llvm_emit::EmitKernel(spec, *m); !s.ok()) return s;
    std::vector<std::string>& entries = names.emplace_back();
    for (const KernelLaunch& l : LaunchesFor(spec).launches) {
      llvm::Function* k = m->getFunction(l.entry);
      if (k == nullptr) return absl::InternalError("no kernel entry " + l.entry);
      k->setCallingConv(llvm::CallingConv::C);
      // A wrapper taking the buffer table, so the test can call any arity.
      llvm::Type* ptr = b.getPtrTy();
      auto* w = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
                                       llvm::GlobalValue::ExternalLinkage, l.entry + "_emu", *m);
      b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", w));
      std::vector<llvm::Value*> args;
      for (size_t i = 0; i < k->arg_size(); ++i)
        args.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, w->getArg(0), i)));
      b.CreateCall(k, args);
      b.CreateRetVoid();
      entries.push_back(l.entry + "_emu");
    }
  }
  MakeHostRunnable(*m);
  if (auto err = emu.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    return absl::InternalError(llvm::toString(std::move(err)));
  for (const std::vector<std::string>& entries : names) {
    std::vector<EmuFn>& fns = emu.kernels.emplace_back();
    for (const std::string& n : entries) {
      auto sym = emu.jit->lookup(n);
      if (!sym) return absl::InternalError(llvm::toString(sym.takeError()));
      fns.push_back(sym->toPtr<EmuFn>());
    }
  }
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
  absl::Status Launch(int kernel, int entry, const KernelLaunch& l,
                      std::span<const DevicePtr> buffers) override {
    std::vector<void*> bufs;
    for (DevicePtr p : buffers) {
      if (!blocks_.contains(p)) return absl::InternalError("kernel argument is not a live block");
      bufs.push_back(reinterpret_cast<void*>(p));
    }
    // The driver's launch dimensions (grid capped at max_blocks_).
    const LaunchDims dims = DimsOf(l, max_blocks_);
    EmuFn fn = emu_.kernels[kernel][entry];
    if (l.elements > 0) {
      // One thread per element: no thread talks to another, so the threads run one after
      // another (block index = global index, one thread per block). Every emulated thread
      // loops grid-stride; the last block's spare threads exercise the bounds checks.
      const int64_t n = dims.blocks * dims.threads_per_block;
      t_tid = 0;
      t_ntid = 1;
      t_nctaid = static_cast<int32_t>(n);
      for (int64_t t = 0; t < n; ++t) {
        t_ctaid = static_cast<int32_t>(t);
        fn(bufs.data());
      }
      return absl::OkStatus();
    }
    // Block kernels (rows, split reductions) shuffle and synchronize: a host thread per GPU
    // thread, the blocks one after another.
    EmuBlock block(dims.threads_per_block);
    std::vector<std::thread> threads;
    for (int t = 0; t < dims.threads_per_block; ++t) {
      threads.emplace_back([&, t] {
        t_tid = t;
        t_ntid = dims.threads_per_block;
        t_nctaid = static_cast<int32_t>(dims.blocks);
        t_block = &block;
        for (int64_t c = 0; c < dims.blocks; ++c) {
          t_ctaid = static_cast<int32_t>(c);
          fn(bufs.data());
          block.barrier.arrive_and_wait();  // the block's shared memory is reused by the next
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ++block_launches_;
    return absl::OkStatus();
  }
  int block_launches() const { return block_launches_; }
  // A smaller grid cap than the driver's, so the grid-stride loops take several steps.
  void set_max_blocks(int64_t b) { max_blocks_ = b; }
  // A plain row-major loop (the definition of GemmShape), independent of the cuBLAS mapping,
  // so the runner's plumbing is checked against the evaluator.
  absl::Status Gemm(const kernel_plan::GemmShape& g, DevicePtr a, DevicePtr b,
                    DevicePtr out) override {
    if (g.type != kernel_plan::GemmType::kF32)
      return absl::InternalError("host device: GEMM step that is not f32");
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
  // Collectives on "device" memory through the run's transport, as NCCL does them on GPU
  // memory; off by default (the runner then uses the host evaluator).
  void set_device_collectives(bool on) { device_collectives_ = on; }
  bool HasCollectives() const override { return device_collectives_; }
  absl::StatusOr<bool> Collective(const DeviceCollective& op, std::span<const DevicePtr> ins,
                                  std::span<const DevicePtr> outs, Communicator& t) override {
    if (!device_collectives_) return false;
    const size_t es = static_cast<size_t>(ByteSizeOf(op.type));
    const size_t rank =
        std::find(op.group.begin(), op.group.end(), t.device_id()) - op.group.begin();
    for (size_t i = 0; i < ins.size(); ++i) {
      if (auto s = Check(ins[i], op.in_counts[i] * es); !s.ok()) return s;
      if (auto s = Check(outs[i], op.out_counts[i] * es); !s.ok()) return s;
      const void* in = reinterpret_cast<const void*>(ins[i]);
      uint8_t* out = reinterpret_cast<uint8_t*>(outs[i]);
      if (op.op == DeviceCollective::Op::kAllGather) {
        if (auto s = t.AllGather(op.group, in, out, op.in_counts[i] * es); !s.ok()) return s;
        continue;
      }
      std::vector<uint8_t> sum(op.in_counts[i] * es);
      absl::StatusOr<bool> r =
          t.AllReduce(op.group, op.type, op.reduction, in, sum.data(), op.in_counts[i]);
      if (!r.ok()) return r.status();
      if (!*r) return absl::InternalError("the transport did not reduce");
      const size_t piece = op.out_counts[i] * es;
      std::memcpy(out,
                  sum.data() + (op.op == DeviceCollective::Op::kReduceScatter ? rank * piece : 0),
                  piece);
    }
    return true;
  }
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
  int block_launches_ = 0;
  bool device_collectives_ = false;
};

// Constants of every computation (each goes up at most once per run).
int64_t CountConstants(const HloModule& m) {
  int64_t n = 0;
  for (const HloComputation* c : m.computations())
    for (const HloInstruction* h : c->instructions()) n += h->opcode() == HloOpcode::kConstant;
  return n;
}

TEST(GpuKernelHostEmulation, ExampleAndE2eModulesMatchEvaluator) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  int checked = 0;
  for (const char* dir : {"/examples/hlo", "/tests/numpy_e2e/modules", "/tests/regressions"}) {
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
      DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions());
      const kernel_plan::Plan& plan = device_plan.plan;
      auto emu = Compile(plan.kernels);
      ASSERT_TRUE(emu.ok()) << emu.status();
      HostDevice device(*emu);
      CachingAllocator allocator(&device);
      DeviceRunStats stats;
      auto got = RunPlanOnDevice(module, device_plan, ptrs, device, allocator, &stats);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(*got, *want, name, "emulated gpu", 2e-4);
      // One block of (at most) 256 threads: every larger output is covered by striding.
      HostDevice one_block(*emu);
      one_block.set_max_blocks(1);
      CachingAllocator one_block_allocator(&one_block);
      auto strided = RunPlanOnDevice(module, device_plan, ptrs, one_block, one_block_allocator);
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
// A run on two devices: all-reduce, all-gather and reduce-scatter between kernels are done
// on device memory by the runtime's collective library when it has one (NCCL on a GPU,
// the transport here), values staying on the device, and through the host evaluator when
// it has none; both equal the evaluator run on the same two devices.
TEST(GpuKernelHostEmulation, CollectivesOnDeviceMemory) {
  auto parsed = ParseHloModule(R"(
HloModule coll, replica_count=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4,6]) -> (f32[4,6], f32[8,6], f32[2,6]) {
  %x = f32[4,6] parameter(0)
  %e = f32[4,6] exponential(%x)
  %ar = f32[4,6] all-reduce(%e), replica_groups={{0,1}}, to_apply=%add
  %ag = f32[8,6] all-gather(%e), replica_groups={{0,1}}, dimensions={0}
  %rs = f32[2,6] reduce-scatter(%e), replica_groups={{0,1}}, dimensions={0}, to_apply=%add
  %m = f32[4,6] multiply(%ar, %ar)
  ROOT %t = (f32[4,6], f32[8,6], f32[2,6]) tuple(%m, %ag, %rs)
}
)",
                               "coll");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloModule& module = **parsed;
  DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions());
  auto emu = Compile(device_plan.plan.kernels);
  ASSERT_TRUE(emu.ok()) << emu.status();
  std::vector<Literal> xs;
  std::mt19937 rng(11);
  for (int d = 0; d < 2; ++d)
    xs.push_back(RandomLiteral(module.entry()->parameter(0)->shape(), rng));
  std::vector<Literal> want(2);
  ASSERT_TRUE(RunOnLocalDevices({2, 1}, [&](int d) -> absl::Status {
                HloEvaluator evaluator;
                absl::StatusOr<Literal> r = evaluator.Evaluate(module, std::vector<Literal>{xs[d]});
                if (!r.ok()) return r.status();
                want[d] = *std::move(r);
                return absl::OkStatus();
              }).ok());
  for (bool on_device : {true, false}) {
    std::vector<Literal> got(2);
    std::vector<DeviceRunStats> stats(2);
    absl::Status s = RunOnLocalDevices({2, 1}, [&](int d) -> absl::Status {
      HostDevice device(*emu);
      device.set_device_collectives(on_device);
      CachingAllocator allocator(&device);
      const Literal* args[] = {&xs[d]};
      absl::StatusOr<Literal> r =
          RunPlanOnDevice(module, device_plan, args, device, allocator, &stats[d]);
      if (!r.ok()) return r.status();
      got[d] = *std::move(r);
      return absl::OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s;
    for (int d = 0; d < 2; ++d) {
      ExpectClose(got[d], want[d], "collectives", on_device ? "on device" : "on host", 1e-6);
      EXPECT_EQ(stats[d].device_collectives, on_device ? 3 : 0);
      // On the device, x goes up once and the three results come down once each.
      if (on_device) {
        EXPECT_EQ(stats[d].downloads, 3);
      }
    }
  }
}

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
)",
                               "chain");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloModule& module = **parsed;
  DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions());
  const kernel_plan::Plan& plan = device_plan.plan;
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
  auto got = RunPlanOnDevice(module, device_plan, args, device, allocator, &first);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "chain", "emulated gpu", 1e-5);
  EXPECT_EQ(first.launches, static_cast<int64_t>(plan.kernels.size()));
  EXPECT_EQ(first.uploads, 1);
  EXPECT_EQ(first.downloads, 1);
  const int allocations = device.allocations();
  EXPECT_EQ(allocator.stats().device_allocations, allocations);

  DeviceRunStats second;
  got = RunPlanOnDevice(module, device_plan, args, device, allocator, &second);
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
)",
                               "gemms");
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
    DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions(device_gemm));
    const kernel_plan::Plan& plan = device_plan.plan;
    int library = 0;
    bool transposed = false;
    for (const kernel_plan::Step& s : plan.steps) {
      if (s.kind != kernel_plan::Disposition::kLibrary) continue;
      ++library;
      ASSERT_TRUE(s.gemm.has_value());
      transposed |= s.gemm->trans_a || s.gemm->trans_b;
    }
    EXPECT_EQ(library, device_gemm ? 3 : 0);
    EXPECT_EQ(transposed, device_gemm);
    auto emu = Compile(plan.kernels);
    ASSERT_TRUE(emu.ok()) << emu.status();
    HostDevice device(*emu);
    CachingAllocator allocator(&device);
    DeviceRunStats stats;
    auto got = RunPlanOnDevice(module, device_plan, ptrs, device, allocator, &stats);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(*got, *want, "gemms", "emulated gpu", 2e-4);
    EXPECT_EQ(stats.gemms, library);
    EXPECT_EQ(device.gemms(), library);
    EXPECT_EQ(stats.uploads, 3);    // each argument once
    EXPECT_EQ(stats.downloads, 1);  // only the result
    EXPECT_EQ(allocator.stats().live_bytes, 0u);
  }
}

// Runs `text` on the emulated GPU (with the driver's grid and with one block, so row and
// part loops stride) against the evaluator; returns each kernel's layout kind.
std::vector<llvm_emit::GpuLayout::Kind> CheckAgainstEvaluator(const std::string& text,
                                                              std::vector<Literal> args = {},
                                                              double tolerance = 2e-5) {
  auto parsed = ParseHloModule(text, "rows");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  const HloModule& module = **parsed;
  if (args.empty()) args = RandomArguments(module, 99).values;
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions());
  auto emu = Compile(device_plan.plan.kernels);
  EXPECT_TRUE(emu.ok()) << emu.status();
  if (!want.ok() || !emu.ok()) return {};
  for (int64_t max_blocks : {kMaxBlocks, int64_t{1}}) {
    HostDevice device(*emu);
    device.set_max_blocks(max_blocks);
    CachingAllocator allocator(&device);
    auto got = RunPlanOnDevice(module, device_plan, ptrs, device, allocator);
    EXPECT_TRUE(got.ok()) << got.status();
    if (got.ok())
      ExpectClose(*got, *want, absl::StrCat(module.name(), ", grid cap ", max_blocks),
                  "emulated gpu", tolerance);
    EXPECT_EQ(allocator.stats().live_bytes, 0u);
  }
  std::vector<llvm_emit::GpuLayout::Kind> kinds;
  for (const llvm_emit::KernelSpec& spec : device_plan.plan.kernels)
    kinds.push_back(llvm_emit::AnalyzeGpuKernel(spec).kind);
  return kinds;
}

using Kind = llvm_emit::GpuLayout::Kind;
using Kinds = std::vector<Kind>;

// Softmax with rows not a multiple of the block (1000 columns, 256 threads) becomes one
// kernel, a block per row, with the max and the sum combined across the block.
TEST(GpuRowKernels, SoftmaxIsOneRowKernel) {
  std::string text = SoftmaxModule();
  EXPECT_EQ(CheckAgainstEvaluator(text), Kinds{Kind::kRows});
}

// Layernorm: the variance reads the mean (a statistic of a statistic), then GELU; rows of
// 300 over a 3-D input whose two leading dimensions are the rows.
TEST(GpuRowKernels, LayernormGeluIsOneRowKernel) {
  std::string text = LayernormGeluModule();
  EXPECT_EQ(CheckAgainstEvaluator(text, {}, 1e-4), Kinds{Kind::kRows});
}

// Row reductions as outputs, over two trailing dimensions, in f64 (64-bit shuffles), s64
// and pred, with a non-identity init applied exactly once, and a NaN that must propagate.
TEST(GpuRowKernels, RowReductionsOfEveryKind) {
  std::string text = RowReductionsModule();
  auto parsed = ParseHloModule(text, "rowreduce");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  RandomArgs args = RandomArguments(**parsed, 5);
  // Mostly-false predicates, so `or` depends on single elements; a NaN in row 2 of f.
  Literal& p = args.values[2];
  for (int64_t k = 0; k < p.shape().num_elements(); ++k) p.Set<bool>({k / 100, k % 100}, false);
  p.Set<bool>({3, 77}, true);
  args.values[3].Set<float>({2, 411}, std::nanf(""));
  Kinds kinds = CheckAgainstEvaluator(text, std::move(args.values));
  EXPECT_EQ(kinds, (Kinds{Kind::kRows, Kind::kRows, Kind::kRows, Kind::kRows}));
}

// A large reduction to a scalar is split across blocks and combined by a second launch; the
// init value (not an identity) counts once. Integers must match exactly, bf16 accumulates
// in f32 and rounds once as the evaluator does.
TEST(GpuRowKernels, ScalarReductionsSplitAcrossBlocks) {
  std::string text = ScalarSplitModule();
  Kinds kinds = CheckAgainstEvaluator(text, {}, 1e-4);
  EXPECT_EQ(kinds, (Kinds{Kind::kSplitReduce, Kind::kSplitReduce, Kind::kSplitReduce}));
}

// Elementwise kernels whose outputs have a multiple of 4 elements give each thread 4
// consecutive elements (vector loads and stores on the GPU): a broadcast operand, a bf16
// output and a transpose read at other indices still match the evaluator.
TEST(GpuRowKernels, FourElementsPerThread) {
  std::string text = FourPerThreadModule();
  auto parsed = ParseHloModule(text, "vec");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  DevicePlan dp = MakeDevicePlan(**parsed, GpuPlanOptions());
  int vectorized = 0;
  for (const llvm_emit::KernelSpec& spec : dp.plan.kernels)
    vectorized += llvm_emit::AnalyzeGpuKernel(spec).vector_width == 4;
  EXPECT_GE(vectorized, 1);
  Kinds kinds = CheckAgainstEvaluator(text, {}, 1e-5);
  EXPECT_FALSE(kinds.empty());
}

// Few long rows are split too: each row's slices are reduced by blocks of their own, then a
// block per row folds them (f32 sum over two trailing dims of 3 rows, max with a NaN in one
// row of 5, s32 with a non-identity init).
TEST(GpuRowKernels, FewLongRowsSplitAcrossBlocks) {
  std::string text = FewLongRowsModule();
  auto parsed = ParseHloModule(text, "longrows");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  RandomArgs args = RandomArguments(**parsed, 8);
  args.values[1].Set<float>({3, 13001}, std::nanf(""));
  Kinds kinds = CheckAgainstEvaluator(text, std::move(args.values), 1e-4);
  EXPECT_EQ(kinds, (Kinds{Kind::kSplitReduce, Kind::kSplitReduce, Kind::kSplitReduce}));
}

// Short rows (below kGpuMinRowColumns) keep one thread per element; column reductions
// (over leading dimensions, like bias gradients) split each column's rows into parts, in
// f32 (of a fused product), s32 over two leading dimensions with a non-identity init, and
// f64; a short column (31 rows) stays one thread per column.
TEST(GpuRowKernels, ShortRowsAndColumnReductions) {
  std::string text = ColumnReductionsModule();
  EXPECT_EQ(CheckAgainstEvaluator(text, {}, 1e-4),
            (Kinds{Kind::kElements, Kind::kSplitColumns, Kind::kSplitColumns, Kind::kSplitColumns,
                   Kind::kElements}));
}

// While, conditional (index, out of range: the last branch) and call run their sub-plans
// on the device: the loop state stays there (only each condition's flag comes down), and
// an iteration's buffers are reused by the next, so 40 iterations allocate no more device
// memory than 4.
TEST(GpuControlFlow, LoopsAndBranchesStayOnDevice) {
  auto parsed = ParseHloModule(ControlFlowModule(), "flow");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloModule& module = **parsed;
  DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions());
  EXPECT_EQ(kernel_plan::EvaluatorStepCount(device_plan.plan), 0)
      << kernel_plan::PlanToString(device_plan.plan);
  auto emu = Compile(device_plan.plan.kernels);
  ASSERT_TRUE(emu.ok()) << emu.status();
  std::mt19937 rng(3);
  Literal x = RandomLiteral(module.entry()->parameter(0)->shape(), rng);
  std::map<int, int> allocations;
  for (int iterations : {4, 40}) {
    for (int branch : {0, 1, 5}) {
      SCOPED_TRACE(absl::StrCat(iterations, " iterations, branch ", branch));
      Literal n(Shape(PT::S32, {}));
      n.Set<int32_t>({}, iterations);
      Literal b(Shape(PT::S32, {}));
      b.Set<int32_t>({}, branch);
      std::vector<Literal> args;
      args.push_back(x);
      args.push_back(n);
      args.push_back(b);
      const Literal* ptrs[] = {&args[0], &args[1], &args[2]};
      HloEvaluator evaluator;
      auto want = evaluator.Evaluate(module, args);
      ASSERT_TRUE(want.ok()) << want.status();
      HostDevice device(*emu);
      CachingAllocator allocator(&device);
      DeviceRunStats stats;
      auto got = RunPlanOnDevice(module, device_plan, ptrs, device, allocator, &stats);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(*got, *want, "flow", "emulated gpu", 1e-5);
      EXPECT_LE(stats.uploads, 3 + CountConstants(module));
      // Each condition's flag (iterations + 1), then the result.
      EXPECT_EQ(stats.downloads, iterations + 2);
      EXPECT_EQ(allocator.stats().live_bytes, 0u);
      allocations[iterations] = std::max(allocations[iterations], device.allocations());
    }
  }
  EXPECT_EQ(allocations[40], allocations[4]);
}

// Plugin buffers live on the device: a run takes persistent arrays and leaves its results
// there, so a loop of steps feeding each result back (a training loop) copies nothing
// between host and device; the values match the evaluator's after the last step.
TEST(GpuPersistentArrays, StepsChainOnTheDevice) {
  auto parsed = ParseHloModule(PersistentStepModule(), "step");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloModule& module = **parsed;
  DevicePlan device_plan = MakeDevicePlan(module, GpuPlanOptions());
  auto emu = Compile(device_plan.plan.kernels);
  ASSERT_TRUE(emu.ok()) << emu.status();
  HostDevice device(*emu);
  CachingAllocator allocator(&device);
  RandomArgs random = RandomArguments(module, 21);
  // Upload like buffer_from_host: one persistent array per argument.
  auto upload = [&](const Literal& l) {
    DevicePtr p = *allocator.Allocate(l.size_bytes());
    EXPECT_TRUE(device.CopyToDevice(p, l.untyped_data(), l.size_bytes()).ok());
    return std::make_shared<PersistentArray>(allocator, p, l.shape());
  };
  RunArray w{nullptr, upload(random.values[0])};
  RunArray x{nullptr, upload(random.values[1])};
  Literal want_w = random.values[0];
  Literal want_s;
  HloEvaluator evaluator;
  for (int step = 0; step < 3; ++step) {
    DeviceRunStats stats;
    RunArray args[] = {w, x};
    auto out = RunPlanOnDeviceArrays(module, device_plan, args, device, allocator, &stats);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ(stats.uploads, 0);
    EXPECT_EQ(stats.downloads, 0);
    ASSERT_NE((*out)[0].device, nullptr);
    ASSERT_NE((*out)[1].device, nullptr);
    auto want = evaluator.Evaluate(module, std::vector<Literal>{want_w, random.values[1]});
    ASSERT_TRUE(want.ok()) << want.status();
    std::vector<Literal> leaves = std::move(*want).DecomposeTuple();
    want_w = std::move(leaves[0]);
    want_s = std::move(leaves[1]);
    w = (*out)[0];  // the next step reads this step's result where it is
    if (step == 2) {
      for (int i = 0; i < 2; ++i) {
        Literal got((*out)[i].device->shape());
        ASSERT_TRUE(
            device.CopyToHost(got.untyped_data(), (*out)[i].device->ptr(), got.size_bytes()).ok());
        ExpectClose(got, i == 0 ? want_w : want_s, "step", "emulated gpu", 1e-5);
      }
    }
  }
  w = {};
  x = {};
  EXPECT_EQ(allocator.stats().live_bytes, 0u);  // every array went back when dropped
}

// With a device GEMM, a large convolution becomes a generated patch kernel (im2col) plus one
// GEMM library step; the result matches the evaluator's on the original module.
TEST(GpuKernelHostEmulation, LargeConvolutionsGoThroughTheDeviceGemm) {
  auto parsed = ParseHloModule(R"(HloModule conv
ENTRY %main (x: f32[4,16,16,16], w: f32[3,3,16,32]) -> f32[4,8,8,32] {
  %x = f32[4,16,16,16] parameter(0)
  %w = f32[3,3,16,32] parameter(1)
  %c = f32[4,8,8,32] convolution(%x, %w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %z = f32[] constant(0)
  %zb = f32[4,8,8,32] broadcast(%z), dimensions={}
  ROOT %r = f32[4,8,8,32] maximum(%c, %zb)
}
)",
                               "conv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  RandomArgs random = RandomArguments(*module, 13);
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, random.values);
  ASSERT_TRUE(want.ok()) << want.status();
  auto prepared = PrepareModuleForGpu(module, /*device_gemm=*/true);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_NE(prepared->get(), module.get());  // rewritten
  DevicePlan device_plan = MakeDevicePlan(**prepared, GpuPlanOptions(true));
  int library = 0;
  for (const kernel_plan::Step& s : device_plan.plan.steps)
    library += s.kind == kernel_plan::Disposition::kLibrary;
  EXPECT_EQ(library, 1);
  auto emu = Compile(device_plan.plan.kernels);
  ASSERT_TRUE(emu.ok()) << emu.status();
  HostDevice device(*emu);
  CachingAllocator allocator(&device);
  DeviceRunStats stats;
  auto got = RunPlanOnDevice(**prepared, device_plan, random.ptrs, device, allocator, &stats);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "conv", "emulated gpu (im2col + gemm)", 1e-4);
  EXPECT_EQ(device.gemms(), 1);
  EXPECT_EQ(stats.uploads, 2);
  // Without a device GEMM the module is left alone (an emitted convolution kernel).
  auto same = PrepareModuleForGpu(module, /*device_gemm=*/false);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->get(), module.get());
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
