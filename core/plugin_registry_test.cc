// Registry and plugin-wrapper tests: broken test plugins are rejected with the right
// reasons while good ones load; priorities, platforms, config parsing; and the C-only
// example plugin driven end to end through the C++ wrapper.
#include "core/plugin_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/module_executable.h"
#include "core/plugin_paths.h"
#include "hlo/text/parser.h"

#ifndef KILN_TEST_PLUGIN_DIR
#error "KILN_TEST_PLUGIN_DIR must be defined by the build"
#endif

namespace kiln {
namespace {

const PluginEntry* ByFile(const PluginRegistry& r, const std::string& file) {
  for (const PluginEntry& e : r.entries()) {
    if (std::filesystem::path(e.path).filename() == file) return &e;
  }
  return nullptr;
}

PluginRegistry Load(const DeviceConfig& config = {}) {
  return PluginRegistry::Discover(
      config, {KILN_TEST_PLUGIN_DIR, KILN_BUILD_PLUGIN_DIR, KILN_EXAMPLE_PLUGIN_DIR});
}

void ExpectRejected(const PluginRegistry& r, const std::string& file, const std::string& phrase) {
  const PluginEntry* e = ByFile(r, file);
  ASSERT_NE(e, nullptr) << file << " was not discovered";
  EXPECT_EQ(e->state, PluginEntry::State::kRejected) << file;
  EXPECT_EQ(e->plugin, nullptr) << file;
  EXPECT_NE(e->reason.find(phrase), std::string::npos) << file << ": " << e->reason;
}

TEST(PluginRegistry, BrokenPluginsAreRejectedWithReasons) {
  PluginRegistry r = Load();
  ExpectRejected(r, "libkiln_plugin_bad_major.so",
                 "ABI major version 99 does not match the core's 1");
  ExpectRejected(r, "libkiln_plugin_init_fails.so",
                 "initialize failed: simulated failure: device firmware missing");
  ExpectRejected(r, "libkiln_plugin_no_symbol.so", "missing entry symbol KILN_GetApi");
  ExpectRejected(r, "libkiln_plugin_null_table.so", "null table");
  ExpectRejected(r, "libkiln_plugin_small_table.so", "struct_size 8 is too small");
  ExpectRejected(r, "libkiln_plugin_missing_entry.so", "required entry 'compile' is null");
  ExpectRejected(r, "libkiln_plugin_dup_b.so", "duplicate plugin name 'dup-test'");
}

TEST(PluginRegistry, GoodPluginsStillLoad) {
  PluginRegistry r = Load();
  const PluginEntry* interp = r.Find("interpreter");
  ASSERT_NE(interp, nullptr);
  EXPECT_EQ(interp->state, PluginEntry::State::kAvailable);
  EXPECT_EQ(interp->priority, 10);
  const PluginEntry* dup = ByFile(r, "libkiln_plugin_dup_a.so");
  ASSERT_NE(dup, nullptr);
  EXPECT_EQ(dup->state, PluginEntry::State::kAvailable);
  EXPECT_EQ(dup->name, "dup-test");
  const PluginEntry* example = r.Find("elementwise-example");
  ASSERT_NE(example, nullptr);
  EXPECT_EQ(example->state, PluginEntry::State::kAvailable);
  EXPECT_EQ(example->priority, 300);
}

TEST(PluginRegistry, UnavailablePluginLoadsButIsNotACandidate) {
  PluginRegistry r = Load();
  const PluginEntry* e = r.Find("unavailable-test");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->state, PluginEntry::State::kUnavailable);
  EXPECT_EQ(e->reason, "no accelerator found (test stub)");
  for (const PluginEntry* c : r.Candidates()) EXPECT_NE(c->name, "unavailable-test");
  absl::StatusOr<Plugin*> p = r.Get("unavailable-test");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("no accelerator found"), std::string::npos);
}

TEST(PluginRegistry, CandidatesFollowPriorityAndConfigOverrides) {
  {
    PluginRegistry r = Load();
    std::vector<std::string> names;
    // cpu-llvm (priority 100) is in the build's plugin folder only when LLVM was found.
    for (const PluginEntry* c : r.Candidates())
      if (c->name != "cpu-llvm") names.push_back(c->name);
    EXPECT_EQ(names, (std::vector<std::string>{"elementwise-example", "dup-test", "interpreter"}));
  }
  {
    DeviceConfig config;
    config.priorities["interpreter"] = 1000;
    PluginRegistry r = Load(config);
    ASSERT_FALSE(r.Candidates().empty());
    EXPECT_EQ(r.Candidates().front()->name, "interpreter");
    EXPECT_EQ(r.Find("interpreter")->priority, 1000);
  }
}

