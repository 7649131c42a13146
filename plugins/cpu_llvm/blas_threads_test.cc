// Dots routed to BLAS and kernels split across threads, against reference loops written in
// the test (double precision) and the HLO evaluator; threaded results against 1 thread.
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/onednn_matmul.h"
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

// The dot by definition: output index = (batch..., lhs free..., rhs free...), summed over
// every combination of the contracting dimensions, in double precision.
std::vector<double> ReferenceDot(const Literal& a, const Literal& b, const Shape& out,
                                 const DotDimensionNumbers& dn) {
  const auto& ad = a.shape().dimensions();
  const auto& bd = b.shape().dimensions();
  auto free_dims = [](int rank, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contract) {
    std::vector<int64_t> f;
    for (int i = 0; i < rank; ++i) {
      bool used = false;
      for (int64_t x : batch) used |= x == i;
      for (int64_t x : contract) used |= x == i;
      if (!used) f.push_back(i);
    }
    return f;
  };
  const std::vector<int64_t>& lc = dn.lhs_contracting_dimensions;
  const std::vector<int64_t>& rc = dn.rhs_contracting_dimensions;
  std::vector<int64_t> lf = free_dims(ad.size(), dn.lhs_batch_dimensions, lc);
  std::vector<int64_t> rf = free_dims(bd.size(), dn.rhs_batch_dimensions, rc);
  int64_t depth = 1;
  for (int64_t d : lc) depth *= ad[d];
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
    for (int64_t k = 0; k < depth; ++k) {
      for (int64_t j = static_cast<int64_t>(lc.size()) - 1, rest = k; j >= 0; --j) {
        ai[lc[j]] = rest % ad[lc[j]];
        bi[rc[j]] = ai[lc[j]];
        rest /= ad[lc[j]];
      }
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
  std::vector<int64_t> lc, rc;  // contracting dims
  bool blas;                    // expected to become a BLAS call
};

std::vector<DotCase> DotCases() {
  return {
      {"plain", {33, 47}, {47, 29}, {33, 29}, {}, {}, {1}, {0}, true},
      {"lhs_transposed", {47, 33}, {47, 29}, {33, 29}, {}, {}, {0}, {0}, true},
      {"rhs_transposed", {33, 47}, {29, 47}, {33, 29}, {}, {}, {1}, {1}, true},
      {"both_transposed", {47, 33}, {29, 47}, {33, 29}, {}, {}, {0}, {1}, true},
      // A float matrix of up to 2^22 elements times a vector in memory is emitted
      // (gemm_match.cc).
      {"matrix_vector", {33, 47}, {47}, {33}, {}, {}, {1}, {0}, false},
      {"vector_matrix", {47}, {29, 47}, {29}, {}, {}, {0}, {1}, true},
      {"batched", {3, 17, 21}, {3, 21, 13}, {3, 17, 13}, {0}, {0}, {2}, {1}, true},
      {"batched_transposed",
       {2, 3, 21, 17},
       {2, 3, 13, 21},
       {2, 3, 17, 13},
       {0, 1},
       {0, 1},
       {2},
       {3},
       true},
      // Several free dimensions beside the contracting one flatten into rows or columns.
      {"lhs_3d", {4, 9, 47}, {47, 29}, {4, 9, 29}, {}, {}, {2}, {0}, true},
      {"lhs_3d_transposed", {47, 4, 9}, {47, 29}, {4, 9, 29}, {}, {}, {0}, {0}, true},
      {"rhs_3d", {33, 47}, {47, 3, 11}, {33, 3, 11}, {}, {}, {1}, {0}, true},
      {"rhs_3d_transposed", {33, 47}, {3, 11, 47}, {33, 3, 11}, {}, {}, {1}, {2}, true},
      {"batched_3d", {2, 5, 3, 21}, {2, 21, 13}, {2, 5, 3, 13}, {0}, {0}, {3}, {1}, true},
      // Contracting dimension between two free ones, batch dimension not leading: a GEMM
      // after a transposed copy of the operand (dot canonicalization), same values.
      {"contracting_in_the_middle", {4, 47, 9}, {47, 29}, {4, 9, 29}, {}, {}, {1}, {0}, true},
      {"batch_not_leading", {17, 3, 21}, {3, 21, 13}, {3, 17, 13}, {1}, {0}, {2}, {1}, true},
      // Several contracting dimensions, adjacent: they flatten into one depth. A weight
      // gradient (x[b,s,d] and g[b,s,e] over {b,s}); a batched one with the contracting
      // dimensions last on both; contracting dimensions listed out of order or apart (a
      // transposed copy first).
      {"weight_gradient", {3, 5, 17}, {3, 5, 13}, {17, 13}, {}, {}, {0, 1}, {0, 1}, true},
      {"two_contracting_last",
       {2, 9, 3, 7},
       {2, 11, 3, 7},
       {2, 9, 11},
       {0},
       {0},
       {2, 3},
       {2, 3},
       true},
      {"contracting_out_of_order", {3, 5, 17}, {5, 3, 13}, {17, 13}, {}, {}, {0, 1}, {1, 0}, true},
      {"contracting_apart", {3, 17, 5}, {3, 5, 13}, {17, 13}, {}, {}, {0, 2}, {0, 1}, true},
  };
}

// `ROOT d = dot(p0, p1)` over these shapes and dimension numbers.
std::shared_ptr<HloModule> DotModule(const Shape& ls, const Shape& rs, const Shape& os,
                                     const DotDimensionNumbers& dn) {
  auto module = std::make_shared<HloModule>("m");
  HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
  Builder b(entry);
  HloInstruction* d = b.Op(HloOpcode::kDot, os, {b.Param(0, ls), b.Param(1, rs)});
  d->mutable_attrs().dot_dimension_numbers = dn;
  entry->set_root(d);
  return module;
}

DotDimensionNumbers Numbers(const DotCase& c) {
  DotDimensionNumbers dn;
  dn.lhs_batch_dimensions = c.lb;
  dn.rhs_batch_dimensions = c.rb;
  dn.lhs_contracting_dimensions = c.lc;
  dn.rhs_contracting_dimensions = c.rc;
  return dn;
}

// Compiled with blas_min_mnk 0, so that even these small dots go to the library when it can
// compute them; null (and a test failure) when compiling fails.
std::shared_ptr<const CpuExecutable> CompileWithSmallDotsToLibrary(
    std::shared_ptr<const HloModule> module) {
  CompileOptions opts;
  opts.plan.blas_min_mnk = 0;
  auto compiler = CpuCompiler::Create(opts);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  if (!compiler.ok()) return nullptr;
  auto exe = (*compiler)->Compile(std::move(module));
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *std::move(exe) : nullptr;
}

bool HasLibraryStep(const CpuExecutable& exe) {
  for (const Step& s : exe.plan().steps)
    if (s.kind == Disposition::kLibrary) return true;
  return false;
}

// Compiles case `c` of element type `t` (every GEMM-shaped dot a library step), expects a
// library step exactly where `c.blas` says so (and a BLAS exists), and compares the result with
// the double-precision reference and the evaluator.
void CheckDotCase(const DotCase& c, PT t) {
  Shape ls(t, c.lhs), rs(t, c.rhs), os(t, c.out);
  const DotDimensionNumbers dn = Numbers(c);
  std::shared_ptr<HloModule> module = DotModule(ls, rs, os, dn);
  std::shared_ptr<const CpuExecutable> exe = CompileWithSmallDotsToLibrary(module);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(HasLibraryStep(*exe), c.blas && HaveBlas());

  std::vector<Literal> args = {Random(ls, 1), Random(rs, 2)};
  auto got = exe->Run(args);
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

class BlasDotTest : public ::testing::TestWithParam<PT> {};

TEST_P(BlasDotTest, MatchesReferenceAndEvaluator) {
  for (const DotCase& c : DotCases()) {
    SCOPED_TRACE(c.name);
    CheckDotCase(c, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Types, BlasDotTest, ::testing::Values(PT::F32, PT::F64));

// A contraction of at most 4 elements (a 3x3 rotation of points, a 2x2 gate on a state
// vector) is multiply-adds in the emitted kernel, fused with its neighbours, not a GEMM (even
// with the GEMM threshold at 0); 5 elements is a GEMM again. Values the reference's and the
// evaluator's.
TEST(CpuLlvmBlas, TinyContractionsAreEmittedMultiplyAdds) {
  const std::vector<DotCase> cases = {
      {"contract_3", {500, 3}, {3, 3}, {500, 3}, {}, {}, {1}, {0}, false},
      {"contract_4_wide", {64, 4}, {4, 300}, {64, 300}, {}, {}, {1}, {0}, false},
      {"contract_2_batched", {6, 50, 2}, {6, 2, 2}, {6, 50, 2}, {0}, {0}, {2}, {1}, false},
      {"contract_5", {500, 5}, {5, 3}, {500, 3}, {}, {}, {1}, {0}, true}};
  for (PT t : {PT::F32, PT::F64})
    for (const DotCase& c : cases) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << PrimitiveTypeName(t));
      CheckDotCase(c, t);
    }
}

// Past 2^22 elements a float matrix times a vector is a library call again, and so is one of
// a vector computed in the kernel (tanh(v), which the emitted kernel would recompute per
// row); every form agrees with the reference.
TEST(CpuLlvmBlas, MatrixVectorProductsEmittedOrLibrary) {
  struct Case {
    int64_t rows;
    bool computed_vector, library;
  };
  for (const Case& c : {Case{2048, false, false}, Case{2049, false, true}, Case{64, true, true}}) {
    SCOPED_TRACE(::testing::Message() << c.rows << (c.computed_vector ? " tanh(v)" : " v"));
    Shape ls(PT::F32, {c.rows, 2048}), rs(PT::F32, {2048}), os(PT::F32, {c.rows});
    DotDimensionNumbers dn;
    dn.lhs_contracting_dimensions = {1};
    dn.rhs_contracting_dimensions = {0};
    auto module = std::make_shared<HloModule>("m");
    HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    Builder b(entry);
    HloInstruction* v = b.Param(1, rs);
    if (c.computed_vector) v = b.Op(HloOpcode::kTanh, rs, {v});
    HloInstruction* d = b.Op(HloOpcode::kDot, os, {b.Param(0, ls), v});
    d->mutable_attrs().dot_dimension_numbers = dn;
    entry->set_root(d);
    std::shared_ptr<const CpuExecutable> exe = CompileWithSmallDotsToLibrary(module);
    ASSERT_NE(exe, nullptr);
    EXPECT_EQ(HasLibraryStep(*exe), c.library && HaveBlas());
    std::vector<Literal> args = {Random(ls, 1), Random(rs, 2)};
    auto got = exe->Run(args);
    ASSERT_TRUE(got.ok()) << got.status();
    if (c.computed_vector)
      for (float& x : args[1].data<float>()) x = std::tanh(x);
    std::vector<double> want = ReferenceDot(args[0], args[1], os, dn);
    ASSERT_EQ(got->element_count(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got->GetAsDouble(i), want[i], 1e-3) << "element " << i;
  }
}

// s8 x s8 -> s32 dots (a quantized layer): through oneDNN's int8 GEMM where HaveS8Gemm(),
// widened to s32 for the integer GEMM otherwise; exact either way, against the double-precision
// reference (exact for these sums) and the evaluator. Operands hold the extremes -128 and 127 as
// well.
TEST(CpuLlvmBlas, S8DotsAreExactWithOrWithoutTheLibrary) {
  for (const DotCase& c : DotCases()) {
    SCOPED_TRACE(c.name);
    Shape ls(PT::S8, c.lhs), rs(PT::S8, c.rhs), os(PT::S32, c.out);
    const DotDimensionNumbers dn = Numbers(c);
    std::shared_ptr<HloModule> module = DotModule(ls, rs, os, dn);
    std::shared_ptr<const CpuExecutable> exe = CompileWithSmallDotsToLibrary(module);
    ASSERT_NE(exe, nullptr);
    EXPECT_TRUE(HasLibraryStep(*exe));

    std::mt19937 rng(5);
    auto int8s = [&](const Shape& s) {
      std::vector<double> v(s.num_elements());
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = i % 7 == 0 ? -128.0 : i % 11 == 0 ? 127.0 : static_cast<int>(rng() % 256) - 128;
      return Literal::FromDoubles(s, v);
    };
    std::vector<Literal> args = {int8s(ls), int8s(rs)};
    auto got = exe->Run(args);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<double> want = ReferenceDot(args[0], args[1], os, dn);
    HloEvaluator evaluator;
    auto ev = evaluator.Evaluate(*module, args);
    ASSERT_TRUE(ev.ok()) << ev.status();
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got->GetAsDouble(i), want[i]) << "element " << i;
      ASSERT_EQ(got->GetAsDouble(i), ev->GetAsDouble(i)) << "element " << i;
    }
  }
}

// Restores an environment variable when it goes out of scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// How far a bf16 x bf16 GEMM may be from the exact sum: f32 sums, and for a bf16 result one
// rounding (half a bf16 ulp, at most 2^-8 of the value).
double Bf16GemmTolerance(PT out, double exact) {
  return out == PT::BF16 ? std::abs(exact) / 256 + 1e-4 : 1e-4;
}

// The library's bf16 GEMM where oneDNN has native bf16 kernels, else (the plan forced, the
// library turned off with KILN_CPU_BF16_GEMM=0) the f32 GEMM of widened operands: either way
// the step is a bf16 GEMM (the dot was not upcast), against the double-precision reference and
// the evaluator, for every layout, into f32 (preferred_element_type) and into bf16.
TEST(CpuLlvmBlas, Bf16DotsStayBf16GemmsWithOrWithoutTheLibrary) {
  if (!HaveBlas()) GTEST_SKIP() << "built without a BLAS library";
  for (bool library : {true, false}) {
    if (library && !HaveBf16Gemm()) {
      std::cout << "no native bf16 GEMM on this CPU: only the f32 path is tested\n";
      continue;
    }
    ScopedEnv env("KILN_CPU_BF16_GEMM", library ? nullptr : "0");
    for (PT out_type : {PT::F32, PT::BF16}) {
      for (const DotCase& c : DotCases()) {
        SCOPED_TRACE(::testing::Message()
                     << c.name << " library=" << library << " out=" << PrimitiveTypeName(out_type));
        Shape ls(PT::BF16, c.lhs), rs(PT::BF16, c.rhs), os(out_type, c.out);
        const DotDimensionNumbers dn = Numbers(c);
        std::shared_ptr<HloModule> module = DotModule(ls, rs, os, dn);
        CompileOptions opts;
        opts.plan.blas_min_mnk = 0;
        opts.plan.bf16_gemm = true;
        auto compiler = CpuCompiler::Create(opts);
        ASSERT_TRUE(compiler.ok()) << compiler.status();
        auto exe = (*compiler)->Compile(module);
        ASSERT_TRUE(exe.ok()) << exe.status();
        int bf16_gemms = 0;
        for (const Step& step : (*exe)->plan().steps)
          bf16_gemms += step.gemm && (step.gemm->type == GemmType::kBF16F32 ||
                                      step.gemm->type == GemmType::kBF16BF16);
        EXPECT_EQ(bf16_gemms, 1);
        std::vector<Literal> args = {Random(ls, 11), Random(rs, 12)};
        auto got = (*exe)->Run(args);
        ASSERT_TRUE(got.ok()) << got.status();
        std::vector<double> want = ReferenceDot(args[0], args[1], os, dn);
        HloEvaluator evaluator;
        auto ev = evaluator.Evaluate(*module, args);
        ASSERT_TRUE(ev.ok()) << ev.status();
        for (size_t i = 0; i < want.size(); ++i) {
          const double tol = Bf16GemmTolerance(out_type, want[i]);
          ASSERT_NEAR(got->GetAsDouble(i), want[i], tol) << "element " << i;
          ASSERT_NEAR(got->GetAsDouble(i), ev->GetAsDouble(i), tol) << "element " << i;
        }
      }
    }
  }
}

// A depth at which s8 sums can leave s32 is kept from the int8 library (which may saturate)
// and widened to the integer GEMM, which wraps as HLO's sum does: 131072 products of
// -128 * -128 are 2^31, which wraps to -2^31.
TEST(CpuLlvmBlas, S8DotThatCouldOverflowWrapsAsHloSays) {
  constexpr int64_t k = 131072;
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  std::shared_ptr<const CpuExecutable> exe = CompileWithSmallDotsToLibrary(
      DotModule(Shape(PT::S8, {1, k}), Shape(PT::S8, {k, 2}), Shape(PT::S32, {1, 2}), dn));
  ASSERT_NE(exe, nullptr);
  EXPECT_TRUE(HasLibraryStep(*exe));
  std::vector<double> rhs(2 * k);
  for (int64_t i = 0; i < k; ++i) rhs[2 * i] = -128, rhs[2 * i + 1] = i == 0 ? 0 : -128;
  std::vector<Literal> args = {
      Literal::FromDoubles(Shape(PT::S8, {1, k}), std::vector<double>(k, -128)),
      Literal::FromDoubles(Shape(PT::S8, {k, 2}), rhs)};
  auto got = exe->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->GetAsDouble(0), -2147483648.0);
  EXPECT_EQ(got->GetAsDouble(1), 2147483648.0 - 16384);  // (k - 1) * 16384 fits
}

