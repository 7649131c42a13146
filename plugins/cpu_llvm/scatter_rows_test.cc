// cpu-llvm's native row scatter (scatter_rows.h) against the HLO evaluator, bit for bit
// except a float sum over private tables: the combiners JAX emits (add, max, min, multiply,
// set), f32/f64/bf16/s32/u8, row numbers that repeat and that fall outside the table, ids of
// rank 1, 2 and 3, index vectors of two and three components (x.at[i, j]), tables of rank 1, 2 and
// 3, one and two threads (wide rows split into bands, small tables into private copies), a table
// that must be copied because it is read again; and the scatters that are not row scatters, still
// right on the evaluator.
#include "plugins/cpu_llvm/scatter_rows.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/text_module_test_util.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

// A module `ROOT s = scatter(table, ids, updates)` with combiner `combine` (an expression of
// scalars a and b, or "set") over `type`; with `root`, s is not the root and `root` is.
std::string ScatterModule(const std::string& table, const std::string& ids,
                          const std::string& updates, const std::string& dims,
                          const std::string& type, const std::string& combine,
                          const std::string& root = "") {
  // "set": the combiner JAX writes for .set, `ROOT b = parameter(1)`.
  const std::string body =
      combine == "set"
          ? fmt::format("  a = {0}[] parameter(0)\n  ROOT b = {0}[] parameter(1)\n", type)
          : fmt::format(
                "  a = {0}[] parameter(0)\n  b = {0}[] parameter(1)\n  ROOT c = {0}[] {1}\n", type,
                combine);
  return fmt::format(
      "HloModule s\ncombine {{\n{5}}}\nENTRY main {{\n  t = {0} parameter(0)\n  i = {1} "
      "parameter(1)\n"
      "  u = {2} parameter(2)\n  {7}s = {0} scatter(t, i, u), {3}, to_apply=combine\n{6}}}\n",
      table, ids, updates, dims, type, body, root, root.empty() ? "ROOT " : "");
}

constexpr char kRowDims[] =
    "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
    "index_vector_dim=1";

// Runs `text` on cpu-llvm with `threads` and on the evaluator, with row numbers drawn from
// [-3, rows + 3) (some outside the table, many repeated); expects identical bits, or with
// `rtol` values that close (a float sum that private tables add up in another order).
// Returns whether the scatter named `s` is a row scatter.
bool Check(const std::string& text, int threads, double rtol = 0, uint32_t seed = 5) {
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return false;
  codegen_testing::RandomArgs args = codegen_testing::RandomArguments(*c.module, seed);
  const int64_t rows = args.values[0].shape().dimensions()[0];
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> id(-3, rows + 2);
  for (int64_t k = 0; k < args.values[1].element_count(); ++k)
    args.values[1].SetFromDouble(k, static_cast<double>(id(rng)));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args.values);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args.values);
  EXPECT_TRUE(got.ok()) << got.status();
  if (want.ok() && got.ok()) {
    EXPECT_EQ(got->shape(), want->shape());
    const std::vector<const Literal*> g = testing::ArrayLeaves(*got),
                                      w = testing::ArrayLeaves(*want);
    for (size_t k = 0; k < g.size() && k < w.size(); ++k) {
      const int64_t bytes = g[k]->shape().byte_size();
      EXPECT_EQ(bytes, w[k]->shape().byte_size());
      if (rtol == 0) {
        EXPECT_EQ(std::memcmp(g[k]->untyped_data(), w[k]->untyped_data(), bytes), 0)
            << "output " << k << " differs from the evaluator's";
        continue;
      }
      int64_t bad = 0;
      for (int64_t e = 0; e < g[k]->element_count(); ++e) {
        const double a = g[k]->GetAsDouble(e), b = w[k]->GetAsDouble(e);
        bad += std::abs(a - b) > rtol * (1 + std::abs(b));
      }
      EXPECT_EQ(bad, 0) << "elements of output " << k << " off by more than " << rtol;
    }
  }
  const HloInstruction* s = nullptr;
  for (const HloInstruction* h : c.module->entry()->instructions())
    if (h->opcode() == HloOpcode::kScatter) s = h;
  return s != nullptr && IsRowScatter(*s);
}

