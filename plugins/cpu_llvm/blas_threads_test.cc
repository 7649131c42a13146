// Dots routed to BLAS and kernels split across threads, against reference loops written in
// the test (double precision) and the HLO evaluator; threaded results against 1 thread.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/test_builder.h"

namespace kiln::cpu {
namespace {

using testing::AddReducer;
using testing::Builder;
using PT = PrimitiveType;

Literal Random(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(s.num_elements());
  for (double& x : v) x = dist(rng);
  return Literal::FromDoubles(s, v);
}

std::vector<int64_t> Strides(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * d[i + 1];
  return s;
}

// The dot by definition: output index = (batch..., lhs free..., rhs free...), one
// contracting dimension, in double precision.
std::vector<double> ReferenceDot(const Literal& a, const Literal& b, const Shape& out,
                                 const DotDimensionNumbers& dn) {
  const auto& ad = a.shape().dimensions();
  const auto& bd = b.shape().dimensions();
  auto free_dims = [](int rank, const std::vector<int64_t>& batch, int64_t contract) {
    std::vector<int64_t> f;
    for (int i = 0; i < rank; ++i) {
      bool used = i == contract;
      for (int64_t x : batch) used |= x == i;
      if (!used) f.push_back(i);
    }
    return f;
  };
  int64_t lc = dn.lhs_contracting_dimensions[0], rc = dn.rhs_contracting_dimensions[0];
  std::vector<int64_t> lf = free_dims(ad.size(), dn.lhs_batch_dimensions, lc);
  std::vector<int64_t> rf = free_dims(bd.size(), dn.rhs_batch_dimensions, rc);
  std::vector<int64_t> as = Strides(ad), bs = Strides(bd), os = Strides(out.dimensions());
  std::vector<double> r(out.num_elements());
  for (int64_t lin = 0; lin < out.num_elements(); ++lin) {
    std::vector<int64_t> oi(out.rank());
    for (int d = 0; d < out.rank(); ++d) oi[d] = lin / os[d] % out.dimensions(d);
    std::vector<int64_t> ai(ad.size()), bi(bd.size());
    size_t p = 0;
    for (size_t i = 0; i < dn.lhs_batch_dimensions.size(); ++i, ++p) {
      ai[dn.lhs_batch_dimensions[i]] = oi[p];
      bi[dn.rhs_batch_dimensions[i]] = oi[p];
    }
    for (int64_t d : lf) ai[d] = oi[p++];
    for (int64_t d : rf) bi[d] = oi[p++];
    double sum = 0;
    for (int64_t k = 0; k < ad[lc]; ++k) {
      ai[lc] = k;
      bi[rc] = k;
      int64_t la = 0, lb = 0;
      for (size_t d = 0; d < ad.size(); ++d) la += ai[d] * as[d];
      for (size_t d = 0; d < bd.size(); ++d) lb += bi[d] * bs[d];
      sum += a.GetAsDouble(la) * b.GetAsDouble(lb);
    }
    r[lin] = sum;
  }
  return r;
}

struct DotCase {
  const char* name;
  std::vector<int64_t> lhs, rhs, out;
  std::vector<int64_t> lb, rb;  // batch dims
  int64_t lc, rc;               // contracting dims
  bool blas;                    // expected to become a BLAS call
};

std::vector<DotCase> DotCases() {
  return {
      {"plain", {33, 47}, {47, 29}, {33, 29}, {}, {}, 1, 0, true},
      {"lhs_transposed", {47, 33}, {47, 29}, {33, 29}, {}, {}, 0, 0, true},
      {"rhs_transposed", {33, 47}, {29, 47}, {33, 29}, {}, {}, 1, 1, true},
      {"both_transposed", {47, 33}, {29, 47}, {33, 29}, {}, {}, 0, 1, true},
      {"matrix_vector", {33, 47}, {47}, {33}, {}, {}, 1, 0, true},
      {"vector_matrix", {47}, {29, 47}, {29}, {}, {}, 0, 1, true},
      {"batched", {3, 17, 21}, {3, 21, 13}, {3, 17, 13}, {0}, {0}, 2, 1, true},
      {"batched_transposed",
       {2, 3, 21, 17},
       {2, 3, 13, 21},
       {2, 3, 17, 13},
       {0, 1},
       {0, 1},
       2,
       3,
       true},
      // Batch dimension not leading: stays an emitted loop, same values.
      {"batch_not_leading", {17, 3, 21}, {3, 21, 13}, {3, 17, 13}, {1}, {0}, 2, 1, false},
  };
}

class BlasDotTest : public ::testing::TestWithParam<PT> {};

TEST_P(BlasDotTest, MatchesReferenceAndEvaluator) {
  PT t = GetParam();
  for (const DotCase& c : DotCases()) {
    SCOPED_TRACE(c.name);
    auto module = std::make_shared<HloModule>("m");
    HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    Builder b(entry);
    Shape ls(t, c.lhs), rs(t, c.rhs), os(t, c.out);
    HloInstruction* x = b.Param(0, ls);
    HloInstruction* y = b.Param(1, rs);
    HloInstruction* d = b.Op(HloOpcode::kDot, os, {x, y});
    DotDimensionNumbers dn;
    dn.lhs_batch_dimensions = c.lb;
    dn.rhs_batch_dimensions = c.rb;
    dn.lhs_contracting_dimensions = {c.lc};
    dn.rhs_contracting_dimensions = {c.rc};
    d->mutable_attrs().dot_dimension_numbers = dn;
    entry->set_root(d);

    CompileOptions opts;
    opts.plan.blas_min_mnk = 0;  // route even these small dots to BLAS
    auto compiler = CpuCompiler::Create(opts);
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    auto exe = (*compiler)->Compile(module);
    ASSERT_TRUE(exe.ok()) << exe.status();
    bool library = false;
    for (const Step& s : (*exe)->plan().steps) library |= s.kind == Disposition::kLibrary;
    EXPECT_EQ(library, c.blas && HaveBlas());

    std::vector<Literal> args = {Random(ls, 1), Random(rs, 2)};
    auto got = (*exe)->Run(args);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<double> want = ReferenceDot(args[0], args[1], os, dn);
    HloEvaluator evaluator;
    auto ev = evaluator.Evaluate(*module, args);
    ASSERT_TRUE(ev.ok()) << ev.status();
    double tol = t == PT::F32 ? 1e-4 : 1e-12;
    ASSERT_EQ(got->element_count(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got->GetAsDouble(i), want[i], tol) << "element " << i;
      ASSERT_NEAR(got->GetAsDouble(i), ev->GetAsDouble(i), tol) << "element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, BlasDotTest, ::testing::Values(PT::F32, PT::F64));

TEST(CpuLlvmBlas, SmallDotStaysEmitted) {
  auto module = std::make_shared<HloModule>("m");
  HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
  Builder b(entry);
  HloInstruction* x = b.Param(0, Shape(PT::F32, {4, 4}));
  HloInstruction* y = b.Param(1, Shape(PT::F32, {4, 4}));
  HloInstruction* d = b.Op(HloOpcode::kDot, Shape(PT::F32, {4, 4}), {x, y});
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  d->mutable_attrs().dot_dimension_numbers = dn;
  entry->set_root(d);
  Plan plan = MakePlan(*module, {});  // default threshold: 4*4*4 is far below it
  ASSERT_EQ(plan.steps.back().instr, d);
  EXPECT_EQ(plan.steps.back().kind, Disposition::kKernel);
}

// softmax-like rows plus a column sum: a row reduction, an elementwise kernel with a
// broadcast, and a reduction over dimension 0 (so the partitioned dimension is kept).
struct ThreadedModule {
  std::shared_ptr<HloModule> module = std::make_shared<HloModule>("m");
  Shape s{PT::F32, {37, 129}};
  ThreadedModule() {
    HloComputation* add = AddReducer(*module, HloOpcode::kAdd, PT::F32, "add");
    HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    Builder b(entry);
    HloInstruction* x = b.Param(0, s);
    HloInstruction* e = b.Unary(HloOpcode::kExp, x);
    HloInstruction* zero = b.Const(PT::F32, 0);
    HloInstruction* rows = b.Reduce(e, zero, {1}, add);  // f32[37]
    HloInstruction* rb = b.Broadcast(rows, {37, 129}, {0});
    HloInstruction* sm = b.Binary(HloOpcode::kDivide, e, rb);  // f32[37,129]
    HloInstruction* cols = b.Reduce(x, zero, {0}, add);        // f32[129]
    HloInstruction* cb = b.Broadcast(cols, {37, 129}, {1});
    entry->set_root(b.Binary(HloOpcode::kAdd, sm, cb));
  }
  // exp(x)/rowsum(exp(x)) + colsum(x), in double precision.
  std::vector<double> Reference(const Literal& x) const {
    std::vector<double> rs(37, 0), cs(129, 0), r(37 * 129);
    for (int i = 0; i < 37; ++i)
      for (int j = 0; j < 129; ++j) {
        rs[i] += std::exp(x.GetAsDouble(i * 129 + j));
        cs[j] += x.GetAsDouble(i * 129 + j);
      }
    for (int i = 0; i < 37; ++i)
      for (int j = 0; j < 129; ++j)
        r[i * 129 + j] = std::exp(x.GetAsDouble(i * 129 + j)) / rs[i] + cs[j];
    return r;
  }
};

absl::StatusOr<Literal> RunWithThreads(const ThreadedModule& m, const Literal& x, int threads,
                                       int* parallel_kernels) {
  CompileOptions opts;
  opts.threads = threads;
  opts.plan.parallel_min_work = 0;  // split every partitionable kernel
  auto compiler = CpuCompiler::Create(opts);
  if (!compiler.ok()) return compiler.status();
  if ((*compiler)->threads() != threads) return absl::InternalError("wrong thread count");
  auto exe = (*compiler)->Compile(m.module);
  if (!exe.ok()) return exe.status();
  *parallel_kernels = 0;
  for (const Step& s : (*exe)->plan().steps) *parallel_kernels += s.outer_extent >= 2;
  return (*exe)->Run(std::vector<Literal>{x});
}

TEST(CpuLlvmThreads, TwoThreadsEqualOneThreadAndReference) {
  ThreadedModule m;
  Literal x = Random(m.s, 7);
  int k1 = 0, k2 = 0;
  auto one = RunWithThreads(m, x, 1, &k1);
  auto two = RunWithThreads(m, x, 2, &k2);
  auto three = RunWithThreads(m, x, 3, &k2);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_GE(k2, 2);  // the row reduce, the column reduce and the final kernel are split
  // Splitting the outer loop does not change any element's arithmetic: bitwise equal.
  EXPECT_TRUE(*one == *two);
  EXPECT_TRUE(*one == *three);
  std::vector<double> want = m.Reference(x);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(two->GetAsDouble(i), want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
}

TEST(CpuLlvmThreads, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 3, 100}) {
      std::vector<int> hits(n, 0);
      for (int rep = 0; rep < 3; ++rep)
        pool.ParallelFor(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[i];
        });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 3) << threads << " " << n << " " << i;
    }
  }
}

TEST(CpuLlvmThreads, ThreadCountFromEnvironment) {
  setenv("KILN_CPU_THREADS", "3", 1);
  EXPECT_EQ(DefaultThreadCount(), 3);
  setenv("KILN_CPU_THREADS", "zero", 1);
  EXPECT_GE(DefaultThreadCount(), 1);
  EXPECT_EQ(DefaultThreadCount(), std::max(1u, std::thread::hardware_concurrency()));
  unsetenv("KILN_CPU_THREADS");
}

}  // namespace
}  // namespace kiln::cpu
