// Linear algebra through the LAPACK that OpenBLAS ships, where XLA:CPU calls LAPACK too: the
// real `lapack_{s,d}{getrf,potrf,trsm,geqrf,orgqr,syevd,gesdd}_ffi` custom-calls JAX emits on
// CPU (jnp.linalg.solve, inv, det, cholesky, qr, eigh, svd) and HLO's triangular-solve, f32
// and f64, real `lapack_{s,d}gees_ffi` (schur), and the complex `lapack_{c,z}{heevd,gesdd}_ffi`
// (eigh and svd of complex matrices), with the results the evaluator defines
// (hlo/evaluator/lapack_custom_calls.h, lapack_svd.h; eigenvector and singular vector signs are
// LAPACK's).
//
// Kiln's arrays are row-major, LAPACK's matrices column-major, and a row-major matrix read
// column-major is its transpose. So the triangular solves call CBLAS's row-major trsm;
// potrf and syevd factor the transpose of a symmetric matrix by naming the other triangle
// (heevd the conjugated transpose of a Hermitian one); gesdd factors the transpose, whose U and
// V^T, read row-major, are the matrix's V^T and U; getrf, geqrf and orgqr transpose each matrix in
// and out (O(n^2) beside their O(n^3)). LLVM-free.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

// True when the build has LAPACK and RunLapackLibrary computes `h`: a routine above whose
// operand and result shapes are the ones it defines (anything else stays with the
// evaluator, which names what is wrong).
bool IsLapackLibraryCall(const HloInstruction& h);

// Computes `h` from `operands` into `out`, which has h's shape (a tuple's elements zeroed;
// an array's bytes may be uninitialized). A batch of matrices is spread over `pool` (may be
// null), each part with its own workspaces.
absl::Status RunLapackLibrary(const HloInstruction& h, std::span<const Literal* const> operands,
                              Literal& out, ThreadPool* pool = nullptr);

}  // namespace kiln::cpu