// Integer dots of mixed or narrow types (u8 images, s16 audio, an s16 result, s32 operands
// of an s64 result) are widened to one 32- or 64-bit type for the integer GEMM: a library step,
// bit for bit the evaluator's answer. Operands span each type's whole range, so products and
// sums wrap.
TEST(CpuLlvmBlas, MixedIntegerDotsRunOnTheIntegerGemmExactly) {
  struct Types {
    PT lhs, rhs, out;
  };
  const Types types[] = {{PT::U8, PT::U8, PT::S32},   {PT::S16, PT::S16, PT::S32},
                         {PT::S8, PT::S8, PT::S16},   {PT::U16, PT::S8, PT::S32},
                         {PT::S32, PT::S32, PT::S64}, {PT::U8, PT::U8, PT::U8}};
  std::mt19937_64 rng(9);
  auto fill = [&](const Shape& s) {
    Literal l(s);
    for (uint8_t* p = l.untyped_data(); p != l.untyped_data() + l.size_bytes(); ++p)
      *p = static_cast<uint8_t>(rng());
    return l;
  };
  for (const Types& t : types) {
    for (const DotCase& c : DotCases()) {
      SCOPED_TRACE(::testing::Message()
                   << c.name << " " << PrimitiveTypeName(t.lhs) << " x " << PrimitiveTypeName(t.rhs)
                   << " -> " << PrimitiveTypeName(t.out));
      Shape ls(t.lhs, c.lhs), rs(t.rhs, c.rhs), os(t.out, c.out);
      std::shared_ptr<HloModule> module = DotModule(ls, rs, os, Numbers(c));
      std::shared_ptr<const CpuExecutable> exe = CompileWithSmallDotsToLibrary(module);
      ASSERT_NE(exe, nullptr);
      EXPECT_TRUE(HasLibraryStep(*exe));
      std::vector<Literal> args;
      args.push_back(fill(ls));
      args.push_back(fill(rs));
      auto got = exe->Run(args);
      ASSERT_TRUE(got.ok()) << got.status();
      HloEvaluator evaluator;
      auto ev = evaluator.Evaluate(*module, args);
      ASSERT_TRUE(ev.ok()) << ev.status();
      for (int64_t i = 0; i < got->element_count(); ++i)
        ASSERT_EQ(got->GetAsInt64(i), ev->GetAsInt64(i)) << "element " << i;
    }
  }
}

