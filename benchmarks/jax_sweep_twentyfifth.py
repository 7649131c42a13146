#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-fifth sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on loops of scalar steps, where each iteration is a few scalar operations: Collatz step counts
and Euclid's gcd (integer while loops under lax.map), Newton square roots and bisection to a
tolerance, binary search by hand, a Fibonacci recurrence modulo a prime, the logistic map
written out step by step, Kahan summation, selection sort (an argmin loop in a fori), a
reflected random walk with its own generator, a running sum that resets, a histogram filled
one element at a time, and a while loop with two exit conditions.
Written as held-out programs: none of them is in the other twenty-four sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentyfifth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax.numpy as jnp
    from jax import lax
    r = np.random.RandomState(29)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def collatz(n):
        def steps(x):
            def go(s):
                return s[0] != 1

            def step(s):
                x, k = s
                return jnp.where(x % 2 == 0, x // 2, 3 * x + 1), k + 1
            return lax.while_loop(go, step, (x, jnp.int32(0)))[1]
        return lax.map(steps, n)

    def gcd(a, b):
        def one(ab):
            def go(s):
                return s[1] != 0

            def step(s):
                return s[1], s[0] % s[1]
            return lax.while_loop(go, step, (ab[0], ab[1]))[0]
        return lax.map(one, (a, b))

    def newton_sqrt(x):
        def one(v):
            def go(s):
                y, k = s
                return (jnp.abs(y * y - v) > 1e-5 * v) & (k < 50)

            def step(s):
                y, k = s
                return 0.5 * (y + v / y), k + 1
            return lax.while_loop(go, step, (jnp.maximum(v, 1.0), 0))[0]
        return lax.map(one, x)

    def bisection(c):
        def one(ci):
            def go(s):
                lo, hi = s
                return hi - lo > 1e-5

            def step(s):
                lo, hi = s
                mid = 0.5 * (lo + hi)
                f = mid * mid * mid - ci
                return jnp.where(f > 0, lo, mid), jnp.where(f > 0, mid, hi)
            lo, hi = lax.while_loop(go, step, (jnp.float32(-10), jnp.float32(10)))
            return 0.5 * (lo + hi)
        return lax.map(one, c)

    def binary_search(sorted_x, q):
        n = sorted_x.shape[0]

        def one(v):
            def go(s):
                return s[0] < s[1]

            def step(s):
                lo, hi = s
                mid = (lo + hi) // 2
                left = sorted_x[mid] < v
                return jnp.where(left, mid + 1, lo), jnp.where(left, hi, mid)
            return lax.while_loop(go, step, (jnp.int32(0), jnp.int32(n)))[0]
        return lax.map(one, q)

    def fibonacci_mod(seed):
        def step(i, s):
            a, b = s
            return b, (a + b) % 1000003
        return lax.fori_loop(0, 100000, step, (seed[0], seed[1]))

    def logistic_map(x0):
        def step(x, _):
            y = 3.2 * x * (1 - x)
            return y, y
        return lax.scan(step, x0[0], None, length=16384)[1]

    def kahan_sum(x):
        def step(s, v):
            total, comp = s
            y = v - comp
            t = total + y
            return (t, (t - total) - y), None
        return lax.scan(step, (jnp.float32(0), jnp.float32(0)), x)[0][0]

    def selection_sort(x):
        n = x.shape[0]

        def outer(i, a):
            def inner(j, best):
                return jnp.where(a[j] < a[best], j, best)
            m = lax.fori_loop(i + 1, n, inner, i)
            ai, am = a[i], a[m]
            return a.at[i].set(am).at[m].set(ai)
        return lax.fori_loop(0, n - 1, outer, x)

    def reflected_walk(seed):
        def step(s, _):
            x, state = s
            state = state * jnp.uint32(1664525) + jnp.uint32(1013904223)
            u = (state >> 8).astype(jnp.float32) / 16777216.0
            x = x + (u - 0.5) * 0.2
            x = lax.cond(x > 1, lambda x: 2 - x, lambda x: jnp.where(x < 0, -x, x), x)
            return (x, state), x
        return lax.scan(step, (jnp.float32(0.5), seed[0]), None, length=8192)[1]

    def resetting_sum(x):
        def step(acc, v):
            acc = jnp.where(acc + v > 3.0, 0.0, acc + v)
            return acc, acc
        return lax.scan(step, jnp.float32(0), x)[1]

    def histogram(x):
        bins = 64

        def step(i, h):
            b = jnp.clip(((x[i] + 4.0) * 8.0).astype(jnp.int32), 0, bins - 1)
            return h.at[b].add(1)
        return lax.fori_loop(0, x.shape[0], step, jnp.zeros(bins, jnp.int32))

    def two_exits(x):
        def go(s):
            i, p = s
            return (i < x.shape[0]) & (jnp.abs(p) < 1e6)

        def step(s):
            i, p = s
            return i + 1, p * (1.0 + 0.5 * x[i])
        return lax.while_loop(go, step, (0, jnp.float32(1)))

    sorted_x = np.sort(f32(4096))
    return {
        'collatz step counts lax.map 512': (
            collatz, [r.randint(1, 10000, 512).astype(np.int32)]),
        'euclid gcd lax.map 1024': (
            gcd, [r.randint(1, 1 << 20, 1024).astype(np.int32),
                  r.randint(1, 1 << 20, 1024).astype(np.int32)]),
        'newton sqrt while lax.map 1024': (newton_sqrt, [np.abs(f32(1024)) * 100], 1e-4),
        'bisection cube root while lax.map 512': (bisection, [f32(512) * 50], 1e-4),
        'binary search while lax.map 1024 in 4096': (binary_search, [sorted_x, f32(1024)]),
        'fibonacci mod p fori 100000': (fibonacci_mod, [np.array([0, 1], np.int32)]),
        'logistic map scan 16384': (logistic_map, [np.array([0.3], np.float32)], 1e-2),
        'kahan summation scan 16384': (kahan_sum, [f32(16384)], 1e-3),
        'selection sort fori in fori 128': (selection_sort, [f32(128)]),
        'reflected lcg walk cond in scan 8192': (
            reflected_walk, [np.array([12345], np.uint32)], 1e-3),
        'resetting running sum scan 8192': (resetting_sum, [np.abs(f32(8192))], 1e-3),
        'histogram one element a step fori 4096': (histogram, [f32(4096)]),
        'while with two exits 4096': (two_exits, [f32(4096)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
