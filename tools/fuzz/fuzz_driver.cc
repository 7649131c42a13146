// fuzz_driver: a main() for any LLVMFuzzerTestOneInput target where libFuzzer is not available
// (gcc builds; CI). It runs the target on every seed file, then on seeded random mutants of
// them, and stops after --runs mutants or --max-time seconds. There is no coverage feedback:
// the search is blind, so it is a bounded regression check over hostile inputs near the seeds,
// not a substitute for a libFuzzer campaign. Built with AddressSanitizer and
// UndefinedBehaviorSanitizer, any report aborts the run; the input that did it is printed (and
// written to --artifact-prefix) so that passing that file alone replays it.
//
//   fuzz_driver [--runs N] [--seed S] [--max-time SECONDS] [--max-len BYTES]
//               [--ext .EXT]... [--artifact-prefix PATH] FILE_OR_DIR...
//
// Directories are walked recursively; with --ext only files with one of those extensions are
// read. Inputs run in a fixed order (paths sorted) and the mutations depend only on --seed, so
// a run is reproducible; --max-time only cuts it short.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional in a target, as with libFuzzer.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);
// The sanitizers' hook run before they abort (present when built with -fsanitize=address).
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)(void));

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// splitmix64: small, and the same sequence on every platform and standard library.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, n) for n > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }
};

// Values at the edges of the integer types, written in 1, 2, 4 or 8 bytes.
constexpr uint64_t kInterestingIntegers[] = {
    0,
    1,
    2,
    16,
    64,
    100,
    127,
    128,
    255,
    256,
    1000,
    1024,
    4096,
    32767,
    32768,
    65535,
    65536,
    0x7fffffffULL,
    0x80000000ULL,
    0xffffffffULL,
    0x100000000ULL,
    0x7fffffffffffffffULL,
    0x8000000000000000ULL,
    0xffffffffffffffffULL,
    0xfffffffffffffffeULL,
    0x4000000000000000ULL,
};
// The same in decimal, for text formats (HLO dimensions, .npy headers).
constexpr std::string_view kInterestingNumbers[] = {"0",
                                                    "1",
                                                    "-1",
                                                    "2",
                                                    "255",
                                                    "65536",
                                                    "2147483647",
                                                    "2147483648",
                                                    "4294967296",
                                                    "-2147483648",
                                                    "9223372036854775807",
                                                    "-9223372036854775808",
                                                    "18446744073709551615",
                                                    "99999999999999999999",
                                                    "1e308",
                                                    "-0",
                                                    "nan"};

// What is being run: shown (and saved) when the run dies.
struct Current {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string origin;  // the seed's path, and the mutations applied to it
  std::string artifact_prefix;
} current;

void WriteAll(int fd, const char* text) { (void)!write(fd, text, strlen(text)); }

// Runs inside a signal handler or the sanitizers' death callback: only async-signal-safe calls.
void ReportCurrentInput() {
  static bool reported = false;
  if (reported || current.data == nullptr) return;
  reported = true;
  WriteAll(2, "\nfuzz_driver: the input that failed came from ");
  WriteAll(2, current.origin.c_str());
  WriteAll(2, "\n");
  if (!current.artifact_prefix.empty()) {
    int fd = open(current.artifact_prefix.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, current.data, current.size);
      close(fd);
      WriteAll(2, "fuzz_driver: saved it as ");
      WriteAll(2, current.artifact_prefix.c_str());
      WriteAll(2, " (pass that file alone to replay it)\n");
    }
  }
  // A short hex dump, so the log alone shows what it was.
  static const char kHex[] = "0123456789abcdef";
  char line[3 * 32 + 2];
  size_t shown = std::min<size_t>(current.size, 256);
  for (size_t i = 0; i < shown; i += 32) {
    size_t n = 0;
    for (size_t j = i; j < std::min(shown, i + 32); ++j) {
      line[n++] = kHex[current.data[j] >> 4];
      line[n++] = kHex[current.data[j] & 15];
      line[n++] = ' ';
    }
    line[n++] = '\n';
    line[n] = '\0';
    WriteAll(2, line);
  }
}

