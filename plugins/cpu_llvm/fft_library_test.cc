// FFTs on cpu-llvm's library path (fft_library.h) against the HLO evaluator's double-precision
// transform: FFT, IFFT, RFFT and IRFFT, f32 and f64, lengths 2 to 1024, batches spread over
// threads, over one, two and three dimensions, lengths of any size; and the transforms that
// stay on the evaluator.
#include "plugins/cpu_llvm/fft_library.h"

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/text_module_test_util.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu {
namespace {

// The |x| of every element (complex or real) of `l`, in order, and its real/imaginary parts.
std::vector<std::complex<double>> Values(const Literal& l) {
  std::vector<std::complex<double>> v;
  switch (l.shape().element_type()) {
    case PrimitiveType::C64:
      for (std::complex<float> x : l.data<std::complex<float>>()) v.emplace_back(x);
      break;
    case PrimitiveType::C128:
      for (std::complex<double> x : l.data<std::complex<double>>()) v.push_back(x);
      break;
    default:
      for (int64_t i = 0; i < l.element_count(); ++i) v.emplace_back(l.GetAsDouble(i), 0);
  }
  return v;
}

// Compiles `fft` of `in` -> `out` (type, length) on `threads` threads, runs it and the
// evaluator on random input; returns whether the plan took the library path.
bool Compare(const std::string& in, const std::string& out, const std::string& type,
             const std::vector<int64_t>& lengths, int threads, double tol) {
  const std::string text = fmt::format(
      "HloModule f\nENTRY main {{\n  x = {0} parameter(0)\n  ROOT f = {1} fft(x), "
      "fft_type={2}, fft_length={{{3}}}\n}}\n",
      in, out, type, fmt::join(lengths, ","));
  int64_t length = 1;
  for (int64_t n : lengths) length *= n;
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return false;
  const std::shared_ptr<const HloModule>& module = c.module;
  bool library = false;
  for (const Step& s : c.exe->plan().steps) library |= s.kind == Disposition::kLibrary;
  std::mt19937 rng(11);
  std::vector<Literal> args;
  args.push_back(codegen_testing::RandomLiteral(module->entry()->parameter(0)->shape(), rng));
  if (args[0].shape().element_type() == PrimitiveType::C64) {
    std::uniform_real_distribution<float> d(-1, 1);
    for (std::complex<float>& c : args[0].data<std::complex<float>>()) c = {d(rng), d(rng)};
  }
  if (args[0].shape().element_type() == PrimitiveType::C128) {
    std::uniform_real_distribution<double> d(-1, 1);
    for (std::complex<double>& c : args[0].data<std::complex<double>>()) c = {d(rng), d(rng)};
  }
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return library;
  const auto g = Values(*got), w = Values(*want);
  EXPECT_EQ(g.size(), w.size());
  // Errors grow with the length: the bound scales with sqrt(n) and the values' size.
  const double bound = tol * std::sqrt(static_cast<double>(length));
  int bad = 0;
  for (size_t i = 0; i < w.size() && i < g.size() && bad < 5; ++i)
    if (std::abs(g[i] - w[i]) > bound * (1 + std::abs(w[i]))) {
      ADD_FAILURE() << type << " " << in << " element " << i << ": " << g[i] << " vs " << w[i];
      ++bad;
    }
  return library;
}

TEST(FftLibrary, MatchesTheEvaluator) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    for (int64_t n : {2, 4, 8, 16, 64, 1024}) {
      SCOPED_TRACE(n);
      const int64_t half = n / 2 + 1;
      EXPECT_TRUE(Compare(fmt::format("c64[3,{}]", n), fmt::format("c64[3,{}]", n), "FFT", {n},
                          threads, 1e-6));
      EXPECT_TRUE(Compare(fmt::format("c64[3,{}]", n), fmt::format("c64[3,{}]", n), "IFFT", {n},
                          threads, 1e-6));
      EXPECT_TRUE(Compare(fmt::format("f32[2,5,{}]", n), fmt::format("c64[2,5,{}]", half), "RFFT",
                          {n}, threads, 1e-6));
      EXPECT_TRUE(Compare(fmt::format("c64[5,{}]", half), fmt::format("f32[5,{}]", n), "IRFFT", {n},
                          threads, 1e-6));
      EXPECT_TRUE(Compare(fmt::format("f64[4,{}]", n), fmt::format("c128[4,{}]", half), "RFFT", {n},
                          threads, 1e-14));
      EXPECT_TRUE(Compare(fmt::format("c128[4,{}]", n), fmt::format("c128[4,{}]", n), "IFFT", {n},
                          threads, 1e-14));
    }
  }
  // Many rows: split across the pool.
  EXPECT_TRUE(Compare("f32[300,256]", "c64[300,129]", "RFFT", {256}, 2, 1e-6));
  // One row (transformed alone, not in a block of lanes), and one long enough that a block
  // would not stay in cache.
  EXPECT_TRUE(Compare("c64[33]", "f32[64]", "IRFFT", {64}, 1, 1e-6));
  EXPECT_TRUE(Compare("c128[1,32769]", "f64[1,65536]", "IRFFT", {65536}, 2, 1e-14));
  EXPECT_TRUE(Compare("c64[2,32769]", "f32[2,65536]", "IRFFT", {65536}, 2, 1e-6));
  // One long row by the four-step transform (fft_four_step.h), split 64 x 64, 128 x 256 and
  // 200 x 240 (mixed radix both ways), its passes on the pool and on the caller alone; inside
  // the real transforms (4096 reals as 2048 complex values stay below it).
  for (int threads : {1, 2})
    for (int64_t n : {4096, 32768, 48000}) {
      SCOPED_TRACE(fmt::format("n = {}, {} threads", n, threads));
      EXPECT_TRUE(
          Compare(fmt::format("c64[{}]", n), fmt::format("c64[{}]", n), "FFT", {n}, threads, 1e-6));
      EXPECT_TRUE(Compare(fmt::format("c64[2,{}]", n), fmt::format("c64[2,{}]", n), "IFFT", {n},
                          threads, 1e-6));
      EXPECT_TRUE(Compare(fmt::format("c128[1,{}]", n), fmt::format("c128[1,{}]", n), "FFT", {n},
                          threads, 1e-14));
      EXPECT_TRUE(Compare(fmt::format("f32[{}]", 2 * n), fmt::format("c64[{}]", n + 1), "RFFT",
                          {2 * n}, threads, 1e-6));
    }
  // Long rows in blocks of lanes, the last block partial.
  EXPECT_TRUE(Compare("c64[11,4097]", "f32[11,8192]", "IRFFT", {8192}, 2, 1e-6));
  EXPECT_TRUE(Compare("f32[11,8192]", "c64[11,4097]", "RFFT", {8192}, 1, 1e-6));
}