// c64 and c128 dots become four real GEMMs of the parts: library steps, and the evaluator's
// complex accumulation within rounding.
TEST(CpuLlvmBlas, ComplexDotsRunAsRealGemms) {
  auto fill = [](const Shape& s, uint32_t seed, auto zero) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1, 1);
    Literal l(s);
    using C = decltype(zero);
    for (C& x : l.data<C>()) x = C(dist(rng), dist(rng));
    return l;
  };
  for (PT t : {PT::C64, PT::C128}) {
    for (const DotCase& c : DotCases()) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << PrimitiveTypeName(t));
      Shape ls(t, c.lhs), rs(t, c.rhs), os(t, c.out);
      std::shared_ptr<HloModule> module = DotModule(ls, rs, os, Numbers(c));
      std::shared_ptr<const CpuExecutable> exe = CompileWithSmallDotsToLibrary(module);
      ASSERT_NE(exe, nullptr);
      // (A complex matrix-vector product's real parts read its vector's parts, computed:
      // library calls too.)
      EXPECT_EQ(HasLibraryStep(*exe), HaveBlas());
      std::vector<Literal> args;
      if (t == PT::C64) {
        args.push_back(fill(ls, 1, std::complex<float>()));
        args.push_back(fill(rs, 2, std::complex<float>()));
      } else {
        args.push_back(fill(ls, 1, std::complex<double>()));
        args.push_back(fill(rs, 2, std::complex<double>()));
      }
      auto got = exe->Run(args);
      ASSERT_TRUE(got.ok()) << got.status();
      HloEvaluator evaluator;
      auto ev = evaluator.Evaluate(*module, args);
      ASSERT_TRUE(ev.ok()) << ev.status();
      const double tol = t == PT::C64 ? 1e-4 : 1e-12;
      for (int64_t i = 0; i < got->element_count(); ++i) {
        std::complex<double> g, e;
        if (t == PT::C64) {
          g = got->data<std::complex<float>>()[i], e = ev->data<std::complex<float>>()[i];
        } else {
          g = got->data<std::complex<double>>()[i], e = ev->data<std::complex<double>>()[i];
        }
        ASSERT_NEAR(g.real(), e.real(), tol * 10) << "element " << i;
        ASSERT_NEAR(g.imag(), e.imag(), tol * 10) << "element " << i;
      }
    }
  }
}

