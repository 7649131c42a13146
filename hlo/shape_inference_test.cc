// Shape inference tests: expected shapes are worked out by hand from XLA's operation
// semantics (comments show the arithmetic); errors are matched against their wording.
#include "hlo/shape_inference.h"

#include <gtest/gtest.h>

#include <limits>

#include "hlo/hlo_test_builder.h"

namespace kiln {
namespace {

using testing::CompBuilder;
using testing::S;
using O = HloOpcode;

class InferTest : public ::testing::Test {
 protected:
  HloInstruction* P(std::string_view shape) { return b_.Param(shape); }
  HloInstruction* I(HloOpcode op, std::string_view declared, std::vector<HloInstruction*> ops,
                    std::string name = "") {
    return b_.Add(op, declared, std::move(ops), std::move(name));
  }
  // Computations called by the instruction under test live in this module.
  HloComputation* Callee(std::unique_ptr<HloComputation> c) {
    return module_.AddComputation(std::move(c));
  }

  static void ExpectShape(const HloInstruction* i, std::string_view want) {
    absl::StatusOr<Shape> got = InferShape(*i);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ToString(false), S(want).ToString(false));
  }
  static void ExpectError(const HloInstruction* i, std::string_view want) {
    absl::StatusOr<Shape> got = InferShape(*i);
    ASSERT_FALSE(got.ok()) << "inferred " << got->ToString(false);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(got.status().message()).find(want), std::string::npos)
        << "message: " << got.status().message() << "\nwanted: " << want;
  }

  HloModule module_{"m"};
  CompBuilder b_{"entry"};
};

// ---- elementwise -------------------------------------------------------------------------

TEST_F(InferTest, BinaryKeepsOperandShape) {
  auto* a = P("f32[2,3]");
  auto* c = P("f32[2,3]");
  ExpectShape(I(O::kAdd, "f32[2,3]", {a, c}), "f32[2,3]");
  ExpectShape(I(O::kPower, "f32[2,3]", {a, c}), "f32[2,3]");
}

TEST_F(InferTest, BinaryRejectsDifferentDimsAndTypes) {
  auto* a = P("f32[2,3]");
  auto* t = P("f32[3,2]");
  auto* s = P("s32[2,3]");
  auto* add = I(O::kAdd, "f32[2,3]", {a, t}, "add.7");
  absl::StatusOr<Shape> r = InferShape(*add);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "%add.7: add: operand shapes f32[2,3] and f32[3,2] have different dimensions");
  ExpectError(I(O::kMultiply, "f32[2,3]", {a, s}), "operand element types f32 and s32 differ");
}

TEST_F(InferTest, CompareGivesPred) {
  auto* a = P("s32[4]");
  auto* c = P("s32[4]");
  auto* cmp = I(O::kCompare, "pred[4]", {a, c});
  cmp->mutable_attrs().comparison_direction = ComparisonDirection::kLt;
  ExpectShape(cmp, "pred[4]");
  ExpectError(I(O::kCompare, "pred[4]", {a, c}), "missing comparison direction");
}

TEST_F(InferTest, LogicalAndShiftTypeRules) {
  auto* f = P("f32[4]");
  auto* p = P("pred[4]");
  auto* u = P("u8[4]");
  ExpectShape(I(O::kAnd, "pred[4]", {p, p}), "pred[4]");
  ExpectShape(I(O::kXor, "u8[4]", {u, u}), "u8[4]");
  ExpectError(I(O::kOr, "f32[4]", {f, f}), "operand element type f32 is not pred or integral");
  ExpectShape(I(O::kShiftLeft, "u8[4]", {u, u}), "u8[4]");
  ExpectError(I(O::kShiftRightLogical, "pred[4]", {p, p}), "is not integral");
  ExpectError(I(O::kNot, "f32[4]", {f}), "operand element type f32 is not pred or integral");
  ExpectShape(I(O::kPopulationCount, "u8[4]", {u}), "u8[4]");
}

TEST_F(InferTest, ConvertKeepsDimsTakesDeclaredType) {
  auto* a = P("f32[2,3]");
  ExpectShape(I(O::kConvert, "s8[2,3]", {a}), "s8[2,3]");
  ExpectShape(I(O::kConvert, "c64[2,3]", {a}), "c64[2,3]");
  auto* c = P("c64[2]");
  ExpectError(I(O::kConvert, "f32[2]", {c}), "conversion from complex c64 to real f32");
}

TEST_F(InferTest, IsFiniteGivesPred) {
  auto* a = P("bf16[5]");
  ExpectShape(I(O::kIsFinite, "pred[5]", {a}), "pred[5]");
  auto* i = P("s32[5]");
  ExpectError(I(O::kIsFinite, "pred[5]", {i}), "operand element type s32 is not floating");
}

TEST_F(InferTest, ComplexRealImagAbs) {
  auto* f = P("f32[3]");
  auto* d = P("f64[3]");
  ExpectShape(I(O::kComplex, "c64[3]", {f, f}), "c64[3]");
  ExpectShape(I(O::kComplex, "c128[3]", {d, d}), "c128[3]");
  auto* i = P("s32[3]");
  ExpectError(I(O::kComplex, "c64[3]", {i, i}), "operand element type s32 is not f32 or f64");
  auto* c = P("c64[3]");
  auto* z = P("c128[3]");
  ExpectShape(I(O::kReal, "f32[3]", {c}), "f32[3]");
  ExpectShape(I(O::kImag, "f64[3]", {z}), "f64[3]");
  ExpectShape(I(O::kAbs, "f32[3]", {c}), "f32[3]");
  ExpectShape(I(O::kAbs, "s32[3]", {i}), "s32[3]");
  ExpectShape(I(O::kReal, "f32[3]", {f}), "f32[3]");
  auto* u = P("u32[3]");
  ExpectError(I(O::kAbs, "u32[3]", {u}), "is not signed, floating or complex");
}

TEST_F(InferTest, TranscendentalNeedsFloatingOrComplex) {
  auto* f = P("f16[2]");
  auto* i = P("s32[2]");
  ExpectShape(I(O::kExp, "f16[2]", {f}), "f16[2]");
  ExpectShape(I(O::kTanh, "f16[2]", {f}), "f16[2]");
  ExpectError(I(O::kLog, "s32[2]", {i}), "operand element type s32 is not floating or complex");
  ExpectShape(I(O::kNegate, "s32[2]", {i}), "s32[2]");
  ExpectError(I(O::kFloor, "s32[2]", {i}), "is not floating");
}