void OnSignal(int sig) {
  ReportCurrentInput();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// ---- Mutations ---------------------------------------------------------------------

void FlipBit(Bytes& b, Rng& rng) {
  if (b.empty()) return;
  b[rng.Below(b.size())] ^= static_cast<uint8_t>(1u << rng.Below(8));
}

void SetByte(Bytes& b, Rng& rng) {
  if (b.empty()) return;
  static const uint8_t kBytes[] = {0,   1,   0x7f, 0x80, 0xff, '\n', '"', '\'', '{', '}',
                                   '(', ')', ',',  ':',  '[',  ']',  '-', '.',  'e', '9'};
  uint8_t v =
      rng.OneIn(2) ? kBytes[rng.Below(std::size(kBytes))] : static_cast<uint8_t>(rng.Next());
  b[rng.Below(b.size())] = v;
}

void InsertBytes(Bytes& b, Rng& rng, size_t max_len) {
  size_t n = 1 + rng.Below(rng.OneIn(8) ? 128 : 8);
  if (b.size() + n > max_len) return;
  size_t at = rng.Below(b.size() + 1);
  uint8_t fill = static_cast<uint8_t>(rng.Next());
  bool repeat = rng.OneIn(2);  // a run of one byte, or random bytes
  Bytes ins(n);
  for (auto& x : ins) x = repeat ? fill : static_cast<uint8_t>(rng.Next());
  b.insert(b.begin() + static_cast<ptrdiff_t>(at), ins.begin(), ins.end());
}

void EraseBytes(Bytes& b, Rng& rng) {
  if (b.empty()) return;
  size_t at = rng.Below(b.size());
  size_t n = 1 + rng.Below(std::min<size_t>(b.size() - at, rng.OneIn(4) ? 256 : 8));
  b.erase(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + n));
}

// Copies a span of the input over (or into) another place of it.
void CopySpan(Bytes& b, Rng& rng, size_t max_len) {
  if (b.size() < 2) return;
  size_t from = rng.Below(b.size());
  size_t n = 1 + rng.Below(std::min<size_t>(b.size() - from, 64));
  Bytes span(b.begin() + static_cast<ptrdiff_t>(from),
             b.begin() + static_cast<ptrdiff_t>(from + n));
  size_t to = rng.Below(b.size());
  if (rng.OneIn(2) && b.size() + n <= max_len) {
    b.insert(b.begin() + static_cast<ptrdiff_t>(to), span.begin(), span.end());
  } else {
    for (size_t i = 0; i < n && to + i < b.size(); ++i) b[to + i] = span[i];
  }
}

void InterestingInteger(Bytes& b, Rng& rng) {
  static const size_t kWidths[] = {1, 2, 4, 8};
  size_t width = kWidths[rng.Below(4)];
  if (b.size() < width) return;
  uint64_t v = kInterestingIntegers[rng.Below(std::size(kInterestingIntegers))];
  if (rng.OneIn(4)) v = ~v + 1;  // its negation
  if (rng.OneIn(4)) v += rng.OneIn(2) ? 1 : static_cast<uint64_t>(-1);
  bool big_endian = rng.OneIn(2);
  size_t at = rng.Below(b.size() - width + 1);
  for (size_t i = 0; i < width; ++i) {
    size_t shift = 8 * (big_endian ? width - 1 - i : i);
    b[at + i] = static_cast<uint8_t>(v >> shift);
  }
}

// Replaces a run of decimal digits with a number near a limit (text formats).
void InterestingNumber(Bytes& b, Rng& rng, size_t max_len) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < b.size();) {
    if (b[i] >= '0' && b[i] <= '9') {
      size_t j = i;
      while (j < b.size() && b[j] >= '0' && b[j] <= '9') ++j;
      runs.push_back({i, j - i});
      i = j;
    } else {
      ++i;
    }
  }
  if (runs.empty()) return;
  auto [at, len] = runs[rng.Below(runs.size())];
  std::string_view n = kInterestingNumbers[rng.Below(std::size(kInterestingNumbers))];
  if (b.size() - len + n.size() > max_len) return;
  b.erase(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + len));
  b.insert(b.begin() + static_cast<ptrdiff_t>(at), n.begin(), n.end());
}

void Truncate(Bytes& b, Rng& rng) {
  if (!b.empty()) b.resize(rng.Below(b.size()));
}

// The front of this input, then the back of another.
void Splice(Bytes& b, const Bytes& other, Rng& rng, size_t max_len) {
  if (other.empty()) return;
  size_t keep = rng.Below(b.size() + 1);
  size_t from = rng.Below(other.size());
  b.resize(keep);
  b.insert(b.end(), other.begin() + static_cast<ptrdiff_t>(from), other.end());
  if (b.size() > max_len) b.resize(max_len);
}

// Applies 1..8 mutations; `what` lists them (for the report of a failure).
Bytes Mutate(const std::vector<Bytes>& seeds, size_t index, Rng& rng, size_t max_len,
             std::string& what) {
  Bytes b = seeds[index];
  if (b.size() > max_len) b.resize(max_len);
  size_t count = 1 + rng.Below(rng.OneIn(4) ? 8 : 3);
  for (size_t i = 0; i < count; ++i) {
    switch (rng.Below(10)) {
      case 0:
        FlipBit(b, rng), what += " flip-bit";
        break;
      case 1:
        SetByte(b, rng), what += " set-byte";
        break;
      case 2:
        InsertBytes(b, rng, max_len), what += " insert";
        break;
      case 3:
        EraseBytes(b, rng), what += " erase";
        break;
      case 4:
        CopySpan(b, rng, max_len), what += " copy-span";
        break;
      case 5:
        InterestingInteger(b, rng), what += " integer";
        break;
      case 6:
      case 7:
        InterestingNumber(b, rng, max_len), what += " number";
        break;
      case 8: {
        size_t other = rng.Below(seeds.size());
        Splice(b, seeds[other], rng, max_len);
        what += " splice(" + std::to_string(other) + ")";
        break;
      }
      case 9:
        if (rng.OneIn(2)) {
          Truncate(b, rng), what += " truncate";
        } else {
          FlipBit(b, rng), what += " flip-bit";
        }
        break;
    }
  }
  return b;
}

