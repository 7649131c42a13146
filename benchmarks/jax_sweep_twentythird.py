#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-third sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on loops inside loops, as numerical code written in JAX has them: edit distance and bubble sort
as two fori_loops over scalars, Cholesky, LU and Gram-Schmidt column by column, Gauss-Seidel
sweeps, the Jacobi eigenvalue method, implicit Euler with a Newton while loop per step, an
adaptive step-size while loop in a scan, Sinkhorn with a tolerance, power iteration with
deflation, a three-deep scan, a cond whose branch holds a loop, a vmapped nested loop,
lax.map over a while loop, expm, and Floyd-Warshall.
Written as held-out programs: none of them is in the other twenty-two sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentythird.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    r = np.random.RandomState(26)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def spd(n):
        a = f32(n, n)
        return (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)

    def edit_distance(a, b):
        n, m = a.shape[0], b.shape[0]
        d0 = jnp.zeros((n + 1, m + 1), jnp.int32)
        d0 = d0.at[:, 0].set(jnp.arange(n + 1)).at[0, :].set(jnp.arange(m + 1))

        def row(i, d):
            def cell(j, d):
                cost = jnp.where(a[i - 1] == b[j - 1], 0, 1)
                v = jnp.minimum(jnp.minimum(d[i - 1, j] + 1, d[i, j - 1] + 1),
                                d[i - 1, j - 1] + cost)
                return d.at[i, j].set(v)
            return lax.fori_loop(1, m + 1, cell, d)
        return lax.fori_loop(1, n + 1, row, d0)[n, m]

    def bubble_sort(x):
        n = x.shape[0]

        def sweep(i, x):
            def swap(j, x):
                a, b = x[j], x[j + 1]
                return x.at[j].set(jnp.minimum(a, b)).at[j + 1].set(jnp.maximum(a, b))
            return lax.fori_loop(0, n - 1 - i, swap, x)
        return lax.fori_loop(0, n - 1, sweep, x)

    def cholesky_columns(a):
        n = a.shape[0]

        def column(j, l):
            def dot(k, s):
                return s + l[j, k] * l[j, k]
            d = jnp.sqrt(a[j, j] - lax.fori_loop(0, j, dot, 0.0))
            col = (a[:, j] - l @ l[j]) / d
            col = jnp.where(jnp.arange(n) > j, col, 0.0)
            return l.at[:, j].set(col).at[j, j].set(d)
        return lax.fori_loop(0, n, column, jnp.zeros_like(a))

    def lu_nopivot(a):
        n = a.shape[0]

        def step(k, a):
            def row(i, a):
                f = a[i, k] / a[k, k]
                upd = jnp.where(jnp.arange(n) > k, a[i] - f * a[k], a[i])
                return a.at[i].set(upd.at[k].set(f))
            return lax.fori_loop(k + 1, n, row, a)
        return lax.fori_loop(0, n - 1, step, a)

    def gram_schmidt(a):
        n = a.shape[1]

        def column(j, q):
            def project(k, v):
                return v - jnp.dot(q[:, k], a[:, j]) * q[:, k]
            v = lax.fori_loop(0, j, project, a[:, j])
            return q.at[:, j].set(v / jnp.linalg.norm(v))
        return lax.fori_loop(0, n, column, jnp.zeros_like(a))

    def gauss_seidel(a, b):
        n = a.shape[0]

        def sweep(_, x):
            def row(i, x):
                s = jnp.dot(a[i], x) - a[i, i] * x[i]
                return x.at[i].set((b[i] - s) / a[i, i])
            return lax.fori_loop(0, n, row, x)
        return lax.fori_loop(0, 10, sweep, jnp.zeros_like(b))

    def jacobi_eigenvalues(a):
        n = a.shape[0]

        def rotate(a, p, q):
            theta = 0.5 * jnp.arctan2(2 * a[p, q], a[q, q] - a[p, p])
            c, s = jnp.cos(theta), jnp.sin(theta)
            j = jnp.eye(n).at[p, p].set(c).at[q, q].set(c).at[p, q].set(s).at[q, p].set(-s)
            return j.T @ a @ j

        def sweep(_, a):
            def over_p(p, a):
                def over_q(q, a):
                    return rotate(a, p, q)
                return lax.fori_loop(p + 1, n, over_q, a)
            return lax.fori_loop(0, n - 1, over_p, a)
        return jnp.sort(jnp.diag(lax.fori_loop(0, 4, sweep, a)))

    def implicit_euler(y0):
        h = 0.05

        def step(y, _):
            def newton(c):
                z, k = c
                f = z - y - h * (-z ** 3 + jnp.sin(z))
                df = 1 + h * (3 * z ** 2 - jnp.cos(z))
                return z - f / df, k + 1

            def go(c):
                z, k = c
                f = z - y - h * (-z ** 3 + jnp.sin(z))
                return (jnp.max(jnp.abs(f)) > 1e-5) & (k < 20)
            z, _ = lax.while_loop(go, newton, (y, 0))
            return z, jnp.mean(z)
        return lax.scan(step, y0, None, length=50)

    def adaptive_steps(y0):
        def step(c, _):
            y, h = c

            def shrink(s):
                hh, _ = s
                return hh * 0.5, 0

            def too_big(s):
                hh, _ = s
                e1 = y + hh * jnp.cos(y)
                half = y + 0.5 * hh * jnp.cos(y)
                e2 = half + 0.5 * hh * jnp.cos(half)
                return (jnp.max(jnp.abs(e1 - e2)) > 1e-3) & (hh > 1e-4)
            h2, _ = lax.while_loop(too_big, shrink, (h, 0))
            y2 = y + h2 * jnp.cos(y)
            return (y2, jnp.minimum(h2 * 2.0, 1.0)), h2
        return lax.scan(step, (y0, jnp.float32(1.0)), None, length=100)

    def sinkhorn(c):
        k = jnp.exp(-c / 0.1)

        def body(s):
            u, v, it, _ = s

            def inner(_, uv):
                u, v = uv
                u = 1.0 / (k @ v)
                v = 1.0 / (k.T @ u)
                return u, v
            u2, v2 = lax.fori_loop(0, 5, inner, (u, v))
            return u2, v2, it + 1, jnp.max(jnp.abs(u2 - u) / u)

        def go(s):
            return (s[3] > 1e-4) & (s[2] < 20)
        n = c.shape[0]
        u, v, _, _ = lax.while_loop(go, body, (jnp.ones(n), jnp.ones(n), 0, jnp.float32(1.0)))
        return u[:, None] * k * v[None, :]

    def deflated_power(a):
        def eigvec(i, s):
            a, vs = s

            def it(_, v):
                w = a @ v
                return w / jnp.linalg.norm(w)
            v = lax.fori_loop(0, 50, it, jnp.ones(a.shape[0]) / np.sqrt(a.shape[0]))
            lam = v @ a @ v
            return a - lam * jnp.outer(v, v), vs.at[i].set(lam)
        return lax.fori_loop(0, 4, eigvec, (a, jnp.zeros(4)))[1]

    def three_deep(x):
        def lvl1(c, xs):
            def lvl2(c, row):
                def lvl3(c, v):
                    c = c * 0.99 + v
                    return c, c * c
                c, sq = lax.scan(lvl3, c, row)
                return c, sq.sum()
            c, s = lax.scan(lvl2, c, xs)
            return c, s.mean()
        return lax.scan(lvl1, jnp.float32(0), x)

    def cond_with_loop(x, flags):
        def step(c, f):
            def heavy(c):
                return lax.fori_loop(0, 10, lambda i, v: jnp.tanh(v * 1.1 + 0.01 * i), c)
            c = lax.cond(f > 0, heavy, lambda c: c * 0.5, c)
            return c, c.sum()
        return lax.scan(step, x, flags)

    def vmapped_nested(x):
        def one(v):
            def outer(i, v):
                return lax.fori_loop(0, 8, lambda j, w: jnp.sin(w) + 0.1 * (i + j), v)
            return lax.fori_loop(0, 16, outer, v)
        return jax.vmap(one)(x)

    def map_while(x):
        def one(v):
            def go(s):
                return (s[0] > 1.0) & (s[1] < 100)
            return lax.while_loop(go, lambda s: (s[0] * 0.5, s[1] + 1), (jnp.abs(v), 0))[1]
        return lax.map(one, x)

    def expm(a):
        return jax.scipy.linalg.expm(a)

    def floyd_warshall(d):
        def relax(k, d):
            return jnp.minimum(d, d[:, k, None] + d[None, k, :])
        return lax.fori_loop(0, d.shape[0], relax, d)

    sym = f32(16, 16)
    sym = (sym + sym.T) / 2
    return {
        'edit distance fori in fori 48x48': (
            edit_distance, [r.randint(0, 4, 48).astype(np.int32),
                            r.randint(0, 4, 48).astype(np.int32)]),
        'bubble sort fori in fori 128': (bubble_sort, [f32(128)]),
        'cholesky by columns fori in fori 64': (cholesky_columns, [spd(64)], 1e-3),
        'lu without pivoting fori in fori 48': (lu_nopivot, [spd(48)], 1e-3),
        'gram-schmidt fori in fori 128x32': (gram_schmidt, [f32(128, 32)], 1e-3),
        'gauss-seidel 10 sweeps x 128 rows': (
            gauss_seidel, [spd(128) + 8 * np.eye(128, dtype=np.float32), f32(128)], 1e-3),
        'jacobi eigenvalues 4 sweeps 16x16': (jacobi_eigenvalues, [sym], 1e-3),
        'implicit euler newton while in scan 50 x 4096': (implicit_euler, [f32(4096)], 1e-3),
        'adaptive step while in scan 100 x 1024': (adaptive_steps, [f32(1024)], 1e-3),
        'sinkhorn while of fori 256': (sinkhorn, [np.abs(f32(256, 256))], 1e-3),
        'power iteration with deflation 4 x 50 128': (deflated_power, [spd(128)], 1e-2),
        'scan in scan in scan 8x16x32': (three_deep, [f32(8, 16, 32) * 0.1], 1e-3),
        'cond holding a fori in scan 64 x f32[1024]': (
            cond_with_loop, [f32(1024), r.randint(0, 2, 64).astype(np.int32)], 1e-3),
        'vmap fori in fori 256 x f32[64]': (vmapped_nested, [f32(256, 64)], 1e-3),
        'lax.map of a while 1024': (map_while, [f32(1024) * 100]),
        'expm 64': (expm, [f32(64, 64) * 0.2], 1e-3),
        'floyd-warshall 256': (floyd_warshall, [np.abs(f32(256, 256)) * 10]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
