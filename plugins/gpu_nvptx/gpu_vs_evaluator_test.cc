// GPU results against the reference HLO evaluator on the example and NumPy end-to-end modules
// with random inputs. Needs a CUDA driver and GPU: skipped (with the reason) where there is
// none, so it is the test to run first on a GPU machine.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hlo/collectives/local_communicator.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/gpu_nvptx/gpu_executable.h"
#include "plugins/gpu_nvptx/gpu_test_modules.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::gpu {
namespace {

using codegen_testing::ExpectClose;
using codegen_testing::RandomArgs;
using codegen_testing::RandomArguments;

using PT = PrimitiveType;

TEST(GpuVsEvaluator, ExampleAndE2eModules) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no usable GPU: " << driver.status().message();
  std::shared_ptr<CudaDriver> d(std::move(*driver));
  std::printf("GPU: %s, PTX for %s\n", d->device_name().c_str(), d->TargetSm().c_str());
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  int checked = 0;
  for (const char* dir : {"/examples/hlo", "/tests/numpy_e2e/modules", "/tests/regressions"}) {
    std::filesystem::path p = std::string(root ? root : ".") + dir;
    for (const auto& entry : std::filesystem::directory_iterator(p)) {
      if (entry.path().extension() != ".hlo") continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      std::string name = entry.path().filename().string();
      SCOPED_TRACE(name);
      auto parsed = ParseHloModule(ss.str(), name);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      std::shared_ptr<const HloModule> module = std::move(*parsed);
      RandomArgs random = RandomArguments(*module, 1234);
      const std::vector<Literal>& args = random.values;
      const std::vector<const Literal*>& ptrs = random.ptrs;
      HloEvaluator evaluator;
      auto want = evaluator.Evaluate(*module, args);
      if (!want.ok()) continue;  // evaluator coverage is tested elsewhere
      auto exe = GpuExecutable::Create(module, d);
      ASSERT_TRUE(exe.ok()) << exe.status();
      auto got = (*exe)->Run(ptrs);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(*got, *want, name, "gpu", 1e-4);
      ++checked;
    }
  }
  EXPECT_GT(checked, 3);
}

// Every kernel layout (rows with shuffles and shared memory, split reductions, split columns,
// 4 elements per thread), device-side control flow, and steps chained through persistent
// device buffers, on the hardware against the evaluator (the host emulation checks the same
// modules without a GPU).
TEST(GpuVsEvaluator, LayoutModules) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no usable GPU: " << driver.status().message();
  std::shared_ptr<CudaDriver> d(std::move(*driver));
  for (const auto& [name, text] : testing::AllLayoutModules()) {
    SCOPED_TRACE(name);
    auto parsed = ParseHloModule(text, name);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::shared_ptr<const HloModule> module = std::move(*parsed);
    RandomArgs random = RandomArguments(*module, 77);
    HloEvaluator evaluator;
    auto want = evaluator.Evaluate(*module, random.values);
    ASSERT_TRUE(want.ok()) << want.status();
    auto exe = GpuExecutable::Create(module, d);
    ASSERT_TRUE(exe.ok()) << exe.status();
    auto got = (*exe)->Run(random.ptrs);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(*got, *want, name, "gpu", 1e-4);
    // The same through persistent device buffers: arguments uploaded once, results left on
    // the device and downloaded here.
    std::vector<RunArray> args;
    for (const Literal& a : random.values) {
      auto up = UploadArray(*d, a);
      ASSERT_TRUE(up.ok()) << up.status();
      args.push_back({nullptr, *up});
    }
    auto out = (*exe)->RunArrays(args);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<Literal> leaves;
    for (const RunArray& r : *out) {
      if (r.host != nullptr) {
        leaves.push_back(*r.host);
        continue;
      }
      Literal l(r.device->shape());
      ASSERT_TRUE(DownloadArray(*d, *r.device, l.untyped_data(), l.size_bytes()).ok());
      leaves.push_back(std::move(l));
    }
    Literal from_arrays =
        want->IsTuple() ? Literal::MakeTuple(std::move(leaves)) : std::move(leaves.at(0));
    ExpectClose(from_arrays, *want, name, "gpu (device buffers)", 1e-4);
  }
}

