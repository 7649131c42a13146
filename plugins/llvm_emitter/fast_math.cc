// f32 math as plain IR (see header). Everything is branch-free: both sides of a case split are
// computed and a select picks one, which is what lets the loop vectorizer handle them.
#include "plugins/llvm_emitter/fast_math.h"

#include <cmath>
#include <vector>

#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"

namespace kiln::llvm_emit {
namespace {

constexpr double kLog2e = 1.4426950408889634;
// ln 2 split so that n * kLn2Hi is exact for |n| < 2^8 (kLn2Hi has 16 significant bits).
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.428606765330187e-06f;
// e^r = 1 + r + r^2 (c2 + c3 r + ... + c6 r^4) and expm1(r) / r = 1 + r / 2 + r^2 (d2 + ...
// + d6 r^4) on |r| <= ln2 / 2, relative errors below 4e-9 and 1.1e-9 (fit_exp.py).
const std::vector<double> kExpCoefficients = {
    1, 1, 0.49999994, 0.166665211, 0.041668389, 0.00836871658, 0.00138145988};
const std::vector<double> kExpm1OverRCoefficients = {
    1, 0.5, 0.166666657, 0.0416664816, 0.00833341945, 0.00139332528, 0.00019824125};

llvm::Value* F(llvm::IRBuilder<>& b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

llvm::Value* Intr(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
  return b.CreateIntrinsic(id, {b.getFloatTy()}, args);
}

llvm::Value* MulAdd(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
  return Intr(b, llvm::Intrinsic::fmuladd, {x, y, z});
}

// c[0] + u*(c[1] + u*(c[2] + ...)).
llvm::Value* Horner(llvm::IRBuilder<>& b, llvm::Value* u, const std::vector<double>& c) {
  llvm::Value* acc = F(b, c.back());
  for (size_t i = c.size() - 1; i-- > 0;) acc = MulAdd(b, acc, u, F(b, c[i]));
  return acc;
}

// 2^n for an i32 n in [-126, 127], built from the exponent bits.
llvm::Value* Pow2(llvm::IRBuilder<>& b, llvm::Value* n) {
  return b.CreateBitCast(b.CreateShl(b.CreateAdd(n, b.getInt32(127)), 23), b.getFloatTy());
}

// 1.5 * 2^23: x + kShifter rounds x to an integer held in the low mantissa bits of the sum.
constexpr float kShifter = 0x1.8p23f;

// x = n ln2 + r with |r| <= ln2 / 2, for |x| < 2^8 ln2; returns r and sets ni (n as an
// i32). n comes from one multiply-add with kShifter, not a rounding and a conversion; a NaN
// x gives a NaN r (and some ni), never poison.
llvm::Value* ReduceLn2(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value** ni) {
  llvm::Value* shifted = MulAdd(b, x, F(b, kLog2e), F(b, kShifter));
  llvm::Value* n = b.CreateFSub(shifted, F(b, kShifter));
  *ni = b.CreateSub(b.CreateBitCast(shifted, b.getInt32Ty()), b.getInt32(0x4b400000));
  llvm::Value* r = MulAdd(b, n, F(b, -kLn2Hi), x);
  return MulAdd(b, n, F(b, -kLn2Lo), r);
}

// min(x, hi) and max(x, lo) that let a NaN through (the select keeps x when the comparison
// is false): a function whose arithmetic carries NaN needs no select for it at the end.
llvm::Value* MinKeepingNan(llvm::IRBuilder<>& b, llvm::Value* x, double hi) {
  return b.CreateSelect(b.CreateFCmpOGT(x, F(b, hi)), F(b, hi), x);
}
llvm::Value* MaxKeepingNan(llvm::IRBuilder<>& b, llvm::Value* x, double lo) {
  return b.CreateSelect(b.CreateFCmpOLT(x, F(b, lo)), F(b, lo), x);
}

llvm::Value* IsNan(llvm::IRBuilder<>& b, llvm::Value* x) { return b.CreateFCmpUNO(x, x); }

}  // namespace

llvm::Value* FastExpF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // Clamped so 2^n below stays representable in two halves: exp(89) overflows to inf and
  // exp(-104) underflows to 0 by themselves. A NaN passes through every step.
  llvm::Value* xc = MaxKeepingNan(b, MinKeepingNan(b, x, 89), -104);
  llvm::Value* ni;
  llvm::Value* r = ReduceLn2(b, xc, &ni);
  llvm::Value* p = Horner(b, r, kExpCoefficients);
  // 2^n as 2^(n/2) * 2^(n - n/2): n in [-150, 128] would not fit one exponent field, and a
  // denormal result is rounded once, in the last multiply.
  llvm::Value* n1 = b.CreateAShr(ni, 1);
  llvm::Value* n2 = b.CreateSub(ni, n1);
  return b.CreateFMul(b.CreateFMul(p, Pow2(b, n1)), Pow2(b, n2));
}

llvm::Value* FastLogF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* i32 = b.getInt32Ty();
  // Denormals: scale into the normal range first.
  llvm::Value* tiny = b.CreateFCmpOLT(x, F(b, 0x1p-126));
  llvm::Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, F(b, 0x1p23)), x);
  llvm::Value* bits = b.CreateBitCast(xs, i32);
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, 23), b.getInt32(127));
  e = b.CreateSub(e, b.CreateSelect(tiny, b.getInt32(23), b.getInt32(0)));
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)).
  llvm::Value* m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, b.getInt32(0x7fffff)), b.getInt32(0x3f800000)), b.getFloatTy());
  llvm::Value* big = b.CreateFCmpOGT(m, F(b, 1.41421356237309515));
  m = b.CreateSelect(big, b.CreateFMul(m, F(b, 0.5)), m);
  e = b.CreateAdd(e, b.CreateZExt(big, i32));
  // log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172: the odd series to s^9 (truncation
  // below 3e-9 relative).
  llvm::Value* f = b.CreateFSub(m, F(b, 1));
  llvm::Value* s = b.CreateFDiv(f, b.CreateFAdd(f, F(b, 2)));
  llvm::Value* z = b.CreateFMul(s, s);
  llvm::Value* series = Horner(b, z, {2.0, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9});
  llvm::Value* log_m = b.CreateFMul(s, series);
  llvm::Value* ef = b.CreateSIToFP(e, b.getFloatTy());
  llvm::Value* res = MulAdd(b, ef, F(b, kLn2Hi), MulAdd(b, ef, F(b, kLn2Lo), log_m));
  // Special cases: log(+inf) = inf, log(+-0) = -inf, negative or NaN -> NaN.
  res = b.CreateSelect(b.CreateFCmpOEQ(x, F(b, INFINITY)), x, res);
  res = b.CreateSelect(b.CreateFCmpOEQ(x, F(b, 0)), F(b, -INFINITY), res);
  res = b.CreateSelect(b.CreateFCmpOLT(x, F(b, 0)), F(b, NAN), res);
  return b.CreateSelect(IsNan(b, x), x, res);
}