// Runs the target on an exactly sized heap copy, so that a read past the end is caught.
void RunOne(const Bytes& input, std::string origin) {
  uint8_t* copy = static_cast<uint8_t*>(std::malloc(input.empty() ? 1 : input.size()));
  if (!input.empty()) std::memcpy(copy, input.data(), input.size());
  current.data = copy;
  current.size = input.size();
  current.origin = std::move(origin);
  LLVMFuzzerTestOneInput(copy, input.size());
  current.data = nullptr;
  std::free(copy);
}

bool ReadFile(const fs::path& path, Bytes& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "fuzz_driver: %s\nusage: fuzz_driver [--runs N] [--seed S] [--max-time SECONDS] "
               "[--max-len BYTES] [--ext .EXT]... [--artifact-prefix PATH] FILE_OR_DIR...\n",
               why);
  std::exit(2);
}

uint64_t ParseNumber(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
    Usage((std::string(flag) + " needs a non-negative integer").c_str());
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  uint64_t runs = 1000, seed = 1, max_time = 0, max_len = 4096;
  std::vector<std::string> extensions, roots;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage((std::string(arg) + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--runs") {
      runs = ParseNumber("--runs", value());
    } else if (arg == "--seed") {
      seed = ParseNumber("--seed", value());
    } else if (arg == "--max-time") {
      max_time = ParseNumber("--max-time", value());
    } else if (arg == "--max-len") {
      max_len = ParseNumber("--max-len", value());
    } else if (arg == "--ext") {
      extensions.emplace_back(value());
    } else if (arg == "--artifact-prefix") {
      current.artifact_prefix = value();
    } else if (arg.starts_with("-")) {
      Usage(("unknown flag " + std::string(arg)).c_str());
    } else {
      roots.emplace_back(arg);
    }
  }
  if (roots.empty()) Usage("no seed files or directories given");
  if (max_len == 0) max_len = 1;

  // Seeds: every file named, and every file under the directories named, in sorted order.
  std::vector<fs::path> paths;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (fs::is_directory(root, ec)) {
      for (auto it = fs::recursive_directory_iterator(root, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        std::string ext = it->path().extension().string();
        if (extensions.empty() ||
            std::find(extensions.begin(), extensions.end(), ext) != extensions.end()) {
          paths.push_back(it->path());
        }
      }
      if (ec) Usage(("cannot read " + root + ": " + ec.message()).c_str());
    } else if (fs::is_regular_file(root, ec)) {
      paths.emplace_back(root);
    } else {
      Usage(("no such file or directory: " + root).c_str());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Bytes> seeds;
  std::vector<std::string> names;
  for (const fs::path& p : paths) {
    Bytes b;
    if (!ReadFile(p, b)) Usage(("cannot read " + p.string()).c_str());
    seeds.push_back(std::move(b));
    names.push_back(p.string());
  }
  if (seeds.empty()) Usage("the directories hold no seed files");

  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(ReportCurrentInput);
  // A sanitizer reports crashes itself (and calls back first); take abort() from the target.
  std::signal(SIGABRT, OnSignal);
  if (__sanitizer_set_death_callback == nullptr) {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, OnSignal);
  }

  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (size_t i = 0; i < seeds.size(); ++i) RunOne(seeds[i], names[i] + " (as is)");

  Rng rng{seed};
  uint64_t mutants = 0;
  bool timed_out = false;
  for (; mutants < runs; ++mutants) {
    if (max_time > 0 && (mutants & 15) == 0 && elapsed() > static_cast<double>(max_time)) {
      timed_out = true;
      break;
    }
    size_t index = rng.Below(seeds.size());
    std::string what;
    Bytes input = Mutate(seeds, index, rng, max_len, what);
    RunOne(input, names[index] + ", mutant " + std::to_string(mutants) + " of --seed " +
                      std::to_string(seed) + ":" + what);
  }
  std::printf("fuzz_driver: ran %llu inputs (%zu seeds, %llu mutants, --seed %llu) in %.1f s%s\n",
              static_cast<unsigned long long>(seeds.size() + mutants), seeds.size(),
              static_cast<unsigned long long>(mutants), static_cast<unsigned long long>(seed),
              elapsed(), timed_out ? "; stopped at --max-time" : "");
  return 0;
}
