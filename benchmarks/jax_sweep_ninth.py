#!/usr/bin/env python3
"""Benchmark (not a test): a ninth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
a greedy decode loop with a key/value cache, Sinkhorn iterations, a depthwise convolution's
weight gradient, gamma sampling (a rejection loop under vmap), many tiny Cholesky
factorizations, a batch-1 MLP, an Adam step over many small tensors, a two-key lexsort,
random crops, a selective (linear recurrence) scan, a bicubic resize and a strided 1-D
transposed convolution. Written as held-out programs: none of them is in the other eight
sweeps.

    .venv/bin/python benchmarks/jax_sweep_ninth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(9)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def greedy_decode(emb, wq, wk, wv, wo):
        # 32 steps of a one-layer decoder: each step attends over a cache it appends to.
        steps, d = 32, emb.shape[1]

        def step(i, s):
            tok, kc, vc, out = s
            x = emb[tok]
            q, k, v = x @ wq, x @ wk, x @ wv
            kc = jax.lax.dynamic_update_slice(kc, k[:, None], (0, i, 0))
            vc = jax.lax.dynamic_update_slice(vc, v[:, None], (0, i, 0))
            logits = jnp.einsum('bd,bsd->bs', q, kc) / np.sqrt(d)
            logits = jnp.where(jnp.arange(steps)[None] <= i, logits, -1e9)
            h = jnp.einsum('bs,bsd->bd', jax.nn.softmax(logits, -1), vc) @ wo
            nxt = jnp.argmax(h @ emb.T, -1).astype(jnp.int32)
            return nxt, kc, vc, out.at[:, i].set(nxt)

        b = 8
        s0 = (jnp.zeros(b, jnp.int32) + jnp.arange(b, dtype=jnp.int32),
              jnp.zeros((b, steps, d)), jnp.zeros((b, steps, d)),
              jnp.zeros((b, steps), jnp.int32))
        return jax.lax.fori_loop(0, steps, step, s0)[3]

    def sinkhorn(c):
        # Log-domain Sinkhorn, 50 iterations: two logsumexps over both axes per step.
        logk = -c / 0.1

        def step(_, uv):
            u, v = uv
            u = -jax.nn.logsumexp(logk + v[None, :], axis=1)
            v = -jax.nn.logsumexp(logk + u[:, None], axis=0)
            return u, v

        u, v = jax.lax.fori_loop(0, 50, step, (jnp.zeros(c.shape[0]), jnp.zeros(c.shape[1])))
        return jnp.exp(logk + u[:, None] + v[None, :])

    def depthwise_weight_grad(x, w):
        def loss(w):
            y = jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                             dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
                                             feature_group_count=x.shape[-1])
            return jnp.sum(y ** 2)
        return jax.grad(loss)(w)

    def gamma(key_data):
        key = jax.random.wrap_key_data(key_data)
        return jax.random.gamma(key, 2.5, (1 << 16,))

    def tiny_cholesky(a):
        return jnp.linalg.cholesky(a @ jnp.swapaxes(a, -1, -2) + 8 * jnp.eye(8))

    def mlp_batch1(x, w1, w2, w3):
        return jax.nn.softmax(jax.nn.relu(jax.nn.relu(x @ w1) @ w2) @ w3)

    def adam_many(*args):
        n = len(args) // 4
        ps, gs, ms, vs = args[:n], args[n:2 * n], args[2 * n:3 * n], args[3 * n:]
        out = []
        for p, g, m, v in zip(ps, gs, ms, vs):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            out.append(p - 1e-3 * (m / 0.1) / (jnp.sqrt(v / 0.001) + 1e-8))
        return out

    def lexsort(a, b):
        return jnp.lexsort((a, b))

    def random_crops(img, ys, xs):
        def crop(i, y, x):
            return jax.lax.dynamic_slice(i, (y, x, 0), (64, 64, 3))
        return jax.vmap(crop)(img, ys, xs)

    def selective_scan(a, b):
        # h_t = a_t * h_{t-1} + b_t over 1024 steps of 8 x 256 states, as an associative scan.
        def comb(l, r):
            return l[0] * r[0], r[0] * l[1] + r[1]
        return jax.lax.associative_scan(comb, (a, b), axis=1)[1]

    def bicubic(x):
        return jax.image.resize(x, (8, 128, 128, 3), 'bicubic')

    def conv1d_transpose(x, w):
        return jax.lax.conv_transpose(x, w, (4,), 'SAME', dimension_numbers=('NWC', 'WIO', 'NWC'))

    adam_shapes = [(64,), (256,), (64, 64), (128,), (32, 32, 3), (512,)] * 20
    adam_in = ([f32(*s) for s in adam_shapes] + [f32(*s) for s in adam_shapes] +
               [f32(*s) * .1 for s in adam_shapes] + [np.abs(f32(*s)) for s in adam_shapes])

    return {
        'greedy decode 32 steps b8 vocab 512 d64': (
            greedy_decode, [f32(512, 64), f32(64, 64) * .1, f32(64, 64) * .1, f32(64, 64) * .1,
                            f32(64, 64) * .1]),
        'sinkhorn 50 iters 512x512': (sinkhorn, [np.abs(f32(512, 512))], 1e-3),
        'depthwise 3x3 weight grad b8 56x56x64': (depthwise_weight_grad, [f32(8, 56, 56, 64), f32(3, 3, 1, 64)], 1e-3),
        'random gamma 2.5 2^16': (gamma, [np.array([0, 42], np.uint32)], 1e-4),
        'tiny cholesky 4096 x 8x8': (tiny_cholesky, [f32(4096, 8, 8)], 1e-4),
        'mlp batch 1 784x256x256x10': (mlp_batch1, [f32(1, 784), f32(784, 256) * .05, f32(256, 256) * .05, f32(256, 10) * .05], 1e-5),
        'adam over 120 small tensors': (adam_many, adam_in, 1e-5),
        'lexsort 2 keys 2^18': (lexsort, [r.randint(0, 1000, 1 << 18).astype(np.int32), r.randint(0, 100, 1 << 18).astype(np.int32)]),
        'random crops b64 128x128x3 -> 64x64': (random_crops, [f32(64, 128, 128, 3), r.randint(0, 64, 64).astype(np.int32), r.randint(0, 64, 64).astype(np.int32)]),
        'selective scan 8x1024x256': (selective_scan, [np.abs(f32(8, 1024, 256)) * .3 + .5, f32(8, 1024, 256)], 1e-3),
        'bicubic resize 2x b8 64x64x3': (bicubic, [f32(8, 64, 64, 3)], 1e-4),
        'conv1d transpose s4 b8 w1024 64->32': (conv1d_transpose, [f32(8, 1024, 64), f32(8, 64, 32) * .1], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
