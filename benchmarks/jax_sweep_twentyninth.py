#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-ninth sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on shapes nobody tunes for: matrix products of 1000 and of primes (127x129x131, batches of
37 odd products, a matrix-vector product of 4097, a vector times a matrix, an outer product of
3000 by 3001, a bf16 product of 255x257x259, an int32 product), a softmax over GPT-2's 50257
words, a layer norm over 1023 features, CLIP's attention at 77 tokens and its embedding
gather, a 7x7 stride-3 convolution from 3 to 17 channels on 97x97 images, a depthwise
convolution over 5 channels, a 3x3 max pool of 111x111, reductions over a middle axis of
13, over a trailing axis of 1 and over rows of 100003, a six-axis transpose of odd
extents, a cumulative sum and a sort of about a million values, broadcasts of a column
against a row, thousands of 3x3 products, odd pads and strided slices, an FFT of the prime
length 1009 and a tiny two-layer network (per-call overhead). Written as held-out programs:
the operations are in earlier sweeps, these extents are not.

    .venv/bin/python benchmarks/jax_sweep_twentyninth.py [--runs 10] [--only SUBSTRING]"""
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
    import ml_dtypes
    r = np.random.RandomState(29)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def clip_attention(x, wqkv, wo):
        b, s, d = x.shape
        h = 12
        q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
        q, k, v = (t.reshape(b, s, h, d // h) for t in (q, k, v))
        logits = jnp.einsum('bqhd,bkhd->bhqk', q, k) / np.sqrt(d // h)
        mask = jnp.tril(jnp.ones((s, s), bool))
        p = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
        return jnp.einsum('bhqk,bkhd->bqhd', p, v).reshape(b, s, d) @ wo

    def layer_norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g + b

    def conv_stem(x, w):
        return lax.conv_general_dilated(x, w, (3, 3), 'VALID',
                                        dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def depthwise(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                        dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
                                        feature_group_count=x.shape[-1])

    def max_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), 'VALID')

    def tiny_mlp(x, w1, b1, w2, b2):
        return jnp.tanh(x @ w1 + b1) @ w2 + b2

    def pads_and_strides(x):
        p = jnp.pad(x, ((3, 5), (7, 1)))
        return p[::3, 1::5] * 2.0 + x[1::7, ::3].sum()

    bf = ml_dtypes.bfloat16
    return {
        'matmul 1000x1000x1000': (lambda a, b: a @ b, [f32(1000, 1000), f32(1000, 1000)],
                                  1e-3),
        'matmul 127x129x131': (lambda a, b: a @ b, [f32(127, 129), f32(129, 131)]),
        'batched matmul 37 x 61x67x59': (lambda a, b: a @ b,
                                         [f32(37, 61, 67), f32(37, 67, 59)]),
        'matvec 4097x4097': (lambda a, x: a @ x, [f32(4097, 4097), f32(4097)], 1e-3),
        'vector times matrix 1x1000 @ 1000x3000': (lambda x, a: x @ a,
                                                   [f32(1, 1000), f32(1000, 3000)], 1e-3),
        'outer product 3000x3001': (jnp.outer, [f32(3000), f32(3001)]),
        'bf16 matmul 255x257x259': (lambda a, b: a @ b, [f32(255, 257).astype(bf),
                                                          f32(257, 259).astype(bf)], 3e-2),
        'int32 matmul 100x100x100': (lambda a, b: a @ b,
                                     [r.randint(-50, 50, (100, 100)).astype(np.int32),
                                      r.randint(-50, 50, (100, 100)).astype(np.int32)]),
        'softmax 8 rows of 50257': (lambda x: jax.nn.softmax(x, axis=-1), [f32(8, 50257)]),
        'layer norm 1000x1023': (layer_norm, [f32(1000, 1023), f32(1023), f32(1023)]),
        'clip attention b4 s77 d768 h12': (
            clip_attention, [f32(4, 77, 768), f32(768, 2304) * 0.03, f32(768, 768) * 0.03],
            1e-3),
        'clip embedding gather 4x77 of 49408x512': (
            lambda t, i: t[i], [f32(49408, 512), r.randint(0, 49408, (4, 77)).astype(np.int32)]),
        'conv 7x7 stride 3 3->17 b3 97x97': (conv_stem, [f32(3, 97, 97, 3), f32(7, 7, 3, 17)],
                                             1e-3),
        'depthwise 3x3 5 channels b2 333x333': (depthwise, [f32(2, 333, 333, 5),
                                                            f32(3, 3, 1, 5)]),
        'max pool 3x3 s2 b4 111x111x24': (max_pool, [f32(4, 111, 111, 24)]),
        'sum over middle axis 7x1000x13': (lambda x: x.sum(1), [f32(7, 1000, 13)], 1e-3),
        'max over trailing axis of 1 f32[100000,1]': (lambda x: x.max(-1) + x.sum(-1),
                                                      [f32(100000, 1)]),
        'argmax rows of 100003 x 5': (lambda x: jnp.argmax(x, axis=1), [f32(5, 100003)]),
        'transpose 3x5x7x11x13x17 to 5,3,1,4,0,2': (
            lambda x: jnp.transpose(x, (5, 3, 1, 4, 0, 2)), [f32(3, 5, 7, 11, 13, 17)]),
        'cumsum 1000003': (jnp.cumsum, [f32(1000003) * 0.01], 1e-2),
        'sort 1000003': (jnp.sort, [f32(1000003)]),
        'column plus row 1000x1 + 1x1001 then exp': (lambda a, b: jnp.exp(a + b) * 0.5,
                                                      [f32(1000, 1), f32(1, 1001)], 1e-3),
        'batched 3x3 products 100000': (lambda a, b: jnp.einsum('bij,bjk->bik', a, b),
                                        [f32(100000, 3, 3), f32(100000, 3, 3)]),
        'odd pads and strided slices 997x1009': (pads_and_strides, [f32(997, 1009)], 1e-3),
        'fft prime length 1009 x 64 rows': (lambda x: jnp.fft.fft(x, axis=-1),
                                            [f32(64, 1009)], 1e-3),
        'tiny mlp 5x2 -> 3 -> 1': (tiny_mlp, [f32(5, 2), f32(2, 3), f32(3), f32(3, 1),
                                              f32(1)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
