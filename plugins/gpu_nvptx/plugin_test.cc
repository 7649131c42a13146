// The gpu-nvptx plugin through its C ABI and the CLI on a machine without a GPU: it loads,
// reports itself unavailable with the driver reason, still answers capability queries, and
// `kiln run --device auto` falls back to a host plugin. On a machine with libcuda the
// unavailable checks are skipped.
#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "kiln_plugin_api.h"

namespace {

const std::string kPluginDir = KILN_BUILD_PLUGIN_DIR;

bool HaveDriver() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) ::dlclose(h);
  return h != nullptr;
}

const KILN_Api* LoadApi() {
  std::string path = kPluginDir + "/libkiln_plugin_gpu_nvptx.so";
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    ADD_FAILURE() << "cannot load " << path << ": " << ::dlerror();
    return nullptr;
  }
  auto get = reinterpret_cast<const KILN_Api* (*)()>(::dlsym(h, "KILN_GetApi"));
  if (get == nullptr) {
    ADD_FAILURE() << "no KILN_GetApi in " << path;
    return nullptr;
  }
  return get();
}

std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf;
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  *status = ::pclose(p);
  return out;
}

TEST(GpuNvptxPlugin, IdentifiesItself) {
  const KILN_Api* api = LoadApi();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->plugin_name, "gpu-nvptx");
  EXPECT_EQ(api->default_priority, KILN_PRIORITY_GPU);
  EXPECT_EQ(api->default_priority, 200);
}

TEST(GpuNvptxPlugin, UnavailableWithoutDriver) {
  if (HaveDriver()) GTEST_SKIP() << "libcuda.so.1 is present: the plugin may be available here";
  const KILN_Api* api = LoadApi();
  ASSERT_NE(api, nullptr);
  KILN_Initialize_Args init{};
  init.struct_size = sizeof(init);
  ASSERT_EQ(api->initialize(&init), nullptr);
  EXPECT_EQ(init.available, 0);
  ASSERT_NE(init.unavailable_reason, nullptr);
  EXPECT_STREQ(init.unavailable_reason, "no CUDA driver: libcuda.so.1 not found");
  // Creating a client fails cleanly with UNAVAILABLE and the reason.
  KILN_Client_Create_Args cc{};
  cc.struct_size = sizeof(cc);
  KILN_Error* err = api->client_create(&cc);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(api->error_message(err)).find("libcuda.so.1 not found"), std::string::npos);
  api->error_destroy(err);
}

TEST(GpuNvptxPlugin, CapabilityReportsHostFallbackAsUnsupported) {
  const KILN_Api* api = LoadApi();
  ASSERT_NE(api, nullptr);
  // A sort has no GPU kernel: reported unsupported, and so is the loop whose body sorts.
  const std::string hlo = R"(HloModule cap
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
%cond (s: f32[8]) -> pred[] {
  %s = f32[8] parameter(0)
  ROOT %f = pred[] constant(false)
}
%body (s: f32[8]) -> f32[8] {
  %s = f32[8] parameter(0)
  ROOT %sorted = f32[8] sort(%s), dimensions={0}, to_apply=%lt
}
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %e = f32[8]{0} exponential(f32[8]{0} %x)
  %d = f32[8]{0} sort(%e), dimensions={0}, to_apply=%lt
  ROOT %w = f32[8]{0} while(%d), condition=%cond, body=%body
}
)";
  struct Seen {
    std::map<std::string, std::string> unsupported;
    std::map<std::string, int> supported;
  } seen;
  KILN_Capability_Args args{};
  args.struct_size = sizeof(args);
  args.hlo_text = hlo.data();
  args.hlo_text_size = hlo.size();
  args.user_data = &seen;
  args.report_supported = [](void* u, const char* name) {
    static_cast<Seen*>(u)->supported[name]++;
  };
  args.report_unsupported = [](void* u, const char* name, const char* why) {
    static_cast<Seen*>(u)->unsupported[name] = why;
  };
  KILN_Error* err = api->capability(&args);
  ASSERT_EQ(err, nullptr) << api->error_message(err);
  EXPECT_EQ(seen.supported.count("e"), 1u);
  ASSERT_EQ(seen.unsupported.count("d"), 1u);
  EXPECT_NE(seen.unsupported["d"].find("host evaluator"), std::string::npos)
      << seen.unsupported["d"];
  EXPECT_EQ(seen.supported.count("d"), 0u);
  ASSERT_EQ(seen.unsupported.count("w"), 1u);
  EXPECT_NE(seen.unsupported["w"].find("sorted"), std::string::npos) << seen.unsupported["w"];
}

TEST(GpuNvptxPlugin, CliListsItAndAutoFallsBack) {
  if (HaveDriver()) GTEST_SKIP() << "libcuda.so.1 is present: auto may pick the GPU here";
  const std::string env = "KILN_PLUGIN_PATH=" + kPluginDir + " ";
  int status = -1;
  std::string out = RunCommand(env + KILN_EXE " devices", &status);
  EXPECT_EQ(status, 0) << out;
  size_t line = out.find("gpu-nvptx");
  ASSERT_NE(line, std::string::npos) << out;
  std::string row = out.substr(line, out.find('\n', line) - line);
  EXPECT_NE(row.find("200"), std::string::npos) << row;
  EXPECT_NE(row.find("unavailable"), std::string::npos) << row;
  EXPECT_NE(row.find("no CUDA driver: libcuda.so.1 not found"), std::string::npos) << row;

  out = RunCommand(env + KILN_EXE " run " KILN_SOURCE_ROOT
                                  "/examples/hlo/softmax.hlo --device auto --benchmark 1",
                   &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out.find("gpu-nvptx"), std::string::npos) << out;
  EXPECT_TRUE(out.find("device=cpu-llvm") != std::string::npos ||
              out.find("device=interpreter") != std::string::npos)
      << out;

  // Asking for it by name is a clear error naming the reason.
  out = RunCommand(
      env + KILN_EXE " run " KILN_SOURCE_ROOT "/examples/hlo/softmax.hlo --device gpu-nvptx",
      &status);
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("no CUDA driver: libcuda.so.1 not found"), std::string::npos) << out;
}

}  // namespace