TEST(RowScatter, MatchesTheEvaluatorBitForBit) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    // A segment sum: narrow rows into a small table, many repeats; private tables on two
    // threads, whose partial sums are added in another order.
    EXPECT_TRUE(Check(
        ScatterModule("f32[50,32]", "s32[3000,1]", "f32[3000,32]", kRowDims, "f32", "add(a, b)"),
        threads, 1e-5));
    // A bincount (rows of one element) and a segment max and min: private tables, exact.
    EXPECT_TRUE(Check(ScatterModule("s32[4096]", "s32[100000,1]", "s32[100000]",
                                    "update_window_dims={}, inserted_window_dims={0}, "
                                    "scatter_dims_to_operand_dims={0}, index_vector_dim=1",
                                    "s32", "add(a, b)"),
                      threads));
    EXPECT_TRUE(Check(ScatterModule("f32[64,16]", "s64[20000,1]", "f32[20000,16]", kRowDims, "f32",
                                    "maximum(a, b)"),
                      threads));
    EXPECT_TRUE(Check(ScatterModule("s32[4000,16]", "s32[20000,1]", "s32[20000,16]", kRowDims,
                                    "s32", "maximum(a, b)"),
                      threads));
    EXPECT_TRUE(Check(
        ScatterModule("u8[64,16]", "s32[20000,1]", "u8[20000,16]", kRowDims, "u8", "minimum(a, b)"),
        threads));
    // An embedding gradient: rows of 1 KiB, split into bands on two threads.
    EXPECT_TRUE(Check(
        ScatterModule("f32[300,256]", "s32[2000,1]", "f32[2000,256]", kRowDims, "f32", "add(a, b)"),
        threads));
    // .set: the last update of a row wins, in every band.
    EXPECT_TRUE(Check(ScatterModule("f64[100,128]", "s32[1500]", "f64[1500,128]",
                                    "update_window_dims={1}, inserted_window_dims={0}, "
                                    "scatter_dims_to_operand_dims={0}, index_vector_dim=1",
                                    "f64", "set"),
                      threads));
    // segment_max over a table of rank 3, ids of rank 3 (a trailing index vector of 1).
    EXPECT_TRUE(Check(ScatterModule("s32[40,8,16]", "s64[10,30,1]", "s32[10,30,8,16]",
                                    "update_window_dims={2,3}, inserted_window_dims={0}, "
                                    "scatter_dims_to_operand_dims={0}, index_vector_dim=2",
                                    "s32", "maximum(b, a)"),
                      threads));
    EXPECT_TRUE(Check(ScatterModule("f32[64,160]", "u32[700,1]", "f32[700,160]", kRowDims, "f32",
                                    "minimum(a, b)"),
                      threads));
    EXPECT_TRUE(Check(ScatterModule("f32[64,160]", "s32[700,1]", "f32[700,160]", kRowDims, "f32",
                                    "multiply(a, b)"),
                      threads));
    EXPECT_TRUE(Check(
        ScatterModule("bf16[30,512]", "s32[400,1]", "bf16[400,512]", kRowDims, "bf16", "add(a, b)"),
        threads));
    // x.at[i, j].add(v): a 2-D point per update (either component may fall outside: ids are
    // drawn from [-3, 63) against 60 rows and 50 columns), and a point of a rank-4 table
    // whose trailing dimensions are the window, with u32 and s64 components.
    EXPECT_TRUE(Check(ScatterModule("f32[60,50]", "s32[3000,2]", "f32[3000]",
                                    "update_window_dims={}, inserted_window_dims={0,1}, "
                                    "scatter_dims_to_operand_dims={0,1}, index_vector_dim=1",
                                    "f32", "add(a, b)"),
                      threads));
    // Enough 2-D points (2^16 and more) that their row numbers are computed on the pool.
    EXPECT_TRUE(Check(ScatterModule("s32[60,50]", "s32[70000,2]", "s32[70000]",
                                    "update_window_dims={}, inserted_window_dims={0,1}, "
                                    "scatter_dims_to_operand_dims={0,1}, index_vector_dim=1",
                                    "s32", "add(a, b)"),
                      threads));
    EXPECT_TRUE(Check(ScatterModule("s32[10,12,8,16]", "u32[500,2]", "s32[500,8,16]",
                                    "update_window_dims={1,2}, inserted_window_dims={0,1}, "
                                    "scatter_dims_to_operand_dims={0,1}, index_vector_dim=1",
                                    "s32", "maximum(a, b)"),
                      threads));
    EXPECT_TRUE(Check(ScatterModule("f64[10,12,8]", "s64[40,20,3]", "f64[40,20]",
                                    "update_window_dims={}, inserted_window_dims={0,1,2}, "
                                    "scatter_dims_to_operand_dims={0,1,2}, index_vector_dim=2",
                                    "f64", "set"),
                      threads));
  }
}