TEST(PluginRegistry, PlatformsRestrictAndOrder) {
  DeviceConfig config;
  config.platforms = {"interpreter", "nonexistent", "dup-test"};
  config.platforms_source = "KILN_PLATFORMS";
  PluginRegistry r = Load(config);
  std::vector<std::string> names;
  for (const PluginEntry* c : r.Candidates()) names.push_back(c->name);
  EXPECT_EQ(names, (std::vector<std::string>{"interpreter", "dup-test"}));
  EXPECT_EQ(r.missing_platforms(), std::vector<std::string>{"nonexistent"});
  // Left out: learnt by name in a child process, never loaded here.
  bool seen = false;
  for (const PluginEntry& e : r.entries()) {
    if (e.name != "elementwise-example") continue;
    seen = true;
    EXPECT_EQ(e.state, PluginEntry::State::kDisabled);
    EXPECT_EQ(e.plugin, nullptr);
    EXPECT_NE(e.reason.find("not loaded"), std::string::npos) << e.reason;
  }
  EXPECT_TRUE(seen);
  absl::StatusOr<Plugin*> p = r.Get("elementwise-example");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("disabled"), std::string::npos);
  // Files the list leaves out are probed, so their load failures are still reported.
  ExpectRejected(r, "libkiln_plugin_bad_major.so", "ABI major version 99");
}

// A scratch folder for one test, removed after it.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path, ec);
  }
};

TEST(PluginRegistry, FilesOrFoldersWritableByOthersAreRefused) {
  namespace fs = std::filesystem;
  const fs::path interpreter = fs::path(KILN_BUILD_PLUGIN_DIR) / "libkiln_plugin_interpreter.so";
  ScratchDir file_dir("kiln_ww_file"), open_dir("kiln_ww_dir");
  const fs::path loose = file_dir.path / "libkiln_plugin_loose.so";
  fs::copy_file(interpreter, loose);
  fs::permissions(loose, fs::perms::others_write, fs::perm_options::add);
  fs::copy_file(interpreter, open_dir.path / "libkiln_plugin_open.so");
  fs::permissions(open_dir.path, fs::perms::all);  // 0777, no sticky bit
  PluginRegistry r = PluginRegistry::Discover({}, {file_dir.path, open_dir.path});
  ExpectRejected(r, "libkiln_plugin_loose.so", "is writable by others (mode 757)");
  ExpectRejected(r, "libkiln_plugin_open.so", "its folder");
}

TEST(PluginRegistry, EmptyAndNonElfFilesAreRejected) {
  ScratchDir dir("kiln_not_elf");
  { std::ofstream empty(dir.path / "libkiln_plugin_empty.so"); }
  std::ofstream(dir.path / "libkiln_plugin_text.so") << "#!/bin/sh\necho not a library\n";
  PluginRegistry r = PluginRegistry::Discover({}, {dir.path, KILN_BUILD_PLUGIN_DIR});
  ExpectRejected(r, "libkiln_plugin_empty.so", "cannot load");
  ExpectRejected(r, "libkiln_plugin_text.so", "cannot load");
  EXPECT_TRUE(r.Get("interpreter").ok());
}

TEST(PluginRegistry, OneLibraryReachedTwiceLoadsOnce) {
  namespace fs = std::filesystem;
  ScratchDir links("kiln_links");
  fs::create_symlink(fs::path(KILN_BUILD_PLUGIN_DIR) / "libkiln_plugin_interpreter.so",
                     links.path / "libkiln_plugin_interp_link.so");
  PluginRegistry r = PluginRegistry::Discover({}, {links.path, KILN_BUILD_PLUGIN_DIR});
  int interpreters = 0;
  for (const PluginEntry& e : r.entries()) {
    interpreters += e.name == "interpreter";
    EXPECT_EQ(e.reason.find("duplicate"), std::string::npos) << e.path << ": " << e.reason;
  }
  EXPECT_EQ(interpreters, 1);
}

