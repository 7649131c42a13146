// Tests of library-call lowering: cuBLAS and cuDNN custom-calls become the dot or
// convolution they stand for, with values equal to the same computation written in plain
// HLO (and, for the GEMM, to sums computed here); calls it does not understand stay; the
// corpus's TensorFlow GPU dumps lose every such call and still verify.
#include "hlo/passes/library_call_lowering.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/test_util.h"
#include "hlo/verifier.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RandomLiteral;
using testing::RunPassAndPrint;

// Evaluates `lowered` after the pass and `plain` as written on the same random inputs.
void ExpectSameAsPlain(std::string_view lowered, std::string_view plain, double tolerance = 0) {
  std::unique_ptr<HloModule> after = Parse(lowered);
  std::unique_ptr<HloModule> want_module = Parse(plain);
  ASSERT_TRUE(after && want_module);
  LibraryCallLowering pass;
  absl::StatusOr<bool> changed = pass.Run(*after);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(VerifyModule(*after).ok()) << after->ToString();
  EXPECT_EQ(after->ToString().find("custom-call"), std::string::npos) << after->ToString();
  std::mt19937 rng(3);
  std::vector<Literal> args;
  for (const HloInstruction* p : want_module->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  absl::StatusOr<Literal> got = evaluator.Evaluate(*after, args);
  absl::StatusOr<Literal> want = evaluator.Evaluate(*want_module, args);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(want.ok()) << want.status().message();
  if (tolerance == 0) {
    EXPECT_TRUE(testing::SameValues(*got, *want));
  } else {
    ASSERT_EQ(got->element_count(), want->element_count());
    for (int64_t i = 0; i < want->element_count(); ++i)
      EXPECT_NEAR(got->GetAsDouble(i), want->GetAsDouble(i), tolerance) << "element " << i;
  }
}

TEST(LibraryCallLoweringTest, GemmWithAlphaBetaAndBatch) {
  // 2 * a[b,m,k] x b[b,n,k]^T + 0.5 * c, the rhs contracted on its last dimension.
  constexpr std::string_view kCall = R"(
HloModule m
ENTRY main {
  a = f32[2,3,4] parameter(0)
  b = f32[2,5,4] parameter(1)
  c = f32[2,3,5] parameter(2)
  ROOT g = f32[2,3,5] custom-call(a, b, c), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":2,\"alpha_imag\":0,\"beta\":0.5,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"2\"],\"rhs_contracting_dimensions\":[\"2\"],\"lhs_batch_dimensions\":[\"0\"],\"rhs_batch_dimensions\":[\"0\"]},\"batch_size\":\"2\",\"epilogue\":\"DEFAULT\"}"
}
)";
  std::unique_ptr<HloModule> m = Parse(kCall);
  ASSERT_TRUE(m);
  LibraryCallLowering pass;
  ASSERT_TRUE(pass.Run(*m).ok());
  ASSERT_TRUE(VerifyModule(*m).ok()) << m->ToString();
  std::mt19937 rng(5);
  std::vector<Literal> args;
  for (const HloInstruction* p : m->entry()->parameters())
    args.push_back(RandomLiteral(p->shape(), rng));
  HloEvaluator evaluator;
  absl::StatusOr<Literal> got = evaluator.Evaluate(*m, args);
  ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << m->ToString();
  // The sums, by hand.
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double s = 0;
        for (int64_t k = 0; k < 4; ++k)
          s +=
              args[0].GetAsDouble((bi * 3 + i) * 4 + k) * args[1].GetAsDouble((bi * 5 + j) * 4 + k);
        const int64_t o = (bi * 3 + i) * 5 + j;
        EXPECT_NEAR(got->GetAsDouble(o), 2 * s + 0.5 * args[2].GetAsDouble(o), 1e-4) << o;
      }
}

TEST(LibraryCallLoweringTest, GemmAsXlaWritesItForTensorFlow) {
  // The form in the corpus's BERT dump: a tuple-free f16 result, quoted dimension numbers.
  ExpectSameAsPlain(R"(
HloModule m
ENTRY main {
  a = f16[16,8] parameter(0)
  b = f16[8,12] parameter(1)
  ROOT g = f16[16,12]{1,0} custom-call(a, b), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]},\"batch_size\":\"1\",\"selected_algorithm\":\"115\"}"
}
)",
                    R"(
HloModule m
ENTRY main {
  a = f16[16,8] parameter(0)
  b = f16[8,12] parameter(1)
  ROOT d = f16[16,12] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
}

TEST(LibraryCallLoweringTest, ConvForwardWithScratch) {
  ExpectSameAsPlain(R"(
HloModule m
ENTRY main {
  x = f32[2,3,9,9] parameter(0)
  w = f32[3,3,3,4] parameter(1)
  cc = (f32[2,4,5,5], u8[64]) custom-call(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_01io->bf01, custom_call_target="__cudnn$convForward", backend_config="{\"algorithm\":\"1\",\"convResultScale\":1}"
  y = f32[2,4,5,5] get-tuple-element(cc), index=0
  s = u8[64] get-tuple-element(cc), index=1
  ROOT t = (f32[2,4,5,5], u8[64]) tuple(y, s)
}
)",
                    R"(
HloModule m
ENTRY main {
  x = f32[2,3,9,9] parameter(0)
  w = f32[3,3,3,4] parameter(1)
  y = f32[2,4,5,5] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_01io->bf01
  z = u8[] constant(0)
  s = u8[64] broadcast(z), dimensions={}
  ROOT t = (f32[2,4,5,5], u8[64]) tuple(y, s)
}
)");
}

