// Tests of the fft opcode against values computed with NumPy (np.fft.fft/ifft/rfft/rfft2/
// irfft2 on the inputs written below, pasted here).
#include <gtest/gtest.h>

#include <complex>

#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/test_builder.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using cd = std::complex<double>;
using testing_util::As;
using testing_util::Lit;

absl::StatusOr<Literal> RunFft(const std::string& text, Literal arg) {
  auto module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  std::vector<Literal> args;
  args.push_back(std::move(arg));
  HloEvaluator evaluator;
  return evaluator.Evaluate(**module, args);
}

void ExpectNear(const std::vector<cd>& got, const std::vector<cd>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].real(), want[i].real(), 1e-9) << i;
    EXPECT_NEAR(got[i].imag(), want[i].imag(), 1e-9) << i;
  }
}

TEST(FftTest, ForwardNonPowerOfTwo) {
  auto r = RunFft(R"(
HloModule f
ENTRY %main (x: c128[6]) -> c128[6] {
  %x = c128[6] parameter(0)
  ROOT %f = c128[6] fft(%x), fft_type=FFT, fft_length={6}
})",
                  Lit<cd>(PrimitiveType::C128, {6},
                          {cd(1, 0), cd(0, 2), cd(3, 0), cd(0, -4), cd(10, 0), cd(3, 0)}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(As<cd>(*r), {cd(17, -2), cd(-2.267949192431122, 13.660254037844386),
                          cd(-5.267949192431123, -8.464101615137753), cd(11, 2),
                          cd(-8.732050807568877, -1.5358983848622456),
                          cd(-5.732050807568877, -3.660254037844385)});
}

TEST(FftTest, InverseScalesByLength) {
  auto r = RunFft(R"(
HloModule f
ENTRY %main (x: c128[4]) -> c128[4] {
  %x = c128[4] parameter(0)
  ROOT %f = c128[4] fft(%x), fft_type=IFFT, fft_length={4}
})",
                  Lit<cd>(PrimitiveType::C128, {4}, {cd(1, 0), cd(0, 2), cd(3, 0), cd(4, 0)}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(As<cd>(*r), {cd(2, 0.5), cd(-1, -1), cd(0, -0.5), cd(0, 1)});
}

TEST(FftTest, RealForwardKeepsHalfSpectrum) {
  auto r = RunFft(R"(
HloModule f
ENTRY %main (x: f64[8]) -> c128[5] {
  %x = f64[8] parameter(0)
  ROOT %f = c128[5] fft(%x), fft_type=RFFT, fft_length={8}
})",
                  Lit<double>(PrimitiveType::F64, {8}, {0, 1, 4, 9, 16, 25, 36, 49}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(As<cd>(*r), {cd(140, 0), cd(-4.686291501015241, 77.25483399593904), cd(-24, 32),
                          cd(-27.31370849898476, 13.254833995939045), cd(-28, 0)});
}

TEST(FftTest, TwoDimensionalRealRoundTrip) {
  auto fwd = RunFft(R"(
HloModule f
ENTRY %main (x: f64[2,4]) -> c128[2,3] {
  %x = f64[2,4] parameter(0)
  ROOT %f = c128[2,3] fft(%x), fft_type=RFFT, fft_length={2,4}
})",
                    Lit<double>(PrimitiveType::F64, {2, 4}, {1, 2, 0, 1, 3, -1, 2, 2}));
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  ExpectNear(As<cd>(*fwd), {cd(10, 0), cd(2, 2), cd(2, 0), cd(-2, 0), cd(0, -4), cd(-6, 0)});
  auto back = RunFft(R"(
HloModule f
ENTRY %main (x: c128[2,3]) -> f64[2,4] {
  %x = c128[2,3] parameter(0)
  ROOT %f = f64[2,4] fft(%x), fft_type=IRFFT, fft_length={2,4}
})",
                     *std::move(fwd));
  ASSERT_TRUE(back.ok()) << back.status();
  auto v = As<double>(*back);
  std::vector<double> want = {1, 2, 0, 1, 3, -1, 2, 2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-12) << i;
}

}  // namespace
}  // namespace kiln