#ifdef KILN_HOSTILE_PLUGIN_DIR
// Plugins that crash, exit or hang while loading, next to good ones: probed in a child
// process, they are rejected with what happened and the good ones still load.
void ExpectHostileRejected(const PluginRegistry& r, bool isolated) {
  const char* crash = isolated ? "crashed: signal 11" : "crashed while loading: signal 11";
  ExpectRejected(r, "libkiln_plugin_crash_get_api.so", crash);
  ExpectRejected(r, "libkiln_plugin_crash_init.so", crash);
  ExpectRejected(r, "libkiln_plugin_exit_init.so", "exited with code 3");
  ExpectRejected(
      r, "libkiln_plugin_hang_init.so",
      isolated ? "did not answer initialize within 0.5 s" : "did not finish loading within 0.5 s");
}

TEST(PluginRegistry, IsolationSurvivesPluginsThatCrashExitOrHangWhileLoading) {
  DeviceConfig config;
  config.isolate = {"all"};
  config.plugin_deadline_s = 0.5;
  PluginRegistry r =
      PluginRegistry::Discover(config, {KILN_HOSTILE_PLUGIN_DIR, KILN_BUILD_PLUGIN_DIR});
  ExpectHostileRejected(r, true);
  absl::StatusOr<Plugin*> interpreter = r.Get("interpreter");
  EXPECT_TRUE(interpreter.ok()) << interpreter.status();
}

TEST(PluginRegistry, PlatformsNeverLoadWhatTheyLeaveOut) {
  DeviceConfig config;
  config.platforms = {"interpreter"};
  config.platforms_source = "KILN_PLATFORMS";
  config.plugin_deadline_s = 0.5;
  PluginRegistry r =
      PluginRegistry::Discover(config, {KILN_HOSTILE_PLUGIN_DIR, KILN_BUILD_PLUGIN_DIR});
  ExpectHostileRejected(r, false);
  std::vector<std::string> names;
  for (const PluginEntry* c : r.Candidates()) names.push_back(c->name);
  EXPECT_EQ(names, std::vector<std::string>{"interpreter"});
  const PluginEntry* cpu = ByFile(r, "libkiln_plugin_cpu_llvm.so");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->state, PluginEntry::State::kDisabled);
  EXPECT_EQ(cpu->plugin, nullptr);
}

// Only the plugins isolation names are probed: the names compare with `_` for `-`.
TEST(PluginRegistry, IsolationByName) {
  DeviceConfig config;
  config.isolate = {"crash-init", "exit_init"};
  EXPECT_TRUE(config.Isolated("crash_init"));
  EXPECT_TRUE(config.Isolated("exit-init"));
  EXPECT_FALSE(config.Isolated("cpu_llvm"));
  config.isolate = {"all"};
  EXPECT_TRUE(config.Isolated("anything"));
}
#endif

TEST(PluginRegistry, UnknownAndRejectedNamesExplainThemselves) {
  PluginRegistry r = Load();
  absl::StatusOr<Plugin*> p = r.Get("no-such-device");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(p.status().message()).find("interpreter"), std::string::npos);
}

TEST(PluginRegistry, NamingConvention) {
  EXPECT_TRUE(IsPluginFileName("libkiln_plugin_interpreter.so"));
  EXPECT_FALSE(IsPluginFileName("libkiln_plugin_.so"));
  EXPECT_FALSE(IsPluginFileName("libkiln_plugin_x.so.p"));
  EXPECT_FALSE(IsPluginFileName("libkiln_core.so"));
  EXPECT_FALSE(IsPluginFileName("kiln_plugin_x.so"));
}

TEST(DeviceConfig, ParsesKeysAndComments) {
  absl::StatusOr<DeviceConfig> c = ParseDeviceConfig(
      "# devices\n  platforms = cpu-llvm, interpreter  # order matters\n\n"
      "priority.interpreter = 5\nplugin_path = /a:/b\n",
      "devices.conf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->platforms, (std::vector<std::string>{"cpu-llvm", "interpreter"}));
  EXPECT_EQ(c->platforms_source, "devices.conf:2");
  EXPECT_EQ(c->priorities.at("interpreter"), 5);
  EXPECT_EQ(c->plugin_paths, (std::vector<std::string>{"/a", "/b"}));
}

TEST(DeviceConfig, ErrorsNameFileAndLine) {
  absl::StatusOr<DeviceConfig> c = ParseDeviceConfig("platforms = a\nnonsense\n", "x.conf");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(std::string(c.status().message()).rfind("x.conf:2: ", 0), 0u) << c.status();
  c = ParseDeviceConfig("priority.gpu = high\n", "x.conf");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("x.conf:1"), std::string::npos);
  c = ParseDeviceConfig("colour = blue\n", "x.conf");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("unknown key 'colour'"), std::string::npos);
  c = ParseDeviceConfig("plugin_deadline_s = soon\n", "x.conf");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("x.conf:1: plugin_deadline_s needs a positive"),
            std::string::npos)
      << c.status();
}