// A real transform's DC and Nyquist values are real: their imaginary parts are +0 exactly, as
// XLA's and NumPy's are (a twiddle of cos(pi) in floating point once left 1e-16 times the
// value there, of either sign, and jnp.angle gave -pi for XLA's pi).
TEST(FftLibrary, RealTransformKeepsDcAndNyquistReal) {
  for (const char* t : {"f32", "f64"})
    for (int64_t rows : {1, 19})
      for (int64_t n : {8, 1024, 65536}) {
        SCOPED_TRACE(fmt::format("{}[{},{}]", t, rows, n));
        const std::string c = std::string(t) == "f32" ? "c64" : "c128";
        const testing::CompiledText p = testing::CompileText(
            fmt::format("HloModule f\nENTRY main {{\n  x = {0}[{1},{2}] parameter(0)\n  ROOT f = "
                        "{3}[{1},{4}] fft(x), fft_type=RFFT, fft_length={{{2}}}\n}}\n",
                        t, rows, n, c, n / 2 + 1),
            CompileOptions{});
        ASSERT_NE(p.exe, nullptr);
        std::mt19937 rng(5);
        std::vector<Literal> args;
        args.push_back(
            codegen_testing::RandomLiteral(p.module->entry()->parameter(0)->shape(), rng));
        auto got = p.exe->Run(args);
        ASSERT_TRUE(got.ok()) << got.status();
        const auto v = Values(*got);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k : {int64_t{0}, n / 2}) {
            const std::complex<double> x = v[r * (n / 2 + 1) + k];
            EXPECT_TRUE(x.imag() == 0 && !std::signbit(x.imag()))
                << "row " << r << " bin " << k << ": " << x;
          }
      }
}

