// Minifloat (f8, f4) conversions as branch-free IR, so loops over them vectorize. They follow
// hlo/minifloat.cc step by step; tests/cli/element_types_test.py checks both against ml_dtypes.
#include <cmath>

#include "plugins/llvm_emitter/kernel_emitter.h"

namespace kiln::llvm_emit::detail {

using Nan = MiniFloatFormat::Nan;

llvm::Value* KernelEmitter::DecodeMiniFloat(llvm::Value* bits, const MiniFloatFormat& f) {
  const int m = f.mantissa_bits;
  const int sign_pos = f.exponent_bits + m;
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Value* x = b_.CreateZExt(bits, i32);
  llvm::Value* mag = b_.CreateAnd(x, f.magnitude_mask());
  llvm::Value* exp = b_.CreateLShr(mag, m);
  llvm::Value* mant = b_.CreateAnd(mag, (1u << m) - 1);
  llvm::Value* sign =
      f.has_sign ? b_.CreateShl(b_.CreateAnd(b_.CreateLShr(x, sign_pos), 1), 31) : b_.getInt32(0);
  // Normal values: rebias the exponent and left-align the mantissa in f32's bits.
  llvm::Value* normal = b_.CreateOr(b_.CreateShl(b_.CreateAdd(exp, b_.getInt32(127 - f.bias)), 23),
                                    b_.CreateShl(mant, 23 - m));
  llvm::Value* exp_zero = b_.CreateICmpEQ(exp, b_.getInt32(0));
  llvm::Value* value;
  if (f.has_subnormals()) {
    // mantissa * 2^(1 - bias - m): exact, and a normal f32 for every format.
    llvm::Value* sub =
        b_.CreateFMul(b_.CreateUIToFP(mant, b_.getFloatTy()),
                      llvm::ConstantFP::get(b_.getFloatTy(), std::ldexp(1.0, 1 - f.bias - m)));
    value = b_.CreateSelect(exp_zero, b_.CreateBitCast(sub, i32), normal);
  } else {
    value = b_.CreateSelect(exp_zero, b_.getInt32(0x00400000), normal);  // 2^-127 (e8m0fnu)
  }
  value = b_.CreateOr(value, sign);
  llvm::Value* nan = b_.CreateOr(sign, b_.getInt32(0x7fc00000));
  switch (f.nan) {
    case Nan::kIeee: {
      llvm::Value* top = b_.CreateICmpEQ(exp, b_.getInt32((1u << f.exponent_bits) - 1));
      llvm::Value* inf = b_.CreateOr(sign, b_.getInt32(0x7f800000));
      value = b_.CreateSelect(top, b_.CreateSelect(b_.CreateICmpEQ(mant, b_.getInt32(0)), inf, nan),
                              value);
      break;
    }
    case Nan::kAllOnes:
      value = b_.CreateSelect(b_.CreateICmpEQ(mag, b_.getInt32(f.magnitude_mask())), nan, value);
      break;
    case Nan::kNegativeZero:
      value = b_.CreateSelect(b_.CreateICmpEQ(x, b_.getInt32(1u << sign_pos)), nan, value);
      break;
    case Nan::kNone:
      break;
  }
  return b_.CreateBitCast(value, b_.getFloatTy());
}

llvm::Value* KernelEmitter::EncodeMiniFloat(llvm::Value* v, const MiniFloatFormat& f) {
  const int m = f.mantissa_bits;
  const int sign_pos = f.exponent_bits + m;
  llvm::Type* f64 = b_.getDoubleTy();
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* i32 = b_.getInt32Ty();
  // In double every f32 (subnormals too) is normal, so its exponent field is exact.
  llvm::Value* d = v->getType()->isDoubleTy() ? v : b_.CreateFPExt(v, f64);
  llvm::Value* negative = b_.CreateICmpSLT(b_.CreateBitCast(d, i64), b_.getInt64(0));
  llvm::Value* a = CallIntrinsic(llvm::Intrinsic::fabs, {f64}, {d});
  llvm::Value* exp =
      b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(a, i64), 52), b_.getInt64(1023));  // floor(log2)
  const int emin = f.has_subnormals() ? 1 - f.bias : -f.bias;
  // Clamped above too so the scale below stays a normal double (larger values overflow).
  llvm::Value* e = CallIntrinsic(llvm::Intrinsic::smax, {i64}, {exp, b_.getInt64(emin)});
  e = CallIntrinsic(llvm::Intrinsic::smin, {i64}, {e, b_.getInt64(1000)});
  // q = round-to-nearest-even(a * 2^(m - e)): the value in units of its quantum.
  llvm::Value* scale =
      b_.CreateBitCast(b_.CreateShl(b_.CreateSub(b_.getInt64(m + 1023), e), 52), f64);
  llvm::Value* q = CallIntrinsic(llvm::Intrinsic::roundeven, {f64}, {b_.CreateFMul(a, scale)});
  llvm::Value* qi = b_.CreateSExt(CallIntrinsic(llvm::Intrinsic::fptosi_sat, {i32, f64}, {q}), i64);
  llvm::Value* mag = b_.CreateAdd(b_.CreateShl(b_.CreateAdd(e, b_.getInt64(f.bias - 1)), m), qi);

  llvm::Value* sign = f.has_sign
                          ? b_.CreateSelect(negative, b_.getInt32(1u << sign_pos), b_.getInt32(0))
                          : b_.getInt32(0);
  llvm::Value* result = b_.CreateOr(sign, b_.CreateTrunc(mag, i32));
  // Below the smallest subnormal: a signed zero (an unsigned one for the fnuz types);
  // e8m0fnu has no zero and keeps its smallest value.
  llvm::Value* zero = f.has_subnormals() && f.nan != Nan::kNegativeZero ? sign : b_.getInt32(0);
  result = b_.CreateSelect(b_.CreateICmpSLE(mag, b_.getInt64(0)), zero, result);
  llvm::Value* overflow = f.nan == Nan::kNegativeZero
                              ? static_cast<llvm::Value*>(b_.getInt32(f.overflow_bits(false)))
                              : b_.CreateOr(sign, b_.getInt32(f.overflow_bits(false)));
  result = b_.CreateSelect(
      b_.CreateICmpSGT(mag, b_.getInt64(static_cast<int64_t>(f.max_finite_magnitude()))), overflow,
      result);
  llvm::Value* nan = f.nan == Nan::kNegativeZero
                         ? static_cast<llvm::Value*>(b_.getInt32(f.nan_bits()))
                         : b_.CreateOr(sign, b_.getInt32(f.nan_bits()));
  llvm::Value* is_nan = b_.CreateFCmpUNO(d, d);
  if (!f.has_sign) {  // negative values and zero cannot be held
    is_nan = b_.CreateOr(
        is_nan, b_.CreateOr(negative, b_.CreateFCmpOEQ(a, llvm::ConstantFP::get(f64, 0.0))));
  }
  result = b_.CreateSelect(is_nan, nan, result);
  return b_.CreateTrunc(result, b_.getInt8Ty());
}

}  // namespace kiln::llvm_emit::detail
