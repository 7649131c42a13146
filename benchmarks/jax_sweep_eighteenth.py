#!/usr/bin/env python3
"""Benchmark (not a test): an eighteenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked): a
transformer layer with dropout in training mode, argsort down columns, segment min and
product, gathers with clip and fill modes, an einsum with an ellipsis, a 3-D inverse FFT and
hfft, convolve2d, special functions (erfinv, gammaln, i0e, betainc), truncated normal, beta,
multivariate normal and orthogonal samples, reverse cumulative sums and products, a roll by a
traced shift, a random walk in a while loop splitting its key, graph attention with a segment
softmax, top-k of 1024 in 32768, per-element shifts, an f16 layer norm and softmax, a scan
unrolled by 4, jacfwd of a small network and the Hessian of a small loss.
Written as held-out programs: none of them is in the other seventeen sweeps.

    .venv/bin/python benchmarks/jax_sweep_eighteenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as jss
    r = np.random.RandomState(18)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def dropout_layer(x, wq, wk, wv, wo, w1, w2):
        key = jax.random.PRNGKey(7)
        k1, k2, k3 = jax.random.split(key, 3)

        def drop(k, y, rate=0.1):
            keep = jax.random.bernoulli(k, 1 - rate, y.shape)
            return jnp.where(keep, y / (1 - rate), 0)
        b, s, d = x.shape
        q = (x @ wq).reshape(b, s, 4, d // 4)
        kk = (x @ wk).reshape(b, s, 4, d // 4)
        v = (x @ wv).reshape(b, s, 4, d // 4)
        a = jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q, kk) / np.sqrt(d // 4), -1)
        a = drop(k1, a)
        h = x + drop(k2, jnp.einsum('bhqk,bkhd->bqhd', a, v).reshape(b, s, d) @ wo)
        return h + drop(k3, jax.nn.gelu(h @ w1) @ w2)

    def segment_min_prod(x, seg):
        return (jax.ops.segment_min(x, seg, num_segments=1024)
                + jax.ops.segment_prod(jnp.tanh(x) * 0.1 + 1, seg, num_segments=1024))

    def take_modes(x, idx):
        return (jnp.take(x, idx, axis=0, mode='clip')
                + jnp.take(x, idx, axis=0, mode='fill', fill_value=0.0))

    def einsum_ellipsis(x, w):
        return jnp.einsum('b...ij,jk->b...ik', x, w)

    def ifft3(re, im):
        return jnp.abs(jnp.fft.ifftn(re + 1j * im, axes=(-3, -2, -1)))

    def hfft(re, im):
        return jnp.fft.hfft(re + 1j * im, axis=-1)

    def special(x):
        u = jax.nn.sigmoid(x) * 0.98 + 0.01
        return (jss.erfinv(2 * u - 1) + jss.gammaln(jnp.abs(x) + 0.5) + jss.i0e(x)
                + jss.betainc(2.0, 3.0, u))

    def samplers(mean, cov_factor):
        key = jax.random.PRNGKey(11)
        ks = jax.random.split(key, 4)
        t = jax.random.truncated_normal(ks[0], -1.0, 2.0, (4096, 16))
        b = jax.random.beta(ks[1], 2.0, 5.0, (4096, 16))
        cov = cov_factor @ cov_factor.T + 16 * jnp.eye(16)
        m = jax.random.multivariate_normal(ks[2], mean, cov, (4096,))
        o = jax.random.orthogonal(ks[3], 16)
        return t + b + m @ o

    def reverse_scans(x):
        return (jnp.flip(jnp.cumsum(jnp.flip(x, 1), 1), 1)
                + jax.lax.cumprod(jnp.tanh(x) * 0.1 + 1, axis=1, reverse=True))

    def dynamic_roll(x, shift):
        return jnp.roll(x, shift[0], axis=1) - jnp.roll(x, -shift[1], axis=0)

    def random_walk(start):
        def cond(s):
            pos, _, n = s
            return (jnp.max(jnp.abs(pos)) < 20.0) & (n < 2000)

        def body(s):
            pos, key, n = s
            key, sub = jax.random.split(key)
            return pos + jax.random.normal(sub, pos.shape), key, n + 1
        pos, _, n = jax.lax.while_loop(cond, body, (start, jax.random.PRNGKey(5), 0))
        return pos * n

    def gat(x, w, a_src, a_dst, src, dst):
        h = x @ w
        e = jax.nn.leaky_relu(h[src] @ a_src + h[dst] @ a_dst, 0.2)
        n = x.shape[0]
        emax = jax.ops.segment_max(e, dst, num_segments=n)
        p = jnp.exp(e - emax[dst])
        z = jax.ops.segment_sum(p, dst, num_segments=n)
        alpha = p / (z[dst] + 1e-9)
        return jax.ops.segment_sum(alpha[:, None] * h[src], dst, num_segments=n)

    def top_k_large(x):
        v, i = jax.lax.top_k(x, 1024)
        return v.sum(-1) + i[:, :8].astype(jnp.float32).sum(-1)

    def shifts(x, s):
        return (jnp.left_shift(x, s) ^ jnp.right_shift(x, 31 - s)) + jax.lax.shift_right_logical(
            x, s)

    def f16_norm_softmax(x, g):
        x = x.astype(jnp.float16)
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        y = (x - m) * jax.lax.rsqrt(v + 1e-5) * g.astype(jnp.float16)
        return jax.nn.softmax(y, -1).astype(jnp.float32)

    def unrolled_scan(xs, w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()
        h, ys = jax.lax.scan(step, jnp.zeros((xs.shape[1], w.shape[0])), xs, unroll=4)
        return h.sum() + ys.sum()

    def net(x, w1, w2):
        return jnp.tanh(jnp.tanh(x @ w1) @ w2)

    def jacfwd_net(x, w1, w2):
        return jax.vmap(jax.jacfwd(net), in_axes=(0, None, None))(x, w1, w2)

    def hessian_loss(p, x, y):
        def loss(p):
            w = p[:64].reshape(8, 8)
            b = p[64:72]
            return jnp.mean((jnp.tanh(x @ w + b).sum(-1) - y) ** 2)
        return jax.hessian(loss)(p)

    def conv2d(img, k):
        return jax.vmap(lambda a: jax.scipy.signal.convolve2d(a, k, mode='same'))(img)

    n_nodes, n_edges = 4096, 32768
    src = r.randint(0, n_nodes, n_edges).astype(np.int32)
    dst = np.sort(r.randint(0, n_nodes, n_edges)).astype(np.int32)
    return {
        'transformer layer with dropout b8 s128 d256': (
            dropout_layer, [f32(8, 128, 256), f32(256, 256) * .06, f32(256, 256) * .06,
                            f32(256, 256) * .06, f32(256, 256) * .06, f32(256, 1024) * .06,
                            f32(1024, 256) * .03], 1e-3),
        'argsort columns 4096 x 256': (lambda x: jnp.argsort(x, axis=0), [f32(4096, 256)]),
        'segment min and prod 2^18 into 1024': (
            segment_min_prod, [f32(1 << 18), np.sort(r.randint(0, 1024, 1 << 18)).astype(np.int32)],
            1e-3),
        'take clip and fill 2^16 rows of 256': (
            take_modes, [f32(8192, 256), r.randint(-100, 8292, 1 << 16).astype(np.int32)]),
        'einsum ellipsis b...ij,jk b4 16x8 64x64': (
            einsum_ellipsis, [f32(4, 16, 8, 64, 64), f32(64, 64) * .1], 1e-3),
        'ifftn 3-d 64^3': (ifft3, [f32(64, 64, 64), f32(64, 64, 64)], 1e-3),
        'hfft rows 512 x 1025': (hfft, [f32(512, 1025), f32(512, 1025)], 1e-3),
        'erfinv gammaln i0e betainc 2^20': (special, [f32(1 << 20)], 1e-3),
        'truncated normal beta mvn orthogonal 4096 x 16': (
            samplers, [f32(16), f32(16, 16)], 1e-3),
        'reverse cumsum and cumprod 1024 x 1024': (reverse_scans, [f32(1024, 1024)], 1e-3),
        'roll by traced shifts 2048x2048': (
            dynamic_roll, [f32(2048, 2048), np.array([37, 1001], np.int32)]),
        'random walk while key split 4096 walkers': (random_walk, [np.zeros((4096, 2), np.float32)],
                                                     1e-3),
        'gat segment softmax 4096 nodes 32768 edges': (
            gat, [f32(n_nodes, 64), f32(64, 64) * .1, f32(64) * .1, f32(64) * .1, src, dst], 1e-3),
        'top-k 1024 of 32768 b64': (top_k_large, [f32(64, 32768)], 1e-3),
        'per-element shifts 2^22': (
            shifts, [r.randint(-(1 << 30), 1 << 30, 1 << 22).astype(np.int32),
                     r.randint(0, 31, 1 << 22).astype(np.int32)]),
        'f16 layernorm + softmax 8192 x 768': (f16_norm_softmax, [f32(8192, 768), f32(768)],
                                               2e-2),
        'scan unroll 4 200 steps b64 d128': (unrolled_scan, [f32(200, 64, 128) * .1,
                                                             f32(128, 128) * .05], 1e-3),
        'vmap jacfwd 256 x 32->64->16': (jacfwd_net, [f32(256, 32), f32(32, 64) * .2,
                                                      f32(64, 16) * .2], 1e-3),
        'hessian 72 params 1024 samples': (hessian_loss, [f32(72) * .3, f32(1024, 8), f32(1024)],
                                           1e-3),
        'convolve2d same b16 256x256 k7': (conv2d, [f32(16, 256, 256), f32(7, 7) * .1], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