TEST_F(InferTest, SelectScalarOrArrayPredicate) {
  auto* p = P("pred[]");
  auto* pa = P("pred[2,3]");
  auto* pb = P("pred[3]");
  auto* x = P("f32[2,3]");
  auto* y = P("f32[2,3]");
  auto* z = P("s32[2,3]");
  ExpectShape(I(O::kSelect, "f32[2,3]", {p, x, y}), "f32[2,3]");
  ExpectShape(I(O::kSelect, "f32[2,3]", {pa, x, y}), "f32[2,3]");
  ExpectError(I(O::kSelect, "f32[2,3]", {pb, x, y}),
              "predicate pred[3] must be a scalar or have the dimensions of f32[2,3]");
  ExpectError(I(O::kSelect, "f32[2,3]", {p, x, z}),
              "on_true f32[2,3] and on_false s32[2,3] differ");
  ExpectError(I(O::kSelect, "f32[2,3]", {x, x, y}), "predicate must be a pred array");
}

TEST_F(InferTest, ClampScalarOrArrayBounds) {
  auto* lo = P("f32[]");
  auto* hi = P("f32[]");
  auto* x = P("f32[4]");
  auto* bad = P("f32[3]");
  ExpectShape(I(O::kClamp, "f32[4]", {lo, x, hi}), "f32[4]");
  ExpectShape(I(O::kClamp, "f32[4]", {x, x, x}), "f32[4]");
  ExpectError(I(O::kClamp, "f32[4]", {lo, x, bad}),
              "max f32[3] must be a scalar or have the dimensions of operand f32[4]");
}

TEST_F(InferTest, StochasticConvert) {
  auto* f = P("f32[4]");
  auto* r = P("u32[4]");
  auto* r16 = P("u16[4]");
  ExpectShape(I(O::kStochasticConvert, "bf16[4]", {f, r}), "bf16[4]");
  ExpectError(I(O::kStochasticConvert, "bf16[4]", {f, r16}),
              "must be unsigned with the bit width of f32");
}

TEST_F(InferTest, ReducePrecision) {
  auto* f = P("f32[4]");
  auto* ok = I(O::kReducePrecision, "f32[4]", {f});
  ok->mutable_attrs().exponent_bits = 5;
  ok->mutable_attrs().mantissa_bits = 10;
  ExpectShape(ok, "f32[4]");
  auto* bad = I(O::kReducePrecision, "f32[4]", {f});
  ExpectError(bad, "exponent_bits=0 must be at least 1");
}

// ---- bit casts ---------------------------------------------------------------------------

TEST_F(InferTest, BitcastConvertSameAndDifferentWidths) {
  auto* f = P("f32[4]");
  ExpectShape(I(O::kBitcastConvert, "s32[4]", {f}), "s32[4]");
  // 32-bit -> 8-bit: a new minor dimension of 32/8 = 4.
  ExpectShape(I(O::kBitcastConvert, "u8[4,4]", {f}), "u8[4,4]");
  auto* bytes = P("u8[4,4]");
  ExpectShape(I(O::kBitcastConvert, "f32[4]", {bytes}), "f32[4]");
  auto* d = P("f64[2]");
  ExpectShape(I(O::kBitcastConvert, "f32[2,2]", {d}), "f32[2,2]");
  auto* bad = P("u8[4,3]");
  ExpectError(I(O::kBitcastConvert, "f32[4]", {bad}),
              "converting u8 to the wider f32 needs a minor dimension of size 4 but operand is "
              "u8[4,3]");
  auto* c = P("c64[2]");
  ExpectError(I(O::kBitcastConvert, "s64[2]", {c}), "between complex and real");
}

TEST_F(InferTest, BitcastKeepsByteCount) {
  auto* f = P("f32[2,3]");  // 24 bytes
  ExpectShape(I(O::kBitcast, "s32[6]", {f}), "s32[6]");
  ExpectShape(I(O::kBitcast, "f64[3]", {f}), "f64[3]");
  ExpectError(I(O::kBitcast, "f32[7]", {f}),
              "result f32[7] has 28 bytes but operand f32[2,3] has 24");
  // XLA's layout-free text allows it (only a layout could reconcile the sizes).
  EXPECT_TRUE(InferShape(*I(O::kBitcast, "f32[7]", {f}), ShapeRules::kXlaText).ok());
}

TEST_F(InferTest, MixedPrecisionOnlyInXlaText) {
  auto* h = P("f16[4]");
  auto* f = P("f32[4]");
  auto* s = P("s32[4]");
  ExpectError(I(O::kAdd, "f32[4]", {h, f}), "operand element types f16 and f32 differ");
  absl::StatusOr<Shape> got = InferShape(*I(O::kAdd, "f32[4]", {h, f}), ShapeRules::kXlaText);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ToString(false), "f32[4]");  // the wider of the two
  got = InferShape(*I(O::kMaximum, "f16[4]", {f, h}), ShapeRules::kXlaText);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ToString(false), "f32[4]");
  // Only floating-point precision may differ.
  EXPECT_FALSE(InferShape(*I(O::kAdd, "f32[4]", {s, f}), ShapeRules::kXlaText).ok());
}

// ---- data movement -----------------------------------------------------------------------

TEST_F(InferTest, Broadcast) {
  auto* v = P("f32[3]");
  auto* ok = I(O::kBroadcast, "f32[2,3]", {v});
  ok->mutable_attrs().dimensions = {1};
  ExpectShape(ok, "f32[2,3]");
  auto* bad = I(O::kBroadcast, "f32[2,3]", {v});
  bad->mutable_attrs().dimensions = {0};
  ExpectError(bad, "operand dimension 0 has size 3 but result dimension 0 has size 2");
  auto* s = P("f32[]");
  ExpectShape(I(O::kBroadcast, "f32[4,5]", {s}), "f32[4,5]");  // TF style: no dimensions=
  ExpectError(I(O::kBroadcast, "f32[2,3]", {v}), "dimensions={} has 0 entries but operand f32[3]");
}

TEST_F(InferTest, Reshape) {
  auto* a = P("f32[2,3]");
  ExpectShape(I(O::kReshape, "f32[3,1,2]", {a}), "f32[3,1,2]");
  ExpectError(I(O::kReshape, "f32[7]", {a}),
              "result f32[7] has 7 elements but operand f32[2,3] has 6");
}