TEST(FftLibrary, SeveralDimensionsMatchTheEvaluator) {
  // jnp.fft.fft2 / ifft2 / rfft2 / irfft2 / fftn over two and three trailing dimensions; the
  // earlier axes are strided columns (one of 3 elements: a block of lanes crossing rows).
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(Compare("c64[4,8]", "c64[4,8]", "FFT", {4, 8}, threads, 1e-6));
    EXPECT_TRUE(Compare("c64[2,16,3,32]", "c64[2,16,3,32]", "FFT", {3, 32}, threads, 1e-6));
    // Images of 224 (4*4*2*7) and an odd real axis.
    EXPECT_TRUE(Compare("f32[2,224,224]", "c64[2,224,113]", "RFFT", {224, 224}, threads, 1e-6));
    EXPECT_TRUE(Compare("c64[2,224,113]", "f32[2,224,224]", "IRFFT", {224, 224}, threads, 1e-6));
    EXPECT_TRUE(Compare("f64[3,10,15]", "c128[3,10,8]", "RFFT", {10, 15}, threads, 1e-14));
    EXPECT_TRUE(Compare("c128[3,10,8]", "f64[3,10,15]", "IRFFT", {10, 15}, threads, 1e-14));
    EXPECT_TRUE(Compare("c64[2,16,4,32]", "c64[2,16,4,32]", "IFFT", {16, 4, 32}, threads, 1e-6));
    EXPECT_TRUE(Compare("f32[3,64,64]", "c64[3,64,33]", "RFFT", {64, 64}, threads, 1e-6));
    EXPECT_TRUE(Compare("c64[3,64,33]", "f32[3,64,64]", "IRFFT", {64, 64}, threads, 1e-6));
    EXPECT_TRUE(Compare("f64[8,2,16]", "c128[8,2,9]", "RFFT", {8, 2, 16}, threads, 1e-14));
    EXPECT_TRUE(Compare("c128[2,8,16,5]", "f64[2,8,16,8]", "IRFFT", {8, 16, 8}, threads, 1e-14));
    EXPECT_TRUE(Compare("c128[256,256]", "c128[256,256]", "FFT", {256, 256}, threads, 1e-14));
  }
}

// Lengths that are not powers of two: mixed radix where the prime factors are at most 31
// (12, 1000, 48000, 29, ...), Bluestein's algorithm above (37, 97, 1009 prime, 3 * 37); real
// transforms of even lengths packed into n/2 complex values, of odd ones through the complex
// transform. One row, blocks of 8 rows, a partial block.
TEST(FftLibrary, AnyLengthMatchesTheEvaluator) {
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 40; ++n) lengths.push_back(n);
  for (int64_t n : {97, 100, 111, 224, 1000, 1009, 4096 + 6}) lengths.push_back(n);
  for (int threads : {1, 2})
    for (int64_t n : lengths) {
      SCOPED_TRACE(fmt::format("n = {}, {} threads", n, threads));
      const int64_t half = n / 2 + 1;
      for (int rows : {1, 11}) {
        EXPECT_TRUE(Compare(fmt::format("c64[{},{}]", rows, n), fmt::format("c64[{},{}]", rows, n),
                            "FFT", {n}, threads, 1e-6));
        EXPECT_TRUE(Compare(fmt::format("c64[{},{}]", rows, n), fmt::format("c64[{},{}]", rows, n),
                            "IFFT", {n}, threads, 1e-6));
        EXPECT_TRUE(Compare(fmt::format("f32[{},{}]", rows, n),
                            fmt::format("c64[{},{}]", rows, half), "RFFT", {n}, threads, 1e-6));
        EXPECT_TRUE(Compare(fmt::format("c64[{},{}]", rows, half),
                            fmt::format("f32[{},{}]", rows, n), "IRFFT", {n}, threads, 1e-6));
        EXPECT_TRUE(Compare(fmt::format("f64[{},{}]", rows, n),
                            fmt::format("c128[{},{}]", rows, half), "RFFT", {n}, threads, 1e-14));
        EXPECT_TRUE(Compare(fmt::format("c128[{},{}]", rows, n),
                            fmt::format("c128[{},{}]", rows, n), "FFT", {n}, threads, 1e-14));
      }
    }
  // Long rows: 48000 (2^7 * 3 * 5^3) and a prime.
  EXPECT_TRUE(Compare("f32[3,48000]", "c64[3,24001]", "RFFT", {48000}, 2, 1e-6));
  EXPECT_TRUE(Compare("c128[2,8191]", "c128[2,8191]", "IFFT", {8191}, 2, 1e-14));
}

TEST(FftLibrary, OtherTransformsStayOnTheEvaluator) {
  // Lengths that do not match the operand's dimensions are not the library's.
  const std::string bad =
      "HloModule f\nENTRY main {\n  x = c64[4,8] parameter(0)\n  ROOT f = c64[4,8] fft(x), "
      "fft_type=FFT, fft_length={8,8}\n}\n";
  auto parsed = ParseHloModule(bad, "f");
  if (parsed.ok()) {
    EXPECT_FALSE(IsFftLibraryCall(*(*parsed)->entry()->root()));
  }
}

}  // namespace
}  // namespace kiln::cpu
