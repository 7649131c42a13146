// The hand-written flag parser (no flag library: the CLI is small and its syntax fixed).
#include "tools/flags.h"

#include "absl/status/status.h"
#include "fmt/format.h"

namespace kiln {

std::string ParsedFlags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& ParsedFlags::All(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = values.find(name);
  return it == values.end() ? kEmpty : it->second;
}

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagSpec& spec) {
  ParsedFlags out;
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || a == "-") {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::string name = body, value;
    bool has_inline = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_inline = true;
    }
    if (spec.switches.count(name)) {
      if (has_inline)
        return absl::InvalidArgumentError(fmt::format("flag --{} takes no value", name));
      out.switches.insert(name);
    } else if (spec.with_value.count(name)) {
      if (!has_inline) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(fmt::format("flag --{} needs a value", name));
        }
        value = args[++i];
      }
      out.values[name].push_back(value);
    } else {
      return absl::InvalidArgumentError(fmt::format("unknown flag '{}'", a));
    }
  }
  return out;
}

}  // namespace kiln
