"""(program, device) -> why Kiln fails it: one line naming what Kiln lacks or gets wrong.

test_jax_programs.py expects exactly these to fail: a listed pair that now agrees with XLA:CPU
fails the test, so remove it here when Kiln is fixed. Causes were found from Kiln's error (or
the worst element) and the HLO JAX lowers the program to.
"""

_LAPACK = ("JAX lowers CPU linear algebra to LAPACK FFI custom-calls ({}); Kiln implements "
           "no custom-call targets")

_DENORMALS = ("keeps f32 denormals where XLA:CPU flushes them to zero (FTZ/DAZ): sqrt(-1e-40) is nan "
              "instead of -0, log(1e-40) finite instead of -inf")
_DENORMAL_LOG = ("log of a denormal: cpu-llvm runs with FTZ/DAZ as XLA:CPU does (the other outputs "
                 "agree), so log(+-1e-40) is log(0) = -inf, but XLA's own log approximation reads "
                 "the bits (log(1e-40) = -103.97, log(-1e-40) = nan)")

KNOWN_FAILURES = {
    # jnp.linalg.solve + cholesky: custom-calls lapack_sgetrf_ffi, lapack_strsm_ffi, lapack_spotrf_ffi.
    ("linalg_solve", "interpreter"): _LAPACK.format("lapack_sgetrf_ffi/strsm/spotrf; the evaluator rejects them at run time"),
    ("linalg_solve", "cpu-llvm"): _LAPACK.format("lapack_sgetrf_ffi/strsm/spotrf; cpu-llvm rejects them at compile"),
    # jax.scipy.linalg.solve_triangular: custom-call lapack_strsm_ffi (not HLO triangular-solve).
    ("linalg_triangular_solve", "interpreter"): _LAPACK.format("lapack_strsm_ffi; the evaluator rejects it at run time"),
    ("linalg_triangular_solve", "cpu-llvm"): _LAPACK.format("lapack_strsm_ffi; cpu-llvm rejects it at compile"),
    # XLA:CPU (like XLA on GPUs) computes with denormals flushed; Kiln's evaluator and JIT do not.
    ("denormals", "interpreter"): _DENORMALS,
    ("denormals", "cpu-llvm"): _DENORMAL_LOG,
}
