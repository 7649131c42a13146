"""(program, device) -> why Kiln fails it: one line naming what Kiln lacks or gets wrong.

test_jax_programs.py expects exactly these to fail: a listed pair that now agrees with XLA:CPU
fails the test, so remove it here when Kiln is fixed. Causes were found from Kiln's error (or
the worst element) and the HLO JAX lowers the program to.
"""

KNOWN_FAILURES = {
}
