#!/usr/bin/env python3
"""Benchmark (not a test): a twelfth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
an HMM's forward algorithm in log space as a scan, Viterbi decoding (a max scan, then the
backtrack as a reverse scan), Sobel edges, a 3x3 median filter, a squeeze-and-excitation
block, a Hessian-vector product, Gaussian-process regression, an affine coupling layer of a
normalizing flow, a LAMB optimizer step, PageRank by power iteration, attention with a
relative-position bias gathered from a table, a triplet loss, a sparse (BCOO) matrix product,
an ODE solved by jax.experimental.ode.odeint, and a convolutional LSTM cell. Written as
held-out programs: none of them is in the other eleven sweeps.

    .venv/bin/python benchmarks/jax_sweep_twelfth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import ode, sparse
    r = np.random.RandomState(12)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def hmm_forward(log_a, log_b):
        # 256 steps, batch 32, 64 states: alpha_t = logsumexp(alpha_{t-1} + log A) + log B_t.
        def step(alpha, lb):
            alpha = jax.nn.logsumexp(alpha[:, :, None] + log_a[None], axis=1) + lb
            return alpha, None
        alpha = jax.lax.scan(step, log_b[0], log_b[1:])[0]
        return jax.nn.logsumexp(alpha, axis=-1)

    def viterbi(log_a, log_b):
        def forward(delta, lb):
            s = delta[:, :, None] + log_a[None]
            return jnp.max(s, 1) + lb, jnp.argmax(s, 1)
        delta, back = jax.lax.scan(forward, log_b[0], log_b[1:])
        last = jnp.argmax(delta, -1)

        def backward(state, bp):
            prev = jnp.take_along_axis(bp, state[:, None], 1)[:, 0]
            return prev, prev
        path = jax.lax.scan(backward, last, back, reverse=True)[1]
        return jnp.max(delta, -1), path

    def sobel(img):
        kx = jnp.array([[-1., 0., 1.], [-2., 0., 2.], [-1., 0., 1.]], jnp.float32)
        k = jnp.stack([kx, kx.T], -1)[:, :, None, :]
        g = jax.lax.conv_general_dilated(img[..., None], k, (1, 1), 'SAME',
                                         dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        return jnp.sqrt(jnp.sum(g * g, -1) + 1e-12)

    def median3x3(img):
        p = jnp.pad(img, ((0, 0), (1, 1), (1, 1)), mode='edge')
        h, w = img.shape[1:]
        win = jnp.stack([p[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], 0)
        return jnp.median(win, 0)

    def se_block(x, w1, w2):
        s = jnp.mean(x, (1, 2))
        e = jax.nn.sigmoid(jax.nn.relu(s @ w1) @ w2)
        return x * e[:, None, None, :]

    def hvp(w1, w2, x, v1, v2):
        def loss(p):
            return jnp.mean(jnp.tanh(x @ p[0]) @ p[1] ** 2)
        return jax.jvp(jax.grad(loss), ((w1, w2),), ((v1, v2),))[1]

    def gp_predict(xt, yt, xs):
        def rbf(a, b):
            d = jnp.sum(a * a, 1)[:, None] + jnp.sum(b * b, 1)[None] - 2 * a @ b.T
            return jnp.exp(-0.5 * d)
        k = rbf(xt, xt) + 0.1 * jnp.eye(xt.shape[0])
        c = jax.scipy.linalg.cho_factor(k, lower=True)
        alpha = jax.scipy.linalg.cho_solve(c, yt)
        ks = rbf(xs, xt)
        mean = ks @ alpha
        v = jax.scipy.linalg.solve_triangular(c[0], ks.T, lower=True)
        return mean, 1.0 - jnp.sum(v * v, 0)

    def coupling(x, w1, w2):
        a, b = jnp.split(x, 2, -1)
        h = jnp.tanh(a @ w1)
        st = h @ w2
        s, t = jnp.split(st, 2, -1)
        s = jnp.tanh(s)
        return jnp.concatenate([a, b * jnp.exp(s) + t], -1), jnp.sum(s, -1)

    def lamb(p, g, m, v):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        u = (m / (1 - 0.9)) / (jnp.sqrt(v / (1 - 0.999)) + 1e-6) + 0.01 * p
        ratio = jnp.linalg.norm(p) / (jnp.linalg.norm(u) + 1e-12)
        return p - 1e-3 * ratio * u, m, v

    def pagerank(adj):
        n = adj.shape[0]
        m = adj / jnp.maximum(adj.sum(0, keepdims=True), 1.0)

        def body(_, x):
            return 0.15 / n + 0.85 * (m @ x)
        return jax.lax.fori_loop(0, 30, body, jnp.full((n,), 1.0 / n, jnp.float32))

    def relpos_attention(q, k, v, table):
        s_len = q.shape[2]
        rel = jnp.arange(s_len)[:, None] - jnp.arange(s_len)[None, :] + s_len - 1
        bias = table[:, rel]  # heads x s x s, gathered
        s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / 8.0 + bias[None]
        return jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s, -1), v)

    def triplet(a, p, n):
        dp = jnp.sum((a - p) ** 2, -1)
        dn = jnp.sum((a[:, None, :] - n[None, :, :]) ** 2, -1)
        return jnp.mean(jax.nn.relu(dp[:, None] - dn + 1.0))

    def bcoo_matmul(data, idx, x):
        m = sparse.BCOO((data, idx), shape=(4096, 4096))
        return m @ x

    def odeint(y0):
        def f(y, t):
            return -y + jnp.sin(t) * jnp.cos(y)
        return ode.odeint(f, y0, jnp.linspace(0., 2., 5, dtype=jnp.float32))

    def conv_lstm(x, h, c, wx, wh):
        def conv(a, w):
            return jax.lax.conv_general_dilated(a, w, (1, 1), 'SAME',
                                                dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        z = conv(x, wx) + conv(h, wh)
        i, f, o, g = jnp.split(z, 4, -1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c

    def log_stochastic(*s):
        a = r.rand(*s).astype(np.float32) + 0.1
        return np.log(a / a.sum(-1, keepdims=True)).astype(np.float32)

    nnz = 1 << 16
    sp_idx = np.stack([r.randint(0, 4096, nnz), r.randint(0, 4096, nnz)], 1).astype(np.int32)
    return {
        'hmm forward scan 256 b32 64 states': (
            hmm_forward, [log_stochastic(64, 64), log_stochastic(256, 32, 64)], 1e-3),
        'viterbi 128 b32 64 states': (
            viterbi, [log_stochastic(64, 64), log_stochastic(128, 32, 64)], 1e-3),
        'sobel edges b16 256x256': (sobel, [f32(16, 256, 256)], 1e-4),
        'median filter 3x3 b8 128x128': (median3x3, [f32(8, 128, 128)], 1e-5),
        'squeeze-excite b8 32x32x128': (
            se_block, [f32(8, 32, 32, 128), f32(128, 32) * .1, f32(32, 128) * .1], 1e-4),
        'hessian-vector product 512x256x64': (
            hvp, [f32(256, 64) * .1, f32(64, 1) * .1, f32(512, 256), f32(256, 64), f32(64, 1)],
            1e-3),
        'gp predict 1024 train 256 test d8': (
            gp_predict, [f32(1024, 8), f32(1024, 1), f32(256, 8)], 1e-2),
        'coupling layer b4096 d64': (
            coupling, [f32(4096, 64), f32(32, 256) * .1, f32(256, 64) * .1], 1e-4),
        'lamb step 2^20 params': (
            lamb, [f32(1 << 20), f32(1 << 20), f32(1 << 20) * .1, np.abs(f32(1 << 20))], 1e-4),
        'pagerank 30 iters 2048': (
            pagerank, [(r.rand(2048, 2048) < 0.01).astype(np.float32)], 1e-4),
        'relative-position attention b4 h8 s128 d64': (
            relpos_attention, [f32(4, 8, 128, 64), f32(4, 8, 128, 64), f32(4, 8, 128, 64),
                               f32(8, 255)], 1e-3),
        'triplet loss 1024 anchors x 1024 negatives d128': (
            triplet, [f32(1024, 128), f32(1024, 128), f32(1024, 128)], 1e-3),
        'bcoo matmul 2^16 nnz 4096^2 @ 4096x64': (
            bcoo_matmul, [f32(nnz), sp_idx, f32(4096, 64)], 1e-3),
        'odeint dopri5 f32[4096]': (odeint, [f32(4096)], 1e-3),
        'conv lstm cell b8 32x32 16->32': (
            conv_lstm, [f32(8, 32, 32, 16), f32(8, 32, 32, 32), f32(8, 32, 32, 32),
                        f32(3, 3, 16, 128) * .1, f32(3, 3, 32, 128) * .1], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
