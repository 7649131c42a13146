#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-second sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on the edges of the semantics: float to integer, half and bool conversions of NaN, infinities
and out-of-range values; shifts by 0 to 40 bits; integer division by negatives and zero;
float mod, fmod, floor_divide, round and power; integer powers; dynamic slices and updates out
of bounds; scatters in drop and clip modes with mul, min and max; take_along_axis with
negative indices and take in wrap mode; jnp.select and jnp.piecewise; NaN in max, min, fmax
and argmax; a vmapped while loop of different trip counts; a nested scan; a fori_loop with a
traced bound; integer overflow in cumprod and an int8 cumsum that wraps.
Written as held-out programs: none of them is in the other twenty-one sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentysecond.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(25)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    special = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.5, -2.5, 0.5, -0.5, 1e20, -0.0,
                        65504, 70000, 1e-8], np.float32)

    def conversions(x):
        return (x.astype(jnp.int32), x.astype(jnp.uint8), x.astype(jnp.int8),
                x.astype(jnp.uint32), x.astype(jnp.float16),
                x.astype(jnp.bfloat16).astype(jnp.float32), x.astype(jnp.bool_))

    def shifts(a, b):
        return (jnp.left_shift(a, b), jnp.right_shift(a, b), jax.lax.shift_right_logical(a, b),
                jnp.left_shift(a.astype(jnp.uint8), b.astype(jnp.uint8)))

    def int_division(a, b):
        return a // b, a % b, jnp.fmod(a, b), jax.lax.div(a, b), jax.lax.rem(a, b)

    def float_mods(x, y):
        return (jnp.mod(x, y), jnp.fmod(x, y), jnp.remainder(x, y), jnp.floor_divide(x, y),
                jnp.round(x, 2), jnp.power(jnp.abs(x), y))

    def int_powers(a, b):
        return jnp.power(a, b), jax.lax.integer_pow(a, 3), jnp.power(a.astype(jnp.float32), -2)

    def out_of_bounds(x, u, i):
        return (jax.lax.dynamic_update_slice(x, u, (i[0], i[1])),
                jax.lax.dynamic_slice(x, (i[1], i[0]), (8, 8)))

    def scatter_modes(x, idx, v):
        return (x.at[idx].set(v, mode='drop'), x.at[idx].mul(v, mode='drop'),
                x.at[idx].min(v, mode='clip'), x.at[idx].max(v),
                x.at[idx].add(v, mode='promise_in_bounds'))

    def takes(x, i):
        return jnp.take_along_axis(x, i, axis=1), jnp.take(x, i[:, 0], axis=0, mode='wrap')

    def select(x):
        return jnp.select([x < -1, x < 0, x < 1, x < 2], [x * 2, -x, x ** 2, jnp.sin(x)],
                          default=jnp.nan)

    def piecewise(x):
        return jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v ** 2, lambda v: v / 2])

    def nan_extremes(x, y):
        return (jnp.maximum(x, y), jnp.minimum(x, y), jnp.fmax(x, y), jnp.fmin(x, y), jnp.max(x),
                jnp.argmax(x), jnp.nanmax(x))

    def vmap_while(n):
        def one(k):
            return jax.lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 1.01 + 1),
                                      (0, 0.0))
        return jax.vmap(one)(n)

    def nested_scan(x):
        def outer(c, row):
            last, seen = jax.lax.scan(lambda a, v: (a * 0.9 + v, a), c, row)
            return last, seen.sum()
        return jax.lax.scan(outer, jnp.zeros(()), x)

    def traced_fori(x, n):
        return jax.lax.fori_loop(0, n[0], lambda i, v: v * 0.99 + jnp.sin(v + i), x)

    def overflow(a):
        return jnp.cumprod(a, axis=1), jnp.cumsum(a.astype(jnp.int8), axis=1)

    with_nan = f32(4096)
    with_nan[::97] = np.nan
    return {
        'float to int/half/bool conversions of specials': (conversions, [np.tile(special, 64)]),
        'shifts by 0..40 s32 and u8': (
            shifts, [r.randint(-1000, 1000, 4096).astype(np.int32),
                     r.randint(0, 41, 4096).astype(np.int32)]),
        'int division by negatives and zero': (
            int_division, [r.randint(-100, 100, 4096).astype(np.int32),
                           r.choice([-7, -1, 0, 1, 3, 2147483647], 4096).astype(np.int32)]),
        'float mod fmod floor_divide round power': (
            float_mods, [f32(4096) * 5, r.choice([-2.5, -1, 0.5, 3, 0], 4096).astype(np.float32)]),
        'int power and integer_pow': (
            int_powers, [r.randint(-5, 6, 4096).astype(np.int32),
                         r.randint(0, 8, 4096).astype(np.int32)]),
        'dynamic_update_slice and slice out of bounds': (
            out_of_bounds, [f32(64, 64), f32(16, 16), np.array([60, -5], np.int32)]),
        'scatter drop clip min max mul': (
            scatter_modes, [f32(1000), r.randint(-50, 1100, 5000).astype(np.int32), f32(5000)]),
        'take_along_axis negative, take wrap': (
            takes, [f32(256, 64), r.randint(-64, 64, (256, 64)).astype(np.int32)]),
        'select 4 conditions default nan': (select, [f32(1 << 16) * 2]),
        'piecewise 3 pieces': (piecewise, [f32(1 << 16) * 2]),
        'nan max min fmax argmax nanmax': (nan_extremes, [with_nan, f32(4096)]),
        'vmap while different trip counts': (
            vmap_while, [r.randint(0, 200, 256).astype(np.int32)], 1e-3),
        'nested scan 64x128': (nested_scan, [f32(64, 128)], 1e-3),
        'fori_loop traced bound': (traced_fori, [f32(4096), np.array([37], np.int32)], 1e-3),
        'cumprod int overflow, int8 cumsum wrap': (
            overflow, [r.randint(-9, 10, (64, 40)).astype(np.int32)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
