// The LAPACK custom-calls JAX emits for linear algebra on CPU (jnp.linalg.solve, inv, det,
// cholesky, qr, jax.scipy.linalg.solve_triangular): `lapack_{s,d,c,z}{getrf,potrf,trsm,
// geqrf}_ffi`, `lapack_{s,d}orgqr_ffi`/`lapack_{c,z}ungqr_ffi`, `lapack_{s,d}syevd_ffi`
// (jnp.linalg.eigh), `lapack_{s,d}gesdd_ffi` (jnp.linalg.svd; lapack_svd.h) and
// `lapack_{s,d,c,z}geev_ffi` (jnp.linalg.eig) and `lapack_{c,z}gees_ffi` (complex Schur,
// sqrtm; lapack_eig.h), `lapack_{s,d,c,z}gtsv_ffi`
// (jax.lax.linalg.tridiagonal_solve), `lapack_{s,d,c,z}gehrd_ffi` (jax.scipy.linalg.hessenberg),
// with XLA's typed-FFI conventions (matrices in the last two dimensions, batch dimensions
// before them; LAPACK's column-major order is the operands' layout, so logically the
// matrices are the arrays as written). Attributes come from backend_config's
// `{name = value : ui8}` dictionary.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "hlo/evaluator/evaluator_internal.h"

namespace kiln::eval {

// True for the custom-call targets below.
bool IsLapackCustomCall(std::string_view target);

// "getrf" for "lapack_sgetrf_ffi" (any of s, d, c, z), or "" for other targets.
std::string_view LapackRoutine(std::string_view target);

// The custom-call's backend_config dictionary as integers: `{diag = 78 : ui8, side = 76 :
// ui8}` gives {diag: 'N', side: 'L'}.
std::map<std::string, int64_t> LapackAttributes(const HloInstruction& instr);

// The LAPACK character flag `name` of `attrs`, or `fallback` when absent.
char LapackFlag(const std::map<std::string, int64_t>& attrs, const std::string& name,
                char fallback);

// getrf: (LU, 1-based pivots s32[..., min(m,n)], info s32[...]) with partial pivoting;
// potrf: (factor in the `uplo` triangle, the other triangle as given; info s32[...]);
// trsm: op(A) X = B or X op(A) = B per side/uplo/trans_x/diag, alpha 1;
// geqrf: (R above the diagonal, reflector tails below, tau[..., min(m,n)]) by LAPACK's
// reflector convention; orgqr/ungqr: Q from geqrf's output and tau; syevd: (eigenvectors as
// columns, eigenvalues ascending, info) by Jacobi rotations; gtsv: (dl, d, du as LAPACK leaves
// them, X, info) for tridiagonal A X = B.
absl::StatusOr<Literal> EvalLapackCustomCall(const HloInstruction& instr, Operands ops);

}  // namespace kiln::eval
