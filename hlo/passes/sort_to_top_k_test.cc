// Tests of sort-to-top-k: JAX's approx_max_k lowering on CPU (a sort of keys and an iota, both
// sliced to k) becomes topk with the evaluator's values; ascending sorts, a bare sort of the
// keys, slices of several k and integer stable sorts too; sorts it must leave: a stable float
// sort, a slice not at the start, a user other than a slice, k above half the row, another
// sort dimension, a comparator of more than one compare, and a backend that refuses the topk.
#include "hlo/passes/sort_to_top_k.h"

#include <string>

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// What jax.lax.approx_max_k(x, 64) lowers to on CPU (XLA's approx_top_k fallback).
constexpr const char* kApproxMaxK = R"(HloModule m
gt {
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT
}
ENTRY main {
  x = f32[16,512] parameter(0)
  io = s32[512] iota(), iota_dimension=0
  ib = s32[16,512] broadcast(io), dimensions={1}
  s = (f32[16,512], s32[16,512]) sort(x, ib), dimensions={1}, to_apply=gt
  v = f32[16,512] get-tuple-element(s), index=0
  vk = f32[16,64] slice(v), slice={[0:16], [0:64]}
  i = s32[16,512] get-tuple-element(s), index=1
  ik = s32[16,64] slice(i), slice={[0:16], [0:64]}
  ROOT t = (f32[16,64], s32[16,64]) tuple(vk, ik)
}
)";

std::string Printed(HloPass& pass, const std::string& text, bool* changed) {
  return RunPassAndPrint(pass, text, changed);
}

TEST(SortToTopK, ApproxMaxKBecomesTopK) {
  SortToTopK pass;
  bool changed = false;
  const std::string out = Printed(pass, kApproxMaxK, &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("topk(f32[16,512]"), std::string::npos) << out;
  EXPECT_NE(out.find("k=64"), std::string::npos) << out;
  EXPECT_EQ(out.find("sort("), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kApproxMaxK));
}

TEST(SortToTopK, AscendingKeysOnlyAndSeveralK) {
  // LT: the smallest first (largest=false); the bare keys sorted, sliced to 10 and to 3.
  const std::string text = R"(HloModule m
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[4,7,100] parameter(0)
  s = f32[4,7,100] sort(x), dimensions={2}, to_apply=lt
  a = f32[4,7,10] slice(s), slice={[0:4], [0:7], [0:10]}
  b = f32[4,7,3] slice(s), slice={[0:4], [0:7], [0:3]}
  ROOT t = (f32[4,7,10], f32[4,7,3]) tuple(a, b)
}
)";
  SortToTopK pass;
  bool changed = false;
  const std::string out = Printed(pass, text, &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("largest=false"), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, text));
  // The comparator's operands swapped, compare(b, a) LT: the largest first.
  const std::string swapped =
      absl::StrReplaceAll(text, {{"compare(a, b), direction=LT", "compare(b, a), direction=LT"}});
  EXPECT_NE(Printed(pass, swapped, &changed).find("largest=true"), std::string::npos);
  EXPECT_TRUE(PassPreservesValues(pass, swapped));
}

TEST(SortToTopK, StableIntegerSortToo) {
  // Integer keys with many ties: a stable sort keeps the lower index first, as topk does.
  const std::string text = R"(HloModule m
gt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}
ENTRY main {
  x = s32[8,300] parameter(0)
  ib = s32[8,300] iota(), iota_dimension=1
  s = (s32[8,300], s32[8,300]) sort(x, ib), dimensions={1}, is_stable=true, to_apply=gt
  i = s32[8,300] get-tuple-element(s), index=1
  ROOT ik = s32[8,20] slice(i), slice={[0:8], [0:20]}
}
)";
  SortToTopK pass;
  bool changed = false;
  Printed(pass, text, &changed);
  EXPECT_TRUE(changed);
  EXPECT_TRUE(PassPreservesValues(pass, text, 5));
}

TEST(SortToTopK, LeavesWhatTopKIsNot) {
  const std::string base = kApproxMaxK;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"stable float sort",
       absl::StrReplaceAll(
           base, {{"dimensions={1}, to_apply", "dimensions={1}, is_stable=true, to_apply"}})},
      {"slice not at the start", absl::StrReplaceAll(base, {{"slice={[0:16], [0:64]}\n  i =",
                                                             "slice={[0:16], [1:65]}\n  i ="}})},
      {"k above half the row", absl::StrReplaceAll(base, {{"64", "300"}})},
      {"two compares", absl::StrReplaceAll(base, {{"ROOT r = pred[] compare(a, b), direction=GT",
                                                   "c = pred[] compare(a, b), direction=GT\n  d = "
                                                   "pred[] compare(i, j), direction=LT\n  ROOT r = "
                                                   "pred[] or(c, d)"}})},
      {"indices not an iota",
       absl::StrReplaceAll(
           base,
           {{"ib = s32[16,512] broadcast(io), dimensions={1}", "ib = s32[16,512] parameter(1)"},
            {"x = f32[16,512] parameter(0)", "x = f32[16,512] parameter(0)"}})},
  };
  for (const auto& [name, text] : cases) {
    SCOPED_TRACE(name);
    SortToTopK pass;
    bool changed = true;
    const std::string out = Printed(pass, text, &changed);
    EXPECT_FALSE(changed) << out;
  }
  // A user of the whole sorted values.
  const std::string whole = absl::StrReplaceAll(
      base, {{"ROOT t = (f32[16,64], s32[16,64]) tuple(vk, ik)",
              "ROOT t = (f32[16,64], s32[16,64], f32[16,512]) tuple(vk, ik, v)"}});
  SortToTopK pass;
  bool changed = true;
  Printed(pass, whole, &changed);
  EXPECT_FALSE(changed);
  // The backend refuses the topk: the sort stays.
  SortToTopK refusing([](const HloInstruction&) { return false; });
  changed = true;
  EXPECT_NE(Printed(refusing, base, &changed).find("sort("), std::string::npos);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