TEST_F(InferTest, Transpose) {
  auto* a = P("f32[2,3,4]");
  auto* t = I(O::kTranspose, "f32[4,2,3]", {a});
  t->mutable_attrs().dimensions = {2, 0, 1};
  ExpectShape(t, "f32[4,2,3]");  // result dim i = operand dim perm[i]
  auto* bad = I(O::kTranspose, "f32[4,2,3]", {a});
  bad->mutable_attrs().dimensions = {2, 0, 2};
  ExpectError(bad, "dimension 2 appears more than once");
}

TEST_F(InferTest, Slice) {
  auto* a = P("f32[10,8]");
  auto* s = I(O::kSlice, "f32[3,4]", {a});
  // [2:9:3] -> 2,5,8 (3 elements); [0:8:2] -> 4 elements.
  s->mutable_attrs().slice_starts = {2, 0};
  s->mutable_attrs().slice_limits = {9, 8};
  s->mutable_attrs().slice_strides = {3, 2};
  ExpectShape(s, "f32[3,4]");
  auto* bad = I(O::kSlice, "f32[3,4]", {a});
  bad->mutable_attrs().slice_starts = {0, 0};
  bad->mutable_attrs().slice_limits = {11, 8};
  bad->mutable_attrs().slice_strides = {1, 1};
  ExpectError(bad, "slice [0:11] of dimension 0 is out of bounds for size 10");
}

TEST_F(InferTest, DynamicSliceAndUpdate) {
  auto* a = P("f32[10,8]");
  auto* i = P("s32[]");
  auto* j = P("s32[]");
  auto* ds = I(O::kDynamicSlice, "f32[3,8]", {a, i, j});
  ds->mutable_attrs().dynamic_slice_sizes = {3, 8};
  ExpectShape(ds, "f32[3,8]");
  auto* big = I(O::kDynamicSlice, "f32[3,9]", {a, i, j});
  big->mutable_attrs().dynamic_slice_sizes = {3, 9};
  ExpectError(big, "slice size 9 of dimension 1 exceeds the operand size 8");
  ExpectError(I(O::kDynamicSlice, "f32[3,8]", {a, i}), "expects 1 + 2 operands");

  auto* u = P("f32[2,8]");
  ExpectShape(I(O::kDynamicUpdateSlice, "f32[10,8]", {a, u, i, j}), "f32[10,8]");
  auto* wide = P("f32[2,9]");
  ExpectError(I(O::kDynamicUpdateSlice, "f32[10,8]", {a, wide, i, j}),
              "update dimension 1 has size 9 but operand dimension has size 8");
  auto* f = P("f32[]");
  ExpectError(I(O::kDynamicUpdateSlice, "f32[10,8]", {a, u, i, f}),
              "start index operand 3 must be an integral scalar but is f32[]");
}

TEST_F(InferTest, Concatenate) {
  auto* a = P("f32[2,3]");
  auto* c = P("f32[4,3]");
  auto* cat = I(O::kConcatenate, "f32[6,3]", {a, c});
  cat->mutable_attrs().dimensions = {0};
  ExpectShape(cat, "f32[6,3]");
  auto* bad = I(O::kConcatenate, "f32[2,7]", {a, c});
  bad->mutable_attrs().dimensions = {1};
  ExpectError(bad, "operand 1 f32[4,3] differs from operand 0 f32[2,3] in dimension 0");
}

TEST_F(InferTest, Pad) {
  auto* a = P("f32[3,4]");
  auto* v = P("f32[]");
  auto* pad = I(O::kPad, "f32[8,3]", {a, v});
  // dim 0: 1 + 2 + 3 + (3-1)*1 = 8; dim 1: 4 - 1 + 0 = 3.
  pad->mutable_attrs().padding_config = {{1, 2, 1}, {-1, 0, 0}};
  ExpectShape(pad, "f32[8,3]");
  auto* bad = I(O::kPad, "f32[3,4]", {a, v});
  bad->mutable_attrs().padding_config = {{0, 0, 0}};
  ExpectError(bad, "padding has 1 dimensions but operand f32[3,4] has rank 2");
  auto* neg = I(O::kPad, "f32[3,4]", {a, v});
  neg->mutable_attrs().padding_config = {{-2, -2, 0}, {0, 0, 0}};
  ExpectError(neg, "makes dimension 0 of size 3 negative");
}

TEST_F(InferTest, ReverseAndIota) {
  auto* a = P("f32[3,4]");
  auto* r = I(O::kReverse, "f32[3,4]", {a});
  r->mutable_attrs().dimensions = {1};
  ExpectShape(r, "f32[3,4]");
  auto* bad = I(O::kReverse, "f32[3,4]", {a});
  bad->mutable_attrs().dimensions = {2};
  ExpectError(bad, "dimension 2 is out of range for rank 2");
  auto* iota = I(O::kIota, "s32[4,5]", {});
  iota->mutable_attrs().iota_dimension = 1;
  ExpectShape(iota, "s32[4,5]");
  auto* bad_iota = I(O::kIota, "s32[4,5]", {});
  bad_iota->mutable_attrs().iota_dimension = 2;
  ExpectError(bad_iota, "iota_dimension=2 is out of range for s32[4,5]");
}

// ---- dot and convolution -----------------------------------------------------------------

TEST_F(InferTest, DotBatchedMatmul) {
  auto* l = P("f32[5,2,3]");
  auto* r = P("f32[5,3,4]");
  auto* dot = I(O::kDot, "f32[5,2,4]", {l, r});
  dot->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {0}, {2}, {1}};
  ExpectShape(dot, "f32[5,2,4]");  // batch, lhs free, rhs free
  // Contract lhs dim 0 with rhs dim 2: result = lhs free {1} then rhs free {0}.
  auto* l2 = P("f32[3,7]");
  auto* r2 = P("f32[9,2,3]");
  auto* t = I(O::kDot, "f32[7,9,2]", {l2, r2});
  t->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {0}, {2}};
  ExpectShape(t, "f32[7,9,2]");
  // Mixed precision: the declared element type is the result type.
  auto* lb = P("bf16[2,3]");
  auto* rb = P("bf16[3,4]");
  auto* mixed = I(O::kDot, "f32[2,4]", {lb, rb});
  mixed->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  ExpectShape(mixed, "f32[2,4]");
}

