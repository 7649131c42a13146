// cpu-llvm's on-disk object cache (KILN_CPU_CACHE_DIR, on plugins/common/disk_cache): a
// fresh compiler with the same module loads the objects instead of running LLVM, with
// results still equal to the evaluator's; a damaged entry is recompiled and replaced.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("kiln_cpu_cache_test_" + std::to_string(getpid()) + "_" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::vector<fs::path> Entries() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path());
    return out;
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

constexpr const char* kModule = R"(HloModule cached
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[32,64], y: f32[64]) -> (f32[32], f32[32,64]) {
  %x = f32[32,64]{1,0} parameter(0)
  %y = f32[64]{0} parameter(1)
  %yb = f32[32,64]{1,0} broadcast(%y), dimensions={1}
  %m = f32[32,64]{1,0} multiply(%x, %yb)
  %e = f32[32,64]{1,0} exponential(%m)
  %z = f32[] constant(0)
  %r = f32[32]{0} reduce(%e, %z), dimensions={1}, to_apply=%add
  ROOT %t = (f32[32]{0}, f32[32,64]{1,0}) tuple(%r, %e)
})";

// Compiles kModule (parsed afresh) with a new compiler using `dir`, checks the result
// against the evaluator and returns the compiler's JIT stats.
JitStats CompileInFreshCompiler(const fs::path& dir) {
  auto parsed = ParseHloModule(kModule, "cached");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module = std::move(*parsed);
  CompileOptions opts;
  opts.cache_dir = dir.string();
  auto compiler = CpuCompiler::Create(opts);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return {};
  std::mt19937 rng(3);
  std::vector<Literal> args;
  for (const HloInstruction* p : module->entry()->parameters())
    args.push_back(codegen_testing::RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = (*exe)->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (want.ok() && got.ok()) codegen_testing::ExpectClose(*got, *want, "cached", "jit", 2e-4);
  return (*compiler)->stats().jit;
}

TEST(ObjectCache, FreshCompilerLoadsObjectsInsteadOfRunningLlvm) {
  TempDir dir;
  JitStats first = CompileInFreshCompiler(dir.path());
  EXPECT_GT(first.codegen_modules, 0);
  EXPECT_EQ(first.cache_loads, 0);
  std::vector<fs::path> entries = dir.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_GT(fs::file_size(entries[0]), 1000u);  // holds the kernels' machine code

  JitStats second = CompileInFreshCompiler(dir.path());
  EXPECT_EQ(second.codegen_modules, 0);  // LLVM's optimizer and code generator did not run
  EXPECT_EQ(second.cache_loads, 1);
}

TEST(ObjectCache, CorruptEntryIsRecompiledAndReplaced) {
  TempDir dir;
  CompileInFreshCompiler(dir.path());
  ASSERT_EQ(dir.Entries().size(), 1u);
  const fs::path entry = dir.Entries()[0];
  const std::string good = ReadFile(entry);
  for (const std::string& bad :
       {good.substr(0, good.size() / 2), std::string(good.size(), 'x'),
        good.substr(0, good.size() / 2) + "garbage" + good.substr(good.size() / 2 + 7)}) {
    WriteFile(entry, bad);
    JitStats recompiled = CompileInFreshCompiler(dir.path());
    EXPECT_GT(recompiled.codegen_modules, 0);
    EXPECT_EQ(recompiled.cache_loads, 0);
    // The recompile stored a good entry again.
    JitStats reloaded = CompileInFreshCompiler(dir.path());
    EXPECT_EQ(reloaded.codegen_modules, 0);
    EXPECT_EQ(reloaded.cache_loads, 1);
  }
}

TEST(ObjectCache, OffByDefaultWithoutTheEnvironmentVariable) {
  unsetenv("KILN_CPU_CACHE_DIR");
  auto compiler = CpuCompiler::Create();
  ASSERT_TRUE(compiler.ok());
  EXPECT_EQ((*compiler)->object_cache(), nullptr);
  TempDir dir;
  setenv("KILN_CPU_CACHE_DIR", dir.path().c_str(), 1);
  auto with_env = CpuCompiler::Create();
  unsetenv("KILN_CPU_CACHE_DIR");
  ASSERT_TRUE(with_env.ok());
  ASSERT_NE((*with_env)->object_cache(), nullptr);
  EXPECT_EQ((*with_env)->object_cache()->dir(), dir.path().string());
}

}  // namespace
}  // namespace kiln::cpu
