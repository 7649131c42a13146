// Tests of batch-norm-training/inference/grad against NumPy. Values made with:
//   x = (((arange(24)*7) % 10) * 0.5 - 2).reshape(2,3,4); feature_index = 1
//   scale = [1, 2, 0.5]; offset = [0, -1, 3]; eps = 0.001
//   mean = x.mean((0,2)); var = x.var((0,2)); y = (x-mean)/sqrt(var+eps)*scale+offset
//   dy = ((arange(24)*3) % 7 - 3).reshape(2,3,4) * 0.25; grad_x from XLA's closed form,
//   which matched central finite differences of sum(y*dy) to 5e-10.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/kernel_test_util.h"

namespace kiln::eval {
namespace {

using testing::ExpectValues;
using testing::F32;

const std::vector<double> kX = {-2, 1.5,  0, -1.5, 2,  0.5, -1, 2.5,  1,  -0.5, -2, 1.5,
                                0,  -1.5, 2, 0.5,  -1, 2.5, 1,  -0.5, -2, 1.5,  0,  -1.5};
const std::vector<double> kY = {-1.37467813, 1.19138772,  0.0916452089, -1.0080973,  0.795589702,
                                -1.35911794, -3.51382558, 1.51382558,   3.44889743,  2.91022051,
                                2.3715436,   3.6284564,   0.0916452089, -1.0080973,  1.55796855,
                                0.458226045, -3.51382558, 1.51382558,   -0.64088206, -2.7955897,
                                2.3715436,   3.6284564,   3.08977949,   2.55110257};

std::unique_ptr<HloInstruction> Make(HloOpcode op, Shape shape) {
  auto bn = std::make_unique<HloInstruction>(op, std::move(shape));
  bn->mutable_attrs().feature_index = 1;
  bn->mutable_attrs().epsilon = 0.001f;
  return bn;
}

TEST(BatchNormTest, Training) {
  Literal x = F32({2, 3, 4}, kX), scale = F32({3}, {1, 2, 0.5}), offset = F32({3}, {0, -1, 3});
  Shape v3(PrimitiveType::F32, {3});
  auto bn = Make(HloOpcode::kBatchNormTraining,
                 Shape::Tuple({Shape(PrimitiveType::F32, {2, 3, 4}), v3, v3}));
  auto r = EvalBatchNorm(*bn, std::vector<const Literal*>{&x, &scale, &offset});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(r->element(0), {2, 3, 4}, kY, 1e-5);
  ExpectValues(r->element(1), {3}, {-0.125, 0.75, -0.25}, 1e-6);
  ExpectValues(r->element(2), {3}, {1.859375, 1.9375, 1.9375}, 1e-6);
}

TEST(BatchNormTest, Inference) {
  Literal x = F32({2, 3, 4}, kX), scale = F32({3}, {1, 2, 0.5}), offset = F32({3}, {0, -1, 3});
  Literal mean = F32({3}, {-0.125, 0.75, -0.25}), var = F32({3}, {1.859375, 1.9375, 1.9375});
  auto bn = Make(HloOpcode::kBatchNormInference, Shape(PrimitiveType::F32, {2, 3, 4}));
  auto r = EvalBatchNorm(*bn, std::vector<const Literal*>{&x, &scale, &offset, &mean, &var});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(*r, {2, 3, 4}, kY, 1e-5);
}

TEST(BatchNormTest, Grad) {
  Literal x = F32({2, 3, 4}, kX), scale = F32({3}, {1, 2, 0.5});
  Literal mean = F32({3}, {-0.125, 0.75, -0.25}), var = F32({3}, {1.859375, 1.9375, 1.9375});
  Literal dy = F32({2, 3, 4},
                   {-0.75, 0,    0.75,  -0.25, 0.5,  -0.5,  0.25, -0.75, 0,    0.75,  -0.25, 0.5,
                    -0.5,  0.25, -0.75, 0,     0.75, -0.25, 0.5,  -0.5,  0.25, -0.75, 0,     0.75});
  Shape v3(PrimitiveType::F32, {3});
  auto bn =
      Make(HloOpcode::kBatchNormGrad, Shape::Tuple({Shape(PrimitiveType::F32, {2, 3, 4}), v3, v3}));
  auto r = EvalBatchNorm(*bn, std::vector<const Literal*>{&x, &scale, &mean, &var, &dy});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues(
      r->element(0), {2, 3, 4},
      {-0.449746877, 0.127064361,  0.665389907,   -0.079317472, 0.949805355,   -0.764549776,
       0.0349206767, -0.753156558, -0.0108837653, 0.204180595,  -0.209211441,  0.18676657,
       -0.251062182, 0.287263364,  -0.418958323,  0.119367223,  0.753156558,   -0.0349206767,
       0.764549776,  -0.949805355, -0.0296524712, -0.262130855, -0.0470664956, 0.167997864},
      1e-5);
  ExpectValues(r->element(1), {3}, {-0.114556511, -1.43647176, -1.12224356}, 1e-5);
  ExpectValues(r->element(2), {3}, {-1.25, 0, 1.25}, 1e-6);
}

TEST(BatchNormTest, RejectsBadFeatureIndex) {
  Literal x = F32({2, 3, 4}, kX), scale = F32({3}, {1, 2, 0.5}), offset = F32({3}, {0, -1, 3});
  Shape v3(PrimitiveType::F32, {3});
  auto bn = Make(HloOpcode::kBatchNormTraining,
                 Shape::Tuple({Shape(PrimitiveType::F32, {2, 3, 4}), v3, v3}));
  bn->mutable_attrs().feature_index = 3;
  EXPECT_FALSE(EvalBatchNorm(*bn, std::vector<const Literal*>{&x, &scale, &offset}).ok());
}

}  // namespace
}  // namespace kiln::eval
