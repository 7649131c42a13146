#!/usr/bin/env python3
"""Benchmark (not a test): a sixteenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
Crank-Nicolson by tridiagonal solves, cubic spline evaluation, eigenvalues of a batch of
nonsymmetric matrices, product quantization, a mixture of softmaxes, a Gumbel-softmax
straight-through gradient, an Adagrad step, HMC leapfrog steps, Stein variational gradient
descent, a Kalman filter scan, systematic resampling, a distance transform by min-scans, label
propagation in a while loop, PointNet, a RetNet retention, AdaIN, a Haar wavelet pyramid, JPEG
block DCT quantization, Gray-Scott reaction-diffusion, ISTA for the lasso, NMF updates, a t-SNE
gradient, a 20-qubit state-vector circuit, linear blend skinning, sphere tracing and
randomized SVD.
Written as held-out programs: none of them is in the other fifteen sweeps.

    .venv/bin/python benchmarks/jax_sweep_sixteenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(16)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def crank_nicolson(u):
        # 1-D heat equation on 256 rods of 1024 cells, 20 steps, each a tridiagonal solve.
        n = u.shape[-1]
        a = 0.4
        dl = jnp.full((u.shape[0], n), -a / 2).at[:, 0].set(0)
        du = jnp.full((u.shape[0], n), -a / 2).at[:, -1].set(0)
        d = jnp.full((u.shape[0], n), 1 + a)

        def step(_, u):
            rhs = u + a / 2 * (jnp.roll(u, 1, -1) - 2 * u + jnp.roll(u, -1, -1))
            return jax.lax.linalg.tridiagonal_solve(dl, d, du, rhs[..., None])[..., 0]
        return jax.lax.fori_loop(0, 20, step, u)

    def spline_eval(coef, x):
        # Uniform cubic B-spline on 4096 knots at 2^18 points.
        i = jnp.clip(jnp.floor(x).astype(jnp.int32), 1, coef.shape[0] - 3)
        t = x - i
        b0, b1 = (1 - t) ** 3 / 6, (3 * t ** 3 - 6 * t ** 2 + 4) / 6
        b2, b3 = (-3 * t ** 3 + 3 * t ** 2 + 3 * t + 1) / 6, t ** 3 / 6
        return b0 * coef[i - 1] + b1 * coef[i] + b2 * coef[i + 1] + b3 * coef[i + 2]

    def pq_encode(x, codebooks):
        # 8 subspaces of 16 dims, 256 centroids each.
        xs = x.reshape(x.shape[0], 8, 16)
        d = (jnp.sum(xs * xs, -1)[..., None] - 2 * jnp.einsum('nsd,skd->nsk', xs, codebooks)
             + jnp.sum(codebooks * codebooks, -1)[None])
        return jnp.argmin(d, -1).astype(jnp.uint8)

    def mixture_of_softmaxes(h, wp, wk, emb):
        prior = jax.nn.softmax(h @ wp, -1)
        hk = jnp.tanh(jnp.einsum('bd,kde->bke', h, wk))
        probs = jax.nn.softmax(hk @ emb.T, -1)
        return jnp.log(jnp.einsum('bk,bkv->bv', prior, probs) + 1e-9)

    def gumbel_st(logits, g, w):
        def loss(logits):
            y = jax.nn.softmax((logits + g) / 0.5, -1)
            hard = jax.nn.one_hot(jnp.argmax(y, -1), y.shape[-1])
            st = hard + y - jax.lax.stop_gradient(y)
            return jnp.sum((st @ w) ** 2)
        return jax.grad(loss)(logits)

    def adagrad(p, g, acc):
        acc = acc + g * g
        return p - 0.01 * g / (jnp.sqrt(acc) + 1e-10), acc

    def hmc(q, p, mu):
        logp = lambda q: -0.5 * jnp.sum((q - mu) ** 2 * jnp.arange(1, q.shape[-1] + 1))

        def leap(_, s):
            q, p = s
            p = p + 0.05 * jax.grad(logp)(q)
            return q + 0.1 * p, p
        return jax.lax.fori_loop(0, 10, leap, (q, p))

    def svgd(x):
        logp_grad = jax.grad(lambda x: -0.5 * jnp.sum(x ** 2))(x)
        d2 = jnp.sum((x[:, None] - x[None]) ** 2, -1)
        h = jnp.median(d2) / np.log(x.shape[0] + 1)
        k = jnp.exp(-d2 / h)
        grad_k = -2 / h * (k.sum(1, keepdims=True) * x - k @ x)
        return x + 0.1 * (k @ logp_grad - grad_k) / x.shape[0]

    def kalman(ys, a, c, q, rr):
        n = a.shape[0]

        def step(s, y):
            m, p = s
            m, p = a @ m, a @ p @ a.T + q
            s_ = c @ p @ c.T + rr
            k = jnp.linalg.solve(s_, c @ p).T
            m = m + k @ (y - c @ m)
            p = (jnp.eye(n) - k @ c) @ p
            return (m, p), m
        return jax.lax.scan(step, (jnp.zeros(n), jnp.eye(n)), ys)[1]

    def resample(w, u):
        c = jnp.cumsum(w / w.sum(-1, keepdims=True), -1)
        pos = (jnp.arange(w.shape[-1]) + u[:, None]) / w.shape[-1]
        return jax.vmap(jnp.searchsorted)(c, pos)

    def distance_transform(mask):
        # City-block distance to the mask, one axis at a time: min_j d[j] + |i - j| is
        # i + cummin(d - j) forward and cummin(d + j) - i backward.
        d = jnp.where(mask, 0.0, 1e6)
        for axis in (1, 2):
            shape = [1] * d.ndim
            shape[axis] = -1
            i = jnp.arange(d.shape[axis], dtype=jnp.float32).reshape(shape)
            d = jnp.minimum(jax.lax.cummin(d - i, axis) + i,
                            jax.lax.cummin(d + i, axis, reverse=True) - i)
        return d

    def label_propagation(mask):
        labels = jnp.where(mask, jnp.arange(mask.size).reshape(mask.shape), mask.size)

        def body(s):
            lab, _ = s
            nb = jnp.minimum(jnp.minimum(jnp.roll(lab, 1, 0), jnp.roll(lab, -1, 0)),
                             jnp.minimum(jnp.roll(lab, 1, 1), jnp.roll(lab, -1, 1)))
            new = jnp.where(mask, jnp.minimum(lab, nb), mask.size)
            return new, jnp.any(new != lab)
        return jax.lax.while_loop(lambda s: s[1], body, (labels, True))[0]

    def pointnet(pts, w1, w2, w3, w4):
        h = jax.nn.relu(pts @ w1)
        h = jax.nn.relu(h @ w2)
        h = jax.nn.relu(h @ w3)
        return jnp.max(h, 1) @ w4

    def retention(q, k, v):
        s = q.shape[2]
        gamma = 1 - 2.0 ** (-5 - jnp.arange(q.shape[1], dtype=jnp.float32))
        n = jnp.arange(s)
        decay = jnp.where(n[:, None] >= n[None], gamma[:, None, None] ** (n[:, None] - n[None]), 0)
        return jnp.einsum('bhqk,bhkd->bhqd', jnp.einsum('bhqd,bhkd->bhqk', q, k) * decay, v)

    def adain(content, style):
        cm, cs = content.mean((1, 2), keepdims=True), content.std((1, 2), keepdims=True) + 1e-5
        sm, ss = style.mean((1, 2), keepdims=True), style.std((1, 2), keepdims=True) + 1e-5
        return (content - cm) / cs * ss + sm

    def haar(x):
        out = []
        for _ in range(3):
            a, b = x[:, ::2, ::2], x[:, 1::2, ::2]
            c, d = x[:, ::2, 1::2], x[:, 1::2, 1::2]
            out += [(a - b + c - d) / 2, (a + b - c - d) / 2, (a - b - c + d) / 2]
            x = (a + b + c + d) / 2
        return [x] + out

    k8 = np.arange(8)
    dct8 = np.sqrt(2 / 8) * np.cos(np.pi * (2 * k8[None] + 1) * k8[:, None] / 16)
    dct8[0] /= np.sqrt(2)
    dct8 = dct8.astype(np.float32)
    qtable = (1 + (k8[:, None] + k8[None]) * 3).astype(np.float32)

    def jpeg_blocks(img):
        b, h, w = img.shape
        blocks = img.reshape(b, h // 8, 8, w // 8, 8).transpose(0, 1, 3, 2, 4)
        coef = jnp.einsum('ij,bxyjk,lk->bxyil', dct8, blocks - 128, dct8)
        q = jnp.round(coef / qtable)
        rec = jnp.einsum('ji,bxyjk,kl->bxyil', dct8, q * qtable, dct8) + 128
        return q.astype(jnp.int32), rec.transpose(0, 1, 3, 2, 4).reshape(b, h, w)

    def gray_scott(u, v):
        def lap(a):
            return (jnp.roll(a, 1, 0) + jnp.roll(a, -1, 0) + jnp.roll(a, 1, 1)
                    + jnp.roll(a, -1, 1) - 4 * a)

        def step(_, s):
            u, v = s
            uvv = u * v * v
            return (u + 0.16 * lap(u) - uvv + 0.035 * (1 - u),
                    v + 0.08 * lap(v) + uvv - 0.095 * v)
        return jax.lax.fori_loop(0, 50, step, (u, v))

    def ista(a, b):
        step = 1.0 / jnp.linalg.norm(a, 2) ** 2

        def body(_, x):
            z = x - step * a.T @ (a @ x - b)
            return jnp.sign(z) * jnp.maximum(jnp.abs(z) - step * 0.1, 0)
        return jax.lax.fori_loop(0, 100, body, jnp.zeros(a.shape[1]))

    def nmf(v, w, h):
        def body(_, s):
            w, h = s
            h = h * (w.T @ v) / (w.T @ w @ h + 1e-9)
            w = w * (v @ h.T) / (w @ h @ h.T + 1e-9)
            return w, h
        return jax.lax.fori_loop(0, 50, body, (w, h))

    def tsne_grad(y, p):
        d2 = jnp.sum((y[:, None] - y[None]) ** 2, -1)
        num = 1 / (1 + d2)
        num = num * (1 - jnp.eye(y.shape[0]))
        q = num / num.sum()
        pq = (p - q) * num
        return 4 * (pq.sum(1, keepdims=True) * y - pq @ y)

    def circuit(re, im):
        psi = (re + 1j * im).astype(jnp.complex64)
        psi = psi / jnp.linalg.norm(psi)
        hgate = jnp.array([[1, 1], [1, -1]], jnp.complex64) / np.sqrt(2)
        n = 20
        for qubit in range(n):
            s = psi.reshape(2 ** qubit, 2, 2 ** (n - 1 - qubit))
            psi = jnp.einsum('ij,ajb->aib', hgate, s).reshape(-1)
        phase = jnp.exp(1j * (jnp.pi / 4) * (jnp.arange(2 ** n) % 3))
        return jnp.abs(psi * phase) ** 2

    def skinning(verts, bone_idx, bone_w, mats):
        m = jnp.einsum('vk,vkij->vij', bone_w, mats[bone_idx])
        return jnp.einsum('vij,vj->vi', m[:, :3, :3], verts) + m[:, :3, 3]

    def sphere_trace(origins, dirs):
        centers = jnp.array([[0, 0, 5], [1.5, 0.5, 6], [-1.5, -0.5, 7]], jnp.float32)

        def sdf(p):
            return jnp.min(jnp.linalg.norm(p[:, None] - centers, axis=-1) - 1, -1)

        def step(_, t):
            return t + sdf(origins + t[:, None] * dirs)
        t = jax.lax.fori_loop(0, 64, step, jnp.zeros(origins.shape[0]))
        return jnp.where(t < 20, t, 20)

    def randomized_svd(a, omega):
        q, _ = jnp.linalg.qr(a @ omega)
        q, _ = jnp.linalg.qr(a @ (a.T @ q))
        return jnp.linalg.svd(q.T @ a, compute_uv=False)

    t = np.linspace(-1, 1, 256)
    yy, xx = np.meshgrid(t, t, indexing='ij')
    grid = np.stack([xx.ravel(), yy.ravel(), np.ones(yy.size)], -1).astype(np.float32)
    dirs = grid / np.linalg.norm(grid, axis=-1, keepdims=True)
    blobs = (np.abs(f32(4, 256, 256)) > 1.6)
    p_aff = np.abs(f32(1024, 1024))
    p_aff = (p_aff + p_aff.T) / (2 * p_aff.sum())
    bones = np.tile(np.eye(4, dtype=np.float32), (64, 1, 1)) + 0.1 * f32(64, 4, 4)
    w4 = np.abs(f32(1 << 16, 4))
    return {
        'crank-nicolson fori 20 tridiagonal 256 x 1024': (
            crank_nicolson, [np.abs(f32(256, 1024))], 1e-3),
        'cubic b-spline 2^18 points 4096 knots': (
            spline_eval, [f32(4096), (np.random.RandomState(1).rand(1 << 18) * 4090 + 1)
                          .astype(np.float32)], 1e-3),
        'batched eigvals 256 x 16x16': (
            lambda a: jnp.sort_complex(jnp.linalg.eigvals(a)), [f32(256, 16, 16)], 1e-3),
        'product quantization 8192 x 128, 8x256': (pq_encode, [f32(8192, 128), f32(8, 256, 16)]),
        'mixture of softmaxes b256 k4 vocab 8192 d256': (
            mixture_of_softmaxes, [f32(256, 256), f32(256, 4) * .1, f32(4, 256, 256) * .05,
                                   f32(8192, 256) * .1], 1e-3),
        'gumbel-softmax straight-through grad 4096 x 64': (
            gumbel_st, [f32(4096, 64), f32(4096, 64), f32(64, 32) * .1], 1e-3),
        'adagrad step 2^22 params': (adagrad, [f32(1 << 22), f32(1 << 22),
                                               np.abs(f32(1 << 22))], 1e-3),
        'hmc leapfrog fori 10 4096 chains d32': (hmc, [f32(4096, 32), f32(4096, 32), f32(32)],
                                                 1e-3),
        'svgd step 1024 particles d16': (svgd, [f32(1024, 16)], 1e-3),
        'kalman filter scan 200 steps n16 m8': (
            kalman, [f32(200, 8), np.eye(16, dtype=np.float32) * .95 + f32(16, 16) * .01,
                     f32(8, 16) * .3, np.eye(16, dtype=np.float32) * .01,
                     np.eye(8, dtype=np.float32) * .1], 1e-2),
        'systematic resampling 64 x 4096': (
            resample, [np.abs(f32(64, 4096)), r.rand(64).astype(np.float32)]),
        'distance transform b4 256x256': (distance_transform, [blobs]),
        'label propagation while 4 x 256x256': (label_propagation, [blobs[0]]),
        'pointnet b32 x 1024 points': (
            pointnet, [f32(32, 1024, 3), f32(3, 64) * .3, f32(64, 128) * .1, f32(128, 1024) * .1,
                       f32(1024, 40) * .03], 1e-3),
        'retnet retention b4 h8 s512 d64': (
            retention, [f32(4, 8, 512, 64) * .1, f32(4, 8, 512, 64) * .1, f32(4, 8, 512, 64)],
            1e-3),
        'adain b8 64x64x256': (adain, [f32(8, 64, 64, 256), f32(8, 64, 64, 256)], 1e-3),
        'haar wavelet 3 levels b8 512x512': (haar, [f32(8, 512, 512)]),
        'jpeg 8x8 dct quantize b8 256x256': (
            jpeg_blocks, [(np.abs(f32(8, 256, 256)) * 60).astype(np.float32)]),
        'gray-scott fori 50 512x512': (
            gray_scott, [np.ones((512, 512), np.float32) - .1 * np.abs(f32(512, 512)),
                         .1 * np.abs(f32(512, 512))], 1e-3),
        'ista lasso fori 100 1024x512': (ista, [f32(1024, 512) * .05, f32(1024)], 1e-2),
        'nmf fori 50 512x256 k16': (
            nmf, [np.abs(f32(512, 256)), np.abs(f32(512, 16)), np.abs(f32(16, 256))], 1e-2),
        'tsne gradient 1024 points': (tsne_grad, [f32(1024, 2), p_aff.astype(np.float32)],
                                      1e-3),
        'state-vector hadamards 20 qubits': (circuit, [f32(1 << 20), f32(1 << 20)], 1e-3),
        'linear blend skinning 2^16 verts 4 bones': (
            skinning, [f32(1 << 16, 3), r.randint(0, 64, (1 << 16, 4)).astype(np.int32),
                       (w4 / w4.sum(-1, keepdims=True)).astype(np.float32), bones], 1e-3),
        'sphere tracing fori 64 256x256 rays': (
            sphere_trace, [np.zeros_like(dirs), dirs.astype(np.float32)], 1e-3),
        'randomized svd 4096x512 rank 32': (randomized_svd, [f32(4096, 512), f32(512, 32)],
                                            1e-2),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
