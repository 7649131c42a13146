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

#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/status.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "plugins/cpu_llvm/thread_pool.h"

namespace kiln::cpu {

enum class LapackRoutine {
  kGetrf,
  kPotrf,
  kGeqrf,
  kOrgqr,
  kSyevd,
  kHeevd,
  kGesdd,
  kTrsm,
  kGehrd,
  kGtsv,
  kGees,
  kGeev
};

// A call read from its instruction once, at planning: the routine and its flags. Reading them
// again on every call (parsing backend_config, checking the shapes) took several times as long
// as the 8x8 factorizations and solves of a scan over a Kalman-like update.
struct LapackCall {
  LapackRoutine routine = LapackRoutine::kGetrf;
  char uplo = 'L';             // the triangle the array holds (potrf, syevd, heevd)
  char mode = 'A';             // gesdd: A, S or N; gees: V or N
  char trans = 'N';            // trsm: N, T or C
  bool left = true;            // trsm: op(A) X = B, else X op(A) = B
  bool lower = true;           // trsm
  bool unit_diagonal = false;  // trsm
  char compute_left = 'N', compute_right = 'N';  // geev
  int64_t low = 1, high = -1;                    // gehrd (1-based; high -1: n)
};

// The call when the build has LAPACK and RunLapackLibrary computes `h`: a routine above whose
// operand and result shapes are the ones it defines; nullopt otherwise (the evaluator then
// runs it, and names what is wrong).
std::optional<LapackCall> PrepareLapackCall(const HloInstruction& h);
bool IsLapackLibraryCall(const HloInstruction& h);

// Computes `h`, prepared as `call`, from `operands` into `out`, which has h's shape (a tuple's
// elements zeroed; an array's bytes may be uninitialized). A batch of matrices is spread over
// `pool` (may be null), each part with its own workspaces.
void RunLapackLibrary(const LapackCall& call, std::span<const Literal* const> operands,
                      Literal& out, ThreadPool* pool = nullptr);
// The same, preparing `h` first: an error when it is not a call PrepareLapackCall takes.
absl::Status RunLapackLibrary(const HloInstruction& h, std::span<const Literal* const> operands,
                              Literal& out, ThreadPool* pool = nullptr);

}  // namespace kiln::cpu
