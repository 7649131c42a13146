// JIT kernels from the elemental emitter against values computed independently in the test
// (plain C++ loops in double precision, or hand-computed).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "gtest/gtest.h"
#include "hlo/float16.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/test_builder.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

using testing::AddReducer;
using testing::Builder;
using PT = PrimitiveType;

Literal Random(const Shape& s, uint32_t seed, double lo = -2, double hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(s.num_elements());
  for (double& x : v) x = dist(rng);
  return Literal::FromDoubles(s, v);
}

struct Fixture {
  std::shared_ptr<HloModule> module = std::make_shared<HloModule>("m");
  HloComputation* entry = nullptr;
  std::unique_ptr<Builder> b;
  Fixture() {
    entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    b = std::make_unique<Builder>(entry);
  }
  absl::StatusOr<Literal> Run(std::vector<Literal> args, PlanOptions plan = {},
                              std::string* ir = nullptr) {
    CompileOptions opts;
    opts.plan = plan;
    opts.keep_ir = ir != nullptr;
    auto compiler = CpuCompiler::Create(opts);
    if (!compiler.ok()) return compiler.status();
    auto exe = (*compiler)->Compile(module);
    if (!exe.ok()) return exe.status();
    if (ir) *ir = (*exe)->llvm_ir();
    return (*exe)->Run(args);
  }
};