TEST(DeviceConfig, IsolationKeys) {
  absl::StatusOr<DeviceConfig> c =
      ParseDeviceConfig("isolate = gpu-nvptx, vendor\nplugin_deadline_s = 2.5\n", "x.conf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->isolate, (std::vector<std::string>{"gpu-nvptx", "vendor"}));
  EXPECT_DOUBLE_EQ(c->plugin_deadline_s, 2.5);
  EXPECT_TRUE(c->Isolated("gpu_nvptx"));
  EXPECT_FALSE(c->Isolated("interpreter"));
  EXPECT_EQ(c->plugin_restarts, 0);
  EXPECT_EQ(c->plugin_memory_mb, 0);
  c = ParseDeviceConfig("plugin_restarts = 3\nplugin_memory_mb = 2048\n", "x.conf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->plugin_restarts, 3);
  EXPECT_EQ(c->plugin_memory_mb, 2048);
  for (const char* bad : {"plugin_restarts = -1\n", "plugin_restarts = 1.5\n",
                          "plugin_memory_mb = lots\n", "plugin_memory_mb = -4\n"}) {
    c = ParseDeviceConfig(bad, "x.conf");
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_EQ(std::string(c.status().message()).rfind("x.conf:1: plugin_", 0), 0u) << c.status();
    }
  }
}

#ifdef __linux__
// Loops for ever unless x == 0; returns x + 1000.
constexpr const char* kSpinModule = R"(HloModule spin
%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %z = s32[] constant(0)
  ROOT %t = pred[] compare(%s, %z), direction=NE
}
%body (s: s32[]) -> s32[] {
  ROOT %s = s32[] parameter(0)
}
ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %w = s32[] while(%x), condition=%cond, body=%body
  %k = s32[] constant(1000)
  ROOT %r = s32[] add(%w, %k)
}
)";

// The core API's run deadline: the interpreter, loaded in process, runs the module in a
// helper process that is stopped at the deadline and started again for the next run.
TEST(ModuleExecutable, TimeoutCancelsARunAndTheNextRunWorks) {
  PluginRegistry r = PluginRegistry::Discover({}, {KILN_BUILD_PLUGIN_DIR});
  absl::StatusOr<Plugin*> in_process = r.Get("interpreter");
  ASSERT_TRUE(in_process.ok()) << in_process.status();
  EXPECT_FALSE((*in_process)->isolated());
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(kSpinModule, "spin");
  ASSERT_TRUE(module.ok()) << module.status();
  ModuleCompileOptions options;
  options.device = "interpreter";
  options.timeout_s = 0.5;
  absl::StatusOr<std::unique_ptr<ModuleExecutable>> exe =
      ModuleExecutable::Compile(r, **module, options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  ASSERT_NE((*exe)->plugin(), nullptr);
  EXPECT_TRUE((*exe)->plugin()->isolated());
  const uint64_t generation = (*exe)->plugin()->generation();
  std::vector<Literal> spin, stop;
  spin.push_back(Literal::Scalar<int32_t>(PrimitiveType::S32, 7));
  stop.push_back(Literal::Scalar<int32_t>(PrimitiveType::S32, 0));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<Literal>> out = (*exe)->Execute(spin);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_LT(took, 15.0);
  EXPECT_EQ((*exe)->plugin()->generation(), generation + 1);
  EXPECT_TRUE((*exe)->plugin()->alive());  // stopped, not lost: it starts again
  out = (*exe)->Execute(stop);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].Get<int32_t>({}), 1000);
}
#endif

// The C-only example plugin parses HLO text itself, so it runs without Kiln's parser.
constexpr const char* kElementwiseModule = R"(HloModule ew

ENTRY %main (x: f32[2,2], y: f32[2,2]) -> f32[2,2] {
  %x = f32[2,2]{1,0} parameter(0)
  %y = f32[2,2]{1,0} parameter(1)
  %mul = f32[2,2]{1,0} multiply(f32[2,2]{1,0} %x, f32[2,2]{1,0} %y)
  %neg = f32[2,2]{1,0} negate(f32[2,2]{1,0} %x)
  ROOT %max = f32[2,2]{1,0} maximum(f32[2,2]{1,0} %mul, f32[2,2]{1,0} %neg)
}
)";

