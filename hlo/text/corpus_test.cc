// Every real module in tests/hlo_corpus must parse, and print -> parse -> print must give
// the same text (a fixed point). Expected failures are listed explicitly below.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "hlo/module.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

// File name -> the start of the error message it must fail with (genuinely unsupported
// constructs). Empty: every corpus module parses and round-trips.
const std::map<std::string, std::string> kExpectedFailures = {};

std::filesystem::path CorpusDir() {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::filesystem::path base = root ? root : ".";
  return base / "tests" / "hlo_corpus";
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(HloCorpus, EveryModuleParsesAndPrintsToAFixedPoint) {
  std::filesystem::path dir = CorpusDir();
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " is missing (set KILN_SOURCE_ROOT)";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".hlo") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 30u) << "corpus looks incomplete";
  int round_tripped = 0, expected_failures = 0;
  for (const auto& path : files) {
    std::string name = path.filename().string();
    SCOPED_TRACE(name);
    std::string text = ReadFile(path);
    auto t0 = std::chrono::steady_clock::now();
    auto m1 = ParseHloModule(text, name);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto expected = kExpectedFailures.find(name);
    if (expected != kExpectedFailures.end()) {
      ASSERT_FALSE(m1.ok()) << "expected to fail but parsed; remove it from kExpectedFailures";
      EXPECT_NE(std::string(m1.status().message()).find(expected->second), std::string::npos)
          << m1.status();
      ++expected_failures;
      continue;
    }
    ASSERT_TRUE(m1.ok()) << m1.status();
    std::string p1 = (*m1)->ToString();
    auto m2 = ParseHloModule(p1, name + " (printed)");
    ASSERT_TRUE(m2.ok()) << m2.status() << "\n--- printed text ---\n" << p1.substr(0, 4000);
    std::string p2 = (*m2)->ToString();
    if (p1 != p2) {
      // Point at the first differing line.
      std::istringstream a(p1), b(p2);
      std::string la, lb;
      int line = 0;
      while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
      ADD_FAILURE() << "not a fixed point at printed line " << line + 1
                    << ":\n  first:  " << la.substr(0, 300) << "\n  second: " << lb.substr(0, 300);
      continue;
    }
    // The structure survives printing.
    EXPECT_EQ((*m1)->computations().size(), (*m2)->computations().size());
    EXPECT_EQ((*m1)->entry()->name(), (*m2)->entry()->name());
    EXPECT_EQ((*m1)->entry()->instruction_count(), (*m2)->entry()->instruction_count());
    std::printf("  %-45s %6zu lines  parsed in %7.2f ms\n", name.c_str(),
                static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), ms);
    ++round_tripped;
  }
  std::printf("%d of %zu corpus modules parse and print to a fixed point; %d expected failures\n",
              round_tripped, files.size(), expected_failures);
  EXPECT_EQ(round_tripped + expected_failures, static_cast<int>(files.size()));
}

}  // namespace
}  // namespace kiln
