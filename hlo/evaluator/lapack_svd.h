// JAX's singular value decomposition on CPU, `lapack_{s,d,c,z}gesdd_ffi` (jnp.linalg.svd, pinv,
// matrix_rank, norm(ord=2)), by one-sided Jacobi rotations in double precision: the columns of
// A (of A^H when it is wide) are rotated until orthogonal (complex pairs: a phase, then a real
// rotation); their norms are the singular values, descending. Results as XLA's FFI gives them: (A
// overwritten, s [..., k], u [..., m, m or k], vt [..., n or k, n], info [...]), k = min(m, n),
// with backend_config `mode` 'A' (full u and vt), 'S' (k columns / rows) or 'N' (singular values
// only; u and vt are left zero). Columns of u (rows of vt) that A does not determine (zero singular
// values, full matrices) complete an orthonormal basis. info is 1 when the sweeps did not converge.
#pragma once

#include "absl/status/statusor.h"
#include "hlo/evaluator/evaluator_internal.h"

namespace kiln::eval {

absl::StatusOr<Literal> Gesdd(const HloInstruction& instr, const Literal& a, char mode);

}  // namespace kiln::eval