llvm::Value* FastLog1pF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // log(u) x / (u - 1) with u = 1 + x rounded (Goldberg): the quotient corrects for the
  // rounding of u, so small x keeps its relative accuracy. u = 1 (x below half an ulp of
  // 1) gives x itself; x = -1 gives -inf, x < -1 and NaN give NaN through log.
  llvm::Value* u = b.CreateFAdd(x, F(b, 1));
  llvm::Value* um1 = b.CreateFSub(u, F(b, 1));
  llvm::Value* res = b.CreateFMul(FastLogF32(b, u), b.CreateFDiv(x, um1));
  res = b.CreateSelect(b.CreateFCmpOEQ(u, F(b, 1)), x, res);
  return b.CreateSelect(b.CreateFCmpOEQ(x, F(b, INFINITY)), x, res);
}

llvm::Value* FastExpm1F32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // x = n ln2 + r: expm1(x) = 2^n expm1(r) + (2^n - 1), 2^n - 1 exact, expm1(r) as
  // r (1 + r/2 + ...), so |x| < ln2/2 (n = 0) keeps full relative accuracy. Below -30
  // the result rounds to -1; above 80 it is exp(x) - 1 (and may overflow). NaN passes.
  llvm::Value* a = b.CreateSelect(b.CreateFCmpOLT(x, F(b, 80)), x, F(b, 80));
  a = b.CreateSelect(b.CreateFCmpOGT(a, F(b, -30)), a, F(b, -30));
  llvm::Value* ni;
  llvm::Value* r = ReduceLn2(b, a, &ni);
  llvm::Value* p = b.CreateFMul(r, Horner(b, r, kExpm1OverRCoefficients));
  llvm::Value* s = Pow2(b, ni);
  llvm::Value* res = MulAdd(b, s, p, b.CreateFSub(s, F(b, 1)));
  res = b.CreateSelect(b.CreateFCmpOGT(x, F(b, 80)), b.CreateFSub(FastExpF32(b, x), F(b, 1)), res);
  res = b.CreateSelect(b.CreateFCmpOLT(x, F(b, -30)), F(b, -1), res);
  res = b.CreateSelect(b.CreateFCmpOEQ(x, F(b, 0)), x, res);  // -0 stays -0
  return b.CreateSelect(IsNan(b, x), x, res);
}

