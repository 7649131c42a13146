#!/usr/bin/env python3
"""Benchmark (not a test): a fourteenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
a CTC loss forward, a bidirectional LSTM, a WGAN gradient penalty, a log-mel spectrogram, paged
attention decoding, SSIM, a sliced Wasserstein distance, Floyd-Warshall, per-sample Jacobians,
a confusion matrix, a Lanczos resize, spatial softmax keypoints, a multi-class hinge loss,
weight-standardized convolution, stochastic depth, an RBF kernel matrix, a masked-LM loss over
gathered positions, a 2-D DCT, spherical harmonics, an edit distance by anti-diagonals, a
Hutchinson trace estimate, triangle counting, a Jacobi Poisson solver, an echo state network, a
Welford variance scan, max-unpooling, a 3-D transposed convolution, a grouped GEMM of sorted
MoE tokens, a TCN block, a segment argmax, a mixture-density loss, Black-Scholes greeks by
autodiff, a RWKV-style time mix, a cumulative trapezoid, a pairwise ranking loss, a Gaussian
blur by separable convolutions, Adafactor's factored second moments, a bilateral grid slice,
GRU with layer norm, a top-k accuracy and a 4-D max over two axes; and, added later, expert
choice routing, a max drawdown, a rolling standard deviation, Adam inside a scan, mesh vertex
normals, voxelization, a weighted bincount, an RNN-T joint network, GShard's capacity
dispatch, a ragged dot, digitize, reduce_precision, convolve2d and batched SVD values.
Written as held-out programs: none of them is in the other thirteen sweeps.

    .venv/bin/python benchmarks/jax_sweep_fourteenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(14)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def ctc_forward(logp, labels):
        # Alpha recursion over the blank-extended label sequence, in log space.
        b, t, _ = logp.shape
        ext = jnp.zeros((b, 2 * labels.shape[1] + 1), jnp.int32).at[:, 1::2].set(labels)
        lp = jnp.take_along_axis(logp, jnp.broadcast_to(ext[:, None, :], (b, t, ext.shape[1])), 2)
        skip = jnp.concatenate([jnp.zeros((b, 2), bool), (ext[:, 2:] != ext[:, :-2])
                                & (ext[:, 2:] != 0)], 1)
        neg = -1e30
        a0 = jnp.full(ext.shape, neg).at[:, :2].set(lp[:, 0, :2])

        def step(a, lpt):
            a1 = jnp.concatenate([jnp.full((b, 1), neg), a[:, :-1]], 1)
            a2 = jnp.where(skip, jnp.concatenate([jnp.full((b, 2), neg), a[:, :-2]], 1), neg)
            return jnp.logaddexp(jnp.logaddexp(a, a1), a2) + lpt, None
        a, _ = jax.lax.scan(step, a0, jnp.swapaxes(lp, 0, 1)[1:])
        return -jnp.logaddexp(a[:, -1], a[:, -2])

    def lstm_dir(x, w, u, reverse):
        n = u.shape[0]

        def cell(hc, xt):
            h, c = hc
            i, f, g, o = jnp.split(xt @ w + h @ u, 4, -1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        z = jnp.zeros((x.shape[1], n))
        return jax.lax.scan(cell, (z, z), x, reverse=reverse)[1]

    def bilstm(x, wf, uf, wb, ub):
        return jnp.concatenate([lstm_dir(x, wf, uf, False), lstm_dir(x, wb, ub, True)], -1)

    def wgan_gp(real, fake, eps, w1, w2):
        critic = lambda x: jnp.sum(jax.nn.leaky_relu(x @ w1, 0.2) @ w2)

        def penalty(w1, w2):
            crit = lambda x: jnp.sum(jax.nn.leaky_relu(x @ w1, 0.2) @ w2)
            xi = eps * real + (1 - eps) * fake
            g = jax.grad(crit)(xi)
            return jnp.mean((jnp.sqrt(jnp.sum(g * g, -1) + 1e-12) - 1) ** 2)
        return critic(fake) - critic(real), jax.grad(penalty, (0, 1))(w1, w2)

    def log_mel(audio, mel):
        frames = jnp.stack([audio[:, i * 160:i * 160 + 400] for i in range(98)], 1)
        win = jnp.asarray(np.hanning(400).astype(np.float32))
        spec = jnp.abs(jnp.fft.rfft(frames * win, 512)) ** 2
        return jnp.log(spec @ mel + 1e-6)

    def paged_decode(q, k_pages, v_pages, table, lengths):
        # q [b, h, d]; pages [P, 16, h, d]; table [b, 64] page ids; lengths [b].
        k = k_pages[table].reshape(q.shape[0], -1, q.shape[1], q.shape[2])
        v = v_pages[table].reshape(q.shape[0], -1, q.shape[1], q.shape[2])
        s = jnp.einsum('bhd,bshd->bhs', q, k) / np.sqrt(q.shape[2])
        s = jnp.where(jnp.arange(k.shape[1])[None, None, :] < lengths[:, None, None], s, -1e9)
        return jnp.einsum('bhs,bshd->bhd', jax.nn.softmax(s, -1), v)

    def ssim(x, y):
        g = np.exp(-0.5 * (np.arange(11) - 5) ** 2 / 1.5 ** 2)
        g = jnp.asarray((np.outer(g, g) / np.outer(g, g).sum()).astype(np.float32))
        c = x.shape[-1]
        blur = lambda a: jax.lax.conv_general_dilated(
            a, jnp.tile(g[:, :, None, None], (1, 1, 1, c)), (1, 1), 'VALID',
            feature_group_count=c, dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        mx, my = blur(x), blur(y)
        sxx, syy, sxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        c1, c2 = 0.01 ** 2, 0.03 ** 2
        s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
        return jnp.mean(s)

    def sliced_wasserstein(a, b, proj):
        pa = jnp.sort(a @ proj, 0)
        pb = jnp.sort(b @ proj, 0)
        return jnp.mean((pa - pb) ** 2)

    def floyd_warshall(d):
        return jax.lax.fori_loop(
            0, d.shape[0], lambda k, d: jnp.minimum(d, d[:, k, None] + d[None, k, :]), d)

    def per_sample_jacobian(x, w1, w2):
        f = lambda x: jnp.tanh(jnp.tanh(x @ w1) @ w2)
        return jax.vmap(jax.jacfwd(f))(x)

    def confusion(pred, label):
        return jnp.zeros((10, 10), jnp.int32).at[label, pred].add(1)

    def lanczos(img):
        return jax.image.resize(img, (img.shape[0], 96, 96, img.shape[3]), 'lanczos3')

    def spatial_softmax(feat):
        b, h, w, c = feat.shape
        p = jax.nn.softmax(feat.reshape(b, h * w, c), 1).reshape(b, h, w, c)
        ys, xs = jnp.linspace(-1, 1, h), jnp.linspace(-1, 1, w)
        return jnp.stack([jnp.einsum('bhwc,h->bc', p, ys), jnp.einsum('bhwc,w->bc', p, xs)], -1)

    def multiclass_hinge(scores, labels):
        correct = jnp.take_along_axis(scores, labels[:, None], 1)
        margins = jnp.maximum(0, scores - correct + 1)
        return jnp.mean(jnp.sum(margins, 1) - 1)

    def ws_conv(x, w):
        w = (w - w.mean((0, 1, 2), keepdims=True)) / (w.std((0, 1, 2), keepdims=True) + 1e-5)
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def drop_path(x, branch, key):
        keep = jax.random.bernoulli(jax.random.wrap_key_data(key), 0.9, (x.shape[0], 1, 1))
        return x + jnp.where(keep, jax.nn.gelu(branch) / 0.9, 0.)

    def rbf_kernel(x, y):
        d = jnp.sum(x ** 2, 1)[:, None] + jnp.sum(y ** 2, 1)[None, :] - 2 * x @ y.T
        return jnp.exp(-0.5 * jnp.maximum(d, 0))

    def mlm_loss(h, emb, pos, labels):
        g = jnp.take_along_axis(h, pos[:, :, None], 1)  # [b, 76, d]
        logits = g @ emb.T
        return jnp.mean(jax.nn.logsumexp(logits, -1)
                        - jnp.take_along_axis(logits, labels[..., None], -1)[..., 0])

    def dct2(x):
        return jax.scipy.fft.dctn(x, axes=(1, 2), norm='ortho')

    def sph_harm_l3(v):
        x, y, z = v[:, 0], v[:, 1], v[:, 2]
        return jnp.stack([
            jnp.ones_like(x) * 0.282, 0.488 * y, 0.488 * z, 0.488 * x, 1.092 * x * y,
            1.092 * y * z, 0.315 * (3 * z * z - 1), 1.092 * x * z, 0.546 * (x * x - y * y),
            0.590 * y * (3 * x * x - y * y), 2.890 * x * y * z, 0.457 * y * (5 * z * z - 1),
            0.373 * z * (5 * z * z - 3), 0.457 * x * (5 * z * z - 1), 1.445 * z * (x * x - y * y),
            0.590 * x * (x * x - 3 * y * y)], -1)

    def edit_distance(a, b):
        # Row-by-row DP of 64 pairs of length-128 sequences; the row scan is an associative min.
        n = a.shape[1]
        row0 = jnp.broadcast_to(jnp.arange(n + 1, dtype=jnp.int32), (a.shape[0], n + 1))

        def step(prev, ai):
            i = prev[:, 0] + 1
            sub = prev[:, :-1] + (ai[:, None] != b).astype(jnp.int32)
            cand = jnp.minimum(sub, prev[:, 1:] + 1)
            cur = jnp.concatenate([i[:, None], cand], 1)
            # Insertions: cur[j] = min_k<=j cur[k] + (j - k).
            idx = jnp.arange(n + 1, dtype=jnp.int32)
            cur = jax.lax.cummin(cur - idx, axis=1) + idx
            return cur, None
        last, _ = jax.lax.scan(step, row0, a.T)
        return last[:, -1]

    def hutchinson(a, z):
        return jnp.mean(jnp.sum(z * (a @ z), 0))

    def triangles(adj):
        return jnp.sum((adj @ adj) * adj) / 6

    def jacobi_poisson(f):
        def step(_, u):
            p = jnp.pad(u, 1)
            return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - f) / 4
        return jax.lax.fori_loop(0, 200, step, jnp.zeros_like(f))

    def esn(u, win, wres):
        def step(x, ut):
            x = 0.7 * x + 0.3 * jnp.tanh(ut @ win + x @ wres)
            return x, x
        return jax.lax.scan(step, jnp.zeros((u.shape[1], wres.shape[0])), u)[1].mean(0)

    def welford(x):
        def step(c, xt):
            n, mean, m2 = c
            n = n + 1
            d = xt - mean
            mean = mean + d / n
            return (n, mean, m2 + d * (xt - mean)), None
        (n, mean, m2), _ = jax.lax.scan(step, (0., jnp.zeros(x.shape[1]), jnp.zeros(x.shape[1])), x)
        return mean, m2 / (n - 1)

    def max_unpool(x):
        b, h, w, c = x.shape
        blocks = x.reshape(b, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4)
        blocks = blocks.reshape(b, h // 2, w // 2, c, 4)
        arg = jnp.argmax(blocks, -1)
        pooled = jnp.max(blocks, -1)
        un = jax.nn.one_hot(arg, 4) * pooled[..., None]
        return un.reshape(b, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(x.shape)

    def conv3d_transpose(x, w):
        return jax.lax.conv_transpose(x, w, (2, 2, 2), 'SAME',
                                      dimension_numbers=('NDHWC', 'DHWIO', 'NDHWC'))

    def grouped_gemm(x, expert, w):
        order = jnp.argsort(expert)
        xs, es = x[order], expert[order]
        # Each token's expert weight gathered, then one batched matvec per token.
        y = jnp.einsum('td,tdf->tf', xs, w[es])
        return jnp.zeros_like(y).at[order].set(y)

    def tcn_block(x, w1, w2):
        conv = lambda a, w, d: jax.lax.conv_general_dilated(
            a, w, (1,), [(2 * d, 0)], rhs_dilation=(d,), dimension_numbers=('NWC', 'WIO', 'NWC'))
        h = jax.nn.relu(conv(x, w1, 4))
        return jax.nn.relu(conv(h, w2, 4) + x)

    def segment_argmax(v, seg):
        m = jax.ops.segment_max(v, seg, num_segments=1024)
        idx = jnp.arange(v.shape[0])
        return jax.ops.segment_min(jnp.where(v == m[seg], idx, v.shape[0]), seg, num_segments=1024)

    def mdn_loss(h, w, y):
        out = h @ w  # [b, 3 * 16]
        logit, mu, logsig = jnp.split(out, 3, -1)
        logp = (jax.nn.log_softmax(logit) - logsig - 0.5 * np.log(2 * np.pi)
                - 0.5 * ((y[:, None] - mu) / jnp.exp(logsig)) ** 2)
        return -jnp.mean(jax.nn.logsumexp(logp, -1))

    def black_scholes_greeks(s, k, t, sigma):
        def price(s, sigma):
            d1 = (jnp.log(s / k) + (0.01 + 0.5 * sigma ** 2) * t) / (sigma * jnp.sqrt(t))
            d2 = d1 - sigma * jnp.sqrt(t)
            cdf = lambda z: 0.5 * (1 + jax.lax.erf(z / np.sqrt(2)))
            return s * cdf(d1) - k * jnp.exp(-0.01 * t) * cdf(d2)
        return jax.vmap(jax.grad(price, (0, 1)))(s, sigma)

    def rwkv_mix(k, v, w, u):
        def step(c, kv):
            num, den = c
            kt, vt = kv
            out = (num + jnp.exp(u + kt) * vt) / (den + jnp.exp(u + kt))
            num = jnp.exp(-jnp.exp(w)) * num + jnp.exp(kt) * vt
            den = jnp.exp(-jnp.exp(w)) * den + jnp.exp(kt)
            return (num, den), out
        z = jnp.zeros(k.shape[1:])
        return jax.lax.scan(step, (z, z), (k, v))[1]

    def cumtrapz(y):
        return jnp.cumsum(0.5 * (y[:, 1:] + y[:, :-1]) * 0.01, 1)

    def ranking_loss(s, rel):
        diff = s[:, :, None] - s[:, None, :]
        better = (rel[:, :, None] > rel[:, None, :]).astype(jnp.float32)
        return jnp.sum(better * jax.nn.softplus(-diff)) / jnp.sum(better)

    def gaussian_blur(img):
        g = np.exp(-0.5 * (np.arange(-7, 8) / 3.) ** 2)
        g = jnp.asarray((g / g.sum()).astype(np.float32))
        c = img.shape[-1]
        kx = jnp.tile(g[None, :, None, None], (1, 1, 1, c))
        ky = jnp.tile(g[:, None, None, None], (1, 1, 1, c))
        conv = lambda a, k: jax.lax.conv_general_dilated(
            a, k, (1, 1), 'SAME', feature_group_count=c, dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        return conv(conv(img, kx), ky)

    def adafactor(g, vr, vc, p):
        g2 = g * g + 1e-30
        vr = 0.999 * vr + 0.001 * g2.mean(1)
        vc = 0.999 * vc + 0.001 * g2.mean(0)
        v = vr[:, None] * vc[None, :] / vr.mean()
        u = g / jnp.sqrt(v)
        u = u / jnp.maximum(1., jnp.sqrt(jnp.mean(u * u)))
        return p - 0.01 * u, vr, vc

    def bilateral_slice(grid, guide):
        # grid [b, 16, 16, 8, 12]; guide [b, 256, 256] in [0, 1): trilinear lookup per pixel.
        b = grid.shape[0]
        gy, gx = jnp.meshgrid(jnp.arange(256) / 16., jnp.arange(256) / 16., indexing='ij')
        gz = guide * 7
        z0 = jnp.floor(gz).astype(jnp.int32)
        wz = gz - z0
        y0 = jnp.broadcast_to(jnp.floor(gy).astype(jnp.int32), guide.shape)
        x0 = jnp.broadcast_to(jnp.floor(gx).astype(jnp.int32), guide.shape)
        bi = jnp.arange(b)[:, None, None]
        lo = grid[bi, y0, x0, z0]
        hi = grid[bi, y0, x0, jnp.minimum(z0 + 1, 7)]
        return lo * (1 - wz)[..., None] + hi * wz[..., None]

    def gru_ln(x, w, u):
        ln = lambda a: (a - a.mean(-1, keepdims=True)) / jnp.sqrt(a.var(-1, keepdims=True) + 1e-5)

        def cell(h, xt):
            zr = jax.nn.sigmoid(ln(xt @ w[:, :256] + h @ u[:, :256]))
            z, rr = zr[:, :128], zr[:, 128:]
            n = jnp.tanh(ln(xt @ w[:, 256:] + (rr * h) @ u[:, 256:]))
            h = (1 - z) * n + z * h
            return h, h
        return jax.lax.scan(cell, jnp.zeros((x.shape[1], 128)), x)[1]

    def topk_accuracy(logits, labels):
        _, idx = jax.lax.top_k(logits, 5)
        return jnp.mean(jnp.any(idx == labels[:, None], -1)), jnp.mean(idx[:, 0] == labels)

    def max_hw(x):
        return jnp.max(x, (1, 2)), jnp.min(x, (0, 3))

    def expert_choice(x, wg):
        scores = jax.nn.softmax(x @ wg, -1).T  # [experts, tokens]
        gate, idx = jax.lax.top_k(scores, 512)
        # The chosen tokens as a set: scores a rounding apart (softmax computed in another
        # order) swap places within the top 512 (2 of 4096 indices in one run).
        return gate, jnp.sort(idx, -1), jnp.einsum('ek,ekd->ed', gate, x[idx])

    def max_drawdown(r):
        wealth = jnp.cumprod(1 + 0.01 * r)
        return jnp.max(1 - wealth / jax.lax.cummax(wealth))

    def rolling_std(x):
        c1 = jnp.cumsum(jnp.pad(x, (1, 0)))
        c2 = jnp.cumsum(jnp.pad(x * x, (1, 0)))
        s1, s2 = c1[64:] - c1[:-64], c2[64:] - c2[:-64]
        return jnp.sqrt(jnp.maximum(s2 / 64 - (s1 / 64) ** 2, 0))

    def adam_scan(p, g):
        def step(c, gt):
            p, m, v = c
            m = 0.9 * m + 0.1 * gt
            v = 0.999 * v + 0.001 * gt * gt
            return (p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), m, v), None
        return jax.lax.scan(step, (p, jnp.zeros_like(p), jnp.zeros_like(p)), g)[0]

    def vertex_normals(v, f):
        a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
        n = jnp.cross(b - a, c - a)
        acc = jnp.zeros_like(v).at[f[:, 0]].add(n).at[f[:, 1]].add(n).at[f[:, 2]].add(n)
        return acc / (jnp.linalg.norm(acc, axis=-1, keepdims=True) + 1e-9)

    def voxelize(p, w):
        ijk = jnp.clip((p * 64).astype(jnp.int32), 0, 63)
        return jnp.zeros((64, 64, 64)).at[ijk[:, 0], ijk[:, 1], ijk[:, 2]].add(w)

    def weighted_bincount(i, w):
        return jnp.bincount(i, weights=w, length=1 << 16)

    def rnnt_joint(enc, pred, w):
        h = jnp.tanh(enc[:, :, None, :] + pred[:, None, :, :])
        return jax.nn.log_softmax(h @ w, -1)

    def gshard_dispatch(x, wg):
        probs = jax.nn.softmax(x @ wg, -1)
        expert = jnp.argmax(probs, -1)
        mask = jax.nn.one_hot(expert, 8)
        pos = jnp.cumsum(mask, 0) * mask - 1
        keep = (pos < 640) & (mask > 0)
        slot = jax.nn.one_hot(jnp.where(keep, pos, -1).max(-1).astype(jnp.int32), 640)
        dispatch = mask[:, :, None] * slot[:, None, :]
        return jnp.einsum('tec,td->ecd', dispatch, x)

    def ragged(x, w, sizes):
        return jax.lax.ragged_dot(x, w, sizes)

    def digitize(x, bins):
        return jnp.digitize(x, bins), jnp.bincount(jnp.digitize(x, bins), length=66)

    def round_trip(x):
        return jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7) - x

    def convolve2d(img, k):
        return jax.vmap(lambda a: jax.scipy.signal.convolve2d(a, k, mode='same'))(img)

    def batched_svd(a):
        return jnp.linalg.svd(a, compute_uv=False)

    edges = np.zeros((1024, 1024), np.float32)
    iu = np.triu_indices(1024, 1)
    keep = r.rand(iu[0].size) < 0.02
    edges[iu[0][keep], iu[1][keep]] = 1
    edges = edges + edges.T
    dist = np.abs(f32(256, 256)) * 10
    np.fill_diagonal(dist, 0)
    mel = np.abs(f32(257, 80)) * .05
    return {
        'ctc forward b16 T128 labels 32 vocab 64': (
            ctc_forward, [np.asarray(jax.nn.log_softmax(f32(16, 128, 64), -1)),
                          r.randint(1, 64, (16, 32)).astype(np.int32)], 1e-3),
        'bilstm scan 64 b16 128': (
            bilstm, [f32(64, 16, 128), f32(128, 512) * .05, f32(128, 512) * .05,
                     f32(128, 512) * .05, f32(128, 512) * .05], 1e-3),
        'wgan-gp critic grad b256 784x512': (
            wgan_gp, [f32(256, 784), f32(256, 784), r.rand(256, 1).astype(np.float32),
                      f32(784, 512) * .03, f32(512, 1) * .03], 1e-3),
        'log-mel spectrogram b8 16000 samples': (log_mel, [f32(8, 16000), mel], 1e-3),
        'paged attention decode b8 h16 d64 64 pages': (
            paged_decode, [f32(8, 16, 64), f32(512, 16, 16, 64), f32(512, 16, 16, 64),
                           r.randint(0, 512, (8, 64)).astype(np.int32),
                           r.randint(100, 1024, 8).astype(np.int32)], 1e-3),
        'ssim b8 256x256x3': (ssim, [r.rand(8, 256, 256, 3).astype(np.float32),
                                    r.rand(8, 256, 256, 3).astype(np.float32)], 1e-3),
        'sliced wasserstein 2^14 points 64 projections': (
            sliced_wasserstein, [f32(1 << 14, 16), f32(1 << 14, 16) + 0.5, f32(16, 64)], 1e-3),
        'floyd-warshall 256 nodes': (floyd_warshall, [dist], 1e-4),
        'per-sample jacobian 256 x 32->64->32': (
            per_sample_jacobian, [f32(256, 32), f32(32, 64) * .2, f32(64, 32) * .2], 1e-3),
        'confusion matrix 2^20 preds': (
            confusion, [r.randint(0, 10, 1 << 20).astype(np.int32),
                        r.randint(0, 10, 1 << 20).astype(np.int32)]),
        'lanczos3 resize b8 64x64x16 -> 96x96': (lanczos, [f32(8, 64, 64, 16)], 1e-3),
        'spatial softmax keypoints b16 64x64x32': (spatial_softmax, [f32(16, 64, 64, 32)], 1e-3),
        'multiclass hinge b4096 x 1000': (
            multiclass_hinge, [f32(4096, 1000), r.randint(0, 1000, 4096).astype(np.int32)], 1e-3),
        'weight-standardized conv b8 32x32 64->64': (
            ws_conv, [f32(8, 32, 32, 64), f32(3, 3, 64, 64)], 1e-3),
        'stochastic depth b64 197x384': (
            drop_path, [f32(64, 197, 384), f32(64, 197, 384), np.array([0, 14], np.uint32)], 1e-3),
        'rbf kernel 4096x2048 d16': (rbf_kernel, [f32(4096, 16), f32(2048, 16)], 1e-3),
        'masked-lm loss b32 s512 76 masked vocab 8192 d256': (
            mlm_loss, [f32(32, 512, 256) * .1, f32(8192, 256) * .1,
                       r.randint(0, 512, (32, 76)).astype(np.int32),
                       r.randint(0, 8192, (32, 76)).astype(np.int32)], 1e-3),
        'dct 2d ortho b16 64x64': (dct2, [f32(16, 64, 64)], 1e-3),
        'spherical harmonics l3 2^18': (sph_harm_l3, [f32(1 << 18, 3)], 1e-3),
        'edit distance 64 pairs x 128': (
            edit_distance, [r.randint(0, 4, (64, 128)).astype(np.int32),
                            r.randint(0, 4, (64, 128)).astype(np.int32)]),
        'hutchinson trace 1024 x 64 probes': (
            hutchinson, [f32(1024, 1024), np.sign(f32(1024, 64))], 1e-3),
        'triangle count 1024 nodes': (triangles, [edges], 1e-4),
        'jacobi poisson fori 200 256x256': (jacobi_poisson, [f32(256, 256)], 1e-3),
        'echo state network 200 steps b32 512': (
            esn, [f32(200, 32, 16), f32(16, 512) * .3, f32(512, 512) * .04], 1e-3),
        'welford scan 4096 x 256': (welford, [f32(4096, 256)], 1e-3),
        'max unpool 2x2 b8 64x64x32': (max_unpool, [f32(8, 64, 64, 32)]),
        'conv3d transpose s2 b2 8^3 32->16': (
            conv3d_transpose, [f32(2, 8, 8, 8, 32), f32(3, 3, 3, 32, 16) * .1], 1e-3),
        'moe grouped gemm 2048 tokens 8 experts 128x128': (
            grouped_gemm, [f32(2048, 128), r.randint(0, 8, 2048).astype(np.int32),
                           f32(8, 128, 128) * .1], 1e-3),
        'tcn block dilation 4 b8 w2048 64': (
            tcn_block, [f32(8, 2048, 64), f32(3, 64, 64) * .1, f32(3, 64, 64) * .1], 1e-3),
        'segment argmax 2^18 into 1024': (
            segment_argmax, [f32(1 << 18), np.sort(r.randint(0, 1024, 1 << 18)).astype(np.int32)]),
        'mixture density loss b4096 16 comps': (
            mdn_loss, [f32(4096, 128), f32(128, 48) * .1, f32(4096)], 1e-3),
        'black-scholes greeks 2^20': (
            black_scholes_greeks, [(80 + 40 * r.rand(1 << 20)).astype(np.float32),
                                   np.float32(100), np.float32(1.0),
                                   (0.1 + 0.3 * r.rand(1 << 20)).astype(np.float32)], 1e-3),
        'rwkv time mix scan 256 x b8 512': (
            rwkv_mix, [f32(256, 8, 512) * .5, f32(256, 8, 512), f32(8, 512) * .5,
                       f32(8, 512) * .5], 1e-3),
        'cumulative trapezoid 1024x4096': (cumtrapz, [f32(1024, 4096)], 1e-3),
        'pairwise ranking loss 256 lists x 64': (
            ranking_loss, [f32(256, 64), r.randint(0, 5, (256, 64)).astype(np.int32)], 1e-3),
        'separable gaussian blur 15 b8 256x256x3': (gaussian_blur, [f32(8, 256, 256, 3)], 1e-3),
        'adafactor update 2048x4096': (
            adafactor, [f32(2048, 4096), np.abs(f32(2048)), np.abs(f32(4096)), f32(2048, 4096)],
            1e-3),
        'bilateral grid slice b4 256x256': (
            bilateral_slice, [f32(4, 16, 16, 8, 12), r.rand(4, 256, 256).astype(np.float32)],
            1e-3),
        'gru layernorm scan 64 b32 128': (
            gru_ln, [f32(64, 32, 64), f32(64, 384) * .1, f32(128, 384) * .1], 1e-3),
        'top-5 accuracy b8192 x 1000': (
            topk_accuracy, [f32(8192, 1000), r.randint(0, 1000, 8192).astype(np.int32)]),
        'max/min over two axes f32[32,64,64,128]': (max_hw, [f32(32, 64, 64, 128)]),
        'expert choice top-512 of 4096 tokens 8 experts d256': (
            expert_choice, [f32(4096, 256), f32(256, 8) * .1], 1e-3),
        'max drawdown cumprod/cummax 2^20': (max_drawdown, [f32(1 << 20)], 1e-2),
        'rolling std 64 over 2^20': (rolling_std, [f32(1 << 20)], 1e-2),
        'adam in scan 100 steps 2^16 params': (adam_scan, [f32(1 << 16), f32(100, 1 << 16)], 1e-3),
        'mesh vertex normals 2^15 verts 2^16 faces': (
            vertex_normals, [f32(1 << 15, 3), r.randint(0, 1 << 15, (1 << 16, 3)).astype(np.int32)],
            1e-3),
        'voxelize 2^18 points into 64^3': (
            voxelize, [r.rand(1 << 18, 3).astype(np.float32), f32(1 << 18)], 1e-3),
        'weighted bincount 2^20 into 2^16': (
            weighted_bincount, [r.randint(0, 1 << 16, 1 << 20).astype(np.int32), f32(1 << 20)],
            1e-3),
        'rnn-t joint b4 T64 U16 d256 vocab 256': (
            rnnt_joint, [f32(4, 64, 256) * .3, f32(4, 16, 256) * .3, f32(256, 256) * .05], 1e-3),
        'gshard dispatch 4096 tokens 8 experts cap 640 d128': (
            gshard_dispatch, [f32(4096, 128), f32(128, 8) * .1], 1e-3),
        'ragged dot 4096 rows 8 groups 256x256': (
            ragged, [f32(4096, 256), f32(8, 256, 256) * .05,
                     np.array([512, 256, 1024, 128, 640, 512, 512, 512], np.int32)], 1e-3),
        'digitize 2^20 into 64 bins': (
            digitize, [f32(1 << 20), np.sort(f32(64))]),
        'reduce_precision bf16 round trip 2^22': (round_trip, [f32(1 << 22)]),
        'convolve2d same b16 128x128 k5': (convolve2d, [f32(16, 128, 128), f32(5, 5)], 1e-3),
        'batched svd values 256 x 16x16': (batched_svd, [f32(256, 16, 16)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
