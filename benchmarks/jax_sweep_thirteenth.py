#!/usr/bin/env python3
"""Benchmark (not a test): a thirteenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
a graph-convolution layer, the heat equation stepped in a fori loop, an n-body step loop,
AlphaFold's triangle multiplicative update, Swin's shifted-window attention, a Kronecker
product, complex exp/abs/angle, histogram equalization of u8 images, vmapped dynamic slices,
integer division and remainder, a Conformer convolution module, BERT's embedding layer, a PPO
clipped loss with its gradient, farthest-point sampling, word2vec negative sampling with its
gradient, a ConvNeXt block, a Fourier neural operator layer, a 13x13 depthwise convolution,
causal linear attention through cumsums, int8 and packed int4 weight matmuls, a per-sample
normalization, batched triangular solves, ray-sphere shading, quaternion rotations, a top-2
mixture-of-experts gate, batched traces, a long convolution through the FFT, Mamba's causal
convolution, a VAE's loss gradient, SimCLR's NT-Xent loss, a graph attention layer,
Lennard-Jones forces, Monte Carlo option pricing, k-nearest-neighbour classification, FiLM from
a diffusion timestep embedding, an fp8 (e4m3) quantized matmul, leaky integrate-and-fire
neurons in a scan, a Laplacian pyramid, Harris corners, batched 3x3 inverses, unpackbits and
packbits, an associative scan of 2x2 matrix products, the gradient through a fori RNN, a
three-operand einsum, an int8 convolution accumulating in int32 and a log-domain matmul.
Written as held-out programs: none of them is in the other twelve sweeps.

    .venv/bin/python benchmarks/jax_sweep_thirteenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(13)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def gcn_layer(x, src, dst, w):
        # Messages along 2^16 edges, summed at their destination, degree-normalized.
        msg = jax.ops.segment_sum(x[src], dst, num_segments=x.shape[0])
        deg = jax.ops.segment_sum(jnp.ones_like(dst, jnp.float32), dst,
                                  num_segments=x.shape[0])
        return jax.nn.relu((msg / jnp.maximum(deg, 1.)[:, None]) @ w)

    def heat(u):
        def step(_, u):
            lap = (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1)
                   + jnp.roll(u, -1, 1) - 4 * u)
            return u + 0.1 * lap
        return jax.lax.fori_loop(0, 100, step, u)

    def nbody(p, v, m):
        def step(_, pv):
            p, v = pv
            d = p[None, :, :] - p[:, None, :]
            inv = (jnp.sum(d * d, -1) + 1e-2) ** -1.5
            a = jnp.einsum('ij,ijk->ik', inv * m[None, :], d)
            v = v + 0.01 * a
            return p + 0.01 * v, v
        return jax.lax.fori_loop(0, 10, step, (p, v))

    def triangle_update(z, wa, wb, wg, wo):
        zn = (z - z.mean(-1, keepdims=True)) / jnp.sqrt(z.var(-1, keepdims=True) + 1e-5)
        a = jax.nn.sigmoid(zn @ wg) * (zn @ wa)
        b = zn @ wb
        t = jnp.einsum('ikc,jkc->ijc', a, b)
        tn = (t - t.mean(-1, keepdims=True)) / jnp.sqrt(t.var(-1, keepdims=True) + 1e-5)
        return z + tn @ wo

    def swin_attention(x, wqkv):
        b, h, w, c = x.shape
        ws, heads = 7, 4
        x = jnp.roll(x, (-3, -3), (1, 2))
        x = x.reshape(b, h // ws, ws, w // ws, ws, c).transpose(0, 1, 3, 2, 4, 5)
        x = x.reshape(-1, ws * ws, c)
        q, k, v = jnp.split(x @ wqkv, 3, -1)
        split = lambda t: t.reshape(t.shape[0], ws * ws, heads, -1).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        s = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(c // heads), -1)
        o = (s @ v).transpose(0, 2, 1, 3).reshape(b, h // ws, w // ws, ws, ws, c)
        o = o.transpose(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return jnp.roll(o, (3, 3), (1, 2))

    def complex_polar(re, im):
        z = jax.lax.complex(re, im)
        e = jnp.exp(0.1j * z)
        return jnp.abs(e), jnp.angle(z)

    def equalize(img):
        def one(im):
            hist = jnp.bincount(im.reshape(-1), length=256)
            cdf = jnp.cumsum(hist).astype(jnp.float32)
            cdf = (cdf - cdf[0]) / (cdf[-1] - cdf[0]) * 255
            return cdf.astype(jnp.uint8)[im]
        return jax.vmap(one)(img)

    def windows(x, starts):
        return jax.vmap(lambda s: jax.lax.dynamic_slice(x, (s,), (64,)))(starts)

    def int_divmod(x):
        return (x // 7) % 13 + x % 5 - (x // -3)

    def conformer_conv(x, w1, dw, w2, gamma, beta):
        h = x @ w1
        h = h[..., :256] * jax.nn.sigmoid(h[..., 256:])  # GLU
        h = jax.lax.conv_general_dilated(h, dw, (1,), 'SAME', feature_group_count=256,
                                         dimension_numbers=('NWC', 'WIO', 'NWC'))
        mu = h.mean((0, 1))
        var = h.var((0, 1))
        h = (h - mu) / jnp.sqrt(var + 1e-5) * gamma + beta
        return x + jax.nn.silu(h) @ w2

    def bert_embed(ids, types, word, pos, typ, gamma, beta):
        e = word[ids] + pos[None, :ids.shape[1]] + typ[types]
        mu = e.mean(-1, keepdims=True)
        var = ((e - mu) ** 2).mean(-1, keepdims=True)
        return (e - mu) * jax.lax.rsqrt(var + 1e-12) * gamma + beta

    def ppo(logits, old_logp, actions, adv):
        def loss(logits):
            logp = jnp.take_along_axis(jax.nn.log_softmax(logits), actions[:, None], 1)[:, 0]
            a = (adv - adv.mean()) / (adv.std() + 1e-8)
            ratio = jnp.exp(logp - old_logp)
            clipped = jnp.clip(ratio, 0.8, 1.2)
            ent = -jnp.sum(jax.nn.softmax(logits) * jax.nn.log_softmax(logits), -1)
            return -jnp.mean(jnp.minimum(ratio * a, clipped * a)) - 0.01 * ent.mean()
        return jax.value_and_grad(loss)(logits)

    def farthest_points(pts):
        def step(i, state):
            idx, dist = state
            last = pts[idx[i - 1]]
            dist = jnp.minimum(dist, jnp.sum((pts - last) ** 2, -1))
            return idx.at[i].set(jnp.argmax(dist).astype(jnp.int32)), dist
        idx = jnp.zeros(256, jnp.int32)
        dist = jnp.full(pts.shape[0], jnp.inf, jnp.float32)
        return jax.lax.fori_loop(1, 256, step, (idx, dist))[0]

    def word2vec(emb_in, emb_out, center, context, negatives):
        def loss(emb_in, emb_out):
            c = emb_in[center]
            pos = jnp.sum(c * emb_out[context], -1)
            neg = jnp.einsum('bd,bkd->bk', c, emb_out[negatives])
            return -jnp.mean(jax.nn.log_sigmoid(pos)) - jnp.mean(
                jnp.sum(jax.nn.log_sigmoid(-neg), -1))
        return jax.grad(loss, (0, 1))(emb_in, emb_out)

    def convnext_block(x, dw, w1, w2, gamma):
        h = jax.lax.conv_general_dilated(x, dw, (1, 1), 'SAME', feature_group_count=x.shape[-1],
                                         dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        h = (h - h.mean(-1, keepdims=True)) / jnp.sqrt(h.var(-1, keepdims=True) + 1e-6)
        return x + gamma * (jax.nn.gelu(h @ w1) @ w2)

    def fno_layer(x, wr, wi, w):
        # Fourier neural operator: the lowest 16x16 modes mixed across channels.
        f = jnp.fft.rfft2(x, axes=(1, 2))
        m = f[:, :16, :16, :]
        mixed = jnp.einsum('bxyi,xyio->bxyo', m, jax.lax.complex(wr, wi))
        out = jnp.zeros_like(f).at[:, :16, :16, :].set(mixed)
        return jax.nn.gelu(jnp.fft.irfft2(out, s=x.shape[1:3], axes=(1, 2)) + x @ w)

    def large_kernel_dw(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', feature_group_count=x.shape[-1],
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def linear_attention(q, k, v):
        q, k = jax.nn.elu(q) + 1, jax.nn.elu(k) + 1
        kv = jnp.cumsum(k[..., :, None] * v[..., None, :], axis=1)
        z = jnp.cumsum(k, axis=1)
        return jnp.einsum('bsd,bsde->bse', q, kv) / (jnp.einsum('bsd,bsd->bs', q, z)[..., None])

    def int8_matmul(x, wq, scale):
        return x @ (wq.astype(jnp.float32) * scale)

    def int4_matmul(x, packed, scale):
        lo = (packed & 15).astype(jnp.int32) - 8
        hi = (packed >> 4).astype(jnp.int32) - 8
        w = jnp.stack([lo, hi], -1).reshape(packed.shape[0], -1).astype(jnp.float32)
        return x @ (w * scale)

    def sample_norm(x):
        mu = x.mean((1, 2, 3), keepdims=True)
        return (x - mu) / jnp.sqrt(x.var((1, 2, 3), keepdims=True) + 1e-5)

    def tri_solves(a, b):
        return jax.scipy.linalg.solve_triangular(a, b, lower=True)

    def ray_sphere(o, d, c, r):
        d = d / jnp.linalg.norm(d, axis=-1, keepdims=True)
        oc = o - c
        b = jnp.sum(oc * d, -1)
        disc = b * b - (jnp.sum(oc * oc, -1) - r * r)
        t = -b - jnp.sqrt(jnp.maximum(disc, 0))
        hit = (disc > 0) & (t > 0)
        p = o + t[:, None] * d
        n = (p - c) / r
        return jnp.where(hit, jnp.clip(jnp.sum(n * jnp.array([0.3, 0.8, 0.5]), -1), 0, 1), 0.)

    def quat_rotate(q, p):
        q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
        w, xyz = q[:, :1], q[:, 1:]
        t = 2 * jnp.cross(xyz, p)
        return p + w * t + jnp.cross(xyz, t)

    def moe_gate(x, wg):
        logits = x @ wg
        probs = jax.nn.softmax(logits, -1)
        top, idx = jax.lax.top_k(probs, 2)
        aux = jnp.mean(jnp.mean(jax.nn.one_hot(idx[:, 0], 8), 0) * jnp.mean(probs, 0)) * 64
        return top / top.sum(-1, keepdims=True), idx, aux

    def batched_trace(a):
        return jnp.trace(a, axis1=1, axis2=2) + jnp.diagonal(a, 1, 1, 2).sum(-1)

    def long_conv_fft(u, k):
        n = u.shape[1]
        y = jnp.fft.irfft(jnp.fft.rfft(u, 2 * n, axis=1) * jnp.fft.rfft(k, 2 * n, axis=0),
                          2 * n, axis=1)[:, :n]
        return y + u

    def mamba_conv(x, w, b):
        # Causal depthwise conv1d (4 taps) then SiLU, as in a Mamba block.
        h = jax.lax.conv_general_dilated(x, w, (1,), [(3, 0)], feature_group_count=x.shape[-1],
                                         dimension_numbers=('NWC', 'WIO', 'NWC'))
        return jax.nn.silu(h + b)

    def vae_grad(x, w1, w2, w3, w4, eps):
        def loss(params):
            w1, w2, w3, w4 = params
            h = jax.nn.relu(x @ w1)
            mu, logvar = jnp.split(h @ w2, 2, -1)
            z = mu + jnp.exp(0.5 * logvar) * eps
            logits = jax.nn.relu(z @ w3) @ w4
            rec = jnp.sum(optax_sigmoid_bce(logits, x), -1)
            kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar), -1)
            return jnp.mean(rec + kl)
        return jax.grad(loss)((w1, w2, w3, w4))

    def optax_sigmoid_bce(logits, labels):
        return jnp.maximum(logits, 0) - logits * labels + jnp.log1p(jnp.exp(-jnp.abs(logits)))

    def nt_xent(a, b):
        z = jnp.concatenate([a, b]) / jnp.linalg.norm(jnp.concatenate([a, b]), axis=-1,
                                                        keepdims=True)
        sim = z @ z.T / 0.1
        n = a.shape[0]
        sim = jnp.where(jnp.eye(2 * n, dtype=bool), -1e9, sim)
        pos = jnp.concatenate([jnp.arange(n, 2 * n), jnp.arange(n)])
        return jnp.mean(jax.nn.logsumexp(sim, -1) - sim[jnp.arange(2 * n), pos])

    def gat_layer(x, src, dst, w, a_src, a_dst):
        h = x @ w
        e = jax.nn.leaky_relu(h[src] @ a_src + h[dst] @ a_dst, 0.2)
        e = e - jax.ops.segment_max(e, dst, num_segments=x.shape[0])[dst]
        p = jnp.exp(e)
        denom = jax.ops.segment_sum(p, dst, num_segments=x.shape[0])[dst]
        return jax.ops.segment_sum((p / denom)[:, None] * h[src], dst, num_segments=x.shape[0])

    def lennard_jones(p):
        d = p[:, None, :] - p[None, :, :]
        r2 = jnp.sum(d * d, -1) + jnp.eye(p.shape[0])
        inv6 = (1 / r2) ** 3
        f = jnp.where(r2 < 6.25, 24 * (2 * inv6 * inv6 - inv6) / r2, 0.)
        f = f * (1 - jnp.eye(p.shape[0]))
        return jnp.sum(f[:, :, None] * d, 1)

    def option_price(key):
        z = jax.random.normal(jax.random.wrap_key_data(key), (1 << 14, 252))
        paths = 100 * jnp.exp(jnp.cumsum(-0.5 * 0.2 ** 2 / 252 + 0.2 / np.sqrt(252) * z, 1))
        return jnp.mean(jnp.maximum(paths.mean(1) - 100, 0))

    def knn_classify(train, labels, test):
        d = jnp.sum(test ** 2, 1)[:, None] - 2 * test @ train.T + jnp.sum(train ** 2, 1)
        _, idx = jax.lax.top_k(-d, 5)
        votes = jax.nn.one_hot(labels[idx], 10).sum(1)
        return jnp.argmax(votes, -1)

    def film_timestep(t, x, w1, w2):
        freqs = jnp.exp(-np.log(10000) * jnp.arange(64) / 64)
        emb = jnp.concatenate([jnp.sin(t[:, None] * freqs), jnp.cos(t[:, None] * freqs)], -1)
        scale, shift = jnp.split(jax.nn.silu(emb @ w1) @ w2, 2, -1)
        return x * (1 + scale[:, None, None, :]) + shift[:, None, None, :]

    def fp8_matmul(x, w):
        xs = jnp.max(jnp.abs(x)) / 448
        ws = jnp.max(jnp.abs(w)) / 448
        xq = (x / xs).astype(jnp.float8_e4m3fn)
        wq = (w / ws).astype(jnp.float8_e4m3fn)
        return jnp.dot(xq, wq, preferred_element_type=jnp.float32) * (xs * ws)

    def lif(inp):
        def step(carry, x):
            v, spikes = carry
            v = 0.9 * v + x
            s = (v > 1.0).astype(jnp.float32)
            v = v * (1 - s)
            return (v, spikes + s), s.sum()
        (v, total), counts = jax.lax.scan(step, (jnp.zeros(4096), jnp.zeros(4096)), inp)
        return total, counts

    def laplacian_pyramid(img):
        levels = []
        x = img
        for _ in range(4):
            down = jax.lax.reduce_window(x, 0., jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID') / 4
            up = jnp.repeat(jnp.repeat(down, 2, 1), 2, 2)
            levels.append((x - up).sum())
            x = down
        return jnp.stack(levels), x

    def harris(img):
        kx = jnp.array([[-1., 0., 1.], [-2., 0., 2.], [-1., 0., 1.]], jnp.float32)
        conv = lambda a, k: jax.lax.conv_general_dilated(a[..., None], k[:, :, None, None], (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))[..., 0]
        ix, iy = conv(img, kx), conv(img, kx.T)
        g = jnp.ones((5, 5), jnp.float32) / 25
        a, b, c = conv(ix * ix, g), conv(iy * iy, g), conv(ix * iy, g)
        return a * b - c * c - 0.05 * (a + b) ** 2

    def inv3(m):
        return jnp.linalg.inv(m)

    def unpack(x):
        return jnp.unpackbits(x).reshape(-1, 8).sum(0), jnp.packbits(jnp.unpackbits(x)[::-1])

    def mat_scan(a):
        return jax.lax.associative_scan(lambda x, y: jnp.einsum('...ij,...jk->...ik', x, y), a)

    def rnn_grad(w, x):
        def loss(w):
            h = jax.lax.fori_loop(0, 50, lambda i, h: jnp.tanh(h @ w + x[i]), jnp.zeros((32, 128)))
            return jnp.sum(h ** 2)
        return jax.grad(loss)(w)

    def einsum3(a, b, c):
        return jnp.einsum('ij,jk,kl->il', a, b, c)

    def int8_conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'), preferred_element_type=jnp.int32)

    def log_matmul(a, b):
        return jax.nn.logsumexp(a[:, :, None] + b[None, :, :], axis=1)

    def rotations(n):
        t = r.rand(n) * 2 * np.pi
        c, sn = np.cos(t), np.sin(t)
        return np.stack([np.stack([c, -sn], -1), np.stack([sn, c], -1)], -2).astype(np.float32)

    edges = 1 << 16
    return {
        'gcn layer 4096 nodes 2^16 edges d64': (
            gcn_layer, [f32(4096, 64), r.randint(0, 4096, edges).astype(np.int32),
                        r.randint(0, 4096, edges).astype(np.int32), f32(64, 64) * .1], 1e-3),
        'heat equation fori 100 512x512': (heat, [f32(512, 512)], 1e-3),
        'n-body fori 10 1024 bodies': (
            nbody, [f32(1024, 3), f32(1024, 3) * .1, np.abs(f32(1024)) * 1e-3], 1e-3),
        'triangle update 128x128 c64': (
            triangle_update, [f32(128, 128, 64), f32(64, 64) * .1, f32(64, 64) * .1,
                              f32(64, 64) * .1, f32(64, 64) * .1], 1e-3),
        'swin shifted window attention b4 56x56 c96': (
            swin_attention, [f32(4, 56, 56, 96), f32(96, 288) * .1], 1e-3),
        'kron 64x64 x 64x64': (jnp.kron, [f32(64, 64), f32(64, 64)]),
        'complex exp/abs/angle 2^20': (complex_polar, [f32(1 << 20), f32(1 << 20)], 1e-4),
        'histogram equalization b8 256x256 u8': (
            equalize, [r.randint(0, 256, (8, 256, 256)).astype(np.uint8)]),
        'vmap dynamic_slice 4096 x 64 of 2^16': (
            windows, [f32(1 << 16), r.randint(0, (1 << 16) - 64, 4096).astype(np.int32)]),
        'int32 floordiv/mod 2^22': (
            int_divmod, [r.randint(-1 << 30, 1 << 30, 1 << 22).astype(np.int32)]),
        'conformer conv module b8 t512 d256': (
            conformer_conv, [f32(8, 512, 256), f32(256, 512) * .05, f32(31, 1, 256) * .1,
                             f32(256, 256) * .05, 1 + f32(256) * .1, f32(256) * .1], 1e-3),
        'bert embeddings b8 s512 vocab 30522 d768': (
            bert_embed, [r.randint(0, 30522, (8, 512)).astype(np.int32),
                         r.randint(0, 2, (8, 512)).astype(np.int32), f32(30522, 768) * .02,
                         f32(512, 768) * .02, f32(2, 768) * .02, 1 + f32(768) * .1,
                         f32(768) * .1], 1e-4),
        'ppo loss grad b4096 x 18 actions': (
            ppo, [f32(4096, 18), -np.abs(f32(4096)) - 2,
                  r.randint(0, 18, 4096).astype(np.int32), f32(4096)], 1e-4),
        'farthest point sampling 256 of 4096': (farthest_points, [f32(4096, 3)]),
        'word2vec negatives grad b1024 k5 vocab 2^16 d128': (
            word2vec, [f32(1 << 16, 128) * .1, f32(1 << 16, 128) * .1,
                       r.randint(0, 1 << 16, 1024).astype(np.int32),
                       r.randint(0, 1 << 16, 1024).astype(np.int32),
                       r.randint(0, 1 << 16, (1024, 5)).astype(np.int32)], 1e-4),
        'convnext block b8 28x28x192': (
            convnext_block, [f32(8, 28, 28, 192), f32(7, 7, 1, 192) * .1, f32(192, 768) * .05,
                             f32(768, 192) * .05, f32(192) * .1], 1e-3),
        'fno spectral layer b8 64x64 c32 modes 16': (
            fno_layer, [f32(8, 64, 64, 32), f32(16, 16, 32, 32) * .05,
                        f32(16, 16, 32, 32) * .05, f32(32, 32) * .1], 1e-3),
        'large-kernel depthwise 13x13 b8 32x32x128': (
            large_kernel_dw, [f32(8, 32, 32, 128), f32(13, 13, 1, 128) * .1], 1e-3),
        'linear attention cumsum b4 s512 d32': (
            linear_attention, [f32(4, 512, 32), f32(4, 512, 32), f32(4, 512, 32)], 1e-3),
        'int8 weights matmul b16 4096x4096': (
            int8_matmul, [f32(16, 4096), r.randint(-127, 128, (4096, 4096)).astype(np.int8),
                          np.abs(f32(4096)) * .01], 1e-3),
        'int4 packed weights matmul b16 4096x4096': (
            int4_matmul, [f32(16, 4096), r.randint(0, 256, (4096, 2048)).astype(np.uint8),
                          np.abs(f32(4096)) * .01], 1e-3),
        'per-sample norm over hwc b32 32x32x64': (sample_norm, [f32(32, 32, 32, 64)], 1e-4),
        'triangular solves 256 x 32x32, 32 rhs': (
            tri_solves, [np.tril(f32(256, 32, 32)) * .1 + 4 * np.eye(32, dtype=np.float32),
                         f32(256, 32, 32)], 1e-3),
        'ray-sphere shading 2^20 rays': (
            ray_sphere, [f32(1 << 20, 3) * .1, f32(1 << 20, 3) + np.array([0, 0, 3], np.float32),
                         np.array([0, 0, 5], np.float32), np.float32(1.5)], 1e-3),
        'quaternion rotate 2^20 points': (quat_rotate, [f32(1 << 20, 4), f32(1 << 20, 3)], 1e-4),
        'moe gate top-2 of 8, 2^16 tokens d256': (moe_gate, [f32(1 << 16, 256), f32(256, 8)],
                                                 1e-4),
        'batched trace 256 x 256x256': (batched_trace, [f32(256, 256, 256)], 1e-3),
        'long conv by fft b4 L4096 d64': (long_conv_fft, [f32(4, 4096, 64), f32(4096, 64) * .01],
                                          1e-3),
        'mamba causal conv1d k4 + silu b8 L1024 d512': (
            mamba_conv, [f32(8, 1024, 512), f32(4, 1, 512), f32(512)], 1e-4),
        'vae loss grad b256 784-400-20': (
            vae_grad, [(r.rand(256, 784) > .5).astype(np.float32), f32(784, 400) * .05,
                       f32(400, 40) * .05, f32(20, 400) * .05, f32(400, 784) * .05,
                       f32(256, 20)], 1e-3),
        'nt-xent loss 2x512 d128': (nt_xent, [f32(512, 128), f32(512, 128)], 1e-3),
        'gat layer 4096 nodes 2^16 edges d64': (
            gat_layer, [f32(4096, 64), r.randint(0, 4096, edges).astype(np.int32),
                        r.randint(0, 4096, edges).astype(np.int32), f32(64, 64) * .1,
                        f32(64) * .1, f32(64) * .1], 1e-3),
        'lennard-jones forces 2048 particles': (
            lennard_jones, [(r.rand(2048, 3) * 20).astype(np.float32)], 1e-2),
        'monte carlo option 2^14 paths x 252': (
            option_price, [np.array([0, 13], np.uint32)], 1e-3),
        'knn classify 1024 test of 8192 train d32': (
            knn_classify, [f32(8192, 32), r.randint(0, 10, 8192).astype(np.int32),
                           f32(1024, 32)]),
        'film timestep embedding b16 32x32x128': (
            film_timestep, [(r.rand(16) * 1000).astype(np.float32), f32(16, 32, 32, 128),
                            f32(128, 512) * .05, f32(512, 256) * .05], 1e-3),
        'fp8 e4m3 quantized matmul 512^3': (fp8_matmul, [f32(512, 512), f32(512, 512)], 2e-2),
        'lif neurons scan 1000 steps x 4096': (lif, [np.abs(f32(1000, 4096)) * .3], 1e-3),
        'laplacian pyramid 4 levels b8 256x256x3': (laplacian_pyramid, [f32(8, 256, 256, 3)], 1e-2),
        'harris corners b8 256x256': (harris, [f32(8, 256, 256)], 1e-3),
        'inv 16384 x 3x3': (inv3, [f32(16384, 3, 3) + 3 * np.eye(3, dtype=np.float32)], 1e-3),
        'unpackbits/packbits 2^20 bytes': (unpack, [r.randint(0, 256, 1 << 20).astype(np.uint8)]),
        # Rotations: their products stay rotations (random matrices' products overflow f32,
        # where evaluation order decides between inf and NaN).
        'associative_scan 2x2 matmuls 4096': (mat_scan, [rotations(4096)], 1e-3),
        'grad of fori rnn 50 steps 32x128': (rnn_grad, [f32(128, 128) * .05, f32(50, 32, 128)], 1e-3),
        'einsum ij,jk,kl 512x1024x64x512': (einsum3, [f32(512, 1024), f32(1024, 64), f32(64, 512)], 1e-3),
        'int8 conv 3x3 b8 32x32 32->64 s32 acc': (int8_conv, [r.randint(-20, 20, (8, 32, 32, 32)).astype(np.int8), r.randint(-20, 20, (3, 3, 32, 64)).astype(np.int8)]),
        'log-domain matmul 256^3': (log_matmul, [f32(256, 256), f32(256, 256)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
