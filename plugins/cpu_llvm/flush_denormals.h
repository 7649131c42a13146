// Denormal floats flushed to zero (FTZ) and read as zero (DAZ) while cpu-llvm computes, as
// XLA:CPU does around every execution: results then match XLA's (log(1e-40f) is -inf,
// sqrt(-1e-40f) is -0), and denormal operands do not take the slow microcode path.
#pragma once

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace kiln::cpu {

#if defined(__SSE__) || defined(__x86_64__)
// Sets FTZ and DAZ in this thread's MXCSR for the object's lifetime.
class ScopedFlushDenormals {
 public:
  ScopedFlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~ScopedFlushDenormals() { _mm_setcsr(saved_); }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  static constexpr unsigned kFtz = 1u << 15, kDaz = 1u << 6;
  unsigned saved_;
};
#else
class ScopedFlushDenormals {};  // other targets: IEEE denormals
#endif

}  // namespace kiln::cpu