// copysign(m, s) for an f32 m >= 0 (or a NaN), on the bits: LLVM's x86 back end moves a
// copysign past a following fptrunc to half and then copies the sign one lane at a time (an
// f16 tanh of 2^20 elements: 0.53 ms, 0.11 ms this way).
static llvm::Value* WithSignOf(llvm::IRBuilder<>& b, llvm::Value* m, llvm::Value* s) {
  llvm::Type* bits = b.getInt32Ty();
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(s->getType()))
    bits = llvm::VectorType::get(bits, v->getElementCount());
  llvm::Value* sign =
      b.CreateAnd(b.CreateBitCast(s, bits), llvm::ConstantInt::get(bits, 0x80000000u));
  return b.CreateBitCast(b.CreateOr(b.CreateBitCast(m, bits), sign), s->getType());
}

llvm::Value* FastTanhF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2): no cancellation anywhere. |x| >= 9.5 rounds
  // to 1 in f32, so clamp there. A NaN passes through every step.
  llvm::Value* a = MinKeepingNan(b, Intr(b, llvm::Intrinsic::fabs, {x}), 9.5);
  llvm::Value* t = b.CreateFAdd(a, a);
  llvm::Value* ni;
  llvm::Value* r = ReduceLn2(b, t, &ni);
  // expm1(t) = 2^n expm1(r) + (2^n - 1), where 2^n - 1 is exact (n <= 28).
  llvm::Value* p = b.CreateFMul(r, Horner(b, r, kExpm1OverRCoefficients));
  llvm::Value* s = Pow2(b, ni);
  llvm::Value* em1 = MulAdd(b, s, p, b.CreateFSub(s, F(b, 1)));
  llvm::Value* th = b.CreateFDiv(em1, b.CreateFAdd(em1, F(b, 2)));
  return WithSignOf(b, th, x);
}

llvm::Value* FastErfF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* a = Intr(b, llvm::Intrinsic::fabs, {x});
  // |x| < 1: the Maclaurin series 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)), k <= 11
  // (truncation below 1e-10).
  std::vector<double> c;
  double fact = 1;
  for (int k = 0; k <= 11; ++k) {
    if (k > 0) fact *= k;
    c.push_back((k % 2 ? -1 : 1) * 1.1283791670955126 / (fact * (2 * k + 1)));
  }
  llvm::Value* small = b.CreateFMul(x, Horner(b, b.CreateFMul(x, x), c));
  // |x| >= 1: erf = 1 - exp(-x^2) R(x), R fitted on [1, 4] (fit_erfc.py); erf rounds to 1 in
  // f32 from 3.92 on, so clamp at 4 (inf and NaN become 4; NaN is fixed by the last select).
  llvm::Value* ac = b.CreateSelect(b.CreateFCmpOLT(a, F(b, 4)), a, F(b, 4));
  llvm::Value* u = b.CreateFMul(b.CreateFSub(ac, F(b, 2.5)), F(b, 1 / 1.5));
  llvm::Value* rr = Horner(
      b, u,
      {0.21080636427594104, -0.11152100469538084, 0.056110472584285281, -0.027005725289762025,
       0.012489703671470438, -0.0055673329094010852, 0.0024017016954648125, -0.0010171177746035077,
       0.00041450809783922366, -0.00014394859758813411, 5.4947248224645443e-05,
       -3.6928723684809496e-05, 1.3819088998657932e-05});
  llvm::Value* erfc = b.CreateFMul(FastExpF32(b, b.CreateFNeg(b.CreateFMul(ac, ac))), rr);
  llvm::Value* large = Intr(b, llvm::Intrinsic::copysign, {b.CreateFSub(F(b, 1), erfc), x});
  llvm::Value* res = b.CreateSelect(b.CreateFCmpOLT(a, F(b, 1)), small, large);
  return b.CreateSelect(IsNan(b, x), x, res);
}

