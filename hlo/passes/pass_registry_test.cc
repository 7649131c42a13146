// Tests of the pass name table: every name makes a pass of that name; unknown names fail.
#include "hlo/passes/pass_registry.h"

#include <set>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(PassRegistryTest, KnowsTheStandardPasses) {
  std::set<std::string> names(RegisteredPassNames().begin(), RegisteredPassNames().end());
  for (const char* n :
       {"dce", "cse", "constant-folding", "algsimp", "transpose-folding", "tuple-simplifier",
        "fusion", "multi-output-fusion", "simplification", "fusion-pipeline"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  EXPECT_EQ(names.size(), RegisteredPassNames().size()) << "duplicate pass names";
}

TEST(PassRegistryTest, MakesThePassNamed) {
  for (const std::string& n : RegisteredPassNames()) {
    absl::StatusOr<std::unique_ptr<HloPass>> p = MakePassByName(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
}

TEST(PassRegistryTest, UnknownNameListsKnownOnesOnOneLine) {
  absl::StatusOr<std::unique_ptr<HloPass>> p = MakePassByName("no-such-pass");
  ASSERT_FALSE(p.ok());
  std::string msg(p.status().message());
  EXPECT_NE(msg.find("no-such-pass"), std::string::npos);
  EXPECT_NE(msg.find("algsimp"), std::string::npos);
  EXPECT_NE(msg.find("multi-output-fusion"), std::string::npos);
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace kiln
