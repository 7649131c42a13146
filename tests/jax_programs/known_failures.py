"""(program, device) -> why Kiln fails it: one line naming what Kiln lacks or gets wrong.

test_jax_programs.py expects exactly these to fail: a listed pair that now agrees with XLA:CPU
fails the test, so remove it here when Kiln is fixed. Causes were found from Kiln's error (or
the worst element) and the HLO JAX lowers the program to.
"""

_DENORMALS = ("keeps f32 denormals where XLA:CPU flushes them to zero (FTZ/DAZ): sqrt(-1e-40) is nan "
              "instead of -0, log(1e-40) finite instead of -inf")
_DENORMAL_LOG = ("log of a denormal: cpu-llvm runs with FTZ/DAZ as XLA:CPU does (the other outputs "
                 "agree), so log(+-1e-40) is log(0) = -inf, but XLA's own log approximation reads "
                 "the bits (log(1e-40) = -103.97, log(-1e-40) = nan)")

KNOWN_FAILURES = {
    # XLA:CPU (like XLA on GPUs) computes with denormals flushed; the evaluator does not.
    ("denormals", "interpreter"): _DENORMALS,
    ("denormals", "cpu-llvm"): _DENORMAL_LOG,
}
