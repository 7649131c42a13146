// Placement by capability with the test-elementwise plugin loaded: elementwise nodes on it,
// MatMul on the next plugin, clusters of one device, results equal to a hand-written
// reference; the capability cache, requested devices, soft placement and the SVG dump.
#include "core/graph/placer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/graph/cluster_picture.h"
#include "core/graph/executor.h"
#include "core/graph/graph_text.h"

namespace kiln::graph {
namespace {

const std::string kNext = KILN_HAVE_CPU_LLVM ? "cpu-llvm" : "interpreter";

PluginRegistry Registry() {
  return PluginRegistry::Discover(DeviceConfig{},
                                  {KILN_TEST_ELEMENTWISE_PLUGIN_DIR, KILN_BUILD_PLUGIN_DIR});
}

// y = exp(tanh(x*x + x) @ w) negated; both the MatMul and y are outputs.
constexpr const char* kMlp =
    "x = Placeholder[dtype=f32, shape=(-1,3)]()\n"
    "w = Placeholder[dtype=f32, shape=(3,4)]()\n"
    "a = Mul(x, x)\n"
    "b = Add(a, x)\n"
    "c = Tanh(b)\n"
    "m = MatMul(c, w)\n"
    "e = Exp(m)\n"
    "f = Neg(e)\n"
    "outputs: f, m\n";

Graph MustParse(const char* text) {
  absl::StatusOr<Graph> g = ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : Graph();
}

TEST(Placer, ElementwiseOnTestPluginMatMulOnTheNext) {
  Graph g = MustParse(kMlp);
  PluginRegistry r = Registry();
  Placer placer(r, {});
  absl::StatusOr<Placement> p = placer.Place(g);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* n : {"a", "b", "c", "e", "f"}) EXPECT_EQ(p->at(n), "test-elementwise") << n;
  EXPECT_EQ(p->at("m"), kNext);
  EXPECT_EQ(p->count("x"), 0u);
}

TEST(Placer, CapabilityIsAskedOncePerOpAttributesAndTypes) {
  Graph g = MustParse(
      "x = Placeholder[dtype=f32, shape=(4)]()\n"
      "i = Placeholder[dtype=s32, shape=(4)]()\n"
      "a = Neg(x)\n"
      "b = Neg(a)\n"
      "c = Neg(b)\n"
      "d = Neg(i)\n"
      "outputs: c, d\n");
  PluginRegistry r = Registry();
  Placer placer(r, {});
  ASSERT_TRUE(placer.Place(g).ok());
  EXPECT_EQ(placer.capability_queries(), 2);  // Neg on f32[1-d], Neg on s32[1-d]
}

TEST(Placer, RequestedDeviceWinsAndSoftPlacementFallsBack) {
  Graph g = MustParse(
      "x = Placeholder[dtype=f32, shape=(4)]()\n"
      "a = Neg[device=\"interpreter\"](x)\n"
      "b = Exp[device=\"nope\"](a)\n"
      "outputs: b\n");
  PluginRegistry r = Registry();
  absl::StatusOr<Placement> hard = Placer(r, {}).Place(g);
  ASSERT_FALSE(hard.ok());
  EXPECT_NE(hard.status().message().find("node b (Exp): no plugin named 'nope'"), std::string::npos)
      << hard.status();
  std::ostringstream log;
  PlacerOptions soft;
  soft.soft_placement = true;
  soft.log = &log;
  absl::StatusOr<Placement> p = Placer(r, soft).Place(g);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->at("a"), "interpreter");
  EXPECT_EQ(p->at("b"), "test-elementwise");
  EXPECT_NE(log.str().find("soft placement: node b (Exp) requested 'nope'"), std::string::npos)
      << log.str();
}

TEST(Placer, ARequestedDeviceThatDeclinesTheNodeIsAnError) {
  Graph g = MustParse(
      "x = Placeholder[dtype=f32, shape=(2,2)]()\n"
      "m = MatMul[device=\"test-elementwise\"](x, x)\n"
      "outputs: m\n");
  PluginRegistry r = Registry();
  absl::StatusOr<Placement> p = Placer(r, {}).Place(g);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("node m (MatMul): device 'test-elementwise' cannot run it"),
            std::string::npos)
      << p.status();
}

TEST(PlacedExecutor, ClustersHoldOneDeviceAndResultsMatchAReference) {
  Graph g = MustParse(kMlp);
  PluginRegistry r = Registry();
  std::ostringstream log;
  ExecutorOptions options;
  options.log_placement = true;
  options.log = &log;
  absl::StatusOr<std::unique_ptr<GraphExecutor>> ex = GraphExecutor::Create(g, r, options);
  ASSERT_TRUE(ex.ok()) << ex.status();
  const std::vector<Cluster>& cs = (*ex)->clusters();
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].device, "test-elementwise");
  EXPECT_EQ(cs[0].nodes.size(), 3u);
  EXPECT_EQ(cs[1].device, kNext);
  EXPECT_EQ(cs[2].device, "test-elementwise");

  const int rows = 5;
  std::vector<double> xv(rows * 3), wv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(0.3 * i) * 0.8;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::sin(0.5 * i) * 0.6;
  std::vector<Literal> in = {Literal::FromDoubles(Shape(PrimitiveType::F32, {rows, 3}), xv),
                             Literal::FromDoubles(Shape(PrimitiveType::F32, {3, 4}), wv)};
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < 4; ++j) {
      double m = 0;
      for (int k = 0; k < 3; ++k) {
        double x = xv[i * 3 + k];
        m += std::tanh(x * x + x) * wv[k * 4 + j];
      }
      EXPECT_NEAR((*out)[1].GetAsDouble(i * 4 + j), m, 1e-5);
      EXPECT_NEAR((*out)[0].GetAsDouble(i * 4 + j), -std::exp(m), 1e-4);
    }
  }
  EXPECT_NE(log.str().find("node m (MatMul) -> " + kNext), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("node a (Mul) -> test-elementwise"), std::string::npos) << log.str();
  EXPECT_EQ(g.Find("c")->assigned_device, "test-elementwise");

  // The picture: one band per cluster labelled with its device, a legend entry per device.
  std::string svg = ClustersToSvg(g, cs);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">cluster_1 on " + kNext + "<"), std::string::npos);
  EXPECT_NE(svg.find(">cluster_2 on test-elementwise<"), std::string::npos);
  EXPECT_NE(ClustersToHtml(g, cs).find("subgraph cluster_1"), std::string::npos);
}

}  // namespace
}  // namespace kiln::graph
