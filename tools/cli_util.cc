// Helpers shared by the kiln subcommands: reading files, loading modules, error lines.
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <vector>

#include "fmt/format.h"
#include "hlo/verifier.h"
#include "tools/commands.h"

namespace kiln {

absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open file", path));
  // Read in pieces up to the limit: a device such as /dev/zero never ends.
  std::string out;
  std::vector<char> piece(1 << 20);
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    out.append(piece.data(), static_cast<size_t>(in.gcount()));
    if (out.size() > limit)
      return absl::ResourceExhaustedError(
          fmt::format("{}: longer than {} bytes, more than kiln reads from one file", path, limit));
  }
  if (in.bad()) return absl::DataLossError(fmt::format("{}: read error", path));
  return out;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  return ReadFileBounded(path, kMaxTextFileBytes);
}

absl::StatusOr<std::unique_ptr<HloModule>> LoadModule(const std::string& path, bool verify,
                                                      ShapeRules rules) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseRunnableModule(*text, path, verify, rules);
}

std::optional<uint64_t> AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
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