TEST(LibraryCallLoweringTest, ConvBiasReluWithSideInput) {
  ExpectSameAsPlain(R"(
HloModule m
ENTRY main {
  x = f32[1,4,6,6] parameter(0)
  w = f32[3,3,4,5] parameter(1)
  bias = f32[5] parameter(2)
  side = f32[1,5,6,6] parameter(3)
  cc = (f32[1,5,6,6], u8[0]) custom-call(x, w, bias, side), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01io->bf01, custom_call_target="__cudnn$convBiasActivationForward", backend_config="{\"algorithm\":\"6\",\"activationMode\":\"2\",\"convResultScale\":0.5,\"sideInputScale\":2}"
  ROOT y = f32[1,5,6,6] get-tuple-element(cc), index=0
}
)",
                    R"(
HloModule m
ENTRY main {
  x = f32[1,4,6,6] parameter(0)
  w = f32[3,3,4,5] parameter(1)
  bias = f32[5] parameter(2)
  side = f32[1,5,6,6] parameter(3)
  conv = f32[1,5,6,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01io->bf01
  half = f32[] constant(0.5)
  halves = f32[1,5,6,6] broadcast(half), dimensions={}
  scaled = f32[1,5,6,6] multiply(conv, halves)
  two = f32[] constant(2)
  twos = f32[1,5,6,6] broadcast(two), dimensions={}
  side2 = f32[1,5,6,6] multiply(side, twos)
  sum = f32[1,5,6,6] add(scaled, side2)
  b = f32[1,5,6,6] broadcast(bias), dimensions={1}
  pre = f32[1,5,6,6] add(sum, b)
  zero = f32[] constant(0)
  zeros = f32[1,5,6,6] broadcast(zero), dimensions={}
  ROOT y = f32[1,5,6,6] maximum(pre, zeros)
}
)",
                    1e-5);
}

TEST(LibraryCallLoweringTest, WhatItDoesNotUnderstandStays) {
  LibraryCallLowering pass;
  for (std::string_view text : {
           // A GEMM epilogue.
           std::string_view(R"(
HloModule m
ENTRY main {
  a = f32[4,4] parameter(0)
  b = f32[4,4] parameter(1)
  ROOT g = f32[4,4] custom-call(a, b), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]},\"epilogue\":\"RELU\"}"
}
)"),
           // An activation it does not write out (reluX).
           std::string_view(R"(
HloModule m
ENTRY main {
  x = f32[1,2,4,4] parameter(0)
  w = f32[1,1,2,2] parameter(1)
  bias = f32[2] parameter(2)
  cc = (f32[1,2,4,4], u8[0]) custom-call(x, w, bias), window={size=1x1}, dim_labels=bf01_01io->bf01, custom_call_target="__cudnn$convBiasActivationForward", backend_config="{\"activationMode\":\"4\",\"convResultScale\":1}"
  ROOT y = f32[1,2,4,4] get-tuple-element(cc), index=0
}
)"),
           // A grouped backward convolution (the lowering writes ungrouped ones only).
           std::string_view(R"(
HloModule m
ENTRY main {
  x = f32[1,4,4,4] parameter(0)
  dy = f32[1,6,4,4] parameter(1)
  cc = (f32[1,1,2,6], u8[0]) custom-call(x, dy), window={size=1x1}, dim_labels=bf01_01io->bf01, feature_group_count=2, custom_call_target="__cudnn$convBackwardFilter", backend_config="{\"convResultScale\":1}"
  ROOT g = f32[1,1,2,6] get-tuple-element(cc), index=0
}
)"),
       }) {
    bool changed = true;
    std::string out = RunPassAndPrint(pass, text, &changed);
    EXPECT_FALSE(changed) << out;
    EXPECT_NE(out.find("custom-call"), std::string::npos) << out;
  }
}

// The corpus's TensorFlow GPU dumps: every cuDNN and cuBLAS call goes (the backward
// convolutions' values are checked against JAX in tests/python/test_library_calls.py).
TEST(LibraryCallLoweringTest, CorpusGpuDumps) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  const std::string corpus = std::string(root ? root : ".") + "/tests/hlo_corpus/";
  for (const char* file :
       {"018_tf_cluster_cudnn_conv_detector.hlo", "020_tf_bert_forward_gpu.hlo"}) {
    std::ifstream in(corpus + file);
    ASSERT_TRUE(in) << corpus << file << " (KILN_SOURCE_ROOT)";
    std::stringstream text;
    text << in.rdbuf();
    std::unique_ptr<HloModule> m = Parse(text.str());
    ASSERT_TRUE(m) << file;
    LibraryCallLowering pass;
    absl::StatusOr<bool> changed = pass.Run(*m);
    ASSERT_TRUE(changed.ok()) << file << ": " << changed.status().message();
    EXPECT_TRUE(*changed) << file;
    const std::string out = m->ToString();
    EXPECT_EQ(out.find("__cudnn$convForward"), std::string::npos) << file;
    EXPECT_EQ(out.find("__cudnn$convBiasActivationForward"), std::string::npos) << file;
    EXPECT_EQ(out.find("__cublas$gemm"), std::string::npos) << file;
    EXPECT_EQ(out.find("__cudnn$"), std::string::npos) << file;
    absl::Status valid = VerifyModule(*m);
    EXPECT_TRUE(valid.ok()) << file << ": " << valid.message();
  }
}

}  // namespace
}  // namespace kiln
