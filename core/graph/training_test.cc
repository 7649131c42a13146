// Training in the graph IR: the state and gradient ops' shape functions and located errors,
// colocation of updates with their variables, variable state across runs (staged updates,
// control-dependency chains), the initializers, and the gradient ops' values on the
// interpreter against hand-computed formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/graph/executor.h"
#include "core/graph/graph_text.h"
#include "core/graph/initializers.h"
#include "core/graph/verifier.h"

namespace kiln::graph {
namespace {

std::string VerifyError(const std::string& text) {
  absl::StatusOr<Graph> g = ParseGraph(text, "t.graph");
  if (!g.ok()) return "parse: " + std::string(g.status().message());
  absl::Status s = VerifyGraph(*g);
  return s.ok() ? "ok" : std::string(s.message());
}

ValueInfo Info(PrimitiveType t, std::vector<int64_t> dims) { return {t, TensorShape{dims}}; }

absl::StatusOr<std::vector<ValueInfo>> ShapeOf(const std::string& op, std::vector<ValueInfo> in) {
  Node n;
  n.name = "n";
  n.op = op;
  return OpRegistry::Global().Find(op)->shape_fn(n, in);
}

constexpr PrimitiveType F32 = PrimitiveType::F32;

TEST(TrainingOps, ShapeFunctions) {
  auto xent = ShapeOf("SparseSoftmaxCrossEntropyWithLogits",
                      {Info(F32, {256, 10}), Info(PrimitiveType::S32, {256})});
  ASSERT_TRUE(xent.ok()) << xent.status();
  EXPECT_EQ(*xent, (std::vector<ValueInfo>{Info(F32, {256}), Info(F32, {256, 10})}));
  auto dense = ShapeOf("SoftmaxCrossEntropyWithLogits", {Info(F32, {4, 3}), Info(F32, {4, 3})});
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ((*dense)[0], Info(F32, {4}));
  auto bias = ShapeOf("BiasAddGrad", {Info(F32, {256, 512})});
  ASSERT_TRUE(bias.ok());
  EXPECT_EQ((*bias)[0], Info(F32, {512}));
  auto relu = ShapeOf("ReluGrad", {Info(F32, {2, 3}), Info(F32, {2, 3})});
  ASSERT_TRUE(relu.ok());
  EXPECT_EQ((*relu)[0], Info(F32, {2, 3}));
  auto apply = ShapeOf("ApplyGradientDescent", {Info(F32, {3}), Info(F32, {}), Info(F32, {3})});
  ASSERT_TRUE(apply.ok());
  EXPECT_EQ((*apply)[0], Info(F32, {3}));
}

TEST(TrainingOps, ShapeErrors) {
  EXPECT_EQ(ShapeOf("SparseSoftmaxCrossEntropyWithLogits",
                    {Info(F32, {8, 10}), Info(PrimitiveType::S32, {4})})
                .status()
                .message(),
            "logits f32(8,10) and labels s32(4) have different batch sizes");
  EXPECT_EQ(ShapeOf("SparseSoftmaxCrossEntropyWithLogits", {Info(F32, {8, 10}), Info(F32, {8})})
                .status()
                .message(),
            "labels must be s32 or s64 of rank 1 (batch), got f32(8)");
  EXPECT_EQ(ShapeOf("TanhGrad", {Info(F32, {2, 3}), Info(F32, {3, 2})}).status().message(),
            "the two operands must match: f32(2,3) vs f32(3,2)");
  EXPECT_EQ(ShapeOf("BiasAddGrad", {Info(F32, {})}).status().message(),
            "BiasAddGrad needs rank >= 1, got ()");
  EXPECT_EQ(ShapeOf("ApplyGradientDescent", {Info(F32, {3}), Info(F32, {3}), Info(F32, {3})})
                .status()
                .message(),
            "alpha must be a scalar f32, got f32(3)");
}

constexpr const char* kVar = "v = VariableV2[dtype=f32, shape=(2,3)]()\n";

TEST(StateOps, LocatedErrors) {
  EXPECT_EQ(VerifyError("x = Placeholder[dtype=f32, shape=(2,3)]()\n"
                        "a = Assign(x, x)\noutputs: a\n"),
            "t.graph:2:1: node a (Assign): input 0 must be a reference to a variable "
            "(VariableV2), got x (Placeholder)");
  EXPECT_EQ(VerifyError(std::string(kVar) + "i = Identity(v)\nd = Const[dtype=f32, value=1.0]()\n"
                                            "a = ApplyGradientDescent(i, d, v)\noutputs: a\n"),
            "t.graph:4:1: node a (ApplyGradientDescent): input 0 must be a reference to a "
            "variable (VariableV2), got i (Identity)");
  EXPECT_EQ(VerifyError(std::string(kVar) + "x = Placeholder[dtype=f32, shape=(3,2)]()\n"
                                            "a = Assign(v, x)\noutputs: a\n"),
            "t.graph:3:1: node a (Assign): value f32(3,2) does not match the variable's f32(2,3)");
  EXPECT_EQ(VerifyError("v = VariableV2[dtype=f32, shape=(2), init=\"ones\"]()\noutputs: v\n"),
            "t.graph:1:1: node v (VariableV2): unknown initializer 'ones' (one of: zeros, "
            "constant, uniform, normal, truncated_normal)");
  EXPECT_EQ(VerifyError("v = VariableV2[dtype=f32, shape=(-1), init=\"zeros\"]()\noutputs: v\n"),
            "t.graph:1:1: node v (VariableV2): a variable's shape must be fully known, got (-1)");
  EXPECT_EQ(VerifyError("v = VariableV2[dtype=f32, shape=(2), init=\"normal\"]()\noutputs: v\n"),
            "t.graph:1:1: node v (VariableV2): init=\"normal\" needs a `seed`");
}

std::vector<Literal> Feed(std::vector<double> v) {
  std::vector<Literal> in;
  in.push_back(Literal::FromDoubles(Shape(F32, {static_cast<int64_t>(v.size())}), v));
  return in;
}

std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> Make(Graph& g, const PluginRegistry& reg,
                                                    std::ostream* log = nullptr,
                                                    bool soft = false) {
  ExecutorOptions opts;
  opts.device = "interpreter";
  opts.log_placement = log != nullptr;
  opts.log = log;
  opts.soft_placement = soft;
  return GraphExecutor::Create(g, reg, opts);
}

TEST(StateOps, VariablesPersistAcrossRunsAndUpdatesChain) {
  // Each run: a = [1,2,3] (Assign), then AssignAdd(x) after it, then AssignSub of 0.5.
  // Reads (v) see the value committed by the previous run.
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(3)]()\n"
      "v = VariableV2[dtype=f32, shape=(3), init=\"constant\", value=[7, 8, 9]]()\n"
      "c = Const[dtype=f32, shape=(3), value=[1, 2, 3]]()\n"
      "a = Assign(v, c)\n"
      "b = AssignAdd(v, x) @ a\n"
      "h = Const[dtype=f32, shape=(3), value=0.5]()\n"
      "s = AssignSub(v, h) @ b\n"
      "r = Neg(v)\n"
      "outputs: r, a, b, s\n");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  std::ostringstream log;
  auto ex = Make(*g, *reg, &log);
  ASSERT_TRUE(ex.ok()) << ex.status();
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(Feed({10, 20, 30}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{-7, -8, -9}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(Values((*out)[3]), (std::vector<double>{10.5, 21.5, 32.5}));
  out = (*ex)->Run(Feed({1, 1, 1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{-10.5, -21.5, -32.5}));
  EXPECT_EQ(Values((*out)[3]), (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_EQ(Values(*(*ex)->variables().Find("v")), (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_EQ(g->Find("s")->assigned_device, "host");
  EXPECT_NE(log.str().find("kiln graph: colocate node b (AssignAdd) with variable v on host"),
            std::string::npos)
      << log.str();
}

TEST(StateOps, FailedRunCommitsNothing) {
  // b fails at run time when Unique's data-dependent size is not w's, after a was staged.
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(3)]()\n"
      "v = VariableV2[dtype=f32, shape=(3), init=\"zeros\"]()\n"
      "a = AssignAdd(v, x)\n"
      "u = Unique(x)\n"
      "w = VariableV2[dtype=f32, shape=(3), init=\"zeros\"]()\n"
      "b = Assign(w, u) @ a\n"
      "outputs: a, b\n");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  auto ex = Make(*g, *reg);
  ASSERT_TRUE(ex.ok()) << ex.status();
  ASSERT_TRUE((*ex)->Run(Feed({3, 1, 2})).ok());
  EXPECT_EQ(Values(*(*ex)->variables().Find("v")), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(Values(*(*ex)->variables().Find("w")), (std::vector<double>{1, 2, 3}));
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(Feed({5, 5, 6}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(out.status().message()),
            "node b (Assign) on host: value f32[2] does not match the variable's f32[3]");
  EXPECT_EQ(Values(*(*ex)->variables().Find("v")), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(Values(*(*ex)->variables().Find("w")), (std::vector<double>{1, 2, 3}));
}

TEST(StateOps, UpdatesAreColocatedWithTheirVariable) {
  const std::string text =
      "v = VariableV2[dtype=f32, shape=(2), init=\"zeros\"]()\n"
      "d = Const[dtype=f32, shape=(2), value=[1, 2]]()\n"
      "lr = Const[dtype=f32, value=0.5]()\n"
      "u = ApplyGradientDescent[device=\"interpreter\"](v, lr, d)\n"
      "outputs: u\n";
  absl::StatusOr<Graph> g = ParseGraph(text, "c.graph");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  auto ex = Make(*g, *reg);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().message(),
            "c.graph:4:1: node u (ApplyGradientDescent): requested device 'interpreter', but it "
            "is colocated with its variable v on host");
  std::ostringstream log;
  ex = Make(*g, *reg, &log, /*soft=*/true);
  ASSERT_TRUE(ex.ok()) << ex.status();
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{-0.5, -1}));
  EXPECT_NE(log.str().find("soft placement: c.graph:4:1: node u (ApplyGradientDescent): "
                           "requested device 'interpreter'"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("node u (ApplyGradientDescent) -> host"), std::string::npos);
}

TEST(StateOps, MustCompileNamesTheVariable) {
  absl::StatusOr<Graph> g = ParseGraph(std::string(kVar) + "n = Neg(v)\noutputs: n\n", "m.graph");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  ExecutorOptions opts;
  opts.must_compile = true;
  auto ex = GraphExecutor::Create(*g, *reg, opts);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(
      ex.status().message(),
      "m.graph:1:1: node v (VariableV2): variable state lives on the host, cannot be compiled");
}

TEST(Initializers, CounterBasedAndBounded) {
  // splitmix64 of 0 is 0xE220A8397B1DCDAF (the reference sequence's first output).
  EXPECT_EQ(Mix(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(CounterUniform(5, 3), static_cast<double>(Mix(Mix(5) + 3) >> 11) / 9007199254740992.0);
  absl::StatusOr<Graph> g = ParseGraph(
      "t = VariableV2[dtype=f32, shape=(100,100), init=\"truncated_normal\", stddev=0.5, "
      "seed=3]()\n"
      "u = VariableV2[dtype=f32, shape=(1000), init=\"uniform\", scale=2.0, seed=3]()\n"
      "outputs: t\n");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<Literal> t = InitialValue(*g->Find("t"));
  ASSERT_TRUE(t.ok()) << t.status();
  double sum = 0, sq = 0;
  for (double v : Values(*t)) {
    ASSERT_LE(std::abs(v), 1.0 + 1e-6);  // within two stddevs
    sum += v;
    sq += v * v;
  }
  EXPECT_NEAR(sum / 1e4, 0, 0.02);
  // A normal truncated at 2 sigma has variance 0.774 sigma^2.
  EXPECT_NEAR(std::sqrt(sq / 1e4), 0.5 * std::sqrt(0.774), 0.02);
  absl::StatusOr<Literal> again = InitialValue(*g->Find("t"));
  EXPECT_TRUE(*again == *t);  // deterministic
  absl::StatusOr<Literal> u = InitialValue(*g->Find("u"));
  ASSERT_TRUE(u.ok());
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_FLOAT_EQ(u->GetAsDouble(i), static_cast<float>(2.0 * (2 * CounterUniform(3, i) - 1)));
  }
}

TEST(TrainingOps, GradientValuesOnTheInterpreter) {
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(2,3)]()\n"
      "l = Placeholder[dtype=s32, shape=(2)]()\n"
      "dy = Const[dtype=f32, shape=(2,3), value=[1, 2, 3, 4, 5, 6]]()\n"
      "xe = SparseSoftmaxCrossEntropyWithLogits(x, l)\n"
      "rg = ReluGrad(dy, x)\n"
      "sg = SigmoidGrad(x, dy)\n"
      "tg = TanhGrad(x, dy)\n"
      "bg = BiasAddGrad(dy)\n"
      "outputs: xe, xe:1, rg, sg, tg, bg\n");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  auto ex = Make(*g, *reg);
  ASSERT_TRUE(ex.ok()) << ex.status();
  const std::vector<double> x = {0.5, -1, 2, 0, 0.25, -0.75};
  const std::vector<double> dy = {1, 2, 3, 4, 5, 6};
  std::vector<Literal> in;
  in.push_back(Literal::FromDoubles(Shape(F32, {2, 3}), x));
  in.push_back(Literal::FromDoubles(Shape(PrimitiveType::S32, {2}), {2, 7}));  // 7: out of range
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0, label 2: loss = log(sum exp) - x[2]; backprop = softmax - onehot. Row 1: NaN.
  double z = std::exp(0.5) + std::exp(-1.0) + std::exp(2.0);
  EXPECT_NEAR((*out)[0].GetAsDouble(0), std::log(z) - 2.0, 1e-6);
  EXPECT_TRUE(std::isnan((*out)[0].GetAsDouble(1)));
  EXPECT_NEAR((*out)[1].GetAsDouble(0), std::exp(0.5) / z, 1e-6);
  EXPECT_NEAR((*out)[1].GetAsDouble(2), std::exp(2.0) / z - 1, 1e-6);
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan((*out)[1].GetAsDouble(i)));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*out)[2].GetAsDouble(i), x[i] > 0 ? dy[i] : 0) << i;
    EXPECT_NEAR((*out)[3].GetAsDouble(i), dy[i] * x[i] * (1 - x[i]), 1e-6) << i;
    EXPECT_NEAR((*out)[4].GetAsDouble(i), dy[i] * (1 - x[i] * x[i]), 1e-6) << i;
  }
  EXPECT_EQ(Values((*out)[5]), (std::vector<double>{5, 7, 9}));
}

}  // namespace
}  // namespace kiln::graph
