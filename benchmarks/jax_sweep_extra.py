#!/usr/bin/env python3
"""Benchmark (not a test): a second sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
transformer pieces (RMSNorm, RoPE, SwiGLU, an attention weight gradient), recurrent scans,
quantized and integer ops, sorts and searches, linear algebra, complex numbers and FFTs,
random numbers, special functions. Written as held-out programs: none of them is in the
other benchmarks.

    .venv-peers/bin/python benchmarks/jax_sweep_extra.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(1)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def rmsnorm(x, g):
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g

    def rope(x):
        d = x.shape[-1] // 2
        f = 1.0 / (10000 ** (jnp.arange(d) / d))
        t = jnp.arange(x.shape[1])[:, None] * f[None]
        c, s = jnp.cos(t)[None, :, None], jnp.sin(t)[None, :, None]
        x1, x2 = x[..., :d], x[..., d:]
        return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)

    def mlp_gelu(x, w1, w2):
        return jax.nn.gelu(x @ w1) @ w2

    def gru(xs, w, u):
        def step(h, x):
            zr = jax.nn.sigmoid(x @ w[:, :256] + h @ u[:, :256])
            z, rr = zr[:, :128], zr[:, 128:]
            n = jnp.tanh(x @ w[:, 256:] + (rr * h) @ u[:, 256:])
            h = (1 - z) * n + z * h
            return h, None
        return jax.lax.scan(step, jnp.zeros((xs.shape[1], 128)), xs)[0]

    def newton_sqrt(x):
        def cond(s): return jnp.max(jnp.abs(s[0] * s[0] - x)) > 1e-3
        def body(s): return (0.5 * (s[0] + x / s[0]), s[1] + 1)
        return jax.lax.while_loop(cond, body, (x, 0))

    def lstm_scan(xs, w, u, b):
        def step(c, x):
            h, cc = c
            g = x @ w + h @ u + b
            i, f, o, gg = jnp.split(g, 4, -1)
            cc = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(gg)
            h = jax.nn.sigmoid(o) * jnp.tanh(cc)
            return (h, cc), h
        return jax.lax.scan(step, (jnp.zeros((16, 256)), jnp.zeros((16, 256))), xs)[1]

    def resize(x): return jax.image.resize(x, (8, 128, 128, 16), 'bilinear')

    def scatter_add(x, i, u): return x.at[i].add(u)

    def cond_loop(x):
        return jax.lax.fori_loop(0, 100, lambda i, a: jax.lax.cond(i % 2 == 0, lambda a: a * 1.01, lambda a: jnp.sin(a), a), x)

    def det(a): return jnp.linalg.slogdet(a)

    def eigh(a): return jnp.linalg.eigh(a @ a.T)[0]

    def expm(a): return jax.scipy.linalg.expm(a * 0.1)

    def conv1d(x, w): return jax.lax.conv_general_dilated(x, w, (1,), 'SAME', dimension_numbers=('NWC', 'WIO', 'NWC'))

    def dilated(x, w): return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', rhs_dilation=(2, 2), dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def complex_mul(a, b):
        z = jax.lax.complex(a, b)
        return jnp.abs(z * z + jnp.conj(z))

    def fft2(x): return jnp.real(jnp.fft.ifft2(jnp.fft.fft2(x) * 0.5))

    def masked_mean(x, m): return jnp.sum(jnp.where(m, x, 0), 1) / jnp.maximum(jnp.sum(m, 1), 1)

    def int8_dot(a, b): return jax.lax.dot(a, b, preferred_element_type=jnp.int32)

    def softmax_ax0(x): return jax.nn.softmax(x, axis=1)

    def vit_patch(x, w):
        p = x.reshape(8, 14, 16, 14, 16, 3).transpose(0, 1, 3, 2, 4, 5).reshape(8, 196, 768)
        return p @ w

    def maxpool3s2(x): return jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME')

    def bce(x, y): return jnp.mean(jnp.maximum(x, 0) - x * y + jnp.log1p(jnp.exp(-jnp.abs(x))))

    def mha_grad(x, wq, wk, wv):
        def loss(wq):
            q, k, v = x @ wq, x @ wk, x @ wv
            q = q.reshape(4, 128, 8, 32); k = k.reshape(4, 128, 8, 32); v = v.reshape(4, 128, 8, 32)
            s = jnp.einsum('bqhd,bkhd->bhqk', q, k) / 5.66
            return jnp.sum(jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(s), v) ** 2)
        return jax.grad(loss)(wq)

    def uniform(k): return jax.random.uniform(jax.random.wrap_key_data(k), (1 << 20,))

    def perm(k): return jax.random.permutation(jax.random.wrap_key_data(k), 1 << 16)

    def categorical(k, l): return jax.random.categorical(jax.random.wrap_key_data(k), l)

    def special(x): return jax.scipy.special.erf(x) + jax.lax.lgamma(jnp.abs(x) + 1) + jax.scipy.special.erfinv(jnp.tanh(x) * 0.99)

    def trig(x, y): return jnp.arctan2(x, y) + jnp.expm1(x * 0.1) + jnp.log1p(jnp.abs(y)) + jnp.fmod(x, 0.7)

    def f16chain(x): return (jnp.tanh(x.astype(jnp.float16) * 2) + 1).astype(jnp.float32)

    def bits(x): return jax.lax.population_count(x) + jax.lax.clz(x) + (jax.lax.bitcast_convert_type(x, jnp.float32) > 0)

    def reflect(x): return jnp.pad(x, ((3, 3), (3, 3)), mode='reflect') * 2

    def cummax(x): return jax.lax.cummax(x, axis=1)

    def searchsorted(a, v): return jnp.searchsorted(a, v)

    def sort1d(x): return jnp.sort(x)

    def einchain(a, b, c): return jnp.einsum('ij,jk,kl->il', a, b, c)

    def outer_norm(x): return jnp.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)

    def lmap(x): return jax.lax.map(lambda r: jnp.sort(r)[::-1][:4], x)

    def nanmean(x): return jnp.nanmean(jnp.where(x > 1.5, jnp.nan, x), axis=0)

    def triu_mm(a, b): return jnp.triu(a) @ b

    def hist(x): return jnp.histogram(x, bins=64, range=(-3, 3))[0]

    def swiglu(x, w1, w2, w3): return (jax.nn.silu(x @ w1) * (x @ w3)) @ w2

    def conv_bn_relu(x, w, g, b):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        m = y.mean((0, 1, 2)); v = y.var((0, 1, 2))
        return jax.nn.relu((y - m) * jax.lax.rsqrt(v + 1e-5) * g + b)

    def lstsq(a, b): return jnp.linalg.lstsq(a, b)[0]

    return {
        'rmsnorm f32[4096,1024]': (rmsnorm, [f32(4096, 1024), f32(1024)]),
        'rope b8 s512 d128': (rope, [f32(8, 512, 8, 128)]),
        'mlp gelu 512x768x3072': (mlp_gelu, [f32(512, 768), f32(768, 3072) * .03, f32(3072, 768) * .03]),
        'swiglu 512x512x1408': (swiglu, [f32(512, 512), f32(512, 1408) * .04, f32(1408, 512) * .04, f32(512, 1408) * .04]),
        'gru scan 50 b32': (gru, [f32(50, 32, 64), f32(64, 384) * .1, f32(128, 384) * .1]),
        'lstm scan 64 b16 256': (lstm_scan, [f32(64, 16, 128), f32(128, 1024) * .05, f32(256, 1024) * .05, f32(1024)]),
        'newton sqrt while': (newton_sqrt, [np.abs(f32(1 << 16)) + 0.5]),
        'bilinear resize 2x b8 64x64x16': (resize, [f32(8, 64, 64, 16)]),
        'scatter add 2^16 rows': (scatter_add, [f32(4096, 64), r.randint(0, 4096, 1 << 16).astype(np.int32), f32(1 << 16, 64)]),
        'fori cond 100': (cond_loop, [f32(4096)]),
        'slogdet 128': (det, [f32(128, 128)]),
        'eigh 64': (eigh, [f32(64, 64)]),
        'expm 32': (expm, [f32(32, 32)]),
        'conv1d b16 w1024 64->64 k5': (conv1d, [f32(16, 1024, 64), f32(5, 64, 64) * .1]),
        'dilated conv b8 32x32 32->32': (dilated, [f32(8, 32, 32, 32), f32(3, 3, 32, 32) * .1]),
        'complex mul 2^20': (complex_mul, [f32(1 << 20), f32(1 << 20)]),
        'fft2 256x256': (fft2, [f32(256, 256)]),
        'masked mean 4096x512': (masked_mean, [f32(4096, 512), r.rand(4096, 512) > 0.3]),
        'int8 dot 512^3': (int8_dot, [r.randint(-100, 100, (512, 512)).astype(np.int8), r.randint(-100, 100, (512, 512)).astype(np.int8)]),
        'softmax 3d f32[64,512,128] ax1': (softmax_ax0, [f32(64, 512, 128)]),
        'vit patch embed b8': (vit_patch, [f32(8, 224, 224, 3), f32(768, 768) * .03]),
        'maxpool 3x3 s2 b8 56x56x64': (maxpool3s2, [f32(8, 56, 56, 64)]),
        'bce logits 2^22': (bce, [f32(1 << 22), (r.rand(1 << 22) > .5).astype(np.float32)]),
        'mha grad wq b4 s128': (mha_grad, [f32(4, 128, 256), f32(256, 256) * .06, f32(256, 256) * .06, f32(256, 256) * .06]),
        'uniform 2^20': (uniform, [np.array([0, 3], np.uint32)]),
        'permutation 2^16': (perm, [np.array([0, 5], np.uint32)]),
        'categorical 1024x1000': (categorical, [np.array([0, 9], np.uint32), f32(1024, 1000)]),
        'erf+lgamma+erfinv 2^20': (special, [f32(1 << 20)]),
        'atan2+expm1+log1p+fmod 2^20': (trig, [f32(1 << 20), f32(1 << 20)]),
        'f16 tanh 2^20': (f16chain, [f32(1 << 20)]),
        'popcount+clz+bitcast 2^20': (bits, [r.randint(-2**31, 2**31 - 1, 1 << 20).astype(np.int32)]),
        'reflect pad 2048^2': (reflect, [f32(2048, 2048)]),
        'cummax rows 1024x1024': (cummax, [f32(1024, 1024)]),
        'searchsorted 2^16 in 2^16': (searchsorted, [np.sort(f32(1 << 16)), f32(1 << 16)]),
        'sort 2^20': (sort1d, [f32(1 << 20)]),
        'einsum chain 512': (einchain, [f32(512, 512), f32(512, 512), f32(512, 64)]),
        'pairwise dist 512x64': (outer_norm, [f32(512, 64)]),
        'lax.map sort rows 256x512': (lmap, [f32(256, 512)]),
        'nanmean ax0 4096x512': (nanmean, [f32(4096, 512)]),
        'triu matmul 512': (triu_mm, [f32(512, 512), f32(512, 512)]),
        'histogram 2^20 64 bins': (hist, [f32(1 << 20)]),
        'conv bn relu b8 32x32 64->64': (conv_bn_relu, [f32(8, 32, 32, 64), f32(3, 3, 64, 64) * .05, f32(64), f32(64)]),
        'lstsq 256x64': (lstsq, [f32(256, 64), f32(256, 8)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