TEST_F(InferTest, DotContractingMismatchMessage) {
  auto* l = P("f32[2,3]");
  auto* r = P("f32[4,5]");
  auto* dot = I(O::kDot, "f32[2,5]", {l, r}, "dot.3");
  dot->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {0}};
  absl::StatusOr<Shape> got = InferShape(*dot);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "%dot.3: dot: lhs contracting dimension 1 has size 3 but rhs contracting dimension 0 "
            "has size 4");
  auto* bad = I(O::kDot, "f32[2,5]", {l, r});
  bad->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{}, {}, {2}, {0}};
  ExpectError(bad, "lhs batch/contracting dimension 2 is out of range for rank 2");
}

ConvolutionDimensionNumbers B01fLabels() {  // b01f_01io->b01f
  ConvolutionDimensionNumbers d;
  d.input_batch_dimension = 0;
  d.input_feature_dimension = 3;
  d.input_spatial_dimensions = {1, 2};
  d.kernel_input_feature_dimension = 2;
  d.kernel_output_feature_dimension = 3;
  d.kernel_spatial_dimensions = {0, 1};
  d.output_batch_dimension = 0;
  d.output_feature_dimension = 3;
  d.output_spatial_dimensions = {1, 2};
  return d;
}

Window Win2(int64_t size, int64_t stride, int64_t pad, int64_t lhs_dil = 1, int64_t rhs_dil = 1) {
  WindowDimension d;
  d.size = size;
  d.stride = stride;
  d.padding_low = d.padding_high = pad;
  d.base_dilation = lhs_dil;
  d.window_dilation = rhs_dil;
  return Window{{d, d}};
}

TEST_F(InferTest, ConvolutionWindowArithmetic) {
  auto* in = P("f32[1,5,5,2]");
  auto* k = P("f32[3,3,2,4]");
  auto conv = [&](Window w, std::string_view declared) {
    auto* c = I(O::kConvolution, declared, {in, k});
    c->mutable_attrs().convolution_dimension_numbers = B01fLabels();
    c->mutable_attrs().window = w;
    return c;
  };
  // padded 5+1+1 = 7; (7-3)/2+1 = 3.
  ExpectShape(conv(Win2(3, 2, 1), "f32[1,3,3,4]"), "f32[1,3,3,4]");
  // lhs_dilate 2: (5-1)*2+1 = 9, padded 11, (11-3)/2+1 = 5.
  ExpectShape(conv(Win2(3, 2, 1, 2), "f32[1,5,5,4]"), "f32[1,5,5,4]");
  // rhs_dilate 2: window (3-1)*2+1 = 5, padded 7, (7-5)/2+1 = 2.
  ExpectShape(conv(Win2(3, 2, 1, 1, 2), "f32[1,2,2,4]"), "f32[1,2,2,4]");
  // No padding, stride 1: 5-3+1 = 3.
  ExpectShape(conv(Win2(3, 1, 0), "f32[1,3,3,4]"), "f32[1,3,3,4]");
  ExpectError(conv(Win2(2, 1, 0), "f32[1,4,4,4]"),
              "window size 2 of spatial dimension 0 differs from the kernel size 3");
}

TEST_F(InferTest, ConvolutionGroupCounts) {
  auto* in = P("f32[4,5,5,4]");
  auto* k = P("f32[3,3,2,6]");
  auto* fg = I(O::kConvolution, "f32[4,3,3,6]", {in, k});
  fg->mutable_attrs().convolution_dimension_numbers = B01fLabels();
  fg->mutable_attrs().window = Win2(3, 1, 0);
  fg->mutable_attrs().feature_group_count = 2;  // 4 input features / 2 = 2 kernel inputs
  ExpectShape(fg, "f32[4,3,3,6]");

  auto* in2 = P("f32[4,5,5,2]");
  auto* bg = I(O::kConvolution, "f32[2,3,3,6]", {in2, k});
  bg->mutable_attrs().convolution_dimension_numbers = B01fLabels();
  bg->mutable_attrs().window = Win2(3, 1, 0);
  bg->mutable_attrs().batch_group_count = 2;  // output batch 4/2 = 2
  ExpectShape(bg, "f32[2,3,3,6]");

  auto* bad = I(O::kConvolution, "f32[4,3,3,6]", {in, k});
  bad->mutable_attrs().convolution_dimension_numbers = B01fLabels();
  bad->mutable_attrs().window = Win2(3, 1, 0);
  ExpectError(bad,
              "input feature size 4 / feature_group_count=1 must equal the kernel input "
              "feature size 2");
}

// ---- reductions and windows --------------------------------------------------------------

TEST_F(InferTest, ReduceSingleAndVariadic) {
  auto* add = Callee(testing::ScalarReducer("add", "f32"));
  auto* a = P("f32[2,3,4]");
  auto* z = P("f32[]");
  auto* r = I(O::kReduce, "f32[3]", {a, z});
  r->mutable_attrs().dimensions = {0, 2};
  r->AppendCalledComputation(add);
  ExpectShape(r, "f32[3]");

  auto* v = P("f32[2,3]");
  auto* idx = P("s32[2,3]");
  auto* zi = P("s32[]");
  auto* vr = I(O::kReduce, "(f32[2], s32[2])", {v, idx, z, zi});
  vr->mutable_attrs().dimensions = {1};
  ExpectShape(vr, "(f32[2], s32[2])");

  auto* odd = I(O::kReduce, "f32[3]", {a, z, z});
  ExpectError(odd, "expects 2N operands (N inputs, then N init values) but has 3 operands");
  auto* dup = I(O::kReduce, "f32[3]", {a, z});
  dup->mutable_attrs().dimensions = {0, 0};
  ExpectError(dup, "reduced dimension 0 appears more than once");
}

