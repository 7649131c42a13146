// The `kiln` subcommands. Each takes the arguments after its name and returns the exit
// status: 0 success, 1 error (message on stderr), 2 usage error, 3 --compare mismatch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "hlo/shape_inference.h"

namespace kiln {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitMismatch = 3;

int RunCommand(const std::vector<std::string>& args);
int PrintCommand(const std::vector<std::string>& args);
int DevicesCommand(const std::vector<std::string>& args);
int OptCommand(const std::vector<std::string>& args);
int GraphCommand(const std::vector<std::string>& args);
int PluginTestCommand(const std::vector<std::string>& args);
int AotCommand(const std::vector<std::string>& args);

// Shared helpers.
// The most a text file (an HLO module, a graph) may hold: 2 GiB.
inline constexpr size_t kMaxTextFileBytes = size_t{2} << 30;
// Reads a whole file, refusing one longer than `limit` bytes (ResourceExhausted, naming it).
absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t limit);
absl::StatusOr<std::string> ReadTextFile(const std::string& path);
// Reads, parses (errors `path:line:col: ...`) and verifies (errors `path: ...`) a module.
// With verify=false the verifier is skipped (`kiln opt --no-verify`).
absl::StatusOr<std::unique_ptr<HloModule>> LoadModule(const std::string& path, bool verify = true,
                                                      ShapeRules rules = ShapeRules::kExecutable);
// Memory the kernel says is available to a new allocation (MemAvailable), if it says.
std::optional<uint64_t> AvailableMemoryBytes();
// Prints `kiln <command>: error: <message>` as one line (newlines folded) on stderr.
int ReportError(const std::string& command, const std::string& message, int exit_code = kExitError);

}  // namespace kiln
