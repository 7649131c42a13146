// hlo_text_check: the HLO parser, verifier and printer over files and over hostile mutants of
// them, built with AddressSanitizer and UndefinedBehaviorSanitizer (any report aborts). A bounded,
// deterministic stand-in for the libFuzzer target that runs in CI with the default compiler.
//
//   hlo_text_check [--mutants N] [--seed S] FILE_OR_DIR...
//
// Every input, and N mutants of each (numbers replaced by values near the integer limits, spans
// deleted, lines duplicated or swapped, punctuation changed, text truncated), is parsed and
// verified; what verifies must print to text that parses, verifies and prints the same again.
// Exit 0 when every such print is a fixed point; 1 otherwise (the first failure is shown).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/text/parser.h"
#include "hlo/verifier.h"

namespace {

struct Tally {
  int64_t inputs = 0, parsed = 0, verified = 0, broken = 0;
};

// Values that make shape arithmetic overflow if it is not checked.
constexpr std::string_view kHostileNumbers[] = {"9223372036854775807",
                                                "-9223372036854775808",
                                                "9223372036854775806",
                                                "4611686018427387904",
                                                "2147483647",
                                                "2147483648",
                                                "4294967296",
                                                "-1",
                                                "0",
                                                "-2",
                                                "18446744073709551615",
                                                "99999999999999999999",
                                                "1e308",
                                                "-0",
                                                "65536"};
constexpr std::string_view kPunctuation = "{}()[],=%:<>_-.x ";

std::string Mutate(const std::string& text, std::mt19937_64& rng) {
  if (text.empty()) return text;
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::string s = text;
  switch (pick(6)) {
    case 0: {  // a run of digits becomes a hostile number
      std::vector<std::pair<size_t, size_t>> runs;
      for (size_t i = 0; i < s.size();) {
        if (s[i] >= '0' && s[i] <= '9') {
          size_t j = i;
          while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
          runs.push_back({i, j - i});
          i = j;
        } else {
          ++i;
        }
      }
      if (runs.empty()) break;
      auto [at, len] = runs[pick(runs.size())];
      s.replace(at, len, kHostileNumbers[pick(std::size(kHostileNumbers))]);
      break;
    }
    case 1: {  // delete a span
      size_t at = pick(s.size());
      s.erase(at, 1 + pick(16));
      break;
    }
    case 2: {  // truncate
      s.resize(pick(s.size()));
      break;
    }
    case 3: {  // a punctuation character replaces one byte
      s[pick(s.size())] = kPunctuation[pick(kPunctuation.size())];
      break;
    }
    default: {  // duplicate or swap lines
      std::vector<std::string> lines;
      std::istringstream in(s);
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      if (lines.size() < 2) break;
      size_t a = pick(lines.size()), b = pick(lines.size());
      if (rng() % 2) {
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(b), lines[a]);
      } else {
        std::swap(lines[a], lines[b]);
      }
      s.clear();
      for (const std::string& line : lines) s += line + "\n";
    }
  }
  return s;
}

// Parses, verifies and checks the print fixed point; false only when that check fails.
bool Check(const std::string& text, const std::string& name, Tally& tally) {
  ++tally.inputs;
  auto module = kiln::ParseHloModule(text, name);
  if (!module.ok()) return true;
  ++tally.parsed;
  if (!kiln::VerifyModule(**module, kiln::ShapeRules::kXlaText).ok()) return true;
  ++tally.verified;
  (void)kiln::VerifyModule(**module);  // the stricter execution rules run over it too
  std::string printed = (*module)->ToString();
  auto again = kiln::ParseHloModule(printed, name + " (printed)");
  std::string problem;
  if (!again.ok()) {
    problem = "its print does not parse: " + std::string(again.status().message());
  } else if (absl::Status v = kiln::VerifyModule(**again, kiln::ShapeRules::kXlaText); !v.ok()) {
    problem = "its print does not verify: " + std::string(v.message());
  } else if ((*again)->ToString() != printed) {
    problem = "printing is not a fixed point";
  }
  if (problem.empty()) return true;
  if (tally.broken++ == 0) {
    std::fprintf(stderr, "hlo_text_check: %s: %s\n--- input ---\n%s\n--- printed ---\n%s\n",
                 name.c_str(), problem.c_str(), text.c_str(), printed.c_str());
  }
  return false;
}

std::vector<std::filesystem::path> Inputs(int argc, char** argv, int first) {
  std::vector<std::filesystem::path> files;
  for (int i = first; i < argc; ++i) {
    std::filesystem::path p = argv[i];
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file() && e.path().extension() == ".hlo") files.push_back(e.path());
      }
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  int mutants = 0;
  uint64_t seed = 1;
  int first = 1;
  for (; first < argc; ++first) {
    std::string_view a = argv[first];
    if (a == "--mutants" && first + 1 < argc) {
      mutants = std::atoi(argv[++first]);
    } else if (a == "--seed" && first + 1 < argc) {
      seed = std::strtoull(argv[++first], nullptr, 10);
    } else {
      break;
    }
  }
  std::vector<std::filesystem::path> files = Inputs(argc, argv, first);
  if (files.empty()) {
    std::fprintf(stderr, "usage: hlo_text_check [--mutants N] [--seed S] FILE_OR_DIR...\n");
    return 2;
  }
  std::mt19937_64 rng(seed);
  Tally originals, mutated;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "hlo_text_check: cannot read %s\n", path.c_str());
      return 2;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Check(text, path.string(), originals);
    for (int m = 0; m < mutants; ++m) {
      Check(Mutate(text, rng), path.string() + " mutant " + std::to_string(m), mutated);
    }
  }
  auto report = [](const char* what, const Tally& t) {
    std::printf("%s: %lld read, %lld parsed, %lld verified, %lld not a print fixed point\n", what,
                static_cast<long long>(t.inputs), static_cast<long long>(t.parsed),
                static_cast<long long>(t.verified), static_cast<long long>(t.broken));
  };
  report("files", originals);
  report("mutants", mutated);
  return originals.broken + mutated.broken == 0 ? 0 : 1;
}
