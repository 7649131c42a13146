// JAX's eigendecomposition of general matrices on CPU, `lapack_{s,d,c,z}geev_ffi`
// (jnp.linalg.eig, eigvals), in double precision: Householder reduction to Hessenberg form,
// then the Francis double-shift QR iteration for the eigenvalues (real arithmetic for a real
// matrix, so a real eigenvalue has imaginary part exactly 0 and complex ones come in exact
// conjugate pairs, the one with positive imaginary part first, as LAPACK gives them), and
// inverse iteration on A - lambda I (on A^H for left eigenvectors) for the vectors, each of
// unit 2-norm with its largest component real and positive. Results as XLA's FFI gives them:
// real types (wr, wi, vl, vr, info), complex ones (w, vl, vr, info), the vectors complex and
// zero when backend_config's `compute_left` / `compute_right` is 'N'.
//
// The eigenvalues are LAPACK's in value but not necessarily in order (LAPACK balances the
// matrix first and deflates in its own order); a real eigenvector's sign and a complex one's
// phase are fixed here by the largest component, where LAPACK leaves the sign free.
#pragma once

#include "absl/status/statusor.h"
#include "hlo/evaluator/evaluator_internal.h"

namespace kiln::eval {

absl::StatusOr<Literal> Geev(const HloInstruction& instr, const Literal& a, char compute_left,
                             char compute_right);

// `lapack_{s,d,c,z}gees_ffi` (jax.scipy.linalg.schur, sqrtm): A = Z T Z^H with Z unitary.
// Complex: T upper triangular, by Householder reduction to Hessenberg form and shifted QR
// steps of Givens rotations (Wilkinson shifts); results (T, Z, w = diag(T), sdim, info). Real:
// T quasi-triangular with LAPACK's standard 2x2 blocks ([[a, b], [c, a]], b c < 0, for a
// complex pair), by the Francis double-shift iteration on the whole matrix; results (T, Z, wr,
// wi, sdim, info). The eigenvalues' order on the diagonal is the iteration's, not necessarily
// LAPACK's. Z zero when backend_config's `mode` is 'N'; sorting (`sort` 'S') is not done (sdim
// 0), as JAX asks for none.
absl::StatusOr<Literal> Gees(const HloInstruction& instr, const Literal& a, char mode);

}  // namespace kiln::eval
