#!/usr/bin/env python3
"""Benchmark (not a test): a fourth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
whole layers (a transformer encoder layer, a LeNet-style forward, a small CNN training step),
losses and their gradients (Huber, label-smoothed cross-entropy, KL, cosine similarity),
complex matrix products, grouped-query attention, long sequential scans and reverse scans,
batched while loops, matrix powers, stem convolutions with large kernels, f16 products,
rounding chains, segment max, column cumulative sums, one-hot products, embedding bags and
sort-by-key. Written as held-out programs: none of them is in the other three sweeps.

    .venv-peers/bin/python benchmarks/jax_sweep_fourth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(4)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def layernorm(x):
        m = jnp.mean(x, -1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-5)

    def encoder(x, wqkv, wo, w1, w2):
        b, s, d = x.shape
        q, k, v = jnp.split((layernorm(x) @ wqkv).reshape(b, s, 3, 8, d // 8), 3, axis=2)
        a = jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q[:, :, 0], k[:, :, 0]) / 5.66)
        x = x + jnp.einsum('bhqk,bkhd->bqhd', a, v[:, :, 0]).reshape(b, s, d) @ wo
        return x + jax.nn.gelu(layernorm(x) @ w1) @ w2

    def conv(x, w, stride=1, padding='SAME'):
        return jax.lax.conv_general_dilated(x, w, (stride, stride), padding,
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID')

    def lenet(x, w1, w2, w3):
        h = pool(jax.nn.relu(conv(x, w1, padding='VALID')))
        h = pool(jax.nn.relu(conv(h, w2, padding='VALID')))
        return jax.nn.log_softmax(h.reshape(h.shape[0], -1) @ w3)

    def cnn_step(x, y, w1, w2, w3):
        def loss(p):
            h = pool(jax.nn.relu(conv(x, p[0])))
            h = pool(jax.nn.relu(conv(h, p[1])))
            l = jax.nn.log_softmax(jnp.mean(h, (1, 2)) @ p[2])
            return -jnp.mean(jnp.sum(l * y, 1))
        g = jax.grad(loss)((w1, w2, w3))
        return tuple(p - 0.01 * d for p, d in zip((w1, w2, w3), g))

    def stem(x, w): return jax.nn.relu(conv(x, w, stride=2))

    def huber_grad(p, t):
        return jax.grad(lambda p: jnp.mean(jnp.where(jnp.abs(p - t) < 1, 0.5 * (p - t) ** 2,
                                                     jnp.abs(p - t) - 0.5)))(p)

    def smooth_ce(l, y):
        t = jax.nn.one_hot(y, l.shape[1]) * 0.9 + 0.1 / l.shape[1]
        return -jnp.mean(jnp.sum(t * jax.nn.log_softmax(l), 1))

    def kl(a, b):
        p, lq = jax.nn.softmax(a), jax.nn.log_softmax(b)
        return jnp.sum(p * (jnp.log(p) - lq), 1)

    def cos_sim(a, b):
        a = a / jnp.linalg.norm(a, axis=1, keepdims=True)
        return a @ (b / jnp.linalg.norm(b, axis=1, keepdims=True)).T

    def cmatmul(ar, ai, br, bi):
        c = jax.lax.complex(ar, ai) @ jax.lax.complex(br, bi)
        return jnp.real(c), jnp.imag(c)

    def gqa(q, k, v):
        k, v = jnp.repeat(k, 4, axis=1), jnp.repeat(v, 4, axis=1)
        s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / 8.0
        return jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s), v)

    def ema_scan(x):
        return jax.lax.scan(lambda c, v: (0.99 * c + 0.01 * v, c), 0.0, x)[1]

    def reverse_scan(x):
        return jax.lax.scan(lambda c, v: (c * 0.9 + v, c), jnp.zeros(x.shape[1]), x,
                            reverse=True)[1]

    def batched_newton(c):
        def one(c):
            def cond(s): return jnp.abs(s * s - c) > 1e-4 * c
            return jax.lax.while_loop(cond, lambda s: 0.5 * (s + c / s), c)
        return jax.vmap(one)(c)

    def matpow(a):
        return jax.lax.fori_loop(0, 8, lambda i, m: m @ a / 16.0, jnp.eye(a.shape[0]))

    def f16_matmul(a, b): return (a.astype(jnp.float16) @ b.astype(jnp.float16)).astype(jnp.float32)

    def rounding(x):
        return jnp.round(x * 3.3) + jnp.floor(x * 1.7) - jnp.ceil(x) + jnp.trunc(x * 2.1) + jnp.sign(x)

    def segment_max(x, s): return jax.ops.segment_max(x, s, num_segments=512)

    def cumsum_cols(x): return jnp.cumsum(x, axis=0)

    def onehot_matmul(i, w): return jax.nn.one_hot(i, w.shape[0]) @ w

    def embed_bag(t, i): return jnp.sum(t[i], axis=1)

    def sort_by_key(k, v):
        o = jnp.argsort(k)
        return k[o], v[o]

    def nan_clean(x):
        y = jnp.where(x > 2, jnp.nan, x)
        return jnp.nan_to_num(y) + jnp.isfinite(y) + jnp.nanmax(y, 1, keepdims=True)

    def outer_max(a, b): return jnp.max(a[:, None] * b[None, :], axis=1)

    def tile_add(x): return jnp.tile(x, (4, 4)) + 1

    def std_rows(x): return jax.nn.standardize(x, axis=-1)

    def accuracy(l, y): return jnp.mean(jnp.argmax(l, 1) == y)

    def det(a): return jnp.linalg.det(a)

    def causal_softmax(s):
        m = jnp.tril(jnp.ones(s.shape, bool))
        return jax.nn.softmax(jnp.where(m, s, -jnp.inf), axis=-1)

    def bf16_conv(x, w): return conv(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)).astype(jnp.float32)

    def moving_avg(x):
        return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 64), (1, 16), 'VALID') / 64

    def lstm_grad(x, w, u):
        def loss(w, u):
            def cell(c, xt):
                h, s = c
                g = xt @ w + h @ u
                i, f, o, z = jnp.split(g, 4, axis=-1)
                s = jax.nn.sigmoid(f) * s + jax.nn.sigmoid(i) * jnp.tanh(z)
                h = jax.nn.sigmoid(o) * jnp.tanh(s)
                return (h, s), h
            z = jnp.zeros((x.shape[1], u.shape[0]))
            return jnp.sum(jax.lax.scan(cell, (z, z), x)[1])
        return jax.grad(loss, (0, 1))(w, u)

    pts = r.randint(0, 1000, 1024).astype(np.int32)
    return {
        'transformer encoder layer b4 s128 d256': (encoder, [f32(4, 128, 256), f32(256, 768) * .06, f32(256, 256) * .06, f32(256, 1024) * .06, f32(1024, 256) * .03]),
        'lenet forward b64 28x28': (lenet, [f32(64, 28, 28, 1), f32(5, 5, 1, 6) * .2, f32(5, 5, 6, 16) * .1, f32(256, 10) * .1]),
        'small cnn train step b16 32x32': (cnn_step, [f32(16, 32, 32, 3), np.eye(10, dtype=np.float32)[r.randint(0, 10, 16)], f32(3, 3, 3, 16) * .2, f32(3, 3, 16, 32) * .1, f32(32, 10) * .1]),
        'stem conv 7x7 s2 b8 112x112 3->64': (stem, [f32(8, 112, 112, 3), f32(7, 7, 3, 64) * .1]),
        'huber loss grad 2^20': (huber_grad, [f32(1 << 20), f32(1 << 20)]),
        'label-smoothed ce b1024 x 10000': (smooth_ce, [f32(1024, 10000), r.randint(0, 10000, 1024).astype(np.int32)]),
        'kl divergence rows 2048x1000': (kl, [f32(2048, 1000), f32(2048, 1000)]),
        'cosine similarity 1024x256': (cos_sim, [f32(1024, 256), f32(1024, 256)]),
        'complex matmul c64 256^3': (cmatmul, [f32(256, 256), f32(256, 256), f32(256, 256), f32(256, 256)]),
        'gqa attention b4 h16 kv4 s256 d64': (gqa, [f32(4, 16, 256, 64), f32(4, 4, 256, 64), f32(4, 4, 256, 64)]),
        'ema scan 2^14 scalar steps': (ema_scan, [f32(1 << 14)]),
        'reverse scan 512 x 256': (reverse_scan, [f32(512, 256)]),
        'vmap while newton sqrt 4096': (batched_newton, [r.rand(4096).astype(np.float32) * 100 + 1]),
        'matrix power fori 8 256': (matpow, [f32(256, 256)]),
        'f16 matmul 512^3': (f16_matmul, [f32(512, 512), f32(512, 512)], 3e-2),
        'round/floor/ceil/trunc/sign 2^22': (rounding, [f32(1 << 22)]),
        'segment_max 2^16 into 512': (segment_max, [f32(1 << 16, 16), np.sort(r.randint(0, 512, 1 << 16)).astype(np.int32)]),
        'cumsum columns f32[1024,1024]': (cumsum_cols, [f32(1024, 1024)]),
        'one_hot matmul 4096 of 1000x256': (onehot_matmul, [r.randint(0, 1000, 4096).astype(np.int32), f32(1000, 256)]),
        'embedding bag 1024 bags of 16 from 30000x128': (embed_bag, [f32(30000, 128), r.randint(0, 30000, (1024, 16)).astype(np.int32)]),
        'sort by key 2^18': (sort_by_key, [f32(1 << 18), f32(1 << 18)]),
        'nan_to_num+isfinite+nanmax 2048x1024': (nan_clean, [f32(2048, 1024)]),
        'outer product max 4096x1024': (outer_max, [f32(4096), f32(1024)]),
        'tile 4x4 f32[512,512]': (tile_add, [f32(512, 512)]),
        'standardize rows f32[4096,1024]': (std_rows, [f32(4096, 1024)]),
        'argmax accuracy b8192 x 1000': (accuracy, [f32(8192, 1000), pts.repeat(8)]),
        'det 128': (det, [f32(128, 128) + 8 * np.eye(128, dtype=np.float32)], 1e-2),
        'causal softmax f32[8,1024,1024]': (causal_softmax, [f32(8, 1024, 1024)]),
        'bf16 conv3x3 b8 32x32 32->32': (bf16_conv, [f32(8, 32, 32, 32), f32(3, 3, 32, 32) * .1], 5e-2),
        'moving average 64/16 f32[256,16384]': (moving_avg, [f32(256, 16384)]),
        'lstm scan grad 32 steps b16 128': (lstm_grad, [f32(32, 16, 64), f32(64, 512) * .1, f32(128, 512) * .1]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
