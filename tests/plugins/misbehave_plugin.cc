// A plugin that misbehaves when it runs, for the isolation tests: "test-misbehave"
// (priority 1) runs the HLO evaluator like the interpreter, except that a module whose name
// contains one of these words does what it says when executed:
//   crash   dereferences a null pointer (SIGSEGV)
//   abort   calls abort() (SIGABRT)
//   hang    never returns
//   exit    calls exit(7)
//   garbage returns the right shape filled with 12345
//   hog     takes memory in 64 MiB pieces, touching each, until an allocation fails (run it
//           only under a memory limit: KILN_PLUGIN_MEMORY_MB)
//   huge    asks for 64 TiB at once, which fails at once (safe in process)
// An allocation that fails throws std::bad_alloc, which the plugin kit turns into
// RESOURCE_EXHAUSTED. With "oncompile" also in the name, it happens when compiling instead.
// Loaded in the host it takes the host down with it; isolated (KILN_ISOLATE) the host reports
// what happened and keeps going.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "plugins/common/host_plugin.h"

namespace kiln::test_misbehave {
namespace {

volatile int* volatile nowhere = nullptr;
volatile char sink = 0;
constexpr size_t kPiece = size_t{64} << 20;

void Fill(Literal& value) {
  if (value.IsTuple()) {
    for (Literal& e : value.elements()) Fill(e);
    return;
  }
  for (int64_t i = 0; i < value.element_count(); ++i) value.SetFromDouble(i, 12345);
}

// Does what the module's name says (nothing for "garbage" or a good name).
void Misbehave(const std::string& name) {
  auto has = [&](const char* word) { return name.find(word) != std::string::npos; };
  if (has("crash")) sink = static_cast<char>(*nowhere);
  if (has("abort")) std::abort();
  if (has("hang")) {
    for (;;) pause();
  }
  if (has("exit")) std::exit(7);
  if (has("hog")) {
    std::vector<std::unique_ptr<char[]>> held;
    for (;;) {
      held.emplace_back(new char[kPiece]);
      std::memset(held.back().get(), 1, kPiece);
    }
  }
  if (has("huge")) {
    std::unique_ptr<char[]> all(new char[size_t{1} << 46]);
    sink = all[0] = 1;
  }
}

class MisbehavingProgram : public plugin_support::HostProgram {
 public:
  explicit MisbehavingProgram(std::shared_ptr<const HloModule> module)
      : name_(module->name()), exact_(std::move(module)) {
    if (name_.find("oncompile") != std::string::npos) Misbehave(name_);
  }
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) override {
    auto has = [&](const char* word) { return name_.find(word) != std::string::npos; };
    if (!has("oncompile")) Misbehave(name_);
    absl::StatusOr<Literal> result = exact_.Run(args);
    if (result.ok() && has("garbage")) Fill(*result);
    return result;
  }

 private:
  std::string name_;
  plugin_support::EvaluatorProgram exact_;
};

absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  return std::make_unique<plugin_support::EveryInstructionBackend<MisbehavingProgram>>();
}

constexpr plugin_support::HostPluginInfo kInfo = {
    "test-misbehave", 1, "host-test-misbehave",
    "test plugin: crashes, aborts, hangs, exits, runs out of memory or returns garbage by "
    "module name",
    MakeBackend};

}  // namespace
}  // namespace kiln::test_misbehave

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::test_misbehave::kInfo);
}
