#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-sixth sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on loops whose steps call libraries: Newton's method with a linear solve per step, iterative
refinement, unshifted QR iteration, conjugate gradient to a tolerance, Gauss-Newton with a
least-squares step, inverse iteration, a Cholesky-based Kalman-style update in a scan, a sort
inside a fori_loop, and a Riccati recursion.
Written as held-out programs: none of them is in the other twenty-five sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentysixth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax.numpy as jnp
    from jax import lax
    r = np.random.RandomState(31)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def spd(n):
        a = f32(n, n)
        return (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)

    def newton_system(x0):
        # Solve x**3 + A x = b by Newton's method: a linear solve per step.
        a = jnp.asarray(spd(32))
        b = jnp.ones(32, jnp.float32)

        def step(i, x):
            f = x ** 3 + a @ x - b
            jac = a + jnp.diag(3 * x ** 2)
            return x - jnp.linalg.solve(jac, f)
        return lax.fori_loop(0, 8, step, x0)

    def iterative_refinement(a, b):
        lu = jnp.linalg.solve

        def step(i, x):
            residual = b - a @ x
            return x + lu(a, residual)
        return lax.fori_loop(0, 5, step, jnp.zeros_like(b))

    def qr_iteration(a):
        def step(i, m):
            q, rr = jnp.linalg.qr(m)
            return rr @ q
        return jnp.sort(jnp.diag(lax.fori_loop(0, 30, step, a)))

    def conjugate_gradient(a, b):
        def go(s):
            x, rr, p, k = s
            return (jnp.vdot(rr, rr) > 1e-8) & (k < 200)

        def step(s):
            x, rr, p, k = s
            ap = a @ p
            alpha = jnp.vdot(rr, rr) / jnp.vdot(p, ap)
            x = x + alpha * p
            r2 = rr - alpha * ap
            beta = jnp.vdot(r2, r2) / jnp.vdot(rr, rr)
            return x, r2, r2 + beta * p, k + 1
        x, _, _, k = lax.while_loop(go, step, (jnp.zeros_like(b), b, b, 0))
        return x

    def gauss_newton(t, y):
        def residual(p):
            return p[0] * jnp.exp(-p[1] * t) + p[2] - y

        def step(i, p):
            jac = jnp.stack([jnp.exp(-p[1] * t), -p[0] * t * jnp.exp(-p[1] * t),
                             jnp.ones_like(t)], axis=1)
            delta = jnp.linalg.lstsq(jac, -residual(p))[0]
            return p + delta
        return lax.fori_loop(0, 10, step, jnp.array([1.0, 0.5, 0.0], jnp.float32))

    def inverse_iteration(a):
        def step(i, v):
            w = jnp.linalg.solve(a - 0.1 * jnp.eye(a.shape[0], dtype=a.dtype), v)
            return w / jnp.linalg.norm(w)
        v = lax.fori_loop(0, 20, step, jnp.ones(a.shape[0], a.dtype))
        return jnp.abs(v)

    def cholesky_update_scan(ys):
        n = 8

        def step(s, y):
            mean, cov = s
            gain_l = jnp.linalg.cholesky(cov + jnp.eye(n, dtype=cov.dtype))
            z = jnp.linalg.solve(gain_l, y - mean)
            mean = mean + 0.5 * gain_l @ z
            cov = 0.9 * cov + 0.1 * jnp.outer(z, z)
            return (mean, cov), mean
        return lax.scan(step, (jnp.zeros(n, jnp.float32), jnp.eye(n, dtype=jnp.float32)), ys)[1]

    def sort_in_fori(x):
        def step(i, v):
            return jnp.sort(v * 1.5 - jnp.roll(v, 1))
        return lax.fori_loop(0, 10, step, x)

    def riccati(a, q):
        def step(i, p):
            s = p + jnp.eye(a.shape[0], dtype=a.dtype)
            return q + a.T @ p @ a - a.T @ p @ jnp.linalg.solve(s, p @ a)
        return lax.fori_loop(0, 40, step, q)

    t = np.linspace(0, 4, 128).astype(np.float32)
    y = (2.0 * np.exp(-1.3 * t) + 0.5 + 0.01 * f32(128)).astype(np.float32)
    a_stable = (0.3 * f32(16, 16) / 4).astype(np.float32)
    return {
        'newton with a solve per step fori 8 32x32': (newton_system, [f32(32) * 0.1], 1e-3),
        'iterative refinement fori 5 128x128': (
            iterative_refinement, [spd(128), f32(128)], 1e-3),
        'unshifted qr iteration fori 30 24x24': (qr_iteration, [spd(24)], 1e-2),
        'conjugate gradient while 256': (conjugate_gradient, [spd(256), f32(256)], 1e-2),
        'gauss-newton lstsq fori 10 128x3': (gauss_newton, [t, y], 1e-2),
        'inverse iteration solve fori 20 64': (inverse_iteration, [spd(64)], 1e-2),
        'cholesky and solve in scan 100 x 8': (cholesky_update_scan, [f32(100, 8)], 1e-3),
        'sort in fori 10 x 4096': (sort_in_fori, [f32(4096)], 1e-3),
        'riccati recursion with solve fori 40 16x16': (
            riccati, [a_stable, spd(16)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