// An array uploaded from pageable memory is complete before a kernel reads it: the upload's
// DMA may still be in flight when cuMemcpyHtoD returns, and kernels run on non-blocking
// streams (a transpose under load read zeros before CudaDriver::CopyToDevice waited for it).
// 256 MiB per upload makes the window wide; every element is checked, five times.
TEST(GpuVsEvaluator, UploadedArraysArriveBeforeKernelsRead) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no usable GPU: " << driver.status().message();
  std::shared_ptr<CudaDriver> d(std::move(*driver));
  const int64_t n = int64_t{1} << 26;
  auto parsed = ParseHloModule(
      "HloModule up\nENTRY e {\n  p = f32[67108864] parameter(0)\n"
      "  ROOT n = f32[67108864] negate(p)\n}\n",
      "up");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  auto exe = GpuExecutable::Create(module, d);
  ASSERT_TRUE(exe.ok()) << exe.status();
  for (int round = 0; round < 5; ++round) {
    Literal in(Shape(PT::F32, {n}));
    float* v = reinterpret_cast<float*>(in.untyped_data());
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000 + round + 1);
    auto up = UploadArray(*d, in);
    ASSERT_TRUE(up.ok()) << up.status();
    std::vector<RunArray> args = {{nullptr, *up}};
    auto out = (*exe)->RunArrays(args);
    ASSERT_TRUE(out.ok()) << out.status();
    Literal got(Shape(PT::F32, {n}));
    ASSERT_TRUE(DownloadArray(*d, *(*out)[0].device, got.untyped_data(), got.size_bytes()).ok());
    const float* g = reinterpret_cast<const float*>(got.untyped_data());
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += g[i] != -v[i];
    EXPECT_EQ(wrong, 0) << "round " << round;
  }
}

