// cpu-llvm's sort by a generated comparator (sort_library.h) against the HLO evaluator, bit
// for bit: JAX's total-order comparator over NaN, -0 and infinities; argsort (keys and an
// iota, a tuple) with ties, which a stable sort keeps in order; a lexicographic two-key sort;
// sorting along a leading dimension, descending; many rows in parallel; one long row sorted
// in parts and merged; integer keys sorted as (key, position) pairs; one and two threads. And the
// plan: such a sort is a library step.
#include "plugins/cpu_llvm/sort_library.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/text_module_test_util.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

// jnp.sort's comparator: NaN and -0 canonicalized, then a total-order less-than.
constexpr char kJaxLess[] = R"(
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  az = pred[] compare(a, zero), direction=EQ
  bz = pred[] compare(b, zero), direction=EQ
  a0 = f32[] select(az, zero, a)
  b0 = f32[] select(bz, zero, b)
  anan = pred[] compare(a, a), direction=NE
  bnan = pred[] compare(b, b), direction=NE
  an = f32[] select(anan, nan, a0)
  bn = f32[] select(bnan, nan, b0)
  ROOT lt = pred[] compare(an, bn), direction=LT, type=TOTALORDER
}
)";

// Runs `text` on cpu-llvm with `threads` and on the evaluator with the same random
// arguments (`special` puts NaN, -0 and infinities into a float first argument) and expects
// identical bytes; returns whether every sort was planned as a library step.
bool Check(const std::string& text, int threads, bool special = false, bool more_nans = false) {
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return false;
  codegen_testing::RandomArgs args = codegen_testing::RandomArguments(*c.module, 7);
  if (special) {
    Literal& x = args.values[0];
    const double values[] = {std::nan(""), -0.0, 0.0, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
    for (int64_t i = 0; i < x.element_count(); i += 9) x.SetFromDouble(i, values[i / 9 % 5]);
    if (more_nans) {
      const double nans[] = {-std::nan(""), std::nan("0x400000000000"),
                             -std::nan("0x600000000000")};
      for (int64_t i = 4; i < x.element_count(); i += 13) x.SetFromDouble(i, nans[i / 13 % 3]);
    }
  }
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args.values);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args.values);
  EXPECT_TRUE(got.ok()) << got.status();
  if (want.ok() && got.ok()) {
    EXPECT_EQ(got->shape(), want->shape());
    const std::vector<const Literal*> g = testing::ArrayLeaves(*got),
                                      w = testing::ArrayLeaves(*want);
    EXPECT_EQ(g.size(), w.size());
    for (size_t k = 0; k < g.size() && k < w.size(); ++k) {
      const int64_t bytes = g[k]->shape().byte_size();
      EXPECT_EQ(bytes, w[k]->shape().byte_size());
      EXPECT_EQ(std::memcmp(g[k]->untyped_data(), w[k]->untyped_data(), bytes), 0)
          << "output " << k << " differs from the evaluator's";
    }
  }
  bool library = true, any = false;
  for (const Step& s : c.exe->plan().steps) {
    if (s.instr->opcode() != HloOpcode::kSort) continue;
    any = true;
    library &= s.kind == Disposition::kLibrary && s.comparator >= 0;
  }
  return any && library;
}

// Check with a float first argument holding, every few elements, NaNs of both signs and
// another payload, both zeros and both infinities (many ties among them).
bool CheckWithNans(const std::string& text, int threads) {
  return Check(text, threads, /*special=*/true, /*more_nans=*/true);
}

// ENTRY: one f32 parameter of `shape`, sorted along `dim` by kJaxLess.
std::string JaxSort(const std::string& shape, int dim) {
  return fmt::format(
      "HloModule s\n{0}\nENTRY main {{\n  x = f32[{1}] parameter(0)\n  ROOT s = f32[{1}] "
      "sort(x), dimensions={{{2}}}, is_stable=true, to_apply=less\n}}\n",
      kJaxLess, shape, dim);
}

// argsort of `type` keys of `shape` along `dim`: keys and an iota, compared by keys only
// (the iota's parameters unused, as jnp.argsort writes it).
std::string ArgSort(const std::string& type, const std::string& shape, int dim) {
  return fmt::format(R"(HloModule a
less {{
  a = {0}[] parameter(0)
  b = {0}[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}}
ENTRY main {{
  x = {0}[{1}] parameter(0)
  i = s32[{1}] iota(), iota_dimension={2}
  ROOT s = ({0}[{1}], s32[{1}]) sort(x, i), dimensions={{{2}}}, is_stable=true, to_apply=less
}}
)",
                     type, shape, dim);
}

