// Tests of the FileCheck-like matcher the pass tests rely on.
#include "hlo/passes/test_util.h"

#include "gtest/gtest.h"

namespace kiln::testing {
namespace {

constexpr std::string_view kText = R"(HloModule m
ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %neg.1 = f32[2]{0} negate(f32[2]{0} %p)
  ROOT %add.2 = f32[2]{0} add(f32[2]{0} %neg.1, f32[2]{0} %p)
})";

TEST(FileCheckTest, InOrderMatchesPass) {
  EXPECT_TRUE(FileCheck(kText, R"(
    CHECK: parameter(0)
    CHECK: negate
    CHECK: ROOT
  )")
                  .ok());
}

TEST(FileCheckTest, OutOfOrderFails) {
  EXPECT_FALSE(FileCheck(kText, "CHECK: ROOT\nCHECK: negate").ok());
}

TEST(FileCheckTest, NextMustBeTheFollowingLine) {
  EXPECT_TRUE(FileCheck(kText, "CHECK: parameter\nCHECK-NEXT: negate").ok());
  EXPECT_FALSE(FileCheck(kText, "CHECK: parameter\nCHECK-NEXT: ROOT").ok());
}

TEST(FileCheckTest, NotBetweenMatchesAndAtTheEnd) {
  EXPECT_TRUE(FileCheck(kText, "CHECK: negate\nCHECK-NOT: multiply\nCHECK: ROOT").ok());
  EXPECT_FALSE(FileCheck(kText, "CHECK: parameter\nCHECK-NOT: negate\nCHECK: ROOT").ok());
  EXPECT_FALSE(FileCheck(kText, "CHECK: parameter\nCHECK-NOT: add").ok());
  EXPECT_TRUE(FileCheck(kText, "CHECK-NOT: multiply").ok());
}

TEST(FileCheckTest, SameContinuesOnTheLine) {
  EXPECT_TRUE(FileCheck(kText, "CHECK: ROOT\nCHECK-SAME: add(\nCHECK-SAME: %p)").ok());
  EXPECT_FALSE(FileCheck(kText, "CHECK: ROOT\nCHECK-SAME: negate(").ok());
}

TEST(FileCheckTest, RegexAndVariables) {
  EXPECT_TRUE(FileCheck(kText, R"(
    CHECK: [[N:%neg\.[0-9]+]] = f32[2]{0} negate
    CHECK: add(f32[2]{0} [[N]], {{.*}} %p)
  )")
                  .ok());
  EXPECT_FALSE(FileCheck(kText, "CHECK: [[N:%[a-z]+]] = \nCHECK: ROOT {{.*}}[[N]].1").ok());
  // A regex with its own brackets inside a capture.
  EXPECT_TRUE(FileCheck(kText, "CHECK: [[N:%neg[.][0-9]]] = \nCHECK: ROOT {{.*}}[[N]],").ok());
  // Literal text is not a regex: the dot must be a dot.
  EXPECT_FALSE(FileCheck(kText, "CHECK: %negX1").ok());
  EXPECT_FALSE(FileCheck(kText, "CHECK: %neg.1X").ok());
}

TEST(FileCheckTest, NoDirectivesIsAnError) { EXPECT_FALSE(FileCheck(kText, "nothing").ok()); }

}  // namespace
}  // namespace kiln::testing
