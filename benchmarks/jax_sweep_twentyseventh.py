#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-seventh sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on programs that move more memory than any cache holds (16-64 MB an array), where time is
bandwidth: transposes of large matrices and of attention heads, reversals, strided slices,
pads and concatenations, broadcasts along rows and columns, cumulative sums down and across,
argmax along both axes, column statistics and a column softmax, narrow-row and wide-row
normalizations, casts to and from bf16 and int8 quantization, an embedding gather and a
scatter-add into a large table, a many-input elementwise chain, an Adam update, a global
average pool and a 2x2 max pool.
Held out in size: several are operations earlier sweeps ran on arrays that fit in cache
(layer norm, RMS norm, cumsum, argmax, reversal, scatter-add, Adam, max pool, L2 norm).

    .venv/bin/python benchmarks/jax_sweep_twentyseventh.py [--runs 10] [--only SUBSTRING]"""
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

    def transpose(x):
        return x.T

    def heads_split(x):
        # [batch, seq, heads * dim] -> [batch, heads, seq, dim], as attention does.
        b, s, hd = x.shape
        return x.reshape(b, s, 16, hd // 16).transpose(0, 2, 1, 3)

    def transpose_last_two(x):
        return jnp.swapaxes(x, 1, 2) * 2.0

    def reverse_rows(x):
        return x[::-1]

    def strided_slice(x):
        return x[::2, ::2] + 1.0

    def pad(x):
        return jnp.pad(x, 48, constant_values=-1.0)

    def concatenate(a, b, c, d):
        return jnp.concatenate([a, b * 2, c, d - 1], axis=1)

    def row_and_column_broadcast(x, row, col):
        return x * row[None, :] + col[:, None]

    def cumsum_down(x):
        return jnp.cumsum(x, axis=0)

    def cumsum_across(x):
        return jnp.cumsum(x, axis=1)

    def argmax_rows(x):
        return jnp.argmax(x, axis=1)

    def argmax_columns(x):
        return jnp.argmax(x, axis=0)

    def column_statistics(x):
        m = x.mean(axis=0)
        return m, x.var(axis=0), x.max(axis=0)

    def column_softmax(x):
        return jax.nn.softmax(x, axis=0)

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g + b

    def rmsnorm(x, g):
        return x * lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    def to_bf16(x):
        return (x * 0.5).astype(jnp.bfloat16)

    def from_bf16(x):
        return x.astype(jnp.float32) + 1.0

    def quantize_int8(x):
        scale = jnp.max(jnp.abs(x), axis=0) / 127.0
        return jnp.clip(jnp.round(x / scale), -127, 127).astype(jnp.int8), scale

    def dequantize_int8(q, scale):
        return q.astype(jnp.float32) * scale[None, :]

    def embedding_gather(table, ids):
        return table[ids]

    def scatter_add_rows(table, ids, rows):
        return table.at[ids].add(rows)

    def elementwise_chain(a, b, c, d, e, f):
        return a * b + c * d - e / (jnp.abs(f) + 1.0)

    def adam(p, g, m, v):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        return p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), m, v

    def global_average_pool(x):
        return x.mean(axis=(1, 2))

    def max_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID')

    def l2_normalize(x):
        return x / jnp.linalg.norm(x, axis=1, keepdims=True)

    def sum_of_squares(x):
        return jnp.sum(x * x)

    def bias_gelu(x, b):
        return jax.nn.gelu(x + b, approximate=False)

    def where_select(x, y):
        return jnp.where(x > 0, x, y * 2.0)

    table = f32(50000, 256)
    ids = r.randint(0, 50000, 16384).astype(np.int32)
    qx = r.randint(-127, 128, (8192, 1024)).astype(np.int8)
    return {
        'transpose f32[4096,4096]': (transpose, [f32(4096, 4096)]),
        'attention heads split f32[16,1024,1024]': (heads_split, [f32(16, 1024, 1024)]),
        'swap last two axes f32[64,512,512]': (transpose_last_two, [f32(64, 512, 512)]),
        'reverse rows f32[4096,4096]': (reverse_rows, [f32(4096, 4096)]),
        'strided slice 2x2 f32[8192,4096]': (strided_slice, [f32(8192, 4096)]),
        'pad 48 f32[4000,4000]': (pad, [f32(4000, 4000)]),
        'concatenate 4 x f32[4096,1024] axis 1': (
            concatenate, [f32(4096, 1024) for _ in range(4)]),
        'row and column broadcast f32[8192,2048]': (
            row_and_column_broadcast, [f32(8192, 2048), f32(2048), f32(8192)]),
        'cumsum down f32[4096,2048]': (cumsum_down, [f32(4096, 2048)], 1e-2),
        'cumsum across f32[2048,4096]': (cumsum_across, [f32(2048, 4096)], 1e-2),
        'argmax rows f32[8192,2048]': (argmax_rows, [f32(8192, 2048)]),
        'argmax columns f32[8192,2048]': (argmax_columns, [f32(8192, 2048)]),
        'column mean var max f32[16384,1024]': (column_statistics, [f32(16384, 1024)]),
        'column softmax f32[8192,2048]': (column_softmax, [f32(8192, 2048)]),
        'layernorm narrow rows f32[65536,256]': (
            layernorm, [f32(65536, 256), f32(256), f32(256)]),
        'rmsnorm wide rows f32[1024,16384]': (rmsnorm, [f32(1024, 16384), f32(16384)]),
        'cast to bf16 f32[2^24]': (to_bf16, [f32(1 << 24)], 1e-2),
        'cast from bf16 bf16[2^24]': (from_bf16, [f32(1 << 24).astype(jnp.bfloat16)]),
        'int8 quantize per column f32[8192,1024]': (quantize_int8, [f32(8192, 1024)]),
        'int8 dequantize per column s8[8192,1024]': (
            dequantize_int8, [qx, np.abs(f32(1024)) / 100]),
        'embedding gather 16384 of f32[50000,256]': (embedding_gather, [table, ids]),
        'scatter-add 16384 rows into f32[50000,256]': (
            scatter_add_rows, [table, ids, f32(16384, 256)], 1e-3),
        'elementwise chain 6 x f32[2^22]': (
            elementwise_chain, [f32(1 << 22) for _ in range(6)]),
        'adam update 3 x f32[2^22]': (
            adam, [f32(1 << 22), f32(1 << 22), f32(1 << 22), np.abs(f32(1 << 22))]),
        'global average pool f32[64,56,56,256]': (global_average_pool, [f32(64, 56, 56, 256)]),
        'max pool 2x2 f32[32,224,224,16]': (max_pool, [f32(32, 224, 224, 16)]),
        'l2 normalize rows f32[65536,128]': (l2_normalize, [f32(65536, 128)]),
        'sum of squares f32[2^25]': (sum_of_squares, [f32(1 << 25)], 1e-2),
        'bias + exact gelu f32[8192,3072]': (bias_gelu, [f32(8192, 3072), f32(3072)]),
        'where select f32[2^24]': (where_select, [f32(1 << 24), f32(1 << 24)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
