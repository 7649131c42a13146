// The magnitude of complex arrays (HLO's abs of c64 or c128, as |jnp.fft.rfft(x)| and
// jnp.abs of a complex array lower to) on cpu-llvm's threads: the emitter has no complex
// types, and the evaluator's one element at a time through std::abs took 2 ns an element,
// longer than the FFT before it. c64 in double precision (no overflow or underflow in the
// squares), c128 through std::hypot; an infinite part gives infinity, as hypot does.
// LLVM-free.
#pragma once

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// True when RunComplexLibrary computes `h`: an abs of a c64 or c128 array.
bool IsComplexLibraryCall(const HloInstruction& h);

// Computes `h` on `in` into `out` (h's shape; every element written). `pool` may be null.
void RunComplexLibrary(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool);

}  // namespace kiln::cpu
