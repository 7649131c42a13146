// BackendConfigText: the content of a quoted backend_config (escapes removed), a braced one
// as written, and "" when there is none.
#include "hlo/backend_config.h"

#include "gtest/gtest.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

TEST(BackendConfigText, QuotedBracedAndAbsent) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY main {
  p = f32[2] parameter(0)
  q = f32[2] custom-call(p), custom_call_target="a", backend_config="{\"alpha\":\"1\",\"s\":\"x\\y\"}"
  b = f32[2] custom-call(q), custom_call_target="b", backend_config={diag = 78 : ui8}
  ROOT n = f32[2] custom-call(b), custom_call_target="c"
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(BackendConfigText(*(*m)->entry()->FindInstruction("q")), R"({"alpha":"1","s":"x\y"})");
  EXPECT_EQ(BackendConfigText(*(*m)->entry()->FindInstruction("b")), "{diag = 78 : ui8}");
  EXPECT_EQ(BackendConfigText(*(*m)->entry()->FindInstruction("n")), "");
}

}  // namespace
}  // namespace kiln