TEST(Plugin, ExamplePluginRunsThroughTheWrapper) {
  PluginRegistry r = Load();
  absl::StatusOr<Plugin*> p = r.Get("elementwise-example");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<CapabilityReport> cap = (*p)->Capability(kElementwiseModule);
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_EQ(cap->supported, (std::vector<std::string>{"x", "y", "mul", "neg", "max"}));
  EXPECT_TRUE(cap->unsupported.empty());

  absl::StatusOr<std::unique_ptr<Executable>> exe = (*p)->CompileText(kElementwiseModule);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->num_parameters(), 2u);
  EXPECT_EQ((*exe)->num_outputs(), 1u);
  Shape s(PrimitiveType::F32, {2, 2});
  std::vector<Literal> args = {Literal::FromDoubles(s, {1, -2, 3, 0.5}),
                               Literal::FromDoubles(s, {2, 4, -1, -8})};
  absl::StatusOr<std::vector<Literal>> out = (*exe)->Execute(args);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  // max(x*y, -x): max(2,-1)=2, max(-8,2)=2, max(-3,-3)=-3, max(-4,-0.5)=-0.5
  EXPECT_EQ((*out)[0], Literal::FromDoubles(s, {2, 2, -3, -0.5}));

  // Optional entries it leaves NULL are reported, never called.
  absl::StatusOr<std::string> bytes = (*exe)->Serialize();
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(bytes.status().message()).find("unsupported by plugin elementwise-example"),
            std::string::npos);
  EXPECT_FALSE((*p)->Deserialize("x").ok());
}

TEST(Plugin, ExampleCapabilitySaysNoToOtherOps) {
  PluginRegistry r = Load();
  absl::StatusOr<Plugin*> p = r.Get("elementwise-example");
  ASSERT_TRUE(p.ok());
  absl::StatusOr<CapabilityReport> cap = (*p)->Capability(R"(HloModule d
ENTRY %main (a: f32[2,2], b: f32[2,2]) -> f32[2,2] {
  %a = f32[2,2]{1,0} parameter(0)
  %b = f32[2,2]{1,0} parameter(1)
  ROOT %dot = f32[2,2]{1,0} dot(f32[2,2]{1,0} %a, f32[2,2]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_EQ(cap->supported, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(cap->unsupported.size(), 1u);
  EXPECT_EQ(cap->unsupported[0].first, "dot");
}

TEST(Plugin, WrongArgumentsAreErrorsNotCrashes) {
  PluginRegistry r = Load();
  absl::StatusOr<Plugin*> p = r.Get("elementwise-example");
  ASSERT_TRUE(p.ok());
  absl::StatusOr<std::unique_ptr<Executable>> exe = (*p)->CompileText(kElementwiseModule);
  ASSERT_TRUE(exe.ok());
  Shape s(PrimitiveType::F32, {2, 2});
  std::vector<Literal> one = {Literal(s)};
  EXPECT_FALSE((*exe)->Execute(one).ok());
  EXPECT_FALSE((*p)->CompileText("not hlo at all").ok());
}

TEST(Plugin, InterpreterBuffersRoundTrip) {
  PluginRegistry r = Load();
  absl::StatusOr<Plugin*> p = r.Get("interpreter");
  ASSERT_TRUE(p.ok()) << p.status();
  for (PrimitiveType t : {PrimitiveType::F32, PrimitiveType::S8, PrimitiveType::PRED,
                          PrimitiveType::BF16, PrimitiveType::C128}) {
    Literal l = Literal::FromDoubles(Shape(t, {3, 1}), {1, 0, -1});
    absl::StatusOr<DeviceBuffer> b = (*p)->ToDevice(l);
    ASSERT_TRUE(b.ok()) << b.status();
    absl::StatusOr<Shape> shape = b->shape();
    ASSERT_TRUE(shape.ok());
    EXPECT_EQ(shape->ToString(false), l.shape().ToString(false));
    absl::StatusOr<Literal> back = b->ToLiteral();
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, l);
  }
  absl::StatusOr<std::vector<DeviceDescription>> devices = (*p)->Devices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].kind, "host-interpreter");
}

}  // namespace
}  // namespace kiln