void ExpectNear(const Literal& got, const std::vector<double>& want, double rtol, double atol) {
  ASSERT_EQ(got.element_count(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.GetAsDouble(i);
    ASSERT_NEAR(g, want[i], atol + rtol * std::fabs(want[i])) << "at element " << i;
  }
}

TEST(CpuLlvmEmitter, ElementwiseChainFusedIntoOneKernel) {
  Fixture f;
  Shape s(PT::F32, {1000});
  HloInstruction* x = f.b->Param(0, s);
  HloInstruction* y = f.b->Param(1, s);
  HloInstruction* e = f.b->Unary(HloOpcode::kExp, x);
  HloInstruction* m = f.b->Binary(HloOpcode::kMultiply, e, y);
  HloInstruction* half = f.b->Broadcast(f.b->Const(PT::F32, 0.5), {1000}, {});
  HloInstruction* t = f.b->Unary(HloOpcode::kTanh, f.b->Binary(HloOpcode::kAdd, m, half));
  f.entry->set_root(f.b->Unary(HloOpcode::kSqrt, f.b->Unary(HloOpcode::kAbs, t)));
  Literal lx = Random(s, 1), ly = Random(s, 2);
  std::string ir;
  auto r = f.Run({lx, ly}, {}, &ir);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> want;
  for (int i = 0; i < 1000; ++i)
    want.push_back(
        std::sqrt(std::fabs(std::tanh(std::exp(lx.GetAsDouble(i)) * ly.GetAsDouble(i) + 0.5))));
  ExpectNear(*r, want, 1e-5, 1e-6);
  // One kernel, and the loop vectorizer produced vector code for it.
  EXPECT_NE(ir.find("<8 x float>"), std::string::npos) << ir.substr(0, 4000);
}

TEST(CpuLlvmEmitter, BroadcastTransposeAndOneKernelPerInstruction) {
  for (bool fuse : {true, false}) {
    Fixture f;
    HloInstruction* x = f.b->Param(0, Shape(PT::F32, {3, 4}));
    HloInstruction* v = f.b->Param(1, Shape(PT::F32, {4}));
    HloInstruction* xt = f.b->Transpose(x, {1, 0});  // [4,3]
    HloInstruction* vb = f.b->Broadcast(v, {4, 3}, {0});
    f.entry->set_root(f.b->Binary(HloOpcode::kSubtract, xt, vb));
    Literal lx =
        Literal::FromDoubles(Shape(PT::F32, {3, 4}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    Literal lv = Literal::FromDoubles(Shape(PT::F32, {4}), {100, 200, 300, 400});
    PlanOptions po;
    po.fuse_unfused = fuse;
    auto r = f.Run({lx, lv}, po);
    ASSERT_TRUE(r.ok()) << r.status();
    // out[i][j] = x[j][i] - v[i]
    ExpectNear(*r, {-100, -96, -92, -199, -195, -191, -298, -294, -290, -397, -393, -389}, 0, 0);
  }
}

// Reduce with an add reducer over `dims` of a [37,53] array, checked against a C++ loop.
void CheckReduce(std::vector<int64_t> dims, HloOpcode op) {
  Fixture f;
  Shape s(PT::F32, {37, 53});
  HloComputation* red = AddReducer(*f.module, op, PT::F32, "reducer");
  HloInstruction* x = f.b->Param(0, s);
  double init = op == HloOpcode::kAdd ? 0 : op == HloOpcode::kMaximum ? -INFINITY : 1;
  f.entry->set_root(f.b->Reduce(x, f.b->Const(PT::F32, init), dims, red));
  Literal lx = Random(s, 3, 0.5, 1.5);
  auto r = f.Run({lx});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> want;
  auto combine = [&](double a, double b) {
    return op == HloOpcode::kAdd ? a + b : op == HloOpcode::kMaximum ? std::max(a, b) : a * b;
  };
  if (dims.size() == 2) {
    double acc = init;
    for (int i = 0; i < 37 * 53; ++i) acc = combine(acc, lx.GetAsDouble(i));
    want.push_back(acc);
  } else if (dims[0] == 1) {
    for (int i = 0; i < 37; ++i) {
      double acc = init;
      for (int j = 0; j < 53; ++j) acc = combine(acc, lx.GetAsDouble(i * 53 + j));
      want.push_back(acc);
    }
  } else {
    for (int j = 0; j < 53; ++j) {
      double acc = init;
      for (int i = 0; i < 37; ++i) acc = combine(acc, lx.GetAsDouble(i * 53 + j));
      want.push_back(acc);
    }
  }
  ExpectNear(*r, want, 1e-4, 1e-5);
}

TEST(CpuLlvmEmitter, ReduceLastAxis) { CheckReduce({1}, HloOpcode::kAdd); }
TEST(CpuLlvmEmitter, ReduceFirstAxis) { CheckReduce({0}, HloOpcode::kAdd); }
TEST(CpuLlvmEmitter, ReduceAllMax) { CheckReduce({0, 1}, HloOpcode::kMaximum); }
TEST(CpuLlvmEmitter, ReduceLastAxisMultiply) { CheckReduce({1}, HloOpcode::kMultiply); }

// Sums of more than KernelEmitter::kSumBlock elements run in blocks: the kept and reduced
// dimensions still line up (a column sum of 5000 rows: two chunks of dimension 0; a reduce
// over [70,80] of [3,70,80]: chunks of 51 rows of 80).
TEST(CpuLlvmEmitter, ReduceInBlocksKeepsIndexing) {
  for (auto [dims, shape] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{0}, {5000, 3}},
                             {{1, 2}, {3, 70, 80}}}) {
    Fixture f;
    Shape s(PT::F32, shape);
    HloComputation* red = AddReducer(*f.module, HloOpcode::kAdd, PT::F32, "add");
    f.entry->set_root(f.b->Reduce(f.b->Param(0, s), f.b->Const(PT::F32, 0), dims, red));
    Literal lx = Random(s, 5, -1, 1);
    auto r = f.Run({lx});
    ASSERT_TRUE(r.ok()) << r.status();
    // Both cases keep 3 results; element i of result o sits at i * 3 + o in [5000,3] and at
    // o * 5600 + i in [3,70,80].
    const bool columns = shape[0] == 5000;
    const int64_t inner = columns ? 5000 : 5600;
    std::vector<double> want(3, 0.0);
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < inner; ++i)
        want[o] += lx.GetAsDouble(columns ? i * 3 + o : o * 5600 + i);
    ExpectNear(*r, want, 1e-5, 1e-4);
  }
}

// A blocked sum's chunks stay a loop: x[1::7, ::3].sum() over f32[997,1009] is 12 chunks of
// 12 rows of 337 strided values; with the chunk count constant, O3 unrolled the chunks and
// their vector loops into one block of 3146 wide loads (1.9 s of instruction selection).
TEST(CpuLlvmEmitter, BlockedSumChunksStayALoop) {
  const std::string text = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[997,1009] parameter(0)
  s = f32[143,337] slice(x), slice={[1:997:7], [0:1009:3]}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(s, z), dimensions={0,1}, to_apply=add
}
)";
  for (int threads : {1, 2}) {
    const std::string ir = testing::CompareTextWithEvaluator(text, threads, 1e-4);
    size_t loads = 0;
    for (size_t at = ir.find("= load <"); at != std::string::npos; at = ir.find("= load <", at + 1))
      ++loads;
    EXPECT_LT(loads, 100u) << ir.substr(0, 4000);
  }
}