TEST_F(InferTest, ReduceWindowAndSelectAndScatter) {
  auto* a = P("f32[4,6]");
  auto* z = P("f32[]");
  WindowDimension d0{2, 2}, d1{3, 3};
  auto* rw = I(O::kReduceWindow, "f32[2,2]", {a, z});
  rw->mutable_attrs().window = Window{{d0, d1}};
  ExpectShape(rw, "f32[2,2]");  // 4/2 = 2, 6/3 = 2
  WindowDimension padded{3, 1, 1, 1};
  auto* same = I(O::kReduceWindow, "f32[4,6]", {a, z});
  same->mutable_attrs().window = Window{{padded, padded}};
  ExpectShape(same, "f32[4,6]");  // (4+2-3)/1+1 = 4

  auto* src = P("f32[2,2]");
  auto* sas = I(O::kSelectAndScatter, "f32[4,6]", {a, src, z});
  sas->mutable_attrs().window = Window{{d0, d1}};
  ExpectShape(sas, "f32[4,6]");
  auto* wrong = P("f32[2,3]");
  auto* bad = I(O::kSelectAndScatter, "f32[4,6]", {a, wrong, z});
  bad->mutable_attrs().window = Window{{d0, d1}};
  ExpectError(bad, "source f32[2,3] must have the windowed operand dimensions f32[2,2]");
}

// ---- gather and scatter ------------------------------------------------------------------

TEST_F(InferTest, GatherRows) {
  // XLA's documentation example: pick rows of a 3x3 matrix.
  auto* a = P("f32[3,3]");
  auto* idx = P("s32[2]");
  auto* g = I(O::kGather, "f32[2,3]", {a, idx});
  GatherDimensionNumbers dn;
  dn.offset_dims = {1};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  g->mutable_attrs().gather_dimension_numbers = dn;
  g->mutable_attrs().gather_slice_sizes = {1, 3};
  ExpectShape(g, "f32[2,3]");
}

TEST_F(InferTest, GatherEmbeddingWithImplicitIndexVector) {
  auto* table = P("f32[1000,64]");
  auto* ids = P("s32[8,16]");
  auto* g = I(O::kGather, "f32[8,16,64]", {table, ids});
  GatherDimensionNumbers dn;
  dn.offset_dims = {2};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 2;  // == rank: each index is a scalar
  g->mutable_attrs().gather_dimension_numbers = dn;
  g->mutable_attrs().gather_slice_sizes = {1, 64};
  ExpectShape(g, "f32[8,16,64]");

  auto* bad = I(O::kGather, "f32[8,16,64]", {table, ids});
  dn.collapsed_slice_dims = {};
  bad->mutable_attrs().gather_dimension_numbers = dn;
  bad->mutable_attrs().gather_slice_sizes = {2, 64};
  ExpectError(bad,
              "offset_dims={2} has 1 entries but operand rank 2 minus 0 collapsed/batching "
              "dimensions is 2");
}

TEST_F(InferTest, Scatter) {
  auto* add = Callee(testing::ScalarReducer("add", "f32"));
  auto* a = P("f32[3,3]");
  auto* idx = P("s32[2]");
  auto* u = P("f32[2,3]");
  ScatterDimensionNumbers dn;
  dn.update_window_dims = {1};
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  auto* s = I(O::kScatter, "f32[3,3]", {a, idx, u});
  s->mutable_attrs().scatter_dimension_numbers = dn;
  s->AppendCalledComputation(add);
  ExpectShape(s, "f32[3,3]");

  auto* u3 = P("f32[3,3]");
  auto* bad = I(O::kScatter, "f32[3,3]", {a, idx, u3});
  bad->mutable_attrs().scatter_dimension_numbers = dn;
  ExpectError(bad,
              "update scatter dimension 0 has size 3 but scatter indices dimension 0 has "
              "size 2");
  ExpectError(I(O::kScatter, "f32[3,3]", {a, idx}), "expects 2N+1 operands");
}

// ---- sort, map, tuples, control flow -----------------------------------------------------

TEST_F(InferTest, SortReturnsTupleForSeveralOperands) {
  auto* k = P("f32[4,5]");
  auto* v = P("s32[4,5]");
  auto* s = I(O::kSort, "(f32[4,5], s32[4,5])", {k, v});
  s->mutable_attrs().dimensions = {1};
  ExpectShape(s, "(f32[4,5], s32[4,5])");
  auto* one = I(O::kSort, "f32[4,5]", {k});
  one->mutable_attrs().dimensions = {0};
  ExpectShape(one, "f32[4,5]");
  auto* bad = I(O::kSort, "f32[4,5]", {k});
  bad->mutable_attrs().dimensions = {2};
  ExpectError(bad, "sort dimension 2 is out of range for rank 2");
}

TEST_F(InferTest, MapTakesCalleeResultType) {
  CompBuilder cb("is_pos");
  auto* x = cb.Param("f32[]");
  auto* zero = cb.Param("f32[]");
  auto* gt = cb.Add(O::kCompare, "pred[]", {x, zero});
  gt->mutable_attrs().comparison_direction = ComparisonDirection::kGt;
  auto* callee = Callee(cb.Build());
  auto* a = P("f32[4]");
  auto* c = P("f32[4]");
  auto* m = I(O::kMap, "pred[4]", {a, c});
  m->AppendCalledComputation(callee);
  ExpectShape(m, "pred[4]");
  ExpectError(I(O::kMap, "pred[4]", {a, c}), "missing to_apply computation");
}

TEST_F(InferTest, TupleAndGetTupleElement) {
  auto* a = P("f32[2]");
  auto* c = P("s32[]");
  auto* t = I(O::kTuple, "(f32[2], s32[])", {a, c});
  ExpectShape(t, "(f32[2], s32[])");
  auto* g = I(O::kGetTupleElement, "s32[]", {t});
  g->mutable_attrs().tuple_index = 1;
  ExpectShape(g, "s32[]");
  auto* bad = I(O::kGetTupleElement, "s32[]", {t});
  bad->mutable_attrs().tuple_index = 2;
  ExpectError(bad, "index=2 is out of range for (f32[2], s32[]) with 2 elements");
}

TEST_F(InferTest, CallFusionWhileConditionalFollowCallees) {
  CompBuilder cb("callee");
  auto* x = cb.Param("f32[3]");
  cb.Add(O::kConvert, "s32[3]", {x});
  auto* callee = Callee(cb.Build());
  auto* a = P("f32[3]");
  auto* call = I(O::kCall, "s32[3]", {a});
  call->AppendCalledComputation(callee);
  ExpectShape(call, "s32[3]");
  auto* fusion = I(O::kFusion, "s32[3]", {a});
  fusion->AppendCalledComputation(callee);
  ExpectShape(fusion, "s32[3]");

  auto* w = I(O::kWhile, "f32[3]", {a});
  ExpectShape(w, "f32[3]");

  auto* sel = P("s32[]");
  auto* cond = I(O::kConditional, "s32[3]", {sel, a, a});
  cond->AppendCalledComputation(callee);
  cond->AppendCalledComputation(callee);
  ExpectShape(cond, "s32[3]");
  auto* pcond = I(O::kConditional, "s32[3]", {P("pred[]"), a, a, a});
  for (int i = 0; i < 3; ++i) pcond->AppendCalledComputation(callee);
  ExpectError(pcond, "a pred selector needs exactly 2 branches but there are 3");
  auto* fsel = I(O::kConditional, "s32[3]", {P("f32[]"), a});
  fsel->AppendCalledComputation(callee);
  ExpectError(fsel, "branch selector must be pred[] or s32[] but is f32[]");
}

