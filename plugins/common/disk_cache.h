// A directory of compiled artifacts (object files, PTX) shared between processes, keyed by
// text that names everything the artifact depends on (module text, target, options, the
// compiling binary's identity). An entry holds its whole key and a checksum, so a hash
// collision, a truncated write or a corrupted file is a miss (with a warning), never a wrong
// artifact. Writes go to a temporary file renamed into place, so concurrent writers are safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kiln {

class DiskCache {
 public:
  // The cache in directory `$var`, or nullopt when the variable is unset or empty.
  static std::optional<DiskCache> FromEnv(const char* var);
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  // The artifact stored under `key`, or nullopt (missing or unreadable; a damaged entry also
  // prints a warning to stderr).
  std::optional<std::string> Load(std::string_view key) const;
  // Creates the directory when needed.
  absl::Status Store(std::string_view key, std::string_view artifact) const;
  // The file an entry for `key` lives in.
  std::string PathFor(std::string_view key) const;

 private:
  std::string dir_;
};

// Identifies the binary (shared object or executable) that contains `address_in_binary`:
// its path, size and modification time, so a rebuilt plugin never reads its old artifacts.
std::string BinaryIdentity(const void* address_in_binary);

}  // namespace kiln