// A long f32 sum stays accurate: one accumulator (or one per vector lane) stops growing at
// 2^24 ones and drifts long before; blocks of kSumBlock keep 655,360,000 ones exact and
// 0.1f summed 2^24 times within 1e-5 (one accumulator per lane was 1.5e-4 off).
TEST(CpuLlvmEmitter, LongSumsStayAccurate) {
  for (auto [value, shape] :
       {std::pair<float, std::vector<int64_t>>{1.0f, {16384, 40000}}, {0.1f, {4096, 4096}}}) {
    Fixture f;
    HloComputation* red = AddReducer(*f.module, HloOpcode::kAdd, PT::F32, "add");
    HloInstruction* x = f.b->Broadcast(f.b->Param(0, Shape(PT::F32, {})), shape, {});
    f.entry->set_root(f.b->Reduce(x, f.b->Const(PT::F32, 0), {0, 1}, red));
    auto r = f.Run({Literal::Scalar(PT::F32, value)});
    ASSERT_TRUE(r.ok()) << r.status();
    const double want = static_cast<double>(value) * shape[0] * shape[1];
    EXPECT_LE(std::fabs(r->GetAsDouble(0) - want), 1e-5 * want) << "sum of " << value;
  }
}

TEST(CpuLlvmEmitter, SoftmaxUnfused) {
  Fixture f;
  const int64_t R = 5, C = 33;
  Shape s(PT::F32, {R, C});
  HloComputation* mx = AddReducer(*f.module, HloOpcode::kMaximum, PT::F32, "max");
  HloComputation* add = AddReducer(*f.module, HloOpcode::kAdd, PT::F32, "add");
  HloInstruction* x = f.b->Param(0, s);
  HloInstruction* rowmax = f.b->Reduce(x, f.b->Const(PT::F32, -INFINITY), {1}, mx);
  HloInstruction* sh = f.b->Binary(HloOpcode::kSubtract, x, f.b->Broadcast(rowmax, {R, C}, {0}));
  HloInstruction* e = f.b->Unary(HloOpcode::kExp, sh);
  HloInstruction* sum = f.b->Reduce(e, f.b->Const(PT::F32, 0), {1}, add);
  f.entry->set_root(f.b->Binary(HloOpcode::kDivide, e, f.b->Broadcast(sum, {R, C}, {0})));
  Literal lx = Random(s, 4, -5, 5);
  for (bool inline_rows : {false, true}) {
    CompileOptions opts;
    opts.plan.inline_row_reductions = inline_rows;
    auto compiler = CpuCompiler::Create(opts);
    ASSERT_TRUE(compiler.ok());
    auto exe = (*compiler)->Compile(f.module);
    ASSERT_TRUE(exe.ok()) << exe.status();
    // Without row inlining rowmax, rowsum and the root are kernels (subtract/exp/broadcasts
    // are generated inline); with it, one kernel computes both row statistics per row.
    EXPECT_EQ((*exe)->kernel_count(), inline_rows ? 1 : 3);
    auto r = (*exe)->Run({&lx, 1});
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<double> want;
    for (int i = 0; i < R; ++i) {
      double m = -INFINITY, sumv = 0;
      for (int j = 0; j < C; ++j) m = std::max(m, lx.GetAsDouble(i * C + j));
      for (int j = 0; j < C; ++j) sumv += std::exp(lx.GetAsDouble(i * C + j) - m);
      for (int j = 0; j < C; ++j) want.push_back(std::exp(lx.GetAsDouble(i * C + j) - m) / sumv);
    }
    ExpectNear(*r, want, 1e-5, 1e-7);
    // Compiling the same module again is a cache hit and returns the same executable.
    auto again = (*compiler)->Compile(f.module);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->get(), exe->get());
    EXPECT_EQ((*compiler)->cache_hits(), 1);
    EXPECT_EQ((*compiler)->cache_misses(), 1);
  }
}

