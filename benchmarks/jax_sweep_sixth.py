#!/usr/bin/env python3
"""Benchmark (not a test): a sixth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
vmapped per-row updates and per-table scatters (batched scatters), float sorts, argsorts,
medians and top-k, scans and fori_loops over scalars and small vectors (cumulative sums,
Newton iterations, a tanh recurrence, a two-carry integrator), segment sums, one-hot
embeddings, logsumexp, 1-D convolution with jnp.convolve, take_along_axis of an argmax,
searchsorted, cumulative products and a bf16 softmax. Written as held-out programs: none of
them is in the other five sweeps.

    .venv-peers/bin/python benchmarks/jax_sweep_sixth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(6)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def set_per_row(rows, i, v):
        return jax.vmap(lambda row, j, x: row.at[j].set(x))(rows, i, v)

    def add_per_table(tables, i, u):
        return jax.vmap(lambda t, j, x: t.at[j].add(x))(tables, i, u)

    def argsort_rows(x):
        return jnp.argsort(x, axis=-1)

    def sort_descending(x):
        return jnp.sort(x)[::-1]

    def median_columns(x):
        return jnp.median(x, axis=0)

    def top_k(x):
        return jax.lax.top_k(x, 8)

    def cumsum_scan(x):
        return jax.lax.scan(lambda c, v: (c + v, c + v), 0.0, x)[1]

    def newton_sqrt(a):
        return jax.lax.fori_loop(0, 50, lambda _, y: 0.5 * (y + a / y), jnp.ones_like(a))

    def tanh_recurrence(xs):
        return jax.lax.scan(lambda h, x: (jnp.tanh(0.9 * h + x), h), jnp.zeros(128), xs)[1]

    def integrator(f):
        def step(c, a):
            x, v = c
            v = v + 0.01 * (a - 0.1 * x)
            x = x + 0.01 * v
            return (x, v), x
        return jax.lax.scan(step, (0.0, 0.0), f)[1]

    def segment_sum(x, ids):
        return jax.ops.segment_sum(x, ids, num_segments=1024)

    def one_hot_embed(ids, table):
        return jax.nn.one_hot(ids, 512) @ table

    def logsumexp_rows(x):
        return jax.nn.logsumexp(x, axis=1)

    def convolve_same(x, k):
        return jnp.convolve(x, k, mode='same')

    def argmax_take(x, y):
        i = jnp.argmax(x, axis=1, keepdims=True)
        return jnp.take_along_axis(y, i, axis=1)

    def searchsorted(s, q):
        return jnp.searchsorted(s, q)

    def cumprod_rows(x):
        return jnp.cumprod(x, axis=1)

    def bf16_softmax(x):
        return jax.nn.softmax(x.astype(jnp.bfloat16), axis=-1).astype(jnp.float32)

    return {
        'vmap row.at[i].set 4096 x 64': (set_per_row, [f32(4096, 64), r.randint(0, 64, 4096).astype(np.int32), f32(4096)]),
        'vmap table.at[i].add 64 x 1024x16 256 rows': (add_per_table, [f32(64, 1024, 16), r.randint(0, 1024, (64, 256)).astype(np.int32), f32(64, 256, 16)], 1e-4),
        'argsort rows f32[256,4096]': (argsort_rows, [f32(256, 4096)]),
        'sort descending f32[2^20]': (sort_descending, [f32(1 << 20)]),
        'median axis 0 f32[2048,512]': (median_columns, [f32(2048, 512)]),
        'top_k 8 of 4096x256': (top_k, [f32(4096, 256)]),
        'cumsum scan 2^14 scalars': (cumsum_scan, [f32(1 << 14)], 1e-3),
        'newton sqrt fori 50 f32[1024]': (newton_sqrt, [np.abs(f32(1024)) + 0.1]),
        'tanh recurrence scan 512 x f32[128]': (tanh_recurrence, [f32(512, 128)], 1e-4),
        'two-carry integrator scan 2^13': (integrator, [f32(1 << 13)], 1e-3),
        'segment_sum 2^18 into 1024': (segment_sum, [f32(1 << 18), r.randint(0, 1024, 1 << 18).astype(np.int32)], 1e-3),
        'one_hot embed 4096 ids vocab 512 d64': (one_hot_embed, [r.randint(0, 512, 4096).astype(np.int32), f32(512, 64)]),
        'logsumexp rows 4096x1000': (logsumexp_rows, [f32(4096, 1000)]),
        'convolve same 2^16 k31': (convolve_same, [f32(1 << 16), f32(31)], 1e-4),
        'argmax take_along_axis 4096x512': (argmax_take, [f32(4096, 512), f32(4096, 512)]),
        'searchsorted 2^16 into 4096': (searchsorted, [np.sort(f32(4096)), f32(1 << 16)]),
        'cumprod rows 1024x512': (cumprod_rows, [1 + 0.01 * f32(1024, 512)], 1e-3),
        'bf16 softmax rows 4096x1024': (bf16_softmax, [f32(4096, 1024)], 2e-2),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
