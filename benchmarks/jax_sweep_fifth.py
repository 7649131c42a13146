#!/usr/bin/env python3
"""Benchmark (not a test): a fifth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
batches of tiny matrix products and solves, convolutions in PyTorch's NCHW layout, causal
dilated 1-D convolution stacks, fixed-step ODE integrators and loops with a matrix product
in the body, discounted returns, multi-axis reductions, 2-D gathers and scatters, head
reshuffles, mixed-precision products, SAME average pools that leave padding out of the
count, quantiles, piecewise functions, blur by grouped convolution and masked attention
with a padding mask. Written as held-out programs: none of them is in the other four sweeps.

    .venv-peers/bin/python benchmarks/jax_sweep_fifth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(5)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def tiny_matmuls(a, b):
        return jnp.einsum('nij,njk->nik', a, b)

    def tiny_solves(a, b):
        return jax.vmap(jnp.linalg.solve)(a, b)

    def nchw_conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                            dimension_numbers=('NCHW', 'OIHW', 'NCHW'))

    def wavenet(x, w1, w2, w3):
        for w, d in ((w1, 1), (w2, 2), (w3, 4)):
            y = jax.lax.conv_general_dilated(x, w, (1,), [(2 * d, 0)], rhs_dilation=(d,),
                                             dimension_numbers=('NWC', 'WIO', 'NWC'))
            x = x + jnp.tanh(y) * jax.nn.sigmoid(y)
        return x

    def rk4(y0):
        def f(y):
            return -y + jnp.sin(y) * 0.5

        def step(_, y):
            h = 0.01
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return jax.lax.fori_loop(0, 200, step, y0)

    def rnn_fori(w, h0):
        return jax.lax.fori_loop(0, 100, lambda _, h: jnp.tanh(h @ w), h0)

    def returns(rw):
        return jax.lax.scan(lambda g, x: (x + 0.99 * g, x + 0.99 * g), 0.0, rw, reverse=True)[1]

    def multi_axis(x):
        return jnp.sum(x * x, axis=(0, 2))

    def gather_2d(x, i, j):
        return x[i, j]

    def scatter_2d(x, i, j, v):
        return x.at[i, j].add(v)

    def heads(x):
        return jnp.transpose(x, (0, 2, 1, 3)).reshape(x.shape[0], x.shape[2], -1)

    def bf16_mlp(x, w1, w2):
        h = jax.nn.gelu(jnp.dot(x.astype(jnp.bfloat16), w1.astype(jnp.bfloat16),
                                preferred_element_type=jnp.float32))
        return jnp.dot(h.astype(jnp.bfloat16), w2.astype(jnp.bfloat16),
                       preferred_element_type=jnp.float32)

    def avg_pool_same(x):
        window, strides = (1, 3, 3, 1), (1, 1, 1, 1)
        s = jax.lax.reduce_window(x, 0.0, jax.lax.add, window, strides, 'SAME')
        n = jax.lax.reduce_window(jnp.ones_like(x), 0.0, jax.lax.add, window, strides, 'SAME')
        return s / n

    def quantiles(x):
        return jnp.quantile(x, jnp.array([0.1, 0.5, 0.9]), axis=1)

    def piecewise(x):
        return jnp.where(x < -1, -x * x, jnp.where(x < 1, x, jnp.sqrt(jnp.abs(x))))

    def blur(img, k):
        w = jnp.tile(k[:, :, None, None], (1, 1, 1, 3))
        return jax.lax.conv_general_dilated(img, w, (1, 1), 'SAME', feature_group_count=3,
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def padded_attention(q, k, v, lengths):
        s = jnp.einsum('bqd,bkd->bqk', q, k) / 8.0
        mask = jnp.arange(k.shape[1])[None, None, :] < lengths[:, None, None]
        s = jnp.where(mask, s, -1e9)
        return jnp.einsum('bqk,bkd->bqd', jax.nn.softmax(s, axis=-1), v)

    def batched_gemv(a, x):
        return jax.vmap(jnp.dot)(a, x)

    def conv_nchw_grad(x, w):
        def loss(w):
            y = jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                             dimension_numbers=('NCHW', 'OIHW', 'NCHW'))
            return jnp.sum(jax.nn.relu(y))
        return jax.grad(loss)(w)

    def gumbel_topk(logits, u):
        g = -jnp.log(-jnp.log(u))
        return jax.lax.top_k(logits + g, 4)[1]

    def pad_4d(x):
        return jnp.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0))) * 2.0

    def unique_count(x):
        s = jnp.sort(x)
        return jnp.sum(jnp.concatenate([jnp.ones(1, bool), s[1:] != s[:-1]]))

    def mlp_sgd(x, y, w1, w2, m1, m2):
        def loss(p):
            h = jax.nn.relu(x @ p[0])
            return jnp.mean((h @ p[1] - y) ** 2)
        g1, g2 = jax.grad(loss)((w1, w2))
        m1, m2 = 0.9 * m1 + g1, 0.9 * m2 + g2
        return w1 - 0.01 * m1, w2 - 0.01 * m2, m1, m2

    def segment_softmax(x, seg):
        m = jax.ops.segment_max(x, seg, num_segments=256)
        e = jnp.exp(x - m[seg])
        return e / jax.ops.segment_sum(e, seg, num_segments=256)[seg]

    def clip_norm_rows(x):
        n = jnp.linalg.norm(x, axis=-1, keepdims=True)
        return x * jnp.minimum(1.0, 1.0 / jnp.maximum(n, 1e-6))

    lens = r.randint(16, 256, 16).astype(np.int32)
    return {
        'tiny matmuls 16384 x 4x4 @ 4x4': (tiny_matmuls, [f32(16384, 4, 4), f32(16384, 4, 4)]),
        'tiny solves 4096 x 4x4': (tiny_solves, [f32(4096, 4, 4) + 4 * np.eye(4, dtype=np.float32), f32(4096, 4)], 1e-3),
        'nchw conv3x3 b8 64->64 32x32': (nchw_conv, [f32(8, 64, 32, 32), f32(64, 64, 3, 3) * .05]),
        'wavenet 3 dilated causal b8 w2048 32': (wavenet, [f32(8, 2048, 32), f32(3, 32, 32) * .1, f32(3, 32, 32) * .1, f32(3, 32, 32) * .1]),
        'rk4 fori 200 steps f32[4096]': (rk4, [f32(4096)]),
        'rnn fori 100 tanh(h@w) 64x256': (rnn_fori, [f32(256, 256) * .06, f32(64, 256)]),
        'discounted returns scan 2^13': (returns, [f32(1 << 13)]),
        'sum of squares axes (0,2) f32[64,256,64]': (multi_axis, [f32(64, 256, 64)]),
        'gather x[i, j] 2^16 of 1024x1024': (gather_2d, [f32(1024, 1024), r.randint(0, 1024, 1 << 16).astype(np.int32), r.randint(0, 1024, 1 << 16).astype(np.int32)]),
        'scatter add x.at[i, j] 2^16 into 1024x1024': (scatter_2d, [f32(1024, 1024), r.randint(0, 1024, 1 << 16).astype(np.int32), r.randint(0, 1024, 1 << 16).astype(np.int32), f32(1 << 16)]),
        'heads transpose b32 h16 s128 d64': (heads, [f32(32, 16, 128, 64)]),
        'bf16 mlp f32 accum 512x1024x4096': (bf16_mlp, [f32(512, 1024), f32(1024, 4096) * .03, f32(4096, 1024) * .02], 5e-2),
        'avg pool SAME 3x3 no-pad count b8 64x64x32': (avg_pool_same, [f32(8, 64, 64, 32)]),
        'quantiles 0.1/0.5/0.9 rows 512x2048': (quantiles, [f32(512, 2048)]),
        'piecewise where chain 2^22': (piecewise, [f32(1 << 22)]),
        'blur depthwise 5x5 b8 256x256x3': (blur, [f32(8, 256, 256, 3), np.abs(f32(5, 5)) * .05]),
        'padded attention b16 s256 d64': (padded_attention, [f32(16, 256, 64), f32(16, 256, 64), f32(16, 256, 64), lens]),
        'batched gemv 4096 x 64x64': (batched_gemv, [f32(4096, 64, 64), f32(4096, 64)]),
        'nchw conv weight grad b8 32->32 32x32': (conv_nchw_grad, [f32(8, 32, 32, 32), f32(32, 32, 3, 3) * .1], 1e-3),
        'gumbel top-4 1024x1000': (gumbel_topk, [f32(1024, 1000), r.uniform(0.01, 0.99, (1024, 1000)).astype(np.float32)]),
        'pad 2 b8 128x128x32': (pad_4d, [f32(8, 128, 128, 32)]),
        'unique count 2^18 ints': (unique_count, [r.randint(0, 1 << 16, 1 << 18).astype(np.int32)]),
        'mlp sgd momentum b256 784x512x10': (mlp_sgd, [f32(256, 784), f32(256, 10), f32(784, 512) * .04, f32(512, 10) * .05, f32(784, 512) * .01, f32(512, 10) * .01]),
        'segment softmax 2^16 into 256': (segment_softmax, [f32(1 << 16), np.sort(r.randint(0, 256, 1 << 16)).astype(np.int32)]),
        'clip norm rows f32[8192,256]': (clip_norm_rows, [f32(8192, 256)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