// Large f32 dots through cuBLAS (plain, transposed and batched operands: the row-major ->
// column-major mapping on the real library) against the evaluator.
TEST(GpuVsEvaluator, LargeDotsThroughCublas) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no usable GPU: " << driver.status().message();
  std::shared_ptr<CudaDriver> d(std::move(*driver));
  ASSERT_TRUE(d->MakeCurrent().ok());
  auto cublas = Cublas::Load();
  if (!cublas.ok()) GTEST_SKIP() << cublas.status().message();
  std::shared_ptr<Cublas> blas(std::move(*cublas));
  auto parsed = ParseHloModule(R"(
HloModule gemms
ENTRY %main (x: f32[2,48,64], y: f32[2,80,64], w: f32[64,96], v: f32[96,64], u: f32[96,96]) -> (f32[2,48,64], f32[96,96], f32[64,96], f32[96,64]) {
  %x = f32[2,48,64] parameter(0)
  %y = f32[2,80,64] parameter(1)
  %w = f32[64,96] parameter(2)
  %v = f32[96,64] parameter(3)
  %u = f32[96,96] parameter(4)
  %d1 = f32[2,48,80] dot(%x, %y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  %t = f32[2,80,48] transpose(%d1), dimensions={0,2,1}
  %d2 = f32[2,48,64] dot(%t, %y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %r = f32[96,64] reshape(%x)
  %d3 = f32[96,96] dot(%r, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d4 = f32[64,96] dot(%v, %u), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %d5 = f32[96,64] dot(%u, %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %out = (f32[2,48,64], f32[96,96], f32[64,96], f32[96,64]) tuple(%d2, %d3, %d4, %d5)
}
)",
                               "gemms");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  RandomArgs random = RandomArguments(*module, 5);
  const std::vector<Literal>& args = random.values;
  const std::vector<const Literal*>& ptrs = random.ptrs;
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto exe = GpuExecutable::Create(module, d, blas);
  ASSERT_TRUE(exe.ok()) << exe.status();
  int library = 0;
  for (const kernel_plan::Step& s : (*exe)->plan().steps)
    library += s.kind == kernel_plan::Disposition::kLibrary;
  EXPECT_EQ(library, 5);
  auto got = (*exe)->Run(ptrs);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, *want, "gemms", "gpu cublas", 1e-3);
}

// Collectives through NCCL on device memory. One GPU allows one rank: a one-device run does
// all-reduce (f32 sum, pred or), all-gather and reduce-scatter through a one-rank NCCL
// communicator; two in-process devices on this one GPU (which NCCL refuses) must notice
// the shared GPU and take the host transport, with the evaluator's results either way.
TEST(GpuVsEvaluator, CollectivesThroughNccl) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no usable GPU: " << driver.status().message();
  std::shared_ptr<CudaDriver> d(std::move(*driver));
  auto loaded = Nccl::Load();
  if (!loaded.ok()) GTEST_SKIP() << loaded.status().message();
  std::shared_ptr<Nccl> nccl(std::move(*loaded));
  std::printf("NCCL %s (%s)\n", nccl->version().c_str(), nccl->library().c_str());
  const std::string reducers = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%or (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %s = pred[] or(%a, %b)
}
)";
  for (int devices : {1, 2}) {
    SCOPED_TRACE(devices);
    const int n = devices;
    const std::string text = absl::StrCat(
        "HloModule coll, replica_count=", n, "\n", reducers,
        "ENTRY %main (x: f32[4,6], p: pred[8]) -> (f32[4,6], f32[", 4 * n, ",6], f32[", 4 / n,
        ",6], pred[8]) {\n"
        "  %x = f32[4,6] parameter(0)\n  %p = pred[8] parameter(1)\n"
        "  %e = f32[4,6] exponential(%x)\n"
        "  %ar = f32[4,6] all-reduce(%e), replica_groups={}, to_apply=%add\n"
        "  %ag = f32[",
        4 * n,
        ",6] all-gather(%e), replica_groups={}, dimensions={0}\n"
        "  %rs = f32[",
        4 / n,
        ",6] reduce-scatter(%e), replica_groups={}, dimensions={0}, "
        "to_apply=%add\n"
        "  %po = pred[8] all-reduce(%p), replica_groups={}, to_apply=%or\n"
        "  %m = f32[4,6] multiply(%ar, %ar)\n"
        "  ROOT %t = (f32[4,6], f32[",
        4 * n, ",6], f32[", 4 / n, ",6], pred[8]) tuple(%m, %ag, %rs, %po)\n}\n");
    auto parsed = ParseHloModule(text, "coll");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::shared_ptr<const HloModule> module = std::move(*parsed);
    std::vector<RandomArgs> args;
    for (int i = 0; i < n; ++i) args.push_back(RandomArguments(*module, 5 + i));
    std::vector<Literal> want(n), got(n);
    ASSERT_TRUE(RunOnLocalDevices({n, 1}, [&](int i) -> absl::Status {
                  HloEvaluator evaluator;
                  absl::StatusOr<Literal> r = evaluator.Evaluate(*module, args[i].values);
                  if (!r.ok()) return r.status();
                  want[i] = *std::move(r);
                  return absl::OkStatus();
                }).ok());
    auto exe = GpuExecutable::Create(module, d, nullptr, nccl);
    ASSERT_TRUE(exe.ok()) << exe.status();
    const int64_t calls_before = nccl->calls();
    std::vector<DeviceRunStats> stats(n);
    absl::Status s = RunOnLocalDevices({n, 1}, [&](int i) -> absl::Status {
      absl::StatusOr<Literal> r = (*exe)->Run(args[i].ptrs, &stats[i]);
      if (!r.ok()) return r.status();
      got[i] = *std::move(r);
      return absl::OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s;
    for (int i = 0; i < n; ++i) {
      ExpectClose(got[i], want[i], "collectives", "gpu", 1e-5);
      EXPECT_EQ(stats[i].device_collectives, n == 1 ? 4 : 0);
    }
    EXPECT_EQ(nccl->calls() - calls_before, n == 1 ? 4 : 0);
  }
}

TEST(GpuVsEvaluator, OutOfMemoryIsResourceExhausted) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no usable GPU: " << driver.status().message();
  ASSERT_TRUE((*driver)->MakeCurrent().ok());
  auto p = (*driver)->Alloc(size_t{1} << 50);  // 1 PiB: more than any GPU has
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
  EXPECT_NE(std::string(p.status().message()).find("1125899906842624 bytes"), std::string::npos)
      << p.status();
}

}  // namespace
}  // namespace kiln::gpu