// ---- batch norm, sizes, random, linear algebra -------------------------------------------

TEST_F(InferTest, BatchNorm) {
  auto* x = P("f32[2,3,4,5]");
  auto* f = P("f32[5]");
  auto* bad = P("f32[4]");
  auto* train = I(O::kBatchNormTraining, "(f32[2,3,4,5], f32[5], f32[5])", {x, f, f});
  train->mutable_attrs().feature_index = 3;
  ExpectShape(train, "(f32[2,3,4,5], f32[5], f32[5])");
  auto* inf = I(O::kBatchNormInference, "f32[2,3,4,5]", {x, f, f, f, f});
  inf->mutable_attrs().feature_index = 3;
  ExpectShape(inf, "f32[2,3,4,5]");
  auto* grad = I(O::kBatchNormGrad, "(f32[2,3,4,5], f32[5], f32[5])", {x, f, f, f, x});
  grad->mutable_attrs().feature_index = 3;
  ExpectShape(grad, "(f32[2,3,4,5], f32[5], f32[5])");
  auto* wrong = I(O::kBatchNormTraining, "(f32[2,3,4,5], f32[5], f32[5])", {x, bad, f});
  wrong->mutable_attrs().feature_index = 3;
  ExpectError(wrong, "scale f32[4] must be f32[5]");
  auto* range = I(O::kBatchNormTraining, "(f32[2,3,4,5], f32[5], f32[5])", {x, f, f});
  range->mutable_attrs().feature_index = 4;
  ExpectError(range, "feature_index=4 is out of range");
}

TEST_F(InferTest, DimensionSizes) {
  auto* a = P("f32[<=10,3]");
  auto* g = I(O::kGetDimensionSize, "s32[]", {a});
  g->mutable_attrs().dimensions = {0};
  ExpectShape(g, "s32[]");
  auto* n = P("s32[]");
  auto* b = P("f32[10,3]");
  auto* set = I(O::kSetDimensionSize, "f32[<=10,3]", {b, n});
  set->mutable_attrs().dimensions = {0};
  ExpectShape(set, "f32[<=10,3]");
  auto* bad = I(O::kGetDimensionSize, "s32[]", {a});
  bad->mutable_attrs().dimensions = {2};
  ExpectError(bad, "dimension 2 is out of range for rank 2");
}

TEST_F(InferTest, CustomCallAcceptsDeclaredShape) {
  auto* a = P("f32[3]");
  auto* cc = I(O::kCustomCall, "(s32[7], f32[])", {a, a});
  cc->mutable_attrs().custom_call_target = "anything";
  ExpectShape(cc, "(s32[7], f32[])");
}

TEST_F(InferTest, RandomNumbers) {
  auto* state = P("u64[2]");
  ExpectShape(I(O::kRngBitGenerator, "(u64[2], u32[4,4])", {state}), "(u64[2], u32[4,4])");
  ExpectError(I(O::kRngBitGenerator, "u32[4,4]", {state}),
              "result must be a (state, values) tuple but is u32[4,4]");
  auto* f = P("f32[3]");
  ExpectError(I(O::kRngBitGenerator, "(f32[3], u32[4])", {f}),
              "state must be an unsigned rank-1 array but is f32[3]");
  auto* lo = P("f32[]");
  auto* hi = P("f32[]");
  ExpectShape(I(O::kRng, "f32[3,4]", {lo, hi}), "f32[3,4]");
  auto* i = P("s32[]");
  ExpectError(I(O::kRng, "f32[3,4]", {lo, i}), "parameters have different types f32[] and s32[]");
}

TEST_F(InferTest, TopK) {
  auto* a = P("f32[3,10]");
  auto* t = I(O::kTopK, "(f32[3,4], s32[3,4])", {a});
  t->mutable_attrs().k = 4;
  ExpectShape(t, "(f32[3,4], s32[3,4])");
  auto* bad = I(O::kTopK, "(f32[3,11], s32[3,11])", {a});
  bad->mutable_attrs().k = 11;
  ExpectError(bad, "k=11 is out of range for the last dimension of f32[3,10]");
}

TEST_F(InferTest, CholeskyAndTriangularSolve) {
  auto* m = P("f32[2,3,3]");
  ExpectShape(I(O::kCholesky, "f32[2,3,3]", {m}), "f32[2,3,3]");
  auto* rect = P("f32[3,4]");
  ExpectError(I(O::kCholesky, "f32[3,4]", {rect}), "must be a (batch of) square matrices");

  auto* a = P("f32[3,3]");
  auto* b_left = P("f32[3,5]");
  auto* b_right = P("f32[5,3]");
  auto* left = I(O::kTriangularSolve, "f32[3,5]", {a, b_left});
  left->mutable_attrs().left_side = true;
  ExpectShape(left, "f32[3,5]");  // solves a x = b: a is 3x3, b is 3x5
  ExpectShape(I(O::kTriangularSolve, "f32[5,3]", {a, b_right}), "f32[5,3]");  // x a = b
  auto* bad = I(O::kTriangularSolve, "f32[5,3]", {a, b_right});
  bad->mutable_attrs().left_side = true;
  ExpectError(bad, "with left_side=true b dimension 0 must be 3 (the size of a) but is 5");
}

