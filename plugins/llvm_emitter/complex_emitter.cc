// Complex values in the emitter: c64 and c128 elements are LLVM's {float, float} and
// {double, double} (std::complex's layout in the buffers), and the arithmetic HLO has on them
// is computed as the evaluator (std::complex) computes it. c64 magnitudes are computed in f32
// on parts scaled by a power of two, quotients in double, where the squares of any float
// neither overflow nor underflow; c128 uses hypot and Smith's division. LLVM's instcombine splits
// the pair loads and stores into their parts, so loops over complex arrays vectorize as interleaved
// float loops.
#include <string>

#include "absl/strings/str_cat.h"
#include "plugins/llvm_emitter/elemental_emitter.h"
#include "plugins/llvm_emitter/fast_math.h"
#include "plugins/llvm_emitter/kernel_emitter.h"

namespace kiln::llvm_emit {

using PT = PrimitiveType;

bool TouchesComplex(const HloInstruction& instr) {
  if (instr.shape().IsArray() && IsComplex(instr.shape().element_type())) return true;
  for (const HloInstruction* o : instr.operands())
    if (o->shape().IsArray() && IsComplex(o->shape().element_type())) return true;
  return false;
}

bool CanEmitComplex(const HloInstruction& instr, std::string* why) {
  auto no = [&](const std::string& what) {
    if (why) *why = absl::StrCat(what, " of complex values is not supported by the emitter");
    return false;
  };
  switch (instr.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kPad:
    case HloOpcode::kReverse:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kGather:
    case HloOpcode::kSelect:
    case HloOpcode::kCopy:
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kNegate:
    case HloOpcode::kAbs:
    case HloOpcode::kSign:
    case HloOpcode::kExp:
    case HloOpcode::kLog:
    case HloOpcode::kSqrt:
    case HloOpcode::kComplex:
    case HloOpcode::kReal:
    case HloOpcode::kImag:
      return true;
    case HloOpcode::kCompare: {
      const auto d = instr.attrs().comparison_direction;
      return (d == ComparisonDirection::kEq || d == ComparisonDirection::kNe) ||
             no("an ordered compare");
    }
    case HloOpcode::kConvert:
      return IsComplex(instr.shape().element_type()) || no("a convert to a real type");
    case HloOpcode::kDot: {  // complex x complex of one type (a quantum gate on a state)
      const PT t = instr.shape().element_type();
      return (instr.operand_count() == 2 && instr.operand(0)->shape().element_type() == t &&
              instr.operand(1)->shape().element_type() == t) ||
             no("a dot of mixed types");
    }
    default:
      return no(std::string(HloOpcodeString(instr.opcode())));
  }
}

namespace detail {

llvm::Value* KernelEmitter::MakeComplex(llvm::Value* re, llvm::Value* im) {
  llvm::Type* part = re->getType();
  llvm::Value* z = llvm::PoisonValue::get(llvm::StructType::get(ctx_, {part, part}));
  return b_.CreateInsertValue(b_.CreateInsertValue(z, re, {0}), im, {1});
}

llvm::Value* KernelEmitter::ComplexMultiplyAdd(llvm::Value* acc, llvm::Value* a, llvm::Value* b) {
  llvm::Value* ar = Re(a);
  llvm::Value* ai = Im(a);
  llvm::Value* br = Re(b);
  llvm::Value* bi = Im(b);
  llvm::Value* re = b_.CreateFSub(b_.CreateFMul(ar, br), b_.CreateFMul(ai, bi));
  llvm::Value* im = b_.CreateFAdd(b_.CreateFMul(ar, bi), b_.CreateFMul(ai, br));
  return MakeComplex(b_.CreateFAdd(Re(acc), re), b_.CreateFAdd(Im(acc), im));
}

llvm::Value* KernelEmitter::ComplexMagnitude(llvm::Value* z) {
  llvm::Value* re = Re(z);
  llvm::Value* im = Im(z);
  llvm::Type* part = re->getType();
  if (part->isDoubleTy()) return CallMath("hypotf", "hypot", PT::F64, {re, im});
  // In f32, both parts scaled by 2^-e, where 2^e <= max(|re|, |im|) < 2^(e+1) (e clamped so
  // that 2^-e and 2^e are normal floats): the larger scaled part is in [1, 2), so the squares
  // neither overflow nor underflow, and the root of their sum times 2^e is within an ulp. The
  // scaling is exact. (In double, as before, the two conversions each way and a root of half
  // the lanes took 70% of a Mandelbrot iteration's time.)
  llvm::Type* i32 = b_.getInt32Ty();
  auto exponent = [&](llvm::Value* v) {  // the biased exponent of |v|
    return b_.CreateAnd(b_.CreateLShr(b_.CreateBitCast(v, i32), 23), 0xff);
  };
  auto power = [&](llvm::Value* biased) {  // 2^(biased - 127)
    return b_.CreateBitCast(b_.CreateShl(biased, 23), part);
  };
  llvm::Value* e = CallIntrinsic(llvm::Intrinsic::smax, {i32}, {exponent(re), exponent(im)});
  e = CallIntrinsic(
      llvm::Intrinsic::smin, {i32},
      {CallIntrinsic(llvm::Intrinsic::smax, {i32}, {e, b_.getInt32(1)}), b_.getInt32(253)});
  llvm::Value* down = power(b_.CreateSub(b_.getInt32(254), e));
  llvm::Value* x = b_.CreateFMul(re, down);
  llvm::Value* y = b_.CreateFMul(im, down);
  llvm::Value* sum = CallIntrinsic(llvm::Intrinsic::fmuladd, {part}, {x, x, b_.CreateFMul(y, y)});
  llvm::Value* m = b_.CreateFMul(CallIntrinsic(llvm::Intrinsic::sqrt, {part}, {sum}), power(e));
  // An infinite part gives infinity even beside a NaN, as hypot does.
  llvm::Value* inf = llvm::ConstantFP::getInfinity(part);
  llvm::Value* any_inf =
      b_.CreateOr(b_.CreateFCmpOEQ(CallIntrinsic(llvm::Intrinsic::fabs, {part}, {re}), inf),
                  b_.CreateFCmpOEQ(CallIntrinsic(llvm::Intrinsic::fabs, {part}, {im}), inf));
  return b_.CreateSelect(any_inf, inf, m);
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitComplexUnary(const HloInstruction* h,
                                                             llvm::Value* x) {
  const PT in = h->operand(0)->shape().element_type();
  const PT out = h->shape().element_type();
  switch (h->opcode()) {
    case HloOpcode::kReal:
      return IsComplex(in) ? Re(x) : x;
    case HloOpcode::kImag:
      return IsComplex(in) ? Im(x) : llvm::ConstantFP::get(x->getType(), 0.0);
    case HloOpcode::kConvert: {
      const PT part = ComplexPartType(out);
      if (IsComplex(in))
        return MakeComplex(ConvertValue(Re(x), ComplexPartType(in), part),
                           ConvertValue(Im(x), ComplexPartType(in), part));
      return MakeComplex(ConvertValue(x, in, part),
                         llvm::ConstantFP::get(ComputeType(part, ctx_), 0.0));
    }
    default:
      break;
  }
  llvm::Value* re = Re(x);
  llvm::Value* im = Im(x);
  llvm::Type* part = re->getType();
  switch (h->opcode()) {
    case HloOpcode::kCopy:
      return x;
    case HloOpcode::kNegate:
      return MakeComplex(b_.CreateFNeg(re), b_.CreateFNeg(im));
    case HloOpcode::kAbs:
      return ComplexMagnitude(x);
    case HloOpcode::kSign: {
      // z / |z|, and 0 for 0.
      llvm::Value* m = ComplexMagnitude(x);
      llvm::Value* zero = b_.CreateFCmpOEQ(m, llvm::ConstantFP::get(part, 0.0));
      return b_.CreateSelect(zero, x, MakeComplex(b_.CreateFDiv(re, m), b_.CreateFDiv(im, m)));
    }
    case HloOpcode::kExp: {
      llvm::Value* e = !gpu() && part->isFloatTy()
                           ? FastExpF32(b_, re)
                           : CallIntrinsic(llvm::Intrinsic::exp, {part}, {re});
      return MakeComplex(b_.CreateFMul(e, CallIntrinsic(llvm::Intrinsic::cos, {part}, {im})),
                         b_.CreateFMul(e, CallIntrinsic(llvm::Intrinsic::sin, {part}, {im})));
    }
    case HloOpcode::kLog: {
      llvm::Value* m = ComplexMagnitude(x);
      llvm::Value* l = !gpu() && part->isFloatTy()
                           ? FastLogF32(b_, m)
                           : CallIntrinsic(llvm::Intrinsic::log, {part}, {m});
      return MakeComplex(l, Atan2(im, re));
    }
    case HloOpcode::kSqrt: {
      // The principal root: t = sqrt((|z| + |re|) / 2); (t, im / 2t) for re >= 0, else
      // (|im| / 2t, t with im's sign); 0 stays (0, im).
      llvm::Value* m = ComplexMagnitude(x);
      llvm::Value* are = CallIntrinsic(llvm::Intrinsic::fabs, {part}, {re});
      llvm::Value* t =
          CallIntrinsic(llvm::Intrinsic::sqrt, {part},
                        {b_.CreateFMul(b_.CreateFAdd(m, are), llvm::ConstantFP::get(part, 0.5))});
      llvm::Value* two_t = b_.CreateFAdd(t, t);
      llvm::Value* nonneg = b_.CreateFCmpOGE(re, llvm::ConstantFP::get(part, 0.0));
      llvm::Value* r_re = b_.CreateSelect(
          nonneg, t, b_.CreateFDiv(CallIntrinsic(llvm::Intrinsic::fabs, {part}, {im}), two_t));
      llvm::Value* r_im =
          b_.CreateSelect(nonneg, b_.CreateFDiv(im, two_t),
                          CallIntrinsic(llvm::Intrinsic::copysign, {part}, {t, im}));
      llvm::Value* zero = b_.CreateFCmpOEQ(t, llvm::ConstantFP::get(part, 0.0));
      return b_.CreateSelect(zero, MakeComplex(llvm::ConstantFP::get(part, 0.0), im),
                             MakeComplex(r_re, r_im));
    }
    default:
      return absl::UnimplementedError(absl::StrCat("emitter: complex unary ", h->name()));
  }
}

absl::StatusOr<llvm::Value*> KernelEmitter::EmitComplexBinary(const HloInstruction* h, PT t,
                                                              llvm::Value* a, llvm::Value* b) {
  if (h->opcode() == HloOpcode::kComplex) return MakeComplex(a, b);
  llvm::Value* ar = Re(a);
  llvm::Value* ai = Im(a);
  llvm::Value* br = Re(b);
  llvm::Value* bi = Im(b);
  switch (h->opcode()) {
    case HloOpcode::kAdd:
      return MakeComplex(b_.CreateFAdd(ar, br), b_.CreateFAdd(ai, bi));
    case HloOpcode::kSubtract:
      return MakeComplex(b_.CreateFSub(ar, br), b_.CreateFSub(ai, bi));
    case HloOpcode::kMultiply:
      return MakeComplex(b_.CreateFSub(b_.CreateFMul(ar, br), b_.CreateFMul(ai, bi)),
                         b_.CreateFAdd(b_.CreateFMul(ar, bi), b_.CreateFMul(ai, br)));
    case HloOpcode::kDivide: {
      if (t == PT::C64) {
        // In double: (a * conj(b)) / |b|^2 without overflow or underflow for any floats.
        llvm::Type* d = b_.getDoubleTy();
        llvm::Value* xr = b_.CreateFPExt(ar, d);
        llvm::Value* xi = b_.CreateFPExt(ai, d);
        llvm::Value* yr = b_.CreateFPExt(br, d);
        llvm::Value* yi = b_.CreateFPExt(bi, d);
        llvm::Value* den = b_.CreateFAdd(b_.CreateFMul(yr, yr), b_.CreateFMul(yi, yi));
        llvm::Value* re = b_.CreateFAdd(b_.CreateFMul(xr, yr), b_.CreateFMul(xi, yi));
        llvm::Value* im = b_.CreateFSub(b_.CreateFMul(xi, yr), b_.CreateFMul(xr, yi));
        llvm::Type* f = b_.getFloatTy();
        return MakeComplex(b_.CreateFPTrunc(b_.CreateFDiv(re, den), f),
                           b_.CreateFPTrunc(b_.CreateFDiv(im, den), f));
      }
      // Smith's: divide through by the larger part of b.
      llvm::Type* part = ar->getType();
      llvm::Value* wide = b_.CreateFCmpOGE(CallIntrinsic(llvm::Intrinsic::fabs, {part}, {br}),
                                           CallIntrinsic(llvm::Intrinsic::fabs, {part}, {bi}));
      llvm::Value* r1 = b_.CreateFDiv(bi, br);  // |br| >= |bi|
      llvm::Value* d1 = b_.CreateFAdd(br, b_.CreateFMul(bi, r1));
      llvm::Value* re1 = b_.CreateFDiv(b_.CreateFAdd(ar, b_.CreateFMul(ai, r1)), d1);
      llvm::Value* im1 = b_.CreateFDiv(b_.CreateFSub(ai, b_.CreateFMul(ar, r1)), d1);
      llvm::Value* r2 = b_.CreateFDiv(br, bi);
      llvm::Value* d2 = b_.CreateFAdd(b_.CreateFMul(br, r2), bi);
      llvm::Value* re2 = b_.CreateFDiv(b_.CreateFAdd(b_.CreateFMul(ar, r2), ai), d2);
      llvm::Value* im2 = b_.CreateFDiv(b_.CreateFSub(b_.CreateFMul(ai, r2), ar), d2);
      return MakeComplex(b_.CreateSelect(wide, re1, re2), b_.CreateSelect(wide, im1, im2));
    }
    case HloOpcode::kCompare: {
      if (h->attrs().comparison_direction == ComparisonDirection::kEq)
        return b_.CreateAnd(b_.CreateFCmpOEQ(ar, br), b_.CreateFCmpOEQ(ai, bi));
      return b_.CreateOr(b_.CreateFCmpUNE(ar, br), b_.CreateFCmpUNE(ai, bi));
    }
    default:
      return absl::UnimplementedError(absl::StrCat("emitter: complex binary ", h->name()));
  }
}

}  // namespace detail
}  // namespace kiln::llvm_emit