TEST(NativeSort, MatchesTheEvaluatorBitForBit) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(Check(JaxSort("1000", 0), threads, /*special=*/true));
    EXPECT_TRUE(Check(JaxSort("64,512", 1), threads, /*special=*/true));  // rows in parallel
    EXPECT_TRUE(Check(JaxSort("300,7", 0), threads));                     // a strided row
    EXPECT_TRUE(Check(JaxSort("3,5,0", 1), threads));                     // nothing to sort
    // Integer keys in a small range: many ties, kept in their order (the iota shows it).
    EXPECT_TRUE(Check(ArgSort("s32", "40,300", 1), threads));
    EXPECT_TRUE(Check(ArgSort("s32", "300,40", 0), threads));
    EXPECT_TRUE(Check(ArgSort("f32", "17", 0), threads));
  }
}

// jnp.sort_complex's comparator (real parts, then imaginary parts, TOTALORDER) on c64 rows,
// and c128 keys compared by their imaginary parts with an argsort iota: a native sort of the
// parts (sort-complex-as-parts), the evaluator's bits.
TEST(NativeSort, ComplexKeysSortAsTheirParts) {
  const std::string sort_complex = R"(HloModule c
less {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ar = f32[] real(a)
  br = f32[] real(b)
  lt = pred[] compare(ar, br), direction=LT, type=TOTALORDER
  eq = pred[] compare(ar, br), direction=EQ, type=TOTALORDER
  ai = f32[] imag(a)
  bi = f32[] imag(b)
  lti = pred[] compare(ai, bi), direction=LT, type=TOTALORDER
  both = pred[] and(eq, lti)
  ROOT r = pred[] or(lt, both)
}
ENTRY main {
  x = c64[16,300] parameter(0)
  ROOT s = c64[16,300] sort(x), dimensions={1}, is_stable=true, to_apply=less
}
)";
  const std::string by_imaginary = R"(HloModule c
less {
  a = c128[] parameter(0)
  b = c128[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ai = f64[] imag(a)
  bi = f64[] imag(b)
  ROOT r = pred[] compare(ai, bi), direction=GT, type=TOTALORDER
}
ENTRY main {
  x = c128[500] parameter(0)
  i = s32[500] iota(), iota_dimension=0
  ROOT s = (c128[500], s32[500]) sort(x, i), dimensions={0}, is_stable=true, to_apply=less
}
)";
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(Check(sort_complex, threads));
    EXPECT_TRUE(Check(by_imaginary, threads));
  }
}

TEST(NativeSort, OneLongRowSortedInPartsKeepsTiesInOrder) {
  // 2^17 keys with ties: on two threads, two halves sorted apart and merged stably.
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(Check(ArgSort("s32", "131072", 0), threads));
    EXPECT_TRUE(Check(JaxSort("100003", 0), threads, /*special=*/true));
  }
}

// One integer compare of operand 0 (jnp.sort and argsort of integers, sort by an integer
// key): sorted as (key, position) pairs, without the comparator; ascending and descending,
// signed and unsigned, one operand or with payloads, ties in their order.
TEST(NativeSort, IntegerKeysSortedAsPairs) {
  auto sort = [](const std::string& type, const std::string& shape, int dim,
                 const std::string& direction, const std::string& payload) {
    const std::string params = payload.empty() ? ""
                                               : fmt::format(
                                                     "  p = {0}[] parameter(2)\n  q = {0}[] "
                                                     "parameter(3)\n",
                                                     payload);
    const std::string operands = payload.empty() ? "x" : "x, y";
    const std::string result = payload.empty()
                                   ? fmt::format("{}[{}]", type, shape)
                                   : fmt::format("({}[{}], {}[{}])", type, shape, payload, shape);
    const std::string y =
        payload.empty() ? "" : fmt::format("  y = {}[{}] parameter(1)\n", payload, shape);
    return fmt::format(
        "HloModule k\nless {{\n  a = {0}[] parameter(0)\n  b = {0}[] parameter(1)\n{5}  ROOT c "
        "= pred[] compare(a, b), direction={3}\n}}\nENTRY main {{\n  x = {0}[{1}] "
        "parameter(0)\n{6}  ROOT s = {7} sort({4}), dimensions={{{2}}}, is_stable=true, "
        "to_apply=less\n}}\n",
        type, shape, dim, direction, operands, params, y, result);
  };
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(Check(sort("s32", "70000", 0, "LT", ""), threads));  // a unique count's
    EXPECT_TRUE(Check(sort("u8", "30,500", 1, "GT", "f32"), threads));
    EXPECT_TRUE(Check(sort("s64", "400,9", 0, "GT", ""), threads));  // strided rows
    EXPECT_TRUE(Check(sort("u32", "2000", 0, "LT", "s8"), threads));
    EXPECT_TRUE(Check(sort("s8", "64,64", 1, "LT", "u16"), threads));
  }
}

