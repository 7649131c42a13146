// Embedding Kiln in a C++ program: parse an HLO module, compile it the one way the `kiln`
// tool does (core passes, placement on the best plugin, compile), run it on host arrays.
//
//   build/examples/kiln_embed_example [MODULE.hlo] [DEVICE]
//
// Without a module (or with "-") it runs reduce_sum(x + y*z) over x = 1..8, y = 2, z = 0.5,
// on "auto" unless DEVICE is given, and prints the result (36 + 8 = 44) and the device that
// ran it. Exit status 0 on success, 1 with one error line otherwise.
#include <iostream>
#include <string>
#include <vector>

#include "core/module_executable.h"
#include "core/plugin_registry.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"

namespace {

constexpr const char* kModule = R"(HloModule embed
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[8], y: f32[8], z: f32[8]) -> f32[] {
  %x = f32[8] parameter(0)
  %y = f32[8] parameter(1)
  %z = f32[8] parameter(2)
  %yz = f32[8] multiply(f32[8] %y, f32[8] %z)
  %s = f32[8] add(f32[8] %x, f32[8] %yz)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[8] %s, f32[] %zero), dimensions={0}, to_apply=%add
}
)";

int Fail(const absl::Status& s) {
  std::cerr << "kiln_embed_example: error: " << s.message() << "\n";
  return 1;
}

kiln::Literal Filled(int n, float first, float step) {
  kiln::Literal l(kiln::Shape(kiln::PrimitiveType::F32, {n}));
  for (int i = 0; i < n; ++i) l.data<float>()[i] = first + step * static_cast<float>(i);
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  std::string text = kModule;
  if (argc > 1 && std::string(argv[1]) != "-") {
    absl::StatusOr<std::string> file = [&]() -> absl::StatusOr<std::string> {
      std::FILE* f = std::fopen(argv[1], "rb");
      if (f == nullptr) return absl::NotFoundError(std::string("cannot open ") + argv[1]);
      std::string s;
      char buf[65536];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
      std::fclose(f);
      return s;
    }();
    if (!file.ok()) return Fail(file.status());
    text = *file;
  }
  absl::StatusOr<std::unique_ptr<kiln::HloModule>> module = kiln::ParseHloModule(text, "embed");
  if (!module.ok()) return Fail(module.status());
  if (absl::Status s = kiln::VerifyModule(**module); !s.ok()) return Fail(s);

  // Plugins are found as `kiln devices` finds them ($KILN_PLUGIN_PATH, config, build dir).
  absl::StatusOr<kiln::PluginRegistry> registry = kiln::PluginRegistry::Discover();
  if (!registry.ok()) return Fail(registry.status());
  kiln::ModuleCompileOptions options;
  options.device = argc > 2 ? argv[2] : "auto";
  auto exe = kiln::ModuleExecutable::Compile(*registry, **module, options);
  if (!exe.ok()) return Fail(exe.status());

  // One host array per parameter: here x = 1..n, y = 2, z = 0.5 for every f32[n] parameter.
  std::vector<kiln::Literal> args;
  const kiln::HloComputation& entry = *(*exe)->module().entry();
  for (int i = 0; i < entry.num_parameters(); ++i) {
    const kiln::Shape& shape = entry.parameter(i)->shape();
    if (shape.element_type() != kiln::PrimitiveType::F32 || shape.rank() != 1)
      return Fail(absl::InvalidArgumentError("this example feeds f32[n] parameters only"));
    const int n = static_cast<int>(shape.dimensions()[0]);
    args.push_back(i == 0 ? Filled(n, 1, 1) : Filled(n, i == 1 ? 2.0f : 0.5f, 0));
  }
  absl::StatusOr<std::vector<kiln::Literal>> outputs = (*exe)->Execute(args);
  if (!outputs.ok()) return Fail(outputs.status());
  for (size_t i = 0; i < outputs->size(); ++i) {
    const kiln::Literal& out = (*outputs)[i];
    std::cout << "output_" << i << " = " << (out.element_count() > 0 ? out.GetAsDouble(0) : 0.0)
              << (out.element_count() > 1 ? " ..." : "") << "\n";
  }
  std::cout << "device: " << (*exe)->device_names() << "\n";
  std::cout << "core passes: "
            << ((*exe)->core_pass_report().ran ? (*exe)->core_pass_report().pass_names : "none")
            << "\n";
  return 0;
}
