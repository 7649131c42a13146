// `kiln print MODULE.hlo`: parse, verify, print canonical text.
#include <iostream>

#include "tools/commands.h"
#include "tools/flags.h"

namespace kiln {

int PrintCommand(const std::vector<std::string>& args) {
  FlagSpec spec;
  spec.switches = {"help"};
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, spec);
  if (!flags.ok()) return ReportError("print", std::string(flags.status().message()), kExitUsage);
  if (flags->Has("help")) {
    std::cout << "usage: kiln print MODULE.hlo\n"
                 "Parses and verifies MODULE.hlo and prints it in Kiln's canonical text.\n";
    return kExitOk;
  }
  if (flags->positional.size() != 1) {
    return ReportError("print", "expected exactly one MODULE.hlo (usage: kiln print MODULE.hlo)",
                       kExitUsage);
  }
  // The text as XLA accepts it, including forms Kiln's devices do not run (`kiln run` says so).
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      LoadModule(flags->positional[0], /*verify=*/true, ShapeRules::kXlaText);
  if (!module.ok()) {
    // The message already starts with `file:line:col:` (parser) or `file:` (verifier).
    std::string line(module.status().message());
    for (char& c : line) {
      if (c == '\n') c = ' ';
    }
    std::cerr << line << std::endl;
    return kExitError;
  }
  std::cout << (*module)->ToString();
  std::string text = (*module)->ToString();
  if (text.empty() || text.back() != '\n') std::cout << '\n';
  return kExitOk;
}

}  // namespace kiln
