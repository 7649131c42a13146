#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-fourth sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on control flow combined: a lax.cond choosing between two loops in a fori_loop, lax.switch in a
scan with a branch that writes a row, a while loop whose cond updates an array in place, a
vmapped convergence loop inside a loop, two inner loops in one step sharing a carry, a cond
that passes the carry on, a cond whose branch holds a matrix product, a cond inside a nested
loop keyed by the inner index, insertion sort (a while in a fori), a sieve of Eratosthenes,
Householder QR by nested loops, and an event-detecting integrator.
Written as held-out programs: none of them is in the other twenty-three sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentyfourth.py [--runs 10] [--only SUBSTRING]"""
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
    r = np.random.RandomState(27)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def cond_of_loops(x):
        def step(i, v):
            def short(v):
                return lax.fori_loop(0, 3, lambda j, w: jnp.sin(w) + 0.1, v)

            def long(v):
                return lax.fori_loop(0, 7, lambda j, w: jnp.cos(w) * 0.9, v)
            return lax.cond(i % 3 == 0, short, long, v)
        return lax.fori_loop(0, 30, step, x)

    def switch_writes_row(x, ks):
        def step(c, k):
            table, v = c

            def a(c):
                t, v = c
                return t.at[k % 16].set(v), v * 0.5

            def b(c):
                t, v = c
                return t, jnp.tanh(v + t[k % 16])

            def d(c):
                return c
            return lax.switch(k % 3, [a, b, d], (table, v)), v.sum()
        return lax.scan(step, (jnp.zeros((16, 512)), x), ks)

    def while_cond_update(x):
        def body(s):
            i, v = s
            v = lax.cond(v[i % 1024] > 0, lambda v: v.at[i % 1024].multiply(-0.5),
                         lambda v: v.at[(i * 7) % 1024].add(1.0), v)
            return i + 1, v

        def go(s):
            return (s[0] < 300) & (jnp.sum(s[1]) < 1e4)
        return lax.while_loop(go, body, (0, x))[1]

    def vmapped_convergence_in_loop(x):
        def outer(i, v):
            def newton(a):
                def go(s):
                    return (jnp.abs(s[0] * s[0] - a) > 1e-4) & (s[1] < 30)
                return lax.while_loop(go, lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1),
                                      (a + 1.0, 0))[0]
            return jax.vmap(newton)(v + 0.1)
        return lax.fori_loop(0, 5, outer, jnp.abs(x))

    def two_inner_loops(x):
        def step(c, row):
            c = lax.fori_loop(0, 8, lambda j, a: a * 0.95 + row[j], c)
            c = lax.fori_loop(8, 16, lambda j, a: a - 0.01 * row[j] * a, c)
            return c, c
        return lax.scan(step, jnp.float32(0), x)

    def cond_passes_carry(x, flags):
        def step(c, f):
            a, b = c
            return lax.cond(f > 0, lambda c: (c[0] + c[1] * 0.1, jnp.tanh(c[1])),
                            lambda c: c, (a, b)), a.mean()
        return lax.scan(step, (x, x * 0.5), flags)

    def cond_with_matmul(x, w, flags):
        def step(h, f):
            h = lax.cond(f > 0, lambda h: jnp.tanh(h @ w), lambda h: h * 0.9, h)
            return h, h[0, 0]
        return lax.scan(step, x, flags)

    def cond_in_nested(x):
        def outer(i, v):
            def inner(j, w):
                return lax.cond((i + j) % 2 == 0, lambda w: w * 1.01, lambda w: jnp.sin(w), w)
            return lax.fori_loop(0, 6, inner, v)
        return lax.fori_loop(0, 10, outer, x)

    def insertion_sort(x):
        n = x.shape[0]

        def insert(i, a):
            key = a[i]

            def go(s):
                j, a = s
                return (j >= 0) & (a[jnp.maximum(j, 0)] > key)

            def shift(s):
                j, a = s
                return j - 1, a.at[j + 1].set(a[j])
            j, a = lax.while_loop(go, shift, (i - 1, a))
            return a.at[j + 1].set(key)
        return lax.fori_loop(1, n, insert, x)

    def sieve(n_arr):
        n = 2048
        is_prime = jnp.ones(n, bool).at[:2].set(False)

        def outer(p, s):
            def strike(s):
                def mark(k, s):
                    idx = p * p + k * p
                    return s.at[jnp.minimum(idx, n - 1)].set(jnp.where(idx < n, False, s[n - 1]))
                return lax.fori_loop(0, n // p, mark, s)
            return lax.cond(s[p], strike, lambda s: s, s)
        return jnp.sum(lax.fori_loop(2, 46, outer, is_prime)) + n_arr[0]

    def householder_qr(a):
        m, n = a.shape

        def column(k, s):
            r, q = s
            x = jnp.where(jnp.arange(m) >= k, r[:, k], 0.0)
            alpha = -jnp.sign(x[k] + 1e-30) * jnp.linalg.norm(x)
            v = x.at[k].add(-alpha)
            v = v / (jnp.linalg.norm(v) + 1e-30)

            def reflect(j, r):
                return r.at[:, j].add(-2.0 * v * jnp.dot(v, r[:, j]))
            r = lax.fori_loop(k, n, reflect, r)
            q = q - 2.0 * jnp.outer(q @ v, v)
            return r, q
        r, q = lax.fori_loop(0, n, column, (a, jnp.eye(m)))
        return jnp.abs(jnp.diag(r))

    def event_integrator(y0):
        def step(c, _):
            y, v, bounces = c
            y2 = y + 0.01 * v
            v2 = v - 0.01 * 9.8
            hit = y2 < 0

            def bounce(s):
                y, v, b = s
                return -y, -0.8 * v, b + 1
            y2, v2, bounces = lax.cond(jnp.any(hit), lambda s: jax.tree_util.tree_map(
                lambda a, b: jnp.where(hit, a, b), bounce(s), s), lambda s: s, (y2, v2, bounces))
            return (y2, v2, bounces), y2.mean()
        return lax.scan(step, (y0, jnp.zeros_like(y0), jnp.zeros(y0.shape, jnp.int32)), None,
                        length=400)

    return {
        'cond choosing between two fori loops in fori 30 f32[512]': (
            cond_of_loops, [f32(512)], 1e-3),
        'switch writing a row in scan 64 x f32[512]': (
            switch_writes_row, [f32(512), r.randint(0, 100, 64).astype(np.int32)], 1e-3),
        'while with a cond updating in place 300 f32[1024]': (while_cond_update, [f32(1024)]),
        'vmapped newton while in fori 5 x 4096': (
            vmapped_convergence_in_loop, [f32(4096) * 10], 1e-3),
        'two inner fori loops in scan 256 x 16': (two_inner_loops, [f32(256, 16)], 1e-3),
        'cond passing the carry on in scan 128 x f32[1024]': (
            cond_passes_carry, [f32(1024), r.randint(0, 2, 128).astype(np.int32)], 1e-3),
        'cond with a matmul in scan 32 x 64x256': (
            cond_with_matmul, [f32(64, 256) * 0.1, f32(256, 256) * 0.1,
                               r.randint(0, 2, 32).astype(np.int32)], 1e-3),
        'cond in nested fori 10 x 6 f32[4096]': (cond_in_nested, [f32(4096)], 1e-3),
        'insertion sort while in fori 256': (insertion_sort, [f32(256)]),
        'sieve of eratosthenes 2048': (sieve, [np.array([0], np.int32)]),
        'householder qr nested fori 64x32': (householder_qr, [f32(64, 32)], 1e-3),
        'bouncing integrator cond in scan 400 x 4096': (event_integrator, [np.abs(f32(4096))],
                                                        1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
