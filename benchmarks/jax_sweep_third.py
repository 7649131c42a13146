#!/usr/bin/env python3
"""Benchmark (not a test): a third sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
decoder inference (a KV-cache step), mixture-of-experts routing, convolution variants
(pointwise, strided, grouped, 3-D), activations and their gradients, small optimisation loops
(logistic regression, k-means, power iteration, bisection), triangular and LU solves, complex
rotations and column FFTs, more random distributions, integer and boolean reductions, column
reductions, contrastive losses, gathers that sample points. Written as held-out programs: none
of them is in jax_sweep.py or jax_sweep_extra.py.

    .venv-peers/bin/python benchmarks/jax_sweep_third.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(3)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def key(n):
        return np.array([0, n], np.uint32)

    def kv_decode(q, kc, vc, kn, vn, pos):
        kc = jax.lax.dynamic_update_slice(kc, kn, (0, pos[0], 0, 0))
        vc = jax.lax.dynamic_update_slice(vc, vn, (0, pos[0], 0, 0))
        s = jnp.einsum('bhd,bshd->bhs', q, kc) / 8.0
        s = jnp.where(jnp.arange(kc.shape[1])[None, None] <= pos[0], s, -1e9)
        return jnp.einsum('bhs,bshd->bhd', jax.nn.softmax(s), vc), kc, vc

    def moe(x, wg, w1, w2):
        p = jax.nn.softmax(x @ wg)
        g, e = jax.lax.top_k(p, 2)
        d = jax.nn.one_hot(e, wg.shape[1]) * g[..., None]
        h = jax.nn.relu(jnp.einsum('td,edf->tef', x, w1))
        y = jnp.einsum('tef,efd->ted', h, w2)
        return jnp.einsum('tke,ted->td', d, y)

    def conv(x, w, stride=(1, 1), groups=1):
        return jax.lax.conv_general_dilated(x, w, stride, 'SAME', feature_group_count=groups,
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def conv3d(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1, 1), 'SAME',
                                            dimension_numbers=('NDHWC', 'DHWIO', 'NDHWC'))

    def sep_block(x, dw, pw):
        return jax.nn.relu6(conv(jax.nn.relu6(conv(x, dw, groups=x.shape[-1])), pw))

    def conv_wgrad(x, g):
        return jax.vjp(lambda w: conv(x, w), jnp.zeros((3, 3, 32, 32)))[1](g)[0]

    def activations(x):
        return jax.nn.softplus(x) + jax.nn.elu(x) + jax.nn.selu(x) + x * jnp.tanh(jax.nn.softplus(x))

    def gelu_tanh_grad(x):
        return jax.grad(lambda x: jnp.sum(jax.nn.gelu(x, approximate=True)))(x)

    def logreg(x, y):
        def step(i, w):
            p = jax.nn.sigmoid(x @ w)
            return w - 0.1 * x.T @ (p - y) / x.shape[0]
        return jax.lax.fori_loop(0, 50, step, jnp.zeros(x.shape[1]))

    def kmeans(x, c):
        def step(i, c):
            d = jnp.sum(x * x, 1)[:, None] - 2 * x @ c.T + jnp.sum(c * c, 1)[None]
            a = jnp.argmin(d, 1)
            s = jax.ops.segment_sum(x, a, num_segments=c.shape[0])
            n = jax.ops.segment_sum(jnp.ones(x.shape[0]), a, num_segments=c.shape[0])
            return s / jnp.maximum(n, 1)[:, None]
        return jax.lax.fori_loop(0, 10, step, c)

    def power_iter(a):
        def cond(s): return (s[2] < 200) & (s[1] > 1e-6)
        def body(s):
            v = a @ s[0]
            v = v / jnp.linalg.norm(v)
            return v, jnp.linalg.norm(v - s[0]), s[2] + 1
        return jax.lax.while_loop(cond, body, (jnp.ones(a.shape[0]) / 16, 1.0, 0))[0]

    def bisect(c):
        def body(i, s):
            lo, hi = s
            m = 0.5 * (lo + hi)
            up = m * m * m - c > 0
            return jnp.where(up, lo, m), jnp.where(up, m, hi)
        return jax.lax.fori_loop(0, 40, body, (jnp.zeros_like(c), jnp.abs(c) + 1))[0]

    def tri_solve(a, b):
        return jax.scipy.linalg.solve_triangular(jnp.tril(a) + 16 * jnp.eye(a.shape[0]), b, lower=True)

    def lu(a): return jax.scipy.linalg.lu_factor(a)[0]

    def pinv(a): return jnp.linalg.pinv(a)

    def rotate(x, t):
        z = jax.lax.complex(x, 0 * x) * jnp.exp(1j * t)
        return jnp.real(z) + jnp.imag(z) * 2

    def fft_cols(x): return jnp.abs(jnp.fft.fft(x, axis=0))

    def irfft_rows(x): return jnp.fft.irfft(jnp.fft.rfft(x, axis=1) * 0.5, axis=1)

    def randoms(k):
        k = jax.random.wrap_key_data(k)
        k1, k2, k3 = jax.random.split(k, 3)
        return (jax.random.bernoulli(k1, 0.3, (1 << 18,)).astype(jnp.float32)
                + jax.random.truncated_normal(k2, -2., 2., (1 << 18,))
                + jax.random.gumbel(k3, (1 << 18,)))

    def randint(k): return jax.random.randint(jax.random.wrap_key_data(k), (1 << 20,), 0, 1000)

    def s32_dot(a, b): return a @ b

    def u8_image(x): return jnp.mean(x.astype(jnp.float32) / 255.0, axis=(1, 2))

    def bool_reduce(x): return jnp.any(x > 3.0, 1), jnp.all(x > -3.0, 1), jnp.count_nonzero(x > 0, 1)

    def col_var(x): return jnp.var(x, axis=0)

    def col_argmin(x): return jnp.argmin(x, axis=0)

    def prod_rows(x): return jnp.prod(1 + 0.01 * x, axis=1)

    def clip_global(a, b, c):
        n = jnp.sqrt(sum(jnp.sum(t * t) for t in (a, b, c)))
        s = jnp.minimum(1.0, 1.0 / n)
        return a * s, b * s, c * s

    def clip_loss(a, b):
        a = a / jnp.linalg.norm(a, axis=1, keepdims=True)
        b = b / jnp.linalg.norm(b, axis=1, keepdims=True)
        l = a @ b.T * 14.3
        i = jnp.arange(a.shape[0])
        return (jnp.mean(-jax.nn.log_softmax(l, 1)[i, i]) + jnp.mean(-jax.nn.log_softmax(l, 0)[i, i])) / 2

    def contraction(a, b): return jnp.einsum('abcd,cdef->abef', a, b)

    def grid_sample(img, p):
        x, y = p[:, 0] * 63, p[:, 1] * 63
        x0, y0 = jnp.floor(x).astype(jnp.int32), jnp.floor(y).astype(jnp.int32)
        x1, y1 = jnp.minimum(x0 + 1, 63), jnp.minimum(y0 + 1, 63)
        wx, wy = (x - x0)[:, None], (y - y0)[:, None]
        return ((img[y0, x0] * (1 - wx) + img[y0, x1] * wx) * (1 - wy)
                + (img[y1, x0] * (1 - wx) + img[y1, x1] * wx) * wy)

    def scatter_max(x, i, u): return x.at[i].max(u)

    def sliding_sum(x):
        def body(i, acc): return acc + jax.lax.dynamic_slice(x, (i,), (4096,))
        return jax.lax.fori_loop(0, 64, body, jnp.zeros(4096))

    def cumprod(x): return jnp.cumprod(1 + 0.001 * x, axis=1)

    def cumlse(x): return jax.lax.cumlogsumexp(x, axis=1)

    def diff_grad(x): return jnp.diff(x, axis=1)[:, :-1] + jnp.gradient(x, axis=0)[:, 2:]

    def interp(xp, fp, x): return jnp.interp(x, xp, fp)

    def alibi_attn(q, k, v, m):
        s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / 8.0
        pos = jnp.arange(s.shape[-1])
        slopes = 2.0 ** (-jnp.arange(1, s.shape[1] + 1))
        s = s - slopes[None, :, None, None] * jnp.abs(pos[:, None] - pos[None, :])
        s = jnp.where(m[:, None, None, :], s, -1e9)
        return jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s), v)

    def cross_attn(q, k, v):
        return jnp.einsum('bqk,bkd->bqd', jax.nn.softmax(jnp.einsum('bqd,bkd->bqk', q, k) / 8), v)

    def upsample(x): return jnp.repeat(jnp.repeat(x, 2, 1), 2, 2) + 1

    def global_pool_fc(x, w): return jnp.mean(x, (1, 2)) @ w

    def sliding_max(x): return jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 33), (1, 1), 'SAME')

    def bf16_ln(x, g):
        x = x.astype(jnp.bfloat16)
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.mean((x - m) ** 2, -1, keepdims=True)
        return ((x - m) * jax.lax.rsqrt(v + 1e-5) * g.astype(jnp.bfloat16)).astype(jnp.float32)

    def polyval(x): return jnp.polyval(jnp.arange(1.0, 13.0) / 12, x)

    def convolve(x, w): return jnp.convolve(x, w, mode='same')

    def shifts(x):
        u = x.astype(jnp.uint32)
        return (u >> 3) ^ (u << 5) ^ jnp.uint32(0x9E3779B9), jnp.left_shift(x, 2) | (x & 7)

    def layer_residual(x, w, g, b):
        y = x + jax.nn.gelu(x @ w)
        m = jnp.mean(y, -1, keepdims=True)
        return (y - m) * jax.lax.rsqrt(jnp.var(y, -1, keepdims=True) + 1e-5) * g + b

    def vmap_scan(xs):
        def one(x): return jax.lax.scan(lambda c, v: (c * 0.9 + v, c), jnp.zeros(()), x)[1]
        return jax.vmap(one)(xs)

    def topk_mask(x):
        t = jax.lax.top_k(x, 50)[0][:, -1:]
        return jnp.where(x >= t, x, -jnp.inf)

    pts = r.rand(1 << 16, 2).astype(np.float32)
    return {
        'kv-cache decode b8 h16 s1024 d64': (kv_decode, [f32(8, 16, 64), f32(8, 1024, 16, 64), f32(8, 1024, 16, 64), f32(8, 1, 16, 64), f32(8, 1, 16, 64), np.array([517], np.int32)]),
        'moe top2 512 tok 8 experts': (moe, [f32(512, 256), f32(256, 8) * .1, f32(8, 256, 512) * .05, f32(8, 512, 256) * .05]),
        'pointwise conv b8 56x56 64->256': (conv, [f32(8, 56, 56, 64), f32(1, 1, 64, 256) * .1]),
        'strided conv s2 b8 64x64 32->64': (lambda x, w: conv(x, w, (2, 2)), [f32(8, 64, 64, 32), f32(3, 3, 32, 64) * .1]),
        'grouped conv g4 b8 32x32 64->64': (lambda x, w: conv(x, w, groups=4), [f32(8, 32, 32, 64), f32(3, 3, 16, 64) * .1]),
        'conv3d b2 16^3 16->32': (conv3d, [f32(2, 16, 16, 16, 16), f32(3, 3, 3, 16, 32) * .1]),
        'separable block b8 56x56 32->64': (sep_block, [f32(8, 56, 56, 32), f32(3, 3, 1, 32) * .2, f32(1, 1, 32, 64) * .1]),
        'conv weight grad b8 32x32 32->32': (conv_wgrad, [f32(8, 32, 32, 32), f32(8, 32, 32, 32)]),
        'softplus+elu+selu+mish 2^20': (activations, [f32(1 << 20)]),
        'gelu tanh grad 2^20': (gelu_tanh_grad, [f32(1 << 20)]),
        'logreg fori 50 4096x64': (logreg, [f32(4096, 64), (r.rand(4096) > .5).astype(np.float32)]),
        'kmeans 10 iters 8192x16 k32': (kmeans, [f32(8192, 16), f32(32, 16)]),
        'power iteration while 256': (power_iter, [f32(256, 256) + np.diag(np.arange(256)).astype(np.float32)]),
        'bisection fori 40 2^18': (bisect, [f32(1 << 18)]),
        'solve_triangular 256, 64 rhs': (tri_solve, [f32(256, 256), f32(256, 64)]),
        'lu_factor 128': (lu, [f32(128, 128)]),
        'pinv 128x64': (pinv, [f32(128, 64)]),
        'complex rotate 2^20': (rotate, [f32(1 << 20), f32(1 << 20)]),
        'fft columns f32[1024,256]': (fft_cols, [f32(1024, 256)]),
        'rfft/irfft rows f32[256,1024]': (irfft_rows, [f32(256, 1024)]),
        'bernoulli+truncnormal+gumbel 2^18': (randoms, [key(11)]),
        'randint 2^20': (randint, [key(12)]),
        's32 matmul 256^3': (s32_dot, [r.randint(-50, 50, (256, 256)).astype(np.int32), r.randint(-50, 50, (256, 256)).astype(np.int32)]),
        'u8 image mean b64 64x64x3': (u8_image, [r.randint(0, 256, (64, 64, 64, 3)).astype(np.uint8)]),
        'any/all/count_nonzero rows 4096x1024': (bool_reduce, [f32(4096, 1024)]),
        'var over axis 0 f32[8192,256]': (col_var, [f32(8192, 256)]),
        'argmin over axis 0 f32[4096,1024]': (col_argmin, [f32(4096, 1024)]),
        'prod rows f32[4096,256]': (prod_rows, [f32(4096, 256)]),
        'clip by global norm 3 tensors': (clip_global, [f32(1024, 1024), f32(1024, 256), f32(4096)]),
        'clip contrastive loss 1024x512': (clip_loss, [f32(1024, 512), f32(1024, 512)]),
        'einsum abcd,cdef->abef 32^4': (contraction, [f32(32, 32, 32, 32), f32(32, 32, 32, 32)]),
        'bilinear point sample 2^16 of 64x64x16': (grid_sample, [f32(64, 64, 16), pts]),
        'scatter max 2^16 into 4096x32': (scatter_max, [f32(4096, 32), r.randint(0, 4096, 1 << 16).astype(np.int32), f32(1 << 16, 32)]),
        'fori dynamic_slice window sum 64': (sliding_sum, [f32(4096 + 64)]),
        'cumprod rows f32[1024,1024]': (cumprod, [f32(1024, 1024)]),
        'cumlogsumexp rows f32[512,1024]': (cumlse, [f32(512, 1024)]),
        'diff+gradient f32[2048,2048]': (diff_grad, [f32(2048, 2048)]),
        'interp 2^18 on 4096 knots': (interp, [np.sort(f32(4096)), f32(4096), f32(1 << 18)]),
        'alibi masked attention b4 h8 s256 d64': (alibi_attn, [f32(4, 8, 256, 64), f32(4, 8, 256, 64), f32(4, 8, 256, 64), r.rand(4, 256) > .1]),
        'cross attention b8 q128 k512 d64': (cross_attn, [f32(8, 128, 64), f32(8, 512, 64), f32(8, 512, 64)]),
        'nearest upsample 2x b8 64x64x32': (upsample, [f32(8, 64, 64, 32)]),
        'global pool + fc b32 7x7x512': (global_pool_fc, [f32(32, 7, 7, 512), f32(512, 1000) * .05]),
        'sliding max 33 f32[512,4096]': (sliding_max, [f32(512, 4096)]),
        # XLA:CPU computes bf16 chains in f32 without rounding between ops (its default
        # xla_allow_excess_precision); Kiln rounds each op's result as HLO says (it matches the
        # interpreter exactly): the two differ by a few bf16 ulps, 2^-8 each.
        'bf16 layernorm f32[4096,1024]': (bf16_ln, [f32(4096, 1024), f32(1024)], 3e-2),
        'polyval deg 11 2^22': (polyval, [f32(1 << 22)]),
        'convolve 1d 2^16 with 129 taps': (convolve, [f32(1 << 16), f32(129)]),
        'uint32 shifts+xor 2^22': (shifts, [r.randint(0, 1 << 30, 1 << 22).astype(np.int32)]),
        'residual gelu layernorm 1024x512': (layer_residual, [f32(1024, 512), f32(512, 512) * .04, f32(512), f32(512)]),
        'vmap scan 256 x 1024 steps': (vmap_scan, [f32(256, 1024)]),
        'top_k 50 mask 256x32000': (topk_mask, [f32(256, 32000)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
