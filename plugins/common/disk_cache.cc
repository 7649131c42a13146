#include "plugins/common/disk_cache.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace kiln {
namespace {

constexpr std::string_view kMagic = "KILN-CACHE-1\n";

// FNV-1a, 64-bit, with a seed so two independent hashes make the file name.
uint64_t Hash(std::string_view s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

bool GetU64(std::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  in.remove_prefix(8);
  return true;
}

}  // namespace

std::optional<DiskCache> DiskCache::FromEnv(const char* var) {
  const char* dir = std::getenv(var);
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return DiskCache(dir);
}

std::string DiskCache::PathFor(std::string_view key) const {
  return fmt::format("{}/{:016x}{:016x}.kc", dir_, Hash(key, 0), Hash(key, 0x9e3779b97f4a7c15ull));
}

std::optional<std::string> DiskCache::Load(std::string_view key) const {
  const std::string path = PathFor(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  std::string_view rest = data;
  uint64_t key_size = 0, size = 0, sum = 0;
  auto damaged = [&](const char* why) -> std::optional<std::string> {
    std::fprintf(stderr, "kiln: warning: ignoring damaged cache entry %s (%s)\n", path.c_str(),
                 why);
    return std::nullopt;
  };
  if (rest.substr(0, kMagic.size()) != kMagic) return damaged("bad header");
  rest.remove_prefix(kMagic.size());
  if (!GetU64(rest, key_size) || rest.size() < key_size) return damaged("truncated");
  if (rest.substr(0, key_size) != key) return std::nullopt;  // another key with this hash
  rest.remove_prefix(key_size);
  if (!GetU64(rest, size) || !GetU64(rest, sum) || rest.size() != size) return damaged("truncated");
  if (Hash(rest, 0) != sum) return damaged("checksum mismatch");
  return std::string(rest);
}

absl::Status DiskCache::Store(std::string_view key, std::string_view artifact) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return absl::UnavailableError(fmt::format("cache directory {}: {}", dir_, ec.message()));
  std::string data(kMagic);
  PutU64(data, key.size());
  data.append(key);
  PutU64(data, artifact.size());
  PutU64(data, Hash(artifact, 0));
  data.append(artifact);
  const std::string path = PathFor(key);
  const std::string tmp = fmt::format("{}.tmp{}", path, static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return absl::UnavailableError(fmt::format("cannot write cache entry {}", tmp));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::UnavailableError(fmt::format("cannot store cache entry {}", path));
  }
  return absl::OkStatus();
}

std::string BinaryIdentity(const void* address_in_binary) {
  Dl_info info{};
  if (::dladdr(address_in_binary, &info) == 0 || info.dli_fname == nullptr) return "unknown binary";
  struct stat st {};
  if (::stat(info.dli_fname, &st) != 0) return info.dli_fname;
  return fmt::format("{} size={} mtime={}.{:09d}", info.dli_fname,
                     static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                     static_cast<long>(st.st_mtim.tv_nsec));
}

}  // namespace kiln