// A recurrence c[t] = tanh(x) * c[t-1] + logistic(x) read by one reduction kernel per
// step (like an LSTM's cell state): each c[t] is needed by two kernels and is costly, so it
// is computed once into memory instead of being regenerated from c[0] inside every later
// kernel (quadratic work).
TEST(CpuLlvmEmitter, SharedCostlyValuesAreMaterialized) {
  Fixture f;
  const int64_t N = 16, T = 12;
  Shape s(PT::F32, {N});
  HloComputation* add = AddReducer(*f.module, HloOpcode::kAdd, PT::F32, "add");
  HloInstruction* x = f.b->Param(0, s);
  HloInstruction* a = f.b->Unary(HloOpcode::kTanh, x);
  HloInstruction* b = f.b->Unary(HloOpcode::kLogistic, x);
  HloInstruction* c = x;
  std::vector<HloInstruction*> sums, cs;
  for (int64_t t = 0; t < T; ++t) {
    c = f.b->Binary(HloOpcode::kAdd, f.b->Binary(HloOpcode::kMultiply, a, c), b);
    cs.push_back(c);
    sums.push_back(f.b->Reduce(f.b->Unary(HloOpcode::kTanh, c), f.b->Const(PT::F32, 0), {0}, add));
  }
  std::vector<Shape> shapes(T, Shape(PT::F32, {}));
  f.entry->set_root(f.b->Op(HloOpcode::kTuple, Shape::Tuple(shapes), sums));
  Plan plan = MakePlan(*f.module, {});
  // Every c[t] but the last (read by one kernel only) is its own kernel.
  for (const auto& [h, d] : plan.dispositions) {
    auto it = std::find(cs.begin(), cs.end(), h);
    if (it != cs.end()) {
      EXPECT_EQ(d, it + 1 == cs.end() ? Disposition::kInlined : Disposition::kKernel) << h->name();
    }
  }
  EXPECT_EQ(static_cast<int64_t>(plan.kernels.size()), 2 * T - 1);

  Literal lx = Random(s, 9, -1, 1);
  auto compiler = CpuCompiler::Create(CompileOptions{});
  ASSERT_TRUE(compiler.ok());
  auto exe = (*compiler)->Compile(f.module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto r = (*exe)->Run({&lx, 1});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> cv(N), want;
  for (int64_t i = 0; i < N; ++i) cv[i] = lx.GetAsDouble(i);
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t i = 0; i < N; ++i) {
      double xi = lx.GetAsDouble(i);
      cv[i] = std::tanh(xi) * cv[i] + 1 / (1 + std::exp(-xi));
      sum += std::tanh(cv[i]);
    }
    want.push_back(sum);
  }
  ASSERT_EQ(r->elements().size(), static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) EXPECT_NEAR(r->element(t).GetAsDouble(0), want[t], 1e-4) << t;
}

// A value read by two kernels whose cone is only cheap operations (v = v * y + x twelve
// times: 24, a scalar broadcast free) is generated in both, as the rounds of JAX's threefry
// are; the same cone with a tanh in it is computed once into memory.
TEST(CpuLlvmEmitter, SharedCheapConesAreDuplicatedCostlyOnesMaterialized) {
  for (bool costly : {false, true}) {
    Fixture f;
    const int64_t N = 64;
    Shape s(PT::F32, {N});
    HloInstruction* x = f.b->Param(0, s);
    HloInstruction* y = f.b->Param(1, s);
    HloInstruction* half = f.b->Op(HloOpcode::kBroadcast, s, {f.b->Const(PT::F32, 0.5)});
    HloInstruction* v = x;
    for (int r = 0; r < 12; ++r)
      v = f.b->Binary(HloOpcode::kAdd, f.b->Binary(HloOpcode::kMultiply, v, y), x);
    if (costly) v = f.b->Unary(HloOpcode::kTanh, v);
    v = f.b->Binary(HloOpcode::kMultiply, v, half);
    HloInstruction* out0 = f.b->Binary(HloOpcode::kAdd, v, x);
    HloInstruction* out1 = f.b->Binary(HloOpcode::kMultiply, v, y);
    f.entry->set_root(f.b->Op(HloOpcode::kTuple, Shape::Tuple({s, s}), {out0, out1}));
    Plan plan = MakePlan(*f.module, {});
    EXPECT_EQ(plan.kernels.size(), costly ? 3u : 2u) << (costly ? "tanh" : "cheap");

    Literal lx = Random(s, 3, -1, 1), ly = Random(s, 4, -0.5, 0.5);
    auto r = f.Run({lx, ly});
    ASSERT_TRUE(r.ok()) << r.status();
    for (int64_t i = 0; i < N; ++i) {
      const double xi = lx.GetAsDouble(i), yi = ly.GetAsDouble(i);
      double vi = xi;
      for (int k = 0; k < 12; ++k) vi = vi * yi + xi;
      if (costly) vi = std::tanh(vi);
      vi *= 0.5;
      EXPECT_NEAR(r->element(0).GetAsDouble(i), vi + xi, 1e-5) << i;
      EXPECT_NEAR(r->element(1).GetAsDouble(i), vi * yi, 1e-5) << i;
    }
  }
}