// RunBlasDot on a pool cuts a GEMM into row blocks, column blocks or batch entries, one
// single-threaded library call each: every way of cutting against a loop over the stored
// layouts, in double precision.
TEST(CpuLlvmBlas, GemmSplitAcrossThePoolMatchesReference) {
  if (!HaveBlas()) GTEST_SKIP() << "built without a BLAS library";
  struct Case {
    int64_t batch, m, n, k;
  };
  // m >= n: row blocks; n > m: column blocks; batch >= threads: whole entries. Sizes are not
  // multiples of the 16-wide blocks, and every case is above the 2 MFLOP split threshold.
  const Case cases[] = {{1, 150, 37, 200}, {1, 37, 150, 200}, {3, 70, 50, 300}, {2, 90, 41, 300}};
  // bf16 GEMMs both on the library (where it has native kernels) and through f32.
  struct Types {
    GemmType gemm;
    PT in, out;
    const char* bf16_library;  // KILN_CPU_BF16_GEMM
  };
  const Types types[] = {{GemmType::kF32, PT::F32, PT::F32, nullptr},
                         {GemmType::kF64, PT::F64, PT::F64, nullptr},
                         {GemmType::kBF16F32, PT::BF16, PT::F32, nullptr},
                         {GemmType::kBF16BF16, PT::BF16, PT::BF16, nullptr},
                         {GemmType::kBF16F32, PT::BF16, PT::F32, "0"},
                         {GemmType::kBF16BF16, PT::BF16, PT::BF16, "0"}};
  for (const Types& ty : types) {
    ScopedEnv env("KILN_CPU_BF16_GEMM", ty.bf16_library);
    const bool f64 = ty.in == PT::F64;
    for (const Case& c : cases) {
      for (int ta = 0; ta < 2; ++ta) {
        for (int tb = 0; tb < 2; ++tb) {
          GemmShape g;
          g.type = ty.gemm, g.batch = c.batch, g.m = c.m, g.n = c.n, g.k = c.k;
          g.trans_a = ta, g.trans_b = tb;
          Literal a = Random(Shape(ty.in, {c.batch, c.m * c.k}), 3);
          Literal b = Random(Shape(ty.in, {c.batch, c.k * c.n}), 4);
          for (int threads : {2, 3}) {
            SCOPED_TRACE(::testing::Message()
                         << "types " << PrimitiveTypeName(ty.in) << "->"
                         << PrimitiveTypeName(ty.out) << " bf16 library "
                         << (ty.bf16_library ? "off" : "on") << " batch=" << c.batch << " m=" << c.m
                         << " n=" << c.n << " ta=" << ta << " tb=" << tb << " threads=" << threads);
            ThreadPool pool(threads);
            Literal out(Shape(ty.out, {c.batch, c.m * c.n}));
            RunBlasDot(g, a.untyped_data(), b.untyped_data(), out.untyped_data(), &pool);
            for (int64_t i = 0; i < c.batch; ++i) {
              for (int64_t r = 0; r < c.m; ++r) {
                for (int64_t col = 0; col < c.n; ++col) {
                  double want = 0;
                  for (int64_t k = 0; k < c.k; ++k) {
                    int64_t ai = i * c.m * c.k + (ta ? k * c.m + r : r * c.k + k);
                    int64_t bi = i * c.k * c.n + (tb ? col * c.k + k : k * c.n + col);
                    want += a.GetAsDouble(ai) * b.GetAsDouble(bi);
                  }
                  ASSERT_NEAR(out.GetAsDouble(i * c.m * c.n + r * c.n + col), want,
                              f64                  ? 1e-10
                              : ty.out == PT::BF16 ? std::abs(want) / 256 + 1e-3
                                                   : 1e-3)
                      << "at [" << i << "," << r << "," << col << "]";
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(CpuLlvmBlas, GramProductsFromOneBufferMatchReference) {
  if (!HaveBlas()) GTEST_SKIP() << "built without a BLAS library";
  // A A^T (A stored m x k, read twice) and A^T A (A stored k x m): the product is computed in
  // bands on and below the diagonal and mirrored. Sizes not multiples of the 16-row blocks;
  // one thread, several, and a batch of entries per thread; f32 and f64.
  struct Case {
    int64_t batch, m, k;
  };
  const Case cases[] = {{1, 200, 150}, {1, 64, 700}, {3, 97, 80}, {1, 1000, 20}};
  for (PT t : {PT::F32, PT::F64}) {
    for (const Case& c : cases) {
      for (int ta = 0; ta < 2; ++ta) {
        GemmShape g;
        g.type = t == PT::F64 ? GemmType::kF64 : GemmType::kF32;
        g.batch = c.batch, g.m = c.m, g.n = c.m, g.k = c.k;
        g.trans_a = ta, g.trans_b = !ta;
        Literal a = Random(Shape(t, {c.batch, c.m * c.k}), 5);
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(::testing::Message()
                       << PrimitiveTypeName(t) << " batch=" << c.batch << " m=" << c.m
                       << " k=" << c.k << " ta=" << ta << " threads=" << threads);
          ThreadPool pool(threads);
          Literal out(Shape(t, {c.batch, c.m * c.m}));
          for (int64_t e = 0; e < out.element_count(); ++e) out.SetFromDouble(e, 1e30);
          RunBlasDot(g, a.untyped_data(), a.untyped_data(), out.untyped_data(), &pool);
          for (int64_t i = 0; i < c.batch; ++i) {
            for (int64_t r = 0; r < c.m; ++r) {
              for (int64_t col = 0; col < c.m; ++col) {
                double want = 0;
                for (int64_t k = 0; k < c.k; ++k) {
                  const int64_t base = i * c.m * c.k;
                  want +=
                      ta ? a.GetAsDouble(base + k * c.m + r) * a.GetAsDouble(base + k * c.m + col)
                         : a.GetAsDouble(base + r * c.k + k) * a.GetAsDouble(base + col * c.k + k);
                }
                ASSERT_NEAR(out.GetAsDouble(i * c.m * c.m + r * c.m + col), want,
                            t == PT::F64 ? 1e-10 : 1e-3)
                    << "at [" << i << "," << r << "," << col << "]";
              }
            }
          }
        }
      }
    }
  }
}

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
  for (const Step& s : (*exe)->plan().steps)
    *parallel_kernels += s.outer_extent >= 2 || s.reduce_parts >= 2;
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
  // The row reduce and the final kernel are split along rows, the column reduce (accumulated
  // row by row) into parts of its rows.
  EXPECT_GE(k2, 2);
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

TEST(CpuLlvmThreads, ChunkBoundAndNestedCallsRunEveryIndexOnce) {
  ThreadPool pool(3);
  // max_chunks = 2: two calls, whatever the pool size (one inline call if the pool saw
  // another process take its cores).
  std::atomic<int> calls{0};
  std::vector<int> hits(50, 0);
  pool.ParallelFor(
      50,
      [&](int64_t b, int64_t e) {
        ++calls;
        for (int64_t i = b; i < e; ++i) ++hits[i];
      },
      2);
  EXPECT_TRUE(calls.load() == 2 || calls.load() == 1) << calls.load();
  for (int h : hits) ASSERT_EQ(h, 1);
  // A parallel-for inside a chunk runs inline on that thread instead of deadlocking.
  std::vector<std::atomic<int>> inner(40 * 10);
  pool.ParallelFor(40, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.ParallelFor(10, [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; ++j) ++inner[i * 10 + j];
      });
  });
  for (const auto& h : inner) ASSERT_EQ(h.load(), 1);
}

// Two threads calling into one pool at once (two executables sharing a compiler): calls are
// serialized and each sees its own indices exactly once.
TEST(CpuLlvmThreads, ConcurrentCallersEachCompleteTheirOwnRange) {
  ThreadPool pool(2);
  std::vector<int> a(1000, 0), b(1000, 0);
  auto run = [&pool](std::vector<int>& v) {
    for (int rep = 0; rep < 200; ++rep)
      pool.ParallelFor(static_cast<int64_t>(v.size()), [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) ++v[i];
      });
  };
  std::thread other([&] { run(b); });
  run(a);
  other.join();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(a[i] == 200 && b[i] == 200) << i;
}

// A worker finishing far behind the others is what preemption by another process looks
// like: the pool then runs parallel-fors on the calling thread alone for a while, instead of
// waiting for descheduled workers at every call; large calls still go to the workers.
TEST(CpuLlvmThreads, LateWorkerSendsTheNextCallsToTheCaller) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0};
  auto run = [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) ++on_caller;
    // Chunk 0 holds its worker long enough for the other to take chunk 1, the late one.
    std::this_thread::sleep_for(std::chrono::milliseconds(b == 0 ? 50 : 150));
  };
  pool.ParallelFor(2, run, 2);
  EXPECT_EQ(on_caller.load(), 0);  // the workers ran both chunks
  // One late call alone (a shared host's noise) leaves the next calls on the workers.
  on_caller = 0;
  pool.ParallelFor(64, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() == caller) ++on_caller;
  });
  EXPECT_EQ(on_caller.load(), 0);
  // A second within 50 ms sends them to the caller.
  pool.ParallelFor(2, run, 2);
  EXPECT_EQ(on_caller.load(), 0);
  std::vector<int> hits(64, 0);
  pool.ParallelFor(64, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) ++on_caller;
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  EXPECT_EQ(on_caller.load(), 1);  // one inline call over the whole range
  for (int h : hits) ASSERT_EQ(h, 1);
  // The first large call (a GEMM of a millisecond or more) of a cost tries the workers.
  on_caller = 0;
  std::vector<int> large_hits(64, 0);
  pool.ParallelFor(
      64,
      [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() == caller) ++on_caller;
        for (int64_t i = b; i < e; ++i) ++large_hits[i];
      },
      2, /*even=*/true, /*large_cost=*/1);
  EXPECT_EQ(on_caller.load(), 0);
  for (int h : large_hits) ASSERT_EQ(h, 1);
}

