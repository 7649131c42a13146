// The optional on-disk cache of compiled kernel objects (KILN_CPU_CACHE_DIR): a second
// process compiling the same module for the same CPU loads the objects instead of running
// LLVM's optimizer and code generator. Entries are one file per key, written atomically;
// an unreadable or corrupt file is a warning and a recompile, never a crash. LLVM-free.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cpu {

class ObjectCache {
 public:
  // Bump when the file layout or what a key covers changes.
  static constexpr int kFormatVersion = 1;

  // The cache in KILN_CPU_CACHE_DIR, or null when it is unset or empty (caching off).
  static std::unique_ptr<ObjectCache> FromEnvironment();
  explicit ObjectCache(std::string dir) : dir_(std::move(dir)) {}

  // The objects stored under `key`; nullopt when there is no entry, or when the entry is
  // unreadable, corrupt or for another key (with a warning on stderr).
  std::optional<std::vector<std::string>> Load(const std::string& key) const;
  // Stores the objects under `key`; a failure to write is a warning.
  void Store(const std::string& key, const std::vector<std::string>& objects) const;

  // The file that holds `key`'s entry.
  std::string PathFor(const std::string& key) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// Identifies the code that produced cached objects: the size and modification time of the
// binary this function is linked into, so a rebuilt emitter never reuses stale objects.
std::string CodeVersion();

}  // namespace kiln::cpu