TEST(CpuLlvmEmitter, F16AddRoundsLikeHalfArithmetic) {
  Fixture f;
  Shape s(PT::F16, {64});
  HloInstruction* a = f.b->Param(0, s);
  HloInstruction* c = f.b->Param(1, s);
  HloInstruction* m = f.b->Binary(HloOpcode::kMultiply, a, c);
  f.entry->set_root(f.b->Binary(HloOpcode::kAdd, m, a));
  Literal la = Random(s, 5), lc = Random(s, 6);
  auto r = f.Run({la, lc});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->shape().element_type(), PT::F16);
  for (int i = 0; i < 64; ++i) {
    float av = la.GetAsDouble(i), cv = lc.GetAsDouble(i);
    float prod = static_cast<float>(half(av * cv));  // each op rounds to f16
    float want = static_cast<float>(half(prod + av));
    EXPECT_EQ(r->GetAsDouble(i), want) << i;
  }
}

TEST(CpuLlvmEmitter, Bf16ConvertRoundsToNearestEven) {
  Fixture f;
  Shape s(PT::F32, {6});
  f.entry->set_root(f.b->Convert(f.b->Param(0, s), PT::BF16));
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even mantissa (1) wins; 1 + 3*2^-8 rounds up.
  Literal lx = Literal::FromDoubles(s, {1.0, 1.0 + 1.0 / 256, 1.0 + 3.0 / 256, -2.5, 65504, 1e-3});
  auto r = f.Run({lx});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(*r, {1.0, 1.0, 1.0 + 4.0 / 256, -2.5, 65536, 0.00099945068359375}, 0, 0);
}

TEST(CpuLlvmEmitter, IntegerDivisionFollowsXlaSemantics) {
  Fixture f;
  Shape s(PT::S32, {5});
  HloInstruction* a = f.b->Param(0, s);
  HloInstruction* c = f.b->Param(1, s);
  HloInstruction* q = f.b->Binary(HloOpcode::kDivide, a, c);
  HloInstruction* rem = f.b->Binary(HloOpcode::kRemainder, a, c);
  f.entry->set_root(f.b->Binary(
      HloOpcode::kAdd,
      f.b->Binary(HloOpcode::kMultiply, q, f.b->Broadcast(f.b->Const(PT::S32, 1000), {5}, {})),
      rem));
  Literal la = Literal::FromDoubles(s, {7, -7, 5, -2147483648.0, 9});
  Literal lc = Literal::FromDoubles(s, {2, 2, 0, -1, -4});
  auto r = f.Run({la, lc});
  ASSERT_TRUE(r.ok()) << r.status();
  // 7/2=3 r1; -7/2=-3 r-1; 5/0=-1 r5; INT_MIN/-1=INT_MIN r0 (times 1000 wraps); 9/-4=-2 r1.
  int32_t wrapped = static_cast<int32_t>(static_cast<uint32_t>(INT32_MIN) * 1000u);
  std::vector<int64_t> want = {3001, -3001, -995, wrapped, -1999};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r->GetAsInt64(i), want[i]) << i;
}

TEST(CpuLlvmEmitter, SliceConcatPadIotaSelect) {
  Fixture f;
  HloInstruction* x = f.b->Param(0, Shape(PT::F32, {6}));
  // slice [1:6:2] -> {x1, x3, x5}
  HloInstruction* sl = f.b->Op(HloOpcode::kSlice, Shape(PT::F32, {3}), {x});
  sl->mutable_attrs().slice_starts = {1};
  sl->mutable_attrs().slice_limits = {6};
  sl->mutable_attrs().slice_strides = {2};
  // concatenate(slice, x[0:2]) -> 5 elements
  HloInstruction* head = f.b->Op(HloOpcode::kSlice, Shape(PT::F32, {2}), {x});
  head->mutable_attrs().slice_starts = {0};
  head->mutable_attrs().slice_limits = {2};
  head->mutable_attrs().slice_strides = {1};
  HloInstruction* cat = f.b->WithDims(HloOpcode::kConcatenate, sl, Shape(PT::F32, {5}), {0});
  cat->AppendOperand(head);
  // pad low 1, high 2, interior 1: 1 + 5 + 4 + 2 = 12 elements, pad value -1
  HloInstruction* pad =
      f.b->Op(HloOpcode::kPad, Shape(PT::F32, {12}), {cat, f.b->Const(PT::F32, -1)});
  pad->mutable_attrs().padding_config = {{1, 2, 1}};
  // select(iota < 6, pad, iota as f32)
  HloInstruction* iota = f.b->Op(HloOpcode::kIota, Shape(PT::S32, {12}), {});
  iota->mutable_attrs().iota_dimension = 0;
  HloInstruction* six = f.b->Broadcast(f.b->Const(PT::S32, 6), {12}, {});
  HloInstruction* lt = f.b->Compare(ComparisonDirection::kLt, iota, six);
  f.entry->set_root(
      f.b->Op(HloOpcode::kSelect, Shape(PT::F32, {12}), {lt, pad, f.b->Convert(iota, PT::F32)}));
  Literal lx = Literal::FromDoubles(Shape(PT::F32, {6}), {10, 11, 12, 13, 14, 15});
  auto r = f.Run({lx});
  ASSERT_TRUE(r.ok()) << r.status();
  // cat = {11, 13, 15, 10, 11}; pad = {-1, 11, -1, 13, -1, 15, -1, 10, -1, 11, -1, -1}
  ExpectNear(*r, {-1, 11, -1, 13, -1, 15, 6, 7, 8, 9, 10, 11}, 0, 0);
}

