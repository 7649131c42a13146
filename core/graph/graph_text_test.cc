// Parser, printer, builder and verifier of the graph IR: round trips and located errors.
#include "core/graph/graph_text.h"

#include <gtest/gtest.h>

#include "core/graph/lowering.h"
#include "core/graph/verifier.h"
#include "hlo/verifier.h"

namespace kiln::graph {
namespace {

constexpr const char* kDense =
    "# a comment line\n"
    "x = Placeholder[dtype=f32, shape=(2,3)]()\n"
    "w = Placeholder[dtype=f32, shape=(4,3)]()  # trailing comment\n"
    "n1 = Const[dtype=f32, shape=(4), value=[1.5,-2,0,3]]()\n"
    "n3 = MatMul[T=f32, device=\"cpu-llvm\", transpose_b=true](x, w) @ n1\n"
    "n4 = BiasAdd(n3, n1)\n"
    "outputs: n4, n3\n";

std::string VerifyError(const std::string& text) {
  absl::StatusOr<Graph> g = ParseGraph(text, "t.graph");
  if (!g.ok()) return "parse: " + std::string(g.status().message());
  absl::Status s = VerifyGraph(*g);
  return s.ok() ? "ok" : std::string(s.message());
}

TEST(GraphText, ParsesNodesAttributesEdgesAndControlInputs) {
  absl::StatusOr<Graph> g = ParseGraph(kDense, "t.graph");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes().size(), 5u);
  const Node* mm = g->Find("n3");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->op, "MatMul");
  EXPECT_EQ(mm->requested_device, "cpu-llvm");
  EXPECT_EQ(mm->FindAttr("transpose_b")->b(), true);
  EXPECT_EQ(mm->FindAttr("T")->type(), PrimitiveType::F32);
  EXPECT_EQ(mm->inputs, (std::vector<Edge>{{"x", 0}, {"w", 0}}));
  EXPECT_EQ(mm->control_inputs, std::vector<std::string>{"n1"});
  EXPECT_EQ(mm->loc.line, 5);
  EXPECT_EQ(g->Find("n1")->FindAttr("value")->floats(), (std::vector<double>{1.5, -2, 0, 3}));
  EXPECT_EQ(g->Find("x")->FindAttr("shape")->shape().dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g->outputs(), (std::vector<Edge>{{"n4", 0}, {"n3", 0}}));
  EXPECT_TRUE(VerifyGraph(*g).ok()) << VerifyGraph(*g);
}

TEST(GraphText, PrintParsesBackToTheSameText) {
  absl::StatusOr<Graph> g = ParseGraph(kDense);
  ASSERT_TRUE(g.ok());
  const std::string printed = PrintGraph(*g);
  EXPECT_NE(printed.find("n3 = MatMul[T=f32, transpose_b=true, device=\"cpu-llvm\"](x, w) @ n1"),
            std::string::npos)
      << printed;
  absl::StatusOr<Graph> again = ParseGraph(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintGraph(*again), printed);
}

TEST(GraphText, OutputIndexEdges) {
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(5)]()\nu = Unique(x)\nn = Neg(u)\noutputs: n, u:1\n");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs()[1], (Edge{"u", 1}));
  absl::StatusOr<ShapeMap> s = InferShapes(*g);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->at("u")[1].dtype, PrimitiveType::S32);
  EXPECT_EQ(s->at("u")[1].shape.dims, std::vector<int64_t>{5});
  EXPECT_EQ(s->at("n")[0].shape.dims, std::vector<int64_t>{-1});
}

TEST(GraphText, SyntaxErrorsAreLocated) {
  auto err = [](const std::string& text) {
    absl::StatusOr<Graph> g = ParseGraph(text, "t.graph");
    return g.ok() ? std::string("ok") : std::string(g.status().message());
  };
  EXPECT_EQ(err("x = Neg(y\noutputs: x\n"), "t.graph:1:10: expected ',' or ')', found end of line");
  EXPECT_EQ(err("\n  x Neg(y)\noutputs: x\n"),
            "t.graph:2:5: expected '=' after the node name, found 'N'");
  EXPECT_EQ(err("x = Sum[axes=[1,2.5](y)\noutputs: x\n"),
            "t.graph:1:21: expected ',' or ']', found '('");
  EXPECT_EQ(err("x = Sum[k=wat](y)\noutputs: x\n"), "t.graph:1:11: unknown attribute value 'wat'");
  EXPECT_EQ(err("x = Neg(y)\nx = Neg(y)\noutputs: x\n"),
            "t.graph:2:1: node 'x' is defined twice (first at t.graph:1:1)");
  EXPECT_EQ(err("x = Neg(y)\n"), "t.graph:2:1: missing 'outputs:' line");
}