// maximum and minimum propagate NaN from either side, hand-computed: a NaN in the table and
// one in a single update of 5000 into row 0 (serial, and private tables on two threads);
// row 1 takes no update.
TEST(RowScatter, MaximumAndMinimumPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"maximum(a, b)", "minimum(a, b)"}) {
    const bool max = std::string(op).starts_with("max");
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(op) + " threads " + std::to_string(threads));
      CompileOptions opts;
      opts.threads = threads;
      const testing::CompiledText c = testing::CompileText(
          ScatterModule("f32[2,16]", "s32[5000,1]", "f32[5000,16]", kRowDims, "f32", op), opts);
      ASSERT_NE(c.exe, nullptr);
      std::vector<Literal> args;
      for (const HloInstruction* p : c.module->entry()->parameters()) args.emplace_back(p->shape());
      std::fill_n(args[0].data<float>().begin(), 32, 0.0f);
      args[0].data<float>()[3] = nan;
      std::fill_n(args[1].data<int32_t>().begin(), 5000, 0);
      for (int u = 0; u < 5000; ++u)
        for (int e = 0; e < 16; ++e) args[2].data<float>()[u * 16 + e] = (u % 7) - 3.0f;
      args[2].data<float>()[2500 * 16 + 5] = nan;
      auto got = c.exe->Run(args);
      ASSERT_TRUE(got.ok()) << got.status();
      const Literal& out = *got;  // the scatter's table (an array result)
      for (int e = 0; e < 16; ++e) {
        const float v = out.data<float>()[e];
        if (e == 3 || e == 5)
          EXPECT_TRUE(std::isnan(v)) << e << ": " << v;
        else
          EXPECT_EQ(v, max ? 3.0f : -3.0f) << e;
        EXPECT_EQ(out.data<float>()[16 + e], 0.0f) << "row 1, " << e;
      }
    }
  }
}

TEST(RowScatter, CopiesATableThatIsReadAgain) {
  // The table is a parameter and an output: the scatter must not write over it.
  const std::string text =
      ScatterModule("f32[200,256]", "s32[900,1]", "f32[900,256]", kRowDims, "f32", "add(a, b)",
                    "  ROOT r = (f32[200,256], f32[200,256]) tuple(s, t)\n");
  EXPECT_TRUE(Check(text, 2));
}

// Whether every scatter `text`'s plan leaves to an evaluator step is a row scatter (runs
// natively), with at least one scatter planned.
bool ScattersRunNatively(const std::string& text) {
  const testing::CompiledText c = testing::CompileText(text, CompileOptions{});
  if (c.exe == nullptr) return false;
  int scatters = 0;
  for (const Step& step : c.exe->plan().steps) {
    if (step.instr->opcode() != HloOpcode::kScatter) continue;
    ++scatters;
    if (step.kind == Disposition::kEvaluator && !IsRowScatter(*step.instr)) return false;
  }
  return scatters > 0;
}

// x.at[:, idx].add(v) (an overlap-add over a batch's columns) and a scatter indexing dimensions
// 2 and 0 around a whole window run as row scatters on transposed operands
// (scatter-indexed-dimensions-first), with the evaluator's bits.
TEST(RowScatter, TrailingIndexedDimensionsRunAsRows) {
  const std::string columns = ScatterModule(
      "f32[4,300]", "s32[900,1]", "f32[4,900]",
      "update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
      "index_vector_dim=1",
      "f32", "add(a, b)");
  const std::string around = ScatterModule(
      "s32[30,8,40]", "s32[500,2]", "s32[500,8]",
      "update_window_dims={1}, inserted_window_dims={0,2}, scatter_dims_to_operand_dims={2,0}, "
      "index_vector_dim=1",
      "s32", "maximum(a, b)");
  for (const std::string& text : {columns, around}) {
    EXPECT_TRUE(ScattersRunNatively(text));
    for (int threads : {1, 2}) EXPECT_FALSE(Check(text, threads));  // not row form as written
  }
}

TEST(RowScatter, OtherScattersStayOnTheEvaluator) {
  // A window narrower than the row.
  EXPECT_FALSE(Check(
      ScatterModule("f32[50,64]", "s32[300,1]", "f32[300,32]", kRowDims, "f32", "add(a, b)"), 2));
  // A combiner the evaluator does not recognize.
  EXPECT_FALSE(Check(
      ScatterModule("f32[50,64]", "s32[300,1]", "f32[300,64]", kRowDims, "f32", "subtract(a, b)"),
      2));
  // Two index components addressing the table's dimensions in the other order.
  EXPECT_FALSE(Check(ScatterModule("f32[60,50]", "s32[300,2]", "f32[300]",
                                   "update_window_dims={}, inserted_window_dims={0,1}, "
                                   "scatter_dims_to_operand_dims={1,0}, index_vector_dim=1",
                                   "f32", "add(a, b)"),
                     2));
}

}  // namespace
}  // namespace kiln::cpu