TEST(CpuLlvmEmitter, NaiveDotAndReshape) {
  Fixture f;
  HloInstruction* a = f.b->Param(0, Shape(PT::F32, {6}));
  HloInstruction* w = f.b->Param(1, Shape(PT::F32, {3, 2}));
  HloInstruction* a2 = f.b->Reshape(a, {2, 3});
  HloInstruction* d = f.b->Op(HloOpcode::kDot, Shape(PT::F32, {2, 2}), {a2, w});
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  d->mutable_attrs().dot_dimension_numbers = dn;
  f.entry->set_root(d);
  Literal la = Literal::FromDoubles(Shape(PT::F32, {6}), {1, 2, 3, 4, 5, 6});
  Literal lw = Literal::FromDoubles(Shape(PT::F32, {3, 2}), {1, 0, 0, 1, 1, 1});
  auto r = f.Run({la, lw});
  ASSERT_TRUE(r.ok()) << r.status();
  // [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
  ExpectNear(*r, {4, 5, 10, 11}, 0, 0);
}

// max(x, -inf) over f32[16,256], one kernel: its loop over the 16 rows stays a loop. Unrolled
// whole, each copy of the row loop was vectorized and unrolled on its own (1024 compares in
// one block: seconds of instruction scheduling for a padded attention's softmax).
TEST(CpuLlvmEmitter, OutputRowLoopsStayLoops) {
  Fixture f;
  Shape s(PT::F32, {16, 256});
  HloInstruction* x = f.b->Param(0, s);
  HloInstruction* low =
      f.b->Broadcast(f.b->Const(PT::F32, -std::numeric_limits<double>::infinity()), {16, 256}, {});
  f.entry->set_root(f.b->Binary(HloOpcode::kMaximum, x, low));
  Literal lx = Random(s, 3);
  std::string ir;
  auto r = f.Run({lx}, {}, &ir);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> want;
  for (int i = 0; i < 16 * 256; ++i) want.push_back(lx.GetAsDouble(i));
  ExpectNear(*r, want, 0, 0);
  int64_t compares = 0;
  for (size_t at = ir.find("fcmp"); at != std::string::npos; at = ir.find("fcmp", at + 1))
    ++compares;
  EXPECT_GT(compares, 0);
  EXPECT_LE(compares, 16 * 256 / 32) << "the row loop was unrolled";
}

TEST(CpuLlvmEmitter, CapabilityNamesEvaluatorFallbacks) {
  Fixture f;
  HloInstruction* x = f.b->Param(0, Shape(PT::F32, {4}));
  HloInstruction* e = f.b->Unary(HloOpcode::kExp, x);
  HloInstruction* s = f.b->Op(HloOpcode::kSort, Shape(PT::F32, {4}), {e});
  f.entry->set_root(f.b->Unary(HloOpcode::kNegate, s));
  Plan plan = MakePlan(*f.module, {});
  std::vector<std::string> got;
  for (const auto& [h, d] : plan.dispositions)
    got.push_back(h->name() + ":" + std::string(DispositionName(d)));
  EXPECT_EQ(got, (std::vector<std::string>{"p0:bookkeeping", "exponential.0:kernel",
                                           "sort.1:evaluator", "negate.2:kernel"}));
}

}  // namespace
}  // namespace kiln::cpu