TEST(GraphVerifier, ErrorsNameTheNodeAndLocation) {
  const std::string x = "x = Placeholder[dtype=f32, shape=(2,3)]()\n";
  EXPECT_EQ(VerifyError(x + "y = Frob(x)\noutputs: y\n"), "t.graph:2:1: node y (Frob): unknown op 'Frob'");
  EXPECT_EQ(VerifyError(x + "y = Sum[keep_dims=1](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Sum): attribute 'keep_dims' must be bool, got int 1");
  EXPECT_EQ(VerifyError("x = Placeholder[dtype=f32]()\noutputs: x\n"),
            "t.graph:1:1: node x (Placeholder): missing attribute 'shape' (shape)");
  EXPECT_EQ(VerifyError(x + "y = Transpose[perm=[0,1], bogus=1](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Transpose): unknown attribute 'bogus'");
  EXPECT_EQ(VerifyError(x + "z = Placeholder[dtype=f32, shape=(3,2)]()\ny = Add(x, z)\noutputs: y\n"),
            "t.graph:3:1: node y (Add): shapes (2,3) and (3,2) do not broadcast (dimension 0: 2 vs 3)");
  EXPECT_EQ(VerifyError(x + "y = Neg(x, x)\noutputs: y\n"),
            "t.graph:2:1: node y (Neg): takes 1 input, got 2");
  EXPECT_EQ(VerifyError(x + "y = Neg(q)\noutputs: y\n"),
            "t.graph:2:1: node y (Neg): input: unknown node 'q'");
  EXPECT_EQ(VerifyError(x + "y = Neg(x:1)\noutputs: y\n"),
            "t.graph:2:1: node y (Neg): input: x has 1 output, no output 1");
  EXPECT_EQ(VerifyError(x + "y = Neg[T=s32](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Neg): T=s32 but the result type is f32");
  EXPECT_EQ(VerifyError(x + "a = Neg(c)\nb = Neg(a)\nc = Add(b, x)\noutputs: c\n"),
            "t.graph:2:1: node a (Neg): cycle: a -> c -> b -> a");
  EXPECT_EQ(VerifyError(x + "y = Neg(x) @ y\noutputs: y\n"), "t.graph:2:1: node y (Neg): cycle: y -> y");
  EXPECT_EQ(VerifyError(x + "y = Neg(x)\noutputs: y, nope\n"), "t.graph:3:1: outputs: unknown node 'nope'");
  EXPECT_EQ(VerifyError(x + "y = Reshape[shape=(4,-1)](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Reshape): cannot reshape 6 elements into (4,-1)");
}

TEST(GraphBuilder, BuildsVerifiesAndLowersToAValidModule) {
  Graph g;
  g.AddPlaceholder("x", PrimitiveType::F32, {2, 3});
  g.Add("s", "Sum", {{"x"}}, {{"axes", AttrValue::Ints({1})}, {"keep_dims", AttrValue::Bool(true)}});
  g.Add("sm", "Softmax", {{"x"}});
  g.Add("d", "Div", {{"sm"}, {"s"}});
  g.set_outputs({{"d"}});
  ASSERT_TRUE(VerifyGraph(g).ok()) << VerifyGraph(g);
  absl::StatusOr<ShapeMap> shapes = InferShapes(g);
  ASSERT_TRUE(shapes.ok());
  EXPECT_EQ(shapes->at("s")[0].shape.dims, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(shapes->at("d")[0].shape.dims, (std::vector<int64_t>{2, 3}));
  absl::StatusOr<std::unique_ptr<HloModule>> m = LowerToHlo(g);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(VerifyModule(**m).ok()) << VerifyModule(**m) << (*m)->ToString();
  EXPECT_EQ((*m)->entry()->num_parameters(), 1);
  EXPECT_EQ((*m)->entry()->root()->shape().dimensions(), (std::vector<int64_t>{2, 3}));
}

TEST(GraphLowering, MustCompileNamesTheHostOnlyNode) {
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(4)]()\nn7 = Unique(x)\ny = Neg(n7)\noutputs: y\n", "u.graph");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<std::unique_ptr<HloModule>> m = LowerToHlo(*g);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "u.graph:2:1: node n7 (Unique): data-dependent output shape, cannot be compiled");
}

}  // namespace
}  // namespace kiln::graph
