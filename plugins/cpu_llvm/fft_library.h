// HLO's fft on cpu-llvm's threads, where the evaluator's reference (hlo/evaluator/fft.cc)
// runs one scalar double-precision transform after another: FFT, IFFT, RFFT and IRFFT of f32
// (c64) and f64 (c128) over the last one to three dimensions, any fft_length, as jnp.fft.fft
// / rfft along an axis and fft2 / rfft2 / fftn lower to. Powers of two by radix 2 in the
// element type on split real and imaginary parts of 8 rows at a time (each butterfly a vector
// across them); other lengths by a mixed-radix (Stockham) transform where every prime factor
// is at most 31 and by Bluestein's algorithm otherwise (fft_mixed_radix.h), on the same
// layout; twiddles computed in double once per call. An RFFT of even length packs its n reals
// into n/2 complex values and unpacks the half spectrum, an IRFFT extends the half spectrum by
// symmetry (as the evaluator does) and runs the inverse; odd lengths go through the complex
// transform. Several dimensions are transformed one axis after another: an earlier axis as
// strided columns, 8 neighbouring ones at a time; an RFFT's real axis first, an IRFFT's last.
// Rows are spread over the pool; one long row is transformed in four steps, as columns then
// rows of a matrix (fft_four_step.h). LLVM-free.
#pragma once

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// True when RunFftLibrary computes `h` (an fft as above, shapes and types checked).
bool IsFftLibraryCall(const HloInstruction& h);

// Computes `h` on `in` into `out` (h's shape; every element written). `pool` may be null.
void RunFftLibrary(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool);

}  // namespace kiln::cpu
