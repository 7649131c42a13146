#!/usr/bin/env python3
"""Benchmark (not a test): a fifteenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
conjugate gradients in a while loop, a lattice Boltzmann step, a leapfrog wave equation, an
Ising checkerboard sweep, a z-buffer by scatter-min, RoIAlign, anchor box decoding, an MLP-Mixer
block, a Perceiver cross-attention, a RAFT correlation volume, NeRF volume rendering and
positional encoding, a VQ-VAE codebook lookup with its straight-through gradient, a DLRM
feature interaction, a factorization machine, a two-tower top-k retrieval, an EGNN message
pass, spectral normalization, a Lion and an RMSprop step, a Glow actnorm and 1x1 invertible
convolution, a DCGAN generator layer, total-variation and Charbonnier losses, a pinball loss,
Student-t and Poisson likelihoods, digamma and the regularized incomplete gamma, covariance and
correlation matrices, a 3-D FFT, a 3-D max pool, a histogram of oriented gradients, a Hough
transform, a soft-DTW by anti-diagonals, Euclid's GCD and Collatz steps in vmapped while loops,
a vmapped xorshift scan, nonzero with a size, repeat with a total length, a T5 relative
position bucket bias, a lax.switch inside a scan, a GLU 1-D convolution, an overlap-add iSTFT,
Rodrigues rotations, f16 sums with f32 accumulation, int16/uint8 image arithmetic and a nonsymmetric
eigenvalue problem.
Written as held-out programs: none of them is in the other fourteen sweeps.

    .venv/bin/python benchmarks/jax_sweep_fifteenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(15)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def conjugate_gradient(a, b):
        def cond(s):
            return (s[4] < 200) & (s[3] > 1e-10)

        def body(s):
            x, res, p, rr, k = s
            ap = a @ p
            alpha = rr / jnp.dot(p, ap)
            x, res = x + alpha * p, res - alpha * ap
            rr_new = jnp.dot(res, res)
            return x, res, res + (rr_new / rr) * p, rr_new, k + 1
        x0 = jnp.zeros_like(b)
        return jax.lax.while_loop(cond, body, (x0, b, b, jnp.dot(b, b), 0))[0]

    e = np.array([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [1, 1], [-1, 1], [-1, -1], [1, -1]])
    wq = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4, np.float32)

    def lbm_steps(f):
        def step(_, f):
            rho = f.sum(0)
            ux = (f * e[:, 0, None, None]).sum(0) / rho
            uy = (f * e[:, 1, None, None]).sum(0) / rho
            cu = 3 * (e[:, 0, None, None] * ux + e[:, 1, None, None] * uy)
            feq = wq[:, None, None] * rho * (1 + cu + 0.5 * cu * cu - 1.5 * (ux * ux + uy * uy))
            f = f - (f - feq) / 0.6
            return jnp.stack([jnp.roll(f[i], (int(e[i, 1]), int(e[i, 0])), (0, 1))
                              for i in range(9)])
        return jax.lax.fori_loop(0, 10, step, f)

    def wave_leapfrog(u0, u1):
        def step(_, s):
            a, b = s
            lap = (jnp.roll(b, 1, 0) + jnp.roll(b, -1, 0) + jnp.roll(b, 1, 1)
                   + jnp.roll(b, -1, 1) - 4 * b)
            return b, 2 * b - a + 0.1 * lap
        return jax.lax.fori_loop(0, 100, step, (u0, u1))[1]

    def ising_sweep(spins, key_bits):
        u = jax.random.uniform(jax.random.wrap_key_data(key_bits), spins.shape)
        ii, jj = np.indices(spins.shape)
        for color in (0, 1):
            nb = (jnp.roll(spins, 1, 0) + jnp.roll(spins, -1, 0) + jnp.roll(spins, 1, 1)
                  + jnp.roll(spins, -1, 1))
            de = 2 * spins * nb
            flip = (u < jnp.exp(-0.44 * de)) & ((ii + jj) % 2 == color)
            spins = jnp.where(flip, -spins, spins)
        return spins

    def zbuffer(xy, z):
        idx = xy[:, 1] * 256 + xy[:, 0]
        return jnp.full((256 * 256,), jnp.inf).at[idx].min(z).reshape(256, 256)

    def roi_align(feat, boxes, bidx):
        # feat [b, h, w, c]; boxes [n, 4] (y0, x0, y1, x1) in pixels; 7x7 bins, one sample each.
        t = (jnp.arange(7) + 0.5) / 7
        ys = boxes[:, 0, None] + t * (boxes[:, 2] - boxes[:, 0])[:, None]
        xs = boxes[:, 1, None] + t * (boxes[:, 3] - boxes[:, 1])[:, None]
        y0, x0 = jnp.floor(ys), jnp.floor(xs)
        wy, wx = ys - y0, xs - x0
        y0, x0 = y0.astype(jnp.int32), x0.astype(jnp.int32)

        def at(yi, xi):
            yi = jnp.clip(yi, 0, feat.shape[1] - 1)
            xi = jnp.clip(xi, 0, feat.shape[2] - 1)
            return feat[bidx[:, None, None], yi[:, :, None], xi[:, None, :]]
        wy, wx = wy[:, :, None, None], wx[:, None, :, None]
        return ((1 - wy) * (1 - wx) * at(y0, x0) + (1 - wy) * wx * at(y0, x0 + 1)
                + wy * (1 - wx) * at(y0 + 1, x0) + wy * wx * at(y0 + 1, x0 + 1))

    def decode_boxes(anchors, deltas):
        wa, ha = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
        cxa, cya = anchors[:, 0] + 0.5 * wa, anchors[:, 1] + 0.5 * ha
        dx, dy, dw, dh = (deltas[:, i] for i in range(4))
        dw, dh = jnp.minimum(dw, 4.135), jnp.minimum(dh, 4.135)
        cx, cy, w, h = dx * wa + cxa, dy * ha + cya, jnp.exp(dw) * wa, jnp.exp(dh) * ha
        return jnp.clip(jnp.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1), 0, 1024)

    def layer_norm(x):
        m = x.mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-6)

    def mixer_block(x, t1, t2, c1, c2):
        y = jnp.swapaxes(layer_norm(x), 1, 2)
        x = x + jnp.swapaxes(jax.nn.gelu(y @ t1) @ t2, 1, 2)
        return x + jax.nn.gelu(layer_norm(x) @ c1) @ c2

    def perceiver_cross(latents, inputs, wq, wk, wv):
        q = layer_norm(latents) @ wq
        kv = layer_norm(inputs)
        s = jnp.einsum('ld,bnd->bln', q, kv @ wk) / np.sqrt(q.shape[-1])
        return latents + jnp.einsum('bln,bnd->bld', jax.nn.softmax(s, -1), kv @ wv)

    def correlation_volume(f1, f2):
        b, h, w, c = f1.shape
        corr = jnp.einsum('bhwc,bHWc->bhwHW', f1, f2) / np.sqrt(c)
        pooled = corr.reshape(b, h, w, h // 2, 2, w // 2, 2).mean((4, 6))
        return corr, pooled

    def nerf_render(sigma, rgb, t):
        delta = jnp.concatenate([t[:, 1:] - t[:, :-1], jnp.full((t.shape[0], 1), 1e10)], -1)
        alpha = 1 - jnp.exp(-jax.nn.relu(sigma) * delta)
        trans = jnp.cumprod(jnp.concatenate([jnp.ones((t.shape[0], 1)), 1 - alpha + 1e-10],
                                            -1), -1)[:, :-1]
        w = alpha * trans
        return (w[..., None] * jax.nn.sigmoid(rgb)).sum(1), (w * t).sum(1), w.sum(1)

    def nerf_encode_mlp(p, w1, w2):
        freqs = 2.0 ** jnp.arange(10)
        a = p[:, :, None] * freqs
        enc = jnp.concatenate([p, jnp.sin(a).reshape(p.shape[0], -1),
                               jnp.cos(a).reshape(p.shape[0], -1)], -1)
        return jax.nn.relu(enc @ w1) @ w2

    def vq_loss(z, codebook):
        def loss(z, codebook):
            d = ((z * z).sum(-1, keepdims=True) - 2 * z @ codebook.T
                 + (codebook * codebook).sum(-1))
            q = codebook[jnp.argmin(d, -1)]
            st = z + jax.lax.stop_gradient(q - z)
            return (jnp.mean((jax.lax.stop_gradient(z) - q) ** 2)
                    + 0.25 * jnp.mean((z - jax.lax.stop_gradient(q)) ** 2) + jnp.mean(st ** 2))
        return jax.grad(loss, (0, 1))(z, codebook)

    def dlrm_interaction(dense, emb):
        feats = jnp.concatenate([dense[:, None, :], emb], 1)
        z = jnp.einsum('bnd,bmd->bnm', feats, feats)
        iu = np.triu_indices(feats.shape[1], 1)
        return jnp.concatenate([dense, z[:, iu[0], iu[1]]], -1)

    def factorization_machine(ids, table, lin):
        v = table[ids]
        s = v.sum(1)
        inter = 0.5 * (s * s - (v * v).sum(1)).sum(-1)
        return jax.nn.sigmoid(inter + lin[ids].sum(1))

    def two_tower_topk(q, items):
        qn = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
        vn = items / jnp.linalg.norm(items, axis=-1, keepdims=True)
        return jax.lax.top_k(qn @ vn.T, 16)

    def egnn_layer(h, x, src, dst, we, wh):
        d2 = ((x[src] - x[dst]) ** 2).sum(-1, keepdims=True)
        m = jax.nn.silu(jnp.concatenate([h[src], h[dst], d2], -1) @ we)
        agg = jax.ops.segment_sum(m, dst, h.shape[0])
        coord = jax.ops.segment_sum((x[src] - x[dst]) * jnp.tanh(m[:, :1]), dst, h.shape[0])
        return h + jax.nn.silu(jnp.concatenate([h, agg], -1) @ wh), x + coord / 16

    def spectral_norm(w, u):
        for _ in range(3):
            v = w.T @ u
            v = v / jnp.linalg.norm(v)
            u = w @ v
            u = u / jnp.linalg.norm(u)
        return w / (u @ w @ v)

    def lion(p, g, m):
        u = jnp.sign(0.9 * m + 0.1 * g)
        return p - 1e-4 * (u + 0.01 * p), 0.99 * m + 0.01 * g

    def rmsprop(p, g, v):
        v = 0.9 * v + 0.1 * g * g
        return p - 1e-3 * g / (jnp.sqrt(v) + 1e-8), v

    def glow_step(x, w):
        mean = x.mean((0, 1, 2))
        logs = -jnp.log(x.std((0, 1, 2)) + 1e-6)
        y = (x - mean) * jnp.exp(logs)
        z = jnp.einsum('bhwc,cd->bhwd', y, w)
        logdet = x.shape[1] * x.shape[2] * (logs.sum() + jnp.linalg.slogdet(w)[1])
        return z, logdet

    def dcgan_up(x, w, g, b):
        y = jax.lax.conv_transpose(x, w, (2, 2), 'SAME',
                                   dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        m, v = y.mean((0, 1, 2)), y.var((0, 1, 2))
        return jax.nn.relu((y - m) * jax.lax.rsqrt(v + 1e-5) * g + b)

    def image_losses(x, y):
        tv = (jnp.abs(x[:, 1:] - x[:, :-1]).mean() + jnp.abs(x[:, :, 1:] - x[:, :, :-1]).mean())
        return tv + jnp.mean(jnp.sqrt((x - y) ** 2 + 1e-6))

    def pinball(pred, y):
        q = jnp.array([0.1, 0.25, 0.5, 0.75, 0.9])
        d = y[:, None] - pred
        return jnp.mean(jnp.maximum(q * d, (q - 1) * d))

    def likelihoods(x, df, rate, k):
        from jax.scipy import stats
        return (stats.t.logpdf(x, df).sum(), stats.poisson.logpmf(k, rate).sum(),
                jax.scipy.special.gammaln(rate).sum())

    def special(x, a):
        return jax.scipy.special.digamma(x), jax.scipy.special.gammainc(a, x)

    def cov_corr(x):
        return jnp.cov(x), jnp.corrcoef(x)

    def max_pool3d(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 3, 1), (1, 2, 2, 2, 1),
                                     'SAME')

    def hog(img):
        gx = jnp.zeros_like(img).at[:, :, 1:-1].set(img[:, :, 2:] - img[:, :, :-2])
        gy = jnp.zeros_like(img).at[:, 1:-1, :].set(img[:, 2:, :] - img[:, :-2, :])
        mag = jnp.sqrt(gx * gx + gy * gy)
        ang = jnp.mod(jnp.arctan2(gy, gx), np.pi)
        b = jnp.clip((ang / np.pi * 9).astype(jnp.int32), 0, 8)
        b_, h, w = img.shape
        cells = jax.nn.one_hot(b, 9) * mag[..., None]
        hist = cells.reshape(b_, h // 8, 8, w // 8, 8, 9).sum((2, 4))
        return hist / (jnp.linalg.norm(hist, axis=-1, keepdims=True) + 1e-6)

    def hough(points):
        theta = jnp.linspace(0, np.pi, 180, endpoint=False)
        rho = points[:, 0:1] * jnp.cos(theta) + points[:, 1:2] * jnp.sin(theta)
        ri = jnp.clip(jnp.round(rho + 512).astype(jnp.int32), 0, 1023)
        idx = ri * 180 + jnp.arange(180)
        return jnp.zeros(1024 * 180, jnp.int32).at[idx.reshape(-1)].add(1).reshape(1024, 180)

    def soft_dtw(x, y):
        # Pairwise costs, then R[i, j] = D[i, j] + softmin(R[i-1, j], R[i, j-1], R[i-1, j-1])
        # by anti-diagonals; gamma 1.
        d = ((x[:, :, None, :] - y[:, None, :, :]) ** 2).sum(-1)
        b, n, _ = d.shape
        big = 1e10
        diag_idx = np.arange(n)

        def softmin(a, b_, c):
            return -jax.nn.logsumexp(jnp.stack([-a, -b_, -c]), 0)

        def step(carry, k):
            prev2, prev = carry  # R on diagonals k-2 and k-1, indexed by row i
            i = diag_idx
            j = k - i
            valid = (j >= 0) & (j < n)
            up = jnp.where(i > 0, jnp.roll(prev, 1, -1), big)
            left = prev
            diag = jnp.where(i > 0, jnp.roll(prev2, 1, -1), big)
            first = (k == 0)
            best = jnp.where(first & (i == 0), 0.0, softmin(up, left, diag))
            cost = d[:, i, jnp.clip(j, 0, n - 1)]
            cur = jnp.where(valid, cost + best, big)
            return (prev, cur), None
        init = (jnp.full((b, n), big), jnp.full((b, n), big))
        (_, last), _ = jax.lax.scan(step, init, jnp.arange(2 * n - 1))
        return last[:, n - 1]

    def gcd(a, b):
        def one(a, b):
            return jax.lax.while_loop(lambda s: s[1] != 0, lambda s: (s[1], s[0] % s[1]),
                                      (a, b))[0]
        return jax.vmap(one)(a, b)

    def collatz(n):
        def one(n):
            return jax.lax.while_loop(
                lambda s: s[0] != 1,
                lambda s: (jnp.where(s[0] % 2 == 0, s[0] // 2, 3 * s[0] + 1), s[1] + 1),
                (n, 0))[1]
        return jax.vmap(one)(n)

    def xorshift(seeds):
        def step(s, _):
            s = s ^ (s << 13)
            s = s ^ (s >> 17)
            s = s ^ (s << 5)
            return s, s >> 8
        return jax.lax.scan(step, seeds, None, length=64)[1].sum(0)

    def t5_bias(table):
        q = jnp.arange(512)[:, None]
        k = jnp.arange(512)[None, :]
        rel = k - q
        n = 16
        ret = (rel > 0).astype(jnp.int32) * n
        a = jnp.abs(rel)
        large = 8 + (jnp.log(jnp.maximum(a, 1) / 8) / np.log(128 / 8) * 8).astype(jnp.int32)
        bucket = ret + jnp.where(a < 8, a, jnp.minimum(large, n - 1))
        return jnp.transpose(table[bucket], (2, 0, 1))

    def switch_scan(x, ops):
        branches = [lambda v: jnp.tanh(v), lambda v: v * 0.5 + 1, lambda v: jnp.sin(v),
                    lambda v: jax.nn.relu(v) - 0.1]
        return jax.lax.scan(lambda c, o: (jax.lax.switch(o, branches, c), None), x, ops)[0]

    def glu_conv(x, w):
        y = jax.lax.conv_general_dilated(x, w, (1,), 'SAME', dimension_numbers=('NWC', 'WIO',
                                                                                 'NWC'))
        a, g = jnp.split(y, 2, -1)
        return a * jax.nn.sigmoid(g)

    def istft(spec_re, spec_im):
        frames = jnp.fft.irfft(spec_re + 1j * spec_im, 512, -1)
        win = jnp.asarray(np.hanning(512).astype(np.float32))
        frames = frames * win
        b, t, n = frames.shape
        idx = (np.arange(t)[:, None] * 128 + np.arange(n)).reshape(-1)
        out = jnp.zeros((b, (t - 1) * 128 + n)).at[:, idx].add(frames.reshape(b, -1))
        norm = jnp.zeros(((t - 1) * 128 + n,)).at[idx].add(jnp.tile(win * win, t))
        return out / jnp.maximum(norm, 1e-6)

    def rodrigues(axis_angle, pts):
        theta = jnp.linalg.norm(axis_angle, axis=-1, keepdims=True) + 1e-8
        k = axis_angle / theta
        c, s = jnp.cos(theta), jnp.sin(theta)
        return (pts * c + jnp.cross(k, pts) * s
                + k * jnp.sum(k * pts, -1, keepdims=True) * (1 - c))

    def f16_sums(x):
        return jnp.sum(x, 1, dtype=jnp.float32), jnp.mean(x.astype(jnp.float32), 0)

    def int_image(a, b):
        d = a.astype(jnp.int16) - b.astype(jnp.int16)
        return (jnp.clip(jnp.abs(d) * 2, 0, 255).astype(jnp.uint8),
                jnp.sum(d.astype(jnp.int32) * d, (1, 2)))

    ang = np.linspace(0, 2 * np.pi, 2048, endpoint=False)
    pts = np.stack([np.cos(ang) * 300 + r.randn(2048) * 5, np.sin(ang) * 200], 1)
    spd = f32(1024, 1024) * .03
    spd = (spd @ spd.T + np.eye(1024, dtype=np.float32)).astype(np.float32)
    anchors = np.abs(f32(1 << 16, 2)) * 400
    anchors = np.concatenate([anchors, anchors + 10 + np.abs(f32(1 << 16, 2)) * 50], 1)
    boxes = np.abs(f32(256, 2)) * 20
    boxes = np.concatenate([boxes, boxes + 4 + np.abs(f32(256, 2)) * 10], 1)
    n_nodes, n_edges = 4096, 1 << 16
    spec = np.fft.rfft(f32(4, 124, 512), axis=-1)
    return {
        'conjugate gradient while 1024 spd': (conjugate_gradient, [spd, f32(1024)], 1e-2),
        'lattice boltzmann d2q9 fori 10 256x256': (
            lbm_steps, [(1 / 9 + 0.01 * np.abs(f32(9, 256, 256))).astype(np.float32)], 1e-3),
        'wave leapfrog fori 100 512x512': (wave_leapfrog, [f32(512, 512), f32(512, 512)], 1e-2),
        'ising checkerboard 1024x1024': (
            ising_sweep, [np.sign(f32(1024, 1024)), np.array([7, 11], np.uint32)]),
        'z-buffer scatter-min 2^18 points 256x256': (
            zbuffer, [r.randint(0, 256, (1 << 18, 2)).astype(np.int32), f32(1 << 18)]),
        'roi align 256 boxes 7x7 b2 64x64x256': (
            roi_align, [f32(2, 64, 64, 256), boxes, r.randint(0, 2, 256).astype(np.int32)]),
        'anchor decode 2^16 boxes': (decode_boxes, [anchors, f32(1 << 16, 4) * .1]),
        'mlp-mixer block b8 196x512': (
            mixer_block, [f32(8, 196, 512), f32(196, 256) * .05, f32(256, 196) * .05,
                          f32(512, 2048) * .03, f32(2048, 512) * .03], 1e-3),
        'perceiver cross-attn 256 latents x 4096 inputs d256 b4': (
            perceiver_cross, [f32(256, 256), f32(4, 4096, 256), f32(256, 256) * .05,
                              f32(256, 256) * .05, f32(256, 256) * .05], 1e-3),
        'raft correlation volume b2 32x32 c128': (
            correlation_volume, [f32(2, 32, 32, 128), f32(2, 32, 32, 128)], 1e-3),
        'nerf volume render 4096 rays x 64 samples': (
            nerf_render, [f32(4096, 64), f32(4096, 64, 3),
                          np.sort(np.abs(f32(4096, 64)) * 2 + 2, -1)], 1e-3),
        'nerf posenc + mlp 2^16 x 63->256->4': (
            nerf_encode_mlp, [f32(1 << 16, 3), f32(63, 256) * .1, f32(256, 4) * .1], 1e-3),
        'vq-vae codebook grad 8192 x 64, 512 codes': (
            vq_loss, [f32(8192, 64), f32(512, 64)], 1e-3),
        'dlrm interaction b2048 27x64': (dlrm_interaction, [f32(2048, 64), f32(2048, 26, 64)],
                                         1e-3),
        'factorization machine b4096 39 fields d16': (
            factorization_machine, [r.randint(0, 1 << 18, (4096, 39)).astype(np.int32),
                                    f32(1 << 18, 16) * .1, f32(1 << 18) * .1], 1e-3),
        'two-tower top-16 of 2^16 items b256 d64': (
            two_tower_topk, [f32(256, 64), f32(1 << 16, 64)], 1e-3),
        'egnn layer 4096 nodes 2^16 edges d64': (
            egnn_layer, [f32(n_nodes, 64), f32(n_nodes, 3),
                         r.randint(0, n_nodes, n_edges).astype(np.int32),
                         r.randint(0, n_nodes, n_edges).astype(np.int32),
                         f32(129, 64) * .1, f32(128, 64) * .1], 1e-3),
        'spectral norm 3 power steps 1024x1024': (
            spectral_norm, [f32(1024, 1024), f32(1024)], 1e-3),
        'lion step 2^22 params': (lion, [f32(1 << 22), f32(1 << 22), f32(1 << 22)]),
        'rmsprop step 2^22 params': (rmsprop, [f32(1 << 22), f32(1 << 22),
                                               np.abs(f32(1 << 22))], 1e-3),
        'glow actnorm + 1x1 conv b16 32x32x64': (
            glow_step, [f32(16, 32, 32, 64), np.linalg.qr(f32(64, 64))[0].astype(np.float32)],
            1e-3),
        'dcgan up conv_t 4x4 s2 b16 16x16 256->128 + bn relu': (
            dcgan_up, [f32(16, 16, 16, 256), f32(4, 4, 256, 128) * .02, f32(128), f32(128)],
            1e-3),
        'tv + charbonnier b8 256x256x3': (image_losses, [f32(8, 256, 256, 3),
                                                         f32(8, 256, 256, 3)]),
        'pinball loss 2^18 x 5 quantiles': (pinball, [f32(1 << 18, 5), f32(1 << 18)]),
        'student-t + poisson logpdf 2^20': (
            likelihoods, [f32(1 << 20), np.abs(f32(1 << 20)) + 1, np.abs(f32(1 << 20)) * 5 + .1,
                          r.poisson(3, 1 << 20).astype(np.float32)], 1e-3),
        'digamma + gammainc 2^18': (
            special, [np.abs(f32(1 << 18)) * 5 + .1, np.abs(f32(1 << 18)) * 3 + .5], 1e-3),
        'cov + corrcoef 256 x 8192': (cov_corr, [f32(256, 8192)], 1e-3),
        'fft 3d 64^3 c64': (lambda x: jnp.fft.fftn(x), [f32(64, 64, 64)], 1e-3),
        'max_pool3d 3^3 s2 b2 32^3 c32': (max_pool3d, [f32(2, 32, 32, 32, 32)]),
        'hog 9 bins 8x8 cells b8 256x256': (hog, [f32(8, 256, 256)], 1e-3),
        'hough transform 2048 points x 180 angles': (hough, [pts.astype(np.float32)]),
        'soft-dtw b16 128x128 d8': (soft_dtw, [f32(16, 128, 8), f32(16, 128, 8)], 1e-3),
        'vmap gcd while 2^16 pairs': (
            gcd, [r.randint(1, 1 << 30, 1 << 16).astype(np.int32),
                  r.randint(1, 1 << 30, 1 << 16).astype(np.int32)]),
        'vmap collatz while 2^14': (collatz, [r.randint(1, 1 << 16, 1 << 14).astype(np.int32)]),
        'xorshift scan 64 x 2^16 u32': (
            xorshift, [r.randint(1, 1 << 31, 1 << 16).astype(np.uint32)]),
        'nonzero size 2^16 of 2^20': (
            lambda x: jnp.nonzero(x > 1.5, size=1 << 16, fill_value=-1)[0], [f32(1 << 20)]),
        'repeat total 2^20 of 2^16': (
            lambda x, n: jnp.repeat(x, n, total_repeat_length=1 << 20),
            [f32(1 << 16), np.full(1 << 16, 16, np.int32)]),
        't5 relative bias 512x512 h16': (t5_bias, [f32(32, 16)]),
        'lax.switch in scan 512 x f32[4096]': (
            switch_scan, [f32(4096), r.randint(0, 4, 512).astype(np.int32)], 1e-3),
        'glu conv1d k7 b8 w2048 256->2x256': (glu_conv, [f32(8, 2048, 256), f32(7, 256, 512)
                                                          * .03], 1e-3),
        'istft overlap-add b4 124 frames n512 hop128': (
            istft, [spec.real.astype(np.float32), spec.imag.astype(np.float32)], 1e-3),
        'rodrigues rotate 2^20 points': (rodrigues, [f32(1 << 20, 3), f32(1 << 20, 3)], 1e-3),
        'f16 sums f32 accum 4096x1024': (
            f16_sums, [f32(4096, 1024).astype(np.float16)], 1e-3),
        'int16 diff of u8 images b16 256x256x3': (
            int_image, [r.randint(0, 256, (16, 256, 256, 3)).astype(np.uint8),
                        r.randint(0, 256, (16, 256, 256, 3)).astype(np.uint8)]),
        'eigvals nonsymmetric 64x64': (
            lambda a: jnp.sort_complex(jnp.linalg.eigvals(a)), [f32(64, 64)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