// While contended, large calls of one cost try each way three times, then run the way the
// earlier ones took less time: where the caller alone is faster, on the caller; where the
// workers are, on the workers. Before each call an ordinary call with a late chunk makes the
// pool contended (again, until a small call runs inline: on a busy machine one worker may run
// both chunks, and nothing looks late).
TEST(CpuLlvmThreads, ContendedLargeCallsRunTheFasterWay) {
  for (bool alone_faster : {true, false}) {
    SCOPED_TRACE(alone_faster ? "caller alone faster" : "workers faster");
    ThreadPool pool(2);
    const std::thread::id caller = std::this_thread::get_id();
    auto contend = [&] {
      for (int attempt = 0; attempt < 50; ++attempt) {
        pool.ParallelFor(2, [](int64_t b, int64_t) {
          std::this_thread::sleep_for(std::chrono::milliseconds(b == 0 ? 2 : 8));
        });
        std::atomic<bool> inline_run{false};
        pool.ParallelFor(64, [&](int64_t, int64_t) {
          if (std::this_thread::get_id() == caller) inline_run = true;
        });
        if (inline_run) return true;
      }
      return false;
    };
    std::atomic<int> on_caller{0};
    auto run = [&](int64_t b, int64_t e) {
      const bool alone = std::this_thread::get_id() == caller;
      if (alone) ++on_caller;
      const int ms = alone ? (alone_faster ? 1 : 80) : (b == 0 ? 5 : 15);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    };
    const int64_t cost = 12345;
    auto calls = [&](int count) {
      on_caller = 0;
      for (int i = 0; i < count; ++i) {
        ASSERT_TRUE(contend());
        pool.ParallelFor(2, run, 2, /*even=*/true, cost);
      }
    };
    calls(6);
    EXPECT_EQ(on_caller.load(), 3);  // the tries: workers, caller, workers, ...
    calls(6);
    EXPECT_EQ(on_caller.load(), alone_faster ? 6 : 0);
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
