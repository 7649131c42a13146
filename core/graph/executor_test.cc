// The executor: auto-jit partitioning around host ops without cycles, values passed between
// clusters, and the compile cache (same shapes reuse the executable).
#include "core/graph/executor.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/graph/graph_text.h"

namespace kiln::graph {
namespace {

std::vector<std::string> Names(const Cluster& c) {
  std::vector<std::string> out;
  for (const Node* n : c.nodes) out.push_back(n->name);
  return out;
}

// a feeds both the host op and, directly, the final Add: c may not join a's cluster,
// since the path a -> u -> s1 -> c leaves the cluster and re-enters it.
constexpr const char* kDiamond =
    "x = Placeholder[dtype=f32, shape=(-1)]()\n"
    "a = Neg(x)\n"
    "u = Unique(a)\n"
    "s1 = Sum(u)\n"
    "s2 = Sum(a)\n"
    "c = Add(s1, s2)\n"
    "outputs: c, u\n";

TEST(Partition, ClustersDoNotCreateCycles) {
  absl::StatusOr<Graph> g = ParseGraph(kDiamond);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::vector<Cluster>> parts = PartitionGraph(*g);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ(Names((*parts)[0]), (std::vector<std::string>{"a", "s2"}));
  EXPECT_FALSE((*parts)[1].compiled);
  EXPECT_EQ(Names((*parts)[1]), std::vector<std::string>{"u"});
  EXPECT_EQ(Names((*parts)[2]), (std::vector<std::string>{"s1", "c"}));
  EXPECT_EQ((*parts)[0].inputs, (std::vector<Edge>{{"x", 0}}));
  EXPECT_EQ((*parts)[0].outputs, (std::vector<Edge>{{"a", 0}, {"s2", 0}}));
}

TEST(Partition, NodesRequestingDifferentDevicesStayApart) {
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(2)]()\n"
      "a = Neg[device=\"interpreter\"](x)\n"
      "b = Exp[device=\"cpu-llvm\"](a)\n"
      "c = Neg(b)\n"
      "outputs: c\n");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::vector<Cluster>> parts = PartitionGraph(*g);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(Names((*parts)[0]), std::vector<std::string>{"a"});
  EXPECT_EQ((*parts)[0].requested_device, "interpreter");
  EXPECT_EQ(Names((*parts)[1]), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ((*parts)[1].requested_device, "cpu-llvm");
}

TEST(Executor, MustCompileRejectsHostOnlyNodes) {
  absl::StatusOr<Graph> g = ParseGraph(kDiamond, "d.graph");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  ExecutorOptions opts;
  opts.must_compile = true;
  absl::StatusOr<std::unique_ptr<GraphExecutor>> ex = GraphExecutor::Create(*g, *reg, opts);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().message(),
            "d.graph:3:1: node u (Unique): data-dependent output shape, cannot be compiled");
}

TEST(Executor, RunsClustersAndHostOps) {
  absl::StatusOr<Graph> g = ParseGraph(kDiamond);
  ASSERT_TRUE(g.ok());
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok()) << reg.status();
  ExecutorOptions opts;
  opts.device = "interpreter";
  absl::StatusOr<std::unique_ptr<GraphExecutor>> ex = GraphExecutor::Create(*g, *reg, opts);
  ASSERT_TRUE(ex.ok()) << ex.status();
  // x = [1,2,2]: a = [-1,-2,-2], unique = [-2,-1], s1 = -3, s2 = -5, c = -8.
  std::vector<Literal> in;
  in.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {3}), {1, 2, 2}));
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].GetAsDouble(0), -8);
  ASSERT_EQ((*out)[1].element_count(), 2);
  EXPECT_EQ((*out)[1].GetAsDouble(0), -2);
  EXPECT_EQ((*out)[1].GetAsDouble(1), -1);
  EXPECT_EQ((*ex)->compile_count(), 2);
  EXPECT_EQ(g->Find("u")->assigned_device, "host");
  EXPECT_EQ(g->Find("a")->assigned_device, "interpreter");
}

TEST(Executor, CompileCacheIsKeyedByInputShapes) {
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(1,-1)]()\n"
      "r = Relu(x)\n"
      "s = Sum(r)\n"
      "outputs: s\n");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  std::ostringstream log;
  ExecutorOptions opts;
  opts.device = "interpreter";
  opts.log_compiles = true;
  opts.log = &log;
  absl::StatusOr<std::unique_ptr<GraphExecutor>> ex = GraphExecutor::Create(*g, *reg, opts);
  ASSERT_TRUE(ex.ok()) << ex.status();
  // Inputs 0, -1, 2, -3, ...: relu keeps the even indices, sum = 0 + 2 + ... .
  auto run = [&](int64_t n) {
    std::vector<double> v;
    double want = 0;
    for (int64_t i = 0; i < n; ++i) {
      v.push_back(i % 2 ? -static_cast<double>(i) : static_cast<double>(i));
      if (i % 2 == 0) want += static_cast<double>(i);
    }
    std::vector<Literal> in;
    in.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {1, n}), v));
    absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].GetAsDouble(0), want) << "n=" << n;
  };
  run(10);   // 0+2+4+6+8 = 20
  run(100);  // 0+2+...+98 = 2450
  run(10);
  EXPECT_EQ((*ex)->compile_count(), 2);
  EXPECT_NE(log.str().find("compile #1: cluster_0 (2 nodes) inputs [f32(1,10)] on interpreter"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("compile #2: cluster_0 (2 nodes) inputs [f32(1,100)]"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("compile #3"), std::string::npos) << log.str();
}

TEST(Executor, RejectsWrongInputs) {
  absl::StatusOr<Graph> g =
      ParseGraph("x = Placeholder[dtype=f32, shape=(2)]()\ny = Neg(x)\noutputs: y\n", "w.graph");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<PluginRegistry> reg = PluginRegistry::Discover();
  ASSERT_TRUE(reg.ok());
  absl::StatusOr<std::unique_ptr<GraphExecutor>> ex = GraphExecutor::Create(*g, *reg, {});
  ASSERT_TRUE(ex.ok());
  std::vector<Literal> in;
  in.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {3}), {1, 2, 3}));
  absl::StatusOr<std::vector<Literal>> out = (*ex)->Run(in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "w.graph:1:1: node x (Placeholder): fed f32(3), declared f32(2)");
  EXPECT_FALSE((*ex)->Run({}).ok());
}

}  // namespace
}  // namespace kiln::graph
