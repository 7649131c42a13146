// Helpers shared by the kiln subcommands: reading files, loading modules, error lines.
#include <fstream>
#include <iostream>
#include <sstream>

#include "fmt/format.h"
#include "hlo/verifier.h"
#include "tools/commands.h"

namespace kiln {

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open file", path));
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return absl::DataLossError(fmt::format("{}: read error", path));
  return buf.str();
}

absl::StatusOr<std::unique_ptr<HloModule>> LoadModule(const std::string& path, bool verify) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseRunnableModule(*text, path, verify);
}

int ReportError(const std::string& command, const std::string& message, int exit_code) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "kiln " << command << ": error: " << line << std::endl;
  return exit_code;
}

}  // namespace kiln