TEST_F(InferTest, Fft) {
  auto* c = P("c64[8,4]");
  auto* f = P("f32[8,6]");
  auto fft = [&](HloInstruction* x, FftType t, std::vector<int64_t> len, std::string_view decl) {
    auto* i = I(O::kFft, decl, {x});
    i->mutable_attrs().fft_type = t;
    i->mutable_attrs().fft_length = std::move(len);
    return i;
  };
  ExpectShape(fft(c, FftType::kFft, {4}, "c64[8,4]"), "c64[8,4]");
  ExpectShape(fft(c, FftType::kIfft, {8, 4}, "c64[8,4]"), "c64[8,4]");
  ExpectShape(fft(f, FftType::kRfft, {6}, "c64[8,4]"), "c64[8,4]");   // 6/2+1 = 4
  ExpectShape(fft(c, FftType::kIrfft, {6}, "f32[8,6]"), "f32[8,6]");  // 4 = 6/2+1
  ExpectShape(fft(c, FftType::kIrfft, {7}, "f32[8,7]"), "f32[8,7]");  // 4 = 7/2+1
  ExpectError(fft(f, FftType::kRfft, {5}, "c64[8,3]"),
              "operand dimension 1 has size 6 but fft_length={5} wants 5");
  ExpectError(fft(f, FftType::kFft, {6}, "c64[8,6]"), "operand element type f32 is not complex");
  ExpectError(fft(c, FftType::kIrfft, {8}, "f32[8,8]"),
              "IRFFT operand minor dimension has size 4 but fft_length={8} wants 5");
}

TEST_F(InferTest, TokensAndBarriers) {
  auto* t1 = I(O::kAfterAll, "token[]", {});
  ExpectShape(t1, "token[]");
  auto* t2 = I(O::kAfterAll, "token[]", {t1, t1});
  ExpectShape(t2, "token[]");
  auto* a = P("f32[2]");
  ExpectShape(I(O::kAfterAll, "token[]", {t1, a}), "token[]");  // any value orders, as in XLA
  ExpectShape(I(O::kAddDependency, "f32[2]", {a, t1}), "f32[2]");
  auto* tup = I(O::kTuple, "(f32[2], token[])", {a, t1});
  ExpectShape(I(O::kOptimizationBarrier, "(f32[2], token[])", {tup}), "(f32[2], token[])");
}

TEST_F(InferTest, ConstantAndParameter) {
  auto* c = b_.Constant(Literal::FromDoubles(S("s32[2]"), {1, 2}));
  ExpectShape(c, "s32[2]");
  ExpectShape(P("(f32[2], u8[])"), "(f32[2], u8[])");
  // `constant({...})`: the value was elided by the dumper; the declared shape stands.
  ExpectShape(I(O::kConstant, "s32[16]", {}), "s32[16]");
}

