// File format of an entry: "KILNOBJ" magic, format version, key length + key, object count,
// each object as length + bytes, then a 64-bit FNV-1a checksum of everything before it.
#include "plugins/cpu_llvm/object_cache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "fmt/format.h"

namespace kiln::cpu {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'O', 'B', 'J', '\0'};

uint64_t Fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Reads from a byte string; every read is bounds-checked (entries can be truncated).
struct Reader {
  std::string_view data;
  size_t pos = 0;
  bool U64(uint64_t& v) {
    if (data.size() - pos < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(data[pos + i])} << (8 * i);
    pos += 8;
    return true;
  }
  bool Bytes(uint64_t n, std::string& out) {
    if (data.size() - pos < n) return false;
    out.assign(data.substr(pos, n));
    pos += n;
    return true;
  }
};

void Warn(const std::string& path, const std::string& what) {
  fmt::print(stderr, "kiln: warning: cpu-llvm object cache {}: {}; recompiling\n", path, what);
}

}  // namespace

std::unique_ptr<ObjectCache> ObjectCache::FromEnvironment() {
  const char* dir = std::getenv("KILN_CPU_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return nullptr;
  return std::make_unique<ObjectCache>(dir);
}

std::string ObjectCache::PathFor(const std::string& key) const {
  return (std::filesystem::path(dir_) / fmt::format("{:016x}.kobj", Fnv(key))).string();
}

std::optional<std::vector<std::string>> ObjectCache::Load(const std::string& key) const {
  const std::string path = PathFor(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;  // no entry yet
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  if (data.size() < sizeof(kMagic) + 8 || data.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0) {
    Warn(path, "not a cache entry");
    return std::nullopt;
  }
  Reader r{std::string_view(data).substr(0, data.size() - 8), sizeof(kMagic)};
  Reader tail{std::string_view(data).substr(data.size() - 8)};
  uint64_t checksum = 0, version = 0, key_len = 0, count = 0;
  tail.U64(checksum);
  if (checksum != Fnv(r.data.substr(sizeof(kMagic)))) {
    Warn(path, "checksum mismatch (truncated or corrupt)");
    return std::nullopt;
  }
  std::string stored_key;
  if (!r.U64(version) || version != kFormatVersion) {
    Warn(path, "other format version");
    return std::nullopt;
  }
  if (!r.U64(key_len) || !r.Bytes(key_len, stored_key) || stored_key != key) {
    Warn(path, "entry for another key");
    return std::nullopt;
  }
  std::vector<std::string> objects;
  if (!r.U64(count) || count > 4096) {
    Warn(path, "bad object count");
    return std::nullopt;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t n = 0;
    objects.emplace_back();
    if (!r.U64(n) || !r.Bytes(n, objects.back())) {
      Warn(path, "truncated object");
      return std::nullopt;
    }
  }
  return objects;
}

void ObjectCache::Store(const std::string& key, const std::vector<std::string>& objects) const {
  std::string data(kMagic, sizeof(kMagic));
  PutU64(data, kFormatVersion);
  PutU64(data, key.size());
  data += key;
  PutU64(data, objects.size());
  for (const std::string& o : objects) {
    PutU64(data, o.size());
    data += o;
  }
  PutU64(data, Fnv(data.substr(sizeof(kMagic))));
  const std::string path = PathFor(key);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  // Write a private temporary and rename it: readers never see a half-written entry.
  const std::string tmp = fmt::format("{}.{}.tmp", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) {
      fmt::print(stderr, "kiln: warning: cpu-llvm object cache: cannot write {}\n", tmp);
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    fmt::print(stderr, "kiln: warning: cpu-llvm object cache: cannot rename to {}: {}\n", path,
               ec.message());
    std::filesystem::remove(tmp, ec);
  }
}

std::string CodeVersion() {
  static const std::string version = [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&CodeVersion), &info) == 0 || info.dli_fname == nullptr)
      return std::string("unknown");
    std::error_code ec;
    std::filesystem::path p(info.dli_fname);
    auto size = std::filesystem::file_size(p, ec);
    auto time = std::filesystem::last_write_time(p, ec);
    return fmt::format("{}:{}:{}", p.filename().string(), size,
                       static_cast<long long>(time.time_since_epoch().count()));
  }();
  return version;
}

}  // namespace kiln::cpu
