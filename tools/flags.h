// A small command-line parser: `--name value`, `--name=value`, repeatable options,
// boolean switches and positional arguments; unknown flags are errors.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln {

struct FlagSpec {
  std::set<std::string> with_value;  // e.g. "device", "input" (without the dashes)
  std::set<std::string> switches;    // flags that take no value, e.g. "help"
};

struct ParsedFlags {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;  // every occurrence, in order
  std::set<std::string> switches;

  bool Has(const std::string& name) const { return values.count(name) || switches.count(name); }
  // The last value given for `name`, or `fallback`.
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& All(const std::string& name) const;
};

// `args` excludes the program and subcommand names. `--` ends flag parsing.
absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagSpec& spec);

}  // namespace kiln