// Whether the sort step of `text`, compiled (after the passes, as it runs), sorts by keys.
bool CompiledSortsByKeys(const std::string& text) {
  const testing::CompiledText c = testing::CompileText(text);
  if (c.exe == nullptr) return false;
  for (const Step& s : c.exe->plan().steps)
    if (s.instr->opcode() == HloOpcode::kSort) return SortsByKeys(*s.instr);
  ADD_FAILURE() << "no sort step";
  return false;
}

// JAX's float comparators (NaN and -0 canonicalized, TOTALORDER): sorted by integer keys,
// not by comparator calls, and bit for bit the evaluator's answer with NaNs of either sign
// and payload, both zeros and infinities among the keys; f32, f64, bf16 and f16, ascending
// and descending, alone and with an argsort's iota. A comparator that is not of that form
// keeps calling the comparator.
TEST(NativeSort, FloatKeysSortedAsTotalOrderIntegers) {
  auto sort = [](const std::string& type, const std::string& shape, int dim,
                 const std::string& direction, bool iota, const std::string& canonical) {
    const std::string result = iota ? fmt::format("({0}[{1}], s32[{1}])", type, shape)
                                    : fmt::format("{}[{}]", type, shape);
    return fmt::format(R"(HloModule f
less {{
  a = {0}[] parameter(0)
  b = {0}[] parameter(1)
  {4}
  nan = {0}[] constant(nan)
  zero = {0}[] constant(0)
  az = pred[] compare(a, zero), direction=EQ
  bz = pred[] compare(zero, b), direction=EQ
  a0 = {0}[] select(az, zero, a)
  b0 = {0}[] select(bz, zero, b)
  anan = pred[] compare(a, a), direction=NE
  bnan = pred[] compare(b, b), direction=NE
  an = {0}[] select(anan, nan, a0)
  bn = {0}[] select(bnan, nan, b0)
  ROOT c = pred[] compare({6}), direction={3}, type=TOTALORDER
}}
ENTRY main {{
  x = {0}[{1}] parameter(0)
  i = s32[{1}] iota(), iota_dimension={2}
  ROOT s = {5} sort(x{7}), dimensions={{{2}}}, is_stable=true, to_apply=less
}}
)",
                       type, shape, dim, direction,
                       iota ? "i = s32[] parameter(2)\n  j = s32[] parameter(3)" : "", result,
                       canonical, iota ? ", i" : "");
  };
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    for (const char* type : {"f32", "f64", "bf16", "f16"}) {
      SCOPED_TRACE(type);
      for (const char* direction : {"LT", "GT"}) {
        for (bool iota : {false, true}) {
          const std::string text = sort(type, "16,301", 1, direction, iota, "an, bn");
          EXPECT_TRUE(CompiledSortsByKeys(text));
          EXPECT_TRUE(CheckWithNans(text, threads));
        }
      }
      // Bare total order (no canonicalization): -0 before 0, -NaN first, NaN last.
      EXPECT_TRUE(CompiledSortsByKeys(sort(type, "2000", 0, "LT", true, "a, b")));
      EXPECT_TRUE(CheckWithNans(sort(type, "2000", 0, "LT", true, "a, b"), threads));
      EXPECT_TRUE(CheckWithNans(sort(type, "300,7", 0, "GT", false, "a, b"), threads));
    }
    EXPECT_TRUE(CheckWithNans(sort("f32", "100003", 0, "LT", true, "an, bn"), threads));
  }
  // Canonicalized on one side only: not a key order, the comparator runs (and agrees).
  const std::string lopsided = sort("f32", "8,100", 1, "LT", true, "an, b");
  EXPECT_FALSE(CompiledSortsByKeys(lopsided));
  EXPECT_TRUE(CheckWithNans(lopsided, 2));
}

TEST(NativeSort, LexicographicDescendingAndMixedTypes) {
  // Keys s32 descending, then f32 ascending, a u8 payload carried along.
  constexpr char kText[] = R"(HloModule l
cmp {
  a0 = s32[] parameter(0)
  b0 = s32[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  p = u8[] parameter(4)
  q = u8[] parameter(5)
  gt = pred[] compare(a0, b0), direction=GT
  eq = pred[] compare(a0, b0), direction=EQ
  lt = pred[] compare(a1, b1), direction=LT
  tie = pred[] and(eq, lt)
  ROOT first = pred[] or(gt, tie)
}
ENTRY main {
  k = s32[8,200] parameter(0)
  f = f32[8,200] parameter(1)
  u = u8[8,200] parameter(2)
  ROOT s = (s32[8,200], f32[8,200], u8[8,200]) sort(k, f, u), dimensions={1}, to_apply=cmp
}
)";
  for (int threads : {1, 2}) EXPECT_TRUE(Check(kText, threads));
}

}  // namespace
}  // namespace kiln::cpu