TEST_F(InferTest, Collectives) {
  auto* a = P("f32[4,8]");
  ExpectShape(I(O::kAllReduce, "f32[4,8]", {a}), "f32[4,8]");
  ExpectShape(I(O::kReplicaId, "u32[]", {}), "u32[]");
  auto* ag = I(O::kAllGather, "f32[16,8]", {a});
  ag->mutable_attrs().dimensions = {0};
  ExpectShape(ag, "f32[16,8]");
  auto* bad = I(O::kAllGather, "f32[4,12]", {a});
  bad->mutable_attrs().dimensions = {1};
  ExpectError(bad, "result f32[4,12] is not operand f32[4,8] gathered along dimension 1");
  auto* rs = I(O::kReduceScatter, "f32[1,8]", {a});
  rs->mutable_attrs().dimensions = {0};
  ExpectShape(rs, "f32[1,8]");
  auto* tok = I(O::kAfterAll, "token[]", {});
  absl::StatusOr<Shape> recv = InferShape(*I(O::kRecv, "(f32[2], u32[], token[])", {tok}));
  ASSERT_FALSE(recv.ok());
  EXPECT_EQ(recv.status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(InferTest, OperandCountErrors) {
  auto* a = P("f32[2]");
  ExpectError(I(O::kAdd, "f32[2]", {a, a, a}, "add.9"),
              "%add.9: add: expects 2 operands but has 3 operands");
  ExpectError(I(O::kNegate, "f32[2]", {}), "expects 1 operand but has 0 operands");
  ExpectError(I(O::kSort, "f32[2]", {}), "expects at least 1 operand");
}

// ---- hostile sizes: attributes near INT64_MAX must give errors, never wrapped sizes -----

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ShapeSizeFits, OverflowingByteSizesAreRejected) {
  EXPECT_TRUE(S("f32[4,8]").SizeFits());
  EXPECT_TRUE(S("f32[0,2]").SizeFits());
  EXPECT_TRUE(S("pred[9223372036854775807]").SizeFits());  // one byte each: fits exactly
  EXPECT_FALSE(S("f32[9223372036854775807,4]").SizeFits());
  EXPECT_FALSE(S("f32[9223372036854775807]").SizeFits());  // 4 * (2^63 - 1) bytes
  // The products before a zero dimension must fit too (num_elements() forms them).
  EXPECT_FALSE(S("s8[4294967296,4294967296,0]").SizeFits());
  EXPECT_TRUE(S("s8[0,4294967296,4294967296]").SizeFits());
  // Each leaf fits but the tuple's total byte size does not.
  EXPECT_FALSE(S("(pred[6000000000000000000], pred[6000000000000000000])").SizeFits());
  Shape negative = S("f32[2]");
  negative.mutable_dimensions()[0] = -1;
  EXPECT_FALSE(negative.SizeFits());
}

TEST_F(InferTest, PadNearInt64MaxIsAnError) {
  auto* a = P("f32[4]");
  auto* v = P("f32[]");
  // 4 + MAX + MAX wrapped to 2 before the check.
  auto* edges = I(O::kPad, "f32[2]", {a, v}, "pad.1");
  edges->mutable_attrs().padding_config = {{kMax, kMax, 0}};
  ExpectError(edges,
              "%pad.1: pad: padding 9223372036854775807_9223372036854775807_0 of dimension 0 "
              "(size 4) overflows 64 bits");
  auto* interior = I(O::kPad, "f32[4]", {a, v});
  interior->mutable_attrs().padding_config = {{0, 0, kMax}};
  ExpectError(interior, "padding 0_0_9223372036854775807 of dimension 0 (size 4) overflows");
  // Low padding that only a very negative high padding brings back in range: positions
  // low + k would overflow, so the partial sum is checked too.
  auto* seesaw = I(O::kPad, "f32[4]", {a, v});
  seesaw->mutable_attrs().padding_config = {{kMax - 2, -(kMax - 2), 0}};
  ExpectError(seesaw, "overflows 64 bits");
  auto* neg = I(O::kPad, "f32[0]", {a, v});
  neg->mutable_attrs().padding_config = {{-kMax, -kMax, 0}};
  ExpectError(neg, "overflows 64 bits");
  // The total (5) fits, but an output index minus the low padding (up to 4 + MAX - 2) does
  // not, nor does -INT64_MIN.
  auto* far = I(O::kPad, "f32[5]", {a, v});
  far->mutable_attrs().padding_config = {{1 - kMax, kMax, 0}};
  ExpectError(far, "overflows 64 bits");
  auto* min = I(O::kPad, "f32[0]", {a, v});
  min->mutable_attrs().padding_config = {{std::numeric_limits<int64_t>::min(), kMax, 0}};
  ExpectError(min, "overflows 64 bits");
  // Interior padding does not matter for a single element.
  auto* one = P("f32[1]");
  auto* lone = I(O::kPad, "f32[1]", {one, v});
  lone->mutable_attrs().padding_config = {{0, 0, kMax}};
  ExpectShape(lone, "f32[1]");
  // The element count fits but the byte size does not.
  auto* huge = I(O::kPad, "f32[9223372036854775807]", {a, v}, "pad.5");
  huge->mutable_attrs().padding_config = {{0, kMax - 4, 0}};
  ExpectError(huge,
              "%pad.5: pad: result shape f32[9223372036854775807] is too large (its byte size "
              "overflows 64 bits)");
}

TEST_F(InferTest, SliceWithHugeStrideTakesOneElement) {
  auto* a = P("f32[4]");
  auto slice = [&](int64_t start, int64_t limit) {
    auto* s = I(O::kSlice, "f32[1]", {a});
    s->mutable_attrs().slice_starts = {start};
    s->mutable_attrs().slice_limits = {limit};
    s->mutable_attrs().slice_strides = {kMax};
    return s;
  };
  ExpectShape(slice(0, 4), "f32[1]");  // element 0 only (was f32[0]: 4 + MAX - 1 wrapped)
  ExpectShape(slice(3, 4), "f32[1]");
  ExpectShape(slice(4, 4), "f32[0]");
}

TEST_F(InferTest, WindowAttributesNearInt64MaxAreErrors) {
  auto* a = P("f32[4]");
  auto* z = P("f32[]");
  auto rw = [&](WindowDimension d) {
    auto* r = I(O::kReduceWindow, "f32[1]", {a, z}, "rw");
    r->mutable_attrs().window = Window{{d}};
    return r;
  };
  WindowDimension base_dilated{1, 1, 0, 0, 1, kMax};
  ExpectError(rw(base_dilated),
              "%rw: reduce-window: window dimension 0: lhs_dilate=9223372036854775807 and "
              "pad=0_0 of the input size 4 overflow 64 bits");
  WindowDimension padded{1, 1, kMax, kMax};
  ExpectError(rw(padded), "pad=9223372036854775807_9223372036854775807 of the input size 4");
  WindowDimension window_dilated{2, 1, 0, 0, kMax, 1};
  ExpectError(rw(window_dilated),
              "window dimension 0: size 2 with rhs_dilate=9223372036854775807 overflows 64 bits");
  WindowDimension big_window{kMax, 1, 0, 0, 2, 1};
  ExpectError(rw(big_window), "size 9223372036854775807 with rhs_dilate=2 overflows");
  WindowDimension strided{2, kMax};
  ExpectShape(rw(strided), "f32[1]");  // (4 - 2) / MAX + 1

  auto* src = P("f32[1]");
  auto* sas = I(O::kSelectAndScatter, "f32[4]", {a, src, z});
  sas->mutable_attrs().window = Window{{padded}};
  ExpectError(sas, "of the operand size 4 overflow 64 bits");
}

TEST_F(InferTest, ConvolutionDilationNearInt64MaxIsAnError) {
  auto* lhs = P("f32[1,1,4]");
  auto* rhs = P("f32[1,1,2]");
  auto* conv = I(O::kConvolution, "f32[1,1,3]", {lhs, rhs}, "conv");
  ConvolutionDimensionNumbers dn;
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = 1;
  dn.input_spatial_dimensions = {2};
  dn.kernel_input_feature_dimension = 1;
  dn.kernel_output_feature_dimension = 0;
  dn.kernel_spatial_dimensions = {2};
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = 1;
  dn.output_spatial_dimensions = {2};
  conv->mutable_attrs().convolution_dimension_numbers = dn;
  conv->mutable_attrs().window = Window{{WindowDimension{2, 1, 0, 0, 1, 1}}};
  ExpectShape(conv, "f32[1,1,3]");
  conv->mutable_attrs().window = Window{{WindowDimension{2, 1, 0, 0, 1, kMax}}};
  ExpectError(conv, "%conv: convolution: window dimension 0: lhs_dilate=9223372036854775807");
}

TEST_F(InferTest, ConcatenateSizeOverflowIsAnError) {
  auto* a = P("pred[6000000000000000000]");
  auto* cat = I(O::kConcatenate, "pred[1]", {a, a}, "cat");
  cat->mutable_attrs().dimensions = {0};
  ExpectError(cat, "%cat: concatenate: concatenated dimension 0 overflows 64 bits at operand 1");
}

TEST_F(InferTest, RaggedAllToAllIsItsOutputBuffer) {
  HloInstruction* in = P("f32[16,4]");
  HloInstruction* out = P("f32[16,4]");
  std::vector<HloInstruction*> ops = {in, out, P("s64[2]"), P("s64[2]"), P("s64[2]"), P("s64[2]")};
  ExpectShape(I(HloOpcode::kRaggedAllToAll, "f32[16,4]", ops), "f32[16,4]");
  ops[3] = P("f32[2]");
  ExpectError(I(HloOpcode::kRaggedAllToAll, "f32[16,4]", ops), "rank-1 integer array");
  ops[3] = P("s64[3]");
  ExpectError(I(HloOpcode::kRaggedAllToAll, "f32[16,4]", ops), "one length");
  ops[3] = P("s64[2]");
  ops[1] = P("s32[16,4]");
  ExpectError(I(HloOpcode::kRaggedAllToAll, "f32[16,4]", ops), "one element type and rank");
}

TEST_F(InferTest, DeclaredShapeTooLargeIsAnError) {
  auto* c = P("f32[]");
  auto* b = I(O::kBroadcast, "f32[9223372036854775807,4]", {c}, "b");
  ExpectError(b, "%b: broadcast: result shape f32[9223372036854775807,4] is too large");
}

}  // namespace
}  // namespace kiln