llvm::Value* FastLogisticF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // With e = exp(-|x|) <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) below (no overflow of
  // exp(-x) for very negative x, whose results are tiny but not zero).
  llvm::Value* e = FastExpF32(b, b.CreateFNeg(Intr(b, llvm::Intrinsic::fabs, {x})));
  llvm::Value* num = b.CreateSelect(b.CreateFCmpOLT(x, F(b, 0)), e, F(b, 1));
  return b.CreateFDiv(num, b.CreateFAdd(F(b, 1), e));
}

llvm::Value* FastAtan2F32(llvm::IRBuilder<>& b, llvm::Value* y, llvm::Value* x) {
  // q = min(|x|, |y|) / max(|x|, |y|) in [0, 1]; above tan(pi/8), atan q = pi/4 + atan u with
  // u = (q - 1) / (q + 1), so |u| <= tan(pi/8) and atan u = u + u^3 P(u^2), P fitted for the
  // relative error (3.2e-9, fit_atan.py). Then the octant: pi/2 - r where |y| > |x|, pi - r
  // where x is negative (-0 included), and y's sign. pi/4, pi/2 and pi are added as a high
  // and a low part.
  llvm::Value* ax = Intr(b, llvm::Intrinsic::fabs, {x});
  llvm::Value* ay = Intr(b, llvm::Intrinsic::fabs, {y});
  llvm::Value* y_larger = b.CreateFCmpOGT(ay, ax);
  llvm::Value* mx = b.CreateSelect(y_larger, ay, ax);
  llvm::Value* mn = b.CreateSelect(y_larger, ax, ay);
  llvm::Value* q = b.CreateFDiv(mn, mx);
  llvm::Value* reduced = b.CreateFCmpOGT(q, F(b, 0.41421356237309503));
  llvm::Value* u =
      b.CreateSelect(reduced, b.CreateFDiv(b.CreateFSub(q, F(b, 1)), b.CreateFAdd(q, F(b, 1))), q);
  llvm::Value* z = b.CreateFMul(u, u);
  llvm::Value* p = Horner(b, z,
                          {-0.33333316445350647, 0.19998469948768616, -0.14243511855602264,
                           0.10593640059232712, -0.06077760085463524});
  llvm::Value* r = MulAdd(b, b.CreateFMul(u, z), p, u);
  // pi/4, pi/2 and pi as f32 high parts plus their remainders.
  const float pi4_hi = 0.785398185253143310546875f;  // f32(pi/4), above it
  const double pi4_lo = 0.78539816339744830962 - pi4_hi;
  r = b.CreateSelect(reduced, b.CreateFAdd(b.CreateFAdd(r, F(b, pi4_lo)), F(b, pi4_hi)), r);
  // 0/0 (both zero) is 0 before the octant; inf/inf (both infinite) is pi/4.
  r = b.CreateSelect(b.CreateFCmpOEQ(mx, F(b, 0)), F(b, 0), r);
  llvm::Value* both_inf =
      b.CreateAnd(b.CreateFCmpOEQ(ax, F(b, INFINITY)), b.CreateFCmpOEQ(ay, F(b, INFINITY)));
  r = b.CreateSelect(both_inf, F(b, pi4_hi), r);
  const double pi2_lo = 1.57079632679489661923 - 2.0 * pi4_hi;
  r = b.CreateSelect(y_larger, b.CreateFAdd(b.CreateFSub(F(b, 2.0 * pi4_hi), r), F(b, pi2_lo)), r);
  const double pi_lo = 3.14159265358979323846 - 4.0 * pi4_hi;
  llvm::Value* x_negative =
      b.CreateICmpSLT(b.CreateBitCast(x, b.getInt32Ty()), b.getInt32(0));  // -0 too
  r = b.CreateSelect(x_negative, b.CreateFAdd(b.CreateFSub(F(b, 4.0 * pi4_hi), r), F(b, pi_lo)), r);
  // A NaN either side (atan2(NaN, 0) met the both-zero case above).
  r = b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), r);
  return WithSignOf(b, r, y);
}

}  // namespace kiln::llvm_emit
