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
  EXPECT_EQ(VerifyError(x + "y = Frob(x)\noutputs: y\n"),
            "t.graph:2:1: node y (Frob): unknown op 'Frob'");
  EXPECT_EQ(VerifyError(x + "y = Sum[keep_dims=1](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Sum): attribute 'keep_dims' must be bool, got int 1");
  EXPECT_EQ(VerifyError("x = Placeholder[dtype=f32]()\noutputs: x\n"),
            "t.graph:1:1: node x (Placeholder): missing attribute 'shape' (shape)");
  EXPECT_EQ(VerifyError(x + "y = Transpose[perm=[0,1], bogus=1](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Transpose): unknown attribute 'bogus'");
  EXPECT_EQ(
      VerifyError(x + "z = Placeholder[dtype=f32, shape=(3,2)]()\ny = Add(x, z)\noutputs: y\n"),
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
  EXPECT_EQ(VerifyError(x + "y = Neg(x) @ y\noutputs: y\n"),
            "t.graph:2:1: node y (Neg): cycle: y -> y");
  EXPECT_EQ(VerifyError(x + "y = Neg(x)\noutputs: y, nope\n"),
            "t.graph:3:1: outputs: unknown node 'nope'");
  EXPECT_EQ(VerifyError(x + "y = Reshape[shape=(4,-1)](x)\noutputs: y\n"),
            "t.graph:2:1: node y (Reshape): cannot reshape 6 elements into (4,-1)");
}

// Shape functions of the op registry: bad attributes and mismatched shapes are located.
TEST(GraphVerifier, OpShapeErrorsNameTheNode) {
  const std::string x = "x = Placeholder[dtype=f32, shape=(2,3)]()\n";
  auto err = [&](const std::string& node) { return VerifyError(x + node + "\noutputs: y\n"); };
  const std::string at = "t.graph:2:1: node y ";
  EXPECT_EQ(err("y = Cast(x)"), at + "(Cast): missing attribute 'DstT' (type)");
  EXPECT_EQ(err("y = Cast[DstT=s32, SrcT=s64](x)"),
            at + "(Cast): SrcT=s64 but the operand is f32(2,3)");
  EXPECT_EQ(err("y = Gelu[approximate=1](x)"),
            at + "(Gelu): attribute 'approximate' must be bool, got int 1");
  EXPECT_EQ(err("y = Select(x, x, x)"), at + "(Select): condition must be pred, got f32(2,3)");
  EXPECT_EQ(err("c = Less(x, x)\ny = Select(c, x, c)"),
            "t.graph:3:1: node y (Select): Select needs equal value operands, got f32(2,3) and "
            "pred(2,3)");
  EXPECT_EQ(
      err("y = BatchMatMul(x, x)"),
      at + "(BatchMatMul): BatchMatMul contracting dimensions differ: 3 ((2,3)) vs 2 ((2,3))");
  EXPECT_EQ(
      err("z = Reshape[shape=(1,2,3)](x)\nw = Reshape[shape=(2,3,1)](x)\ny = BatchMatMul(z, w)"),
      "t.graph:4:1: node y (BatchMatMul): BatchMatMul needs equal batch dimensions, got (1,2,3) "
      "and (2,3,1) (BatchMatMulV2 broadcasts)");
  EXPECT_EQ(err("y = Conv2D[strides=[1,1,1,1], padding=\"SAME\"](x, x)"),
            at + "(Conv2D): input must be rank 4 (NHWC), got f32(2,3)");
  const std::string img = "i = Reshape[shape=(1,2,3,1)](x)\n";
  EXPECT_EQ(err(img + "y = MaxPool[ksize=[1,2,2,1], strides=[2,2], padding=\"SAME\"](i)"),
            "t.graph:3:1: node y (MaxPool): strides must be [1, h, w, 1] with h, w >= 1 (NHWC), "
            "got [2,2]");
  EXPECT_EQ(err(img + "y = AvgPool[ksize=[1,2,2,1], strides=[1,1,1,1], padding=\"FULL\"](i)"),
            "t.graph:3:1: node y (AvgPool): padding must be \"SAME\" or \"VALID\", got \"FULL\"");
  EXPECT_EQ(
      err(img + "y = Conv2D[strides=[1,1,1,1], padding=\"VALID\", data_format=\"NCHW\"](i, i)"),
      "t.graph:3:1: node y (Conv2D): data_format \"NCHW\" is not supported (only NHWC)");
  EXPECT_EQ(
      err(img + "f = Reshape[shape=(1,1,2,3)](x)\ny = Conv2D[strides=[1,1,1,1], "
                "padding=\"VALID\"](i, f)"),
      "t.graph:4:1: node y (Conv2D): input has 1 channels but the filter (1,1,2,3) expects 2");
  EXPECT_EQ(err("y = Slice[begin=[1,0], size=[2,-1]](x)"),
            at + "(Slice): slice begin 1 size 2 is out of range for dimension 0 of (2,3)");
  EXPECT_EQ(err("y = Slice[begin=[0], size=[1]](x)"),
            at + "(Slice): begin and size need 2 entries (the rank of (2,3)), got 1 and 1");
  EXPECT_EQ(err("y = StridedSlice[begin=[0,0], end=[2,3], strides=[1,0]](x)"),
            at + "(StridedSlice): stride 1 is 0");
  EXPECT_EQ(err("y = StridedSlice[begin=[0,3], end=[2,3], shrink_axis_mask=2](x)"),
            at + "(StridedSlice): shrink index 3 is out of range for dimension 1 of (2,3)");
  EXPECT_EQ(err("y = StridedSlice[begin=[0], end=[1], ellipsis_mask=1](x)"),
            at + "(StridedSlice): unknown attribute 'ellipsis_mask'");
  EXPECT_EQ(err("y = Pad[paddings=[1,1]](x)"),
            at + "(Pad): paddings needs 2 entries per dimension (4 for (2,3)), got 2");
  EXPECT_EQ(err("y = Pad[paddings=[0,0,-1,0]](x)"),
            at + "(Pad): paddings must be >= 0, got -1 0 for dimension 1");
  EXPECT_EQ(err("z = Transpose[perm=[1,0]](x)\ny = ConcatV2[axis=0](x, z)"),
            "t.graph:3:1: node y (ConcatV2): input 1 is f32(3,2), which does not concatenate with "
            "f32(2,3) along axis 0");
  EXPECT_EQ(err("y = ConcatV2[axis=2](x, x)"),
            at + "(ConcatV2): axis 2 is out of range for rank 2");
  EXPECT_EQ(err("y = Tile[multiples=[2]](x)"),
            at + "(Tile): multiples has 1 entries for an operand of rank 2");
  EXPECT_EQ(err("y = Fill[dims=(2,-1)](x)"), at + "(Fill): Fill dims (2,-1) must be known");
  EXPECT_EQ(err("y = Fill[dims=(2)](x)"), at + "(Fill): Fill value must be a scalar, got f32(2,3)");
  EXPECT_EQ(err("y = ExpandDims[axis=3](x)"),
            at + "(ExpandDims): axis 3 is out of range for inserting into rank 2");
  EXPECT_EQ(err("y = Squeeze[squeeze_dims=[0]](x)"),
            at + "(Squeeze): cannot squeeze dimension 0 of (2,3): its size is not 1");
  EXPECT_EQ(err("y = ArgMax[axis=2](x)"), at + "(ArgMax): axis 2 is out of range for rank 2");
  EXPECT_EQ(err("y = ArgMin[output_type=f32](x)"),
            at + "(ArgMin): output_type must be s32 or s64, got f32");
  EXPECT_EQ(err("y = Prod[axes=[0,-2]](x)"), at + "(Prod): repeated axis");
  EXPECT_EQ(err("y = OneHot[depth=3](x)"),
            at + "(OneHot): indices must be an integer type, got f32(2,3)");
  EXPECT_EQ(err("i = Cast[DstT=s32](x)\ny = OneHot[depth=3, axis=3](i)"),
            "t.graph:3:1: node y (OneHot): axis 3 is out of range for indices of rank 2 (-1..2)");
  EXPECT_EQ(err("i = Cast[DstT=s32](x)\ny = GatherV2[batch_dims=1](x, i)"),
            "t.graph:3:1: node y (GatherV2): batch_dims other than 0 is not supported");
  EXPECT_EQ(err("y = Gather(x, x)"),
            at + "(Gather): indices must be an integer type, got f32(2,3)");
  EXPECT_EQ(err("c = Less(x, x)\ny = Where(c, x, x)"), "ok");  // the select form
  EXPECT_EQ(err("c = Less(x, x)\ny = Where(c, x)"),
            "t.graph:3:1: node y (Where): Where takes one input (the coordinates of the true "
            "elements) or three (condition, x, y); got 2");
  EXPECT_EQ(err("z = Placeholder[dtype=f32, shape=(4,1,3)]()\ny = Add(x, z)\nw = Sub(z, x)"), "ok");
  EXPECT_EQ(
      err("z = Placeholder[dtype=f32, shape=(4,2,2)]()\ny = Add(x, z)"),
      "t.graph:3:1: node y (Add): shapes (2,3) and (4,2,2) do not broadcast (dimension 2: 3 vs 2)");
}

// Shapes the new ops infer, including unknown (-1) dimensions that stay unknown.
TEST(GraphVerifier, OpShapesInferred) {
  absl::StatusOr<Graph> g = ParseGraph(
      "x = Placeholder[dtype=f32, shape=(-1,3)]()\n"
      "v = Placeholder[dtype=f32, shape=(5,1,1)]()\n"
      "a = Add(x, v)\n"
      "s = StridedSlice[begin=[0,2], end=[0,0], strides=[1,-1], end_mask=1](x)\n"
      "c = ConcatV2[axis=1](x, x)\n"
      "m = ArgMax[axis=1, output_type=s32](x)\n"
      "w = Where(x)\n"
      "i = Cast[DstT=s64](x)\n"
      "o = OneHot[depth=4, axis=0](i)\n"
      "outputs: a, s, c, m, w, o\n",
      "t.graph");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<ShapeMap> shapes = InferShapes(*g);
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  auto info = [&](const char* n) { return shapes->at(n).at(0).ToString(); };
  EXPECT_EQ(info("a"), "f32(5,-1,3)");
  EXPECT_EQ(info("s"), "f32(-1,2)");
  EXPECT_EQ(info("c"), "f32(-1,6)");
  EXPECT_EQ(info("m"), "s32(-1)");
  EXPECT_EQ(info("w"), "s64(-1,2)");
  EXPECT_EQ(info("o"), "f32(4,-1,3)");
}

TEST(GraphBuilder, BuildsVerifiesAndLowersToAValidModule) {
  Graph g;
  g.AddPlaceholder("x", PrimitiveType::F32, {2, 3});
  g.Add("s", "Sum", {{"x"}},
        {{"axes", AttrValue::Ints({1})}, {"keep_dims", AttrValue::Bool(true)}});
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
      "x = Placeholder[dtype=f32, shape=(4)]()\nn7 = Unique(x)\ny = Neg(n7)\noutputs: y\n",
      "u.graph");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<std::unique_ptr<HloModule>> m = LowerToHlo(*g);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "u.graph:2:1: node n7 (Unique): data-dependent output shape, cannot be compiled");
}

}  // namespace
}  // namespace kiln::graph
