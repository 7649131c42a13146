#!/usr/bin/env python3
"""Benchmark (not a test): a seventeenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked): a
linear recurrence by lax.associative_scan, an fp8 (e4m3) weight matmul, lax.switch, jnp.unique
with a size, a weighted bincount, a histogram, an integer hash with population counts and
leading zeros, least squares and polyfit, batched slogdet, a correlation matrix, jnp.interp,
jnp.gradient, a random permutation and choice without replacement, categorical sampling, a
power spectrum by rfft2 and fftshift, cummax and cumlogsumexp, a DDPM sampling loop, a U-Net up
block with group norm, a ViT patch embedding with attention, a matrix-product-state contraction
scan, a bilateral filter, expm, SPH densities, spectral norms and ranks by SVD, complex eigvalsh
and singular values, a chained einsum, mesh vertex normals, NaN-aware statistics and a pixel
shuffle.
Written as held-out programs: none of them is in the other sixteen sweeps.

    .venv/bin/python benchmarks/jax_sweep_seventeenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(17)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def linear_recurrence(a, b):
        # h_t = a_t h_{t-1} + b_t over 4096 steps of 256 channels, as a parallel prefix.
        def combine(x, y):
            return y[0] * x[0], y[0] * x[1] + y[1]
        return jax.lax.associative_scan(combine, (a, b))[1]

    def fp8_matmul(x, w, scale):
        x8 = (x / 8).astype(jnp.float8_e4m3fn)
        w8 = (w * 16).astype(jnp.float8_e4m3fn)
        y = jnp.dot(x8, w8, preferred_element_type=jnp.float32)
        return y * (scale * 0.5)

    def switch_activation(i, x):
        return jax.lax.switch(i, [jax.nn.relu, jax.nn.gelu, jnp.tanh, jax.nn.silu], x)

    def unique_sized(x):
        return jnp.unique(x, size=1024, fill_value=-1)

    def weighted_bincount(x, w):
        return jnp.bincount(x, weights=w, length=4096)

    def histogram(x):
        return jnp.histogram(x, bins=64, range=(-4.0, 4.0))[0]

    def hash_bits(x):
        h = x ^ (x >> 16)
        h = h * jnp.uint32(0x85EBCA6B)
        h = h ^ (h >> 13)
        h = h * jnp.uint32(0xC2B2AE35)
        h = h ^ (h >> 16)
        return (jax.lax.population_count(h).astype(jnp.int32) * 32
                + jax.lax.clz(h).astype(jnp.int32))

    def lstsq(a, b):
        return jnp.linalg.lstsq(a, b)[0]

    def polyfit(x, y):
        return jnp.polyfit(x, y, 5)

    def slogdet(a):
        s, l = jnp.linalg.slogdet(a)
        return s * l

    def interp(x, xp, fp):
        return jnp.interp(x, xp, fp)

    def image_gradient(img):
        gy, gx = jnp.gradient(img)
        return jnp.sqrt(gx * gx + gy * gy)

    def permutation(x):
        key = jax.random.PRNGKey(3)
        p = jax.random.permutation(key, x)
        c = jax.random.choice(jax.random.PRNGKey(4), x, (1024,), replace=False)
        return p[:4096] + jnp.sum(c)

    def categorical(logits):
        return jax.random.categorical(jax.random.PRNGKey(5), logits, axis=-1)

    def power_spectrum(img):
        f = jnp.fft.fftshift(jnp.fft.rfft2(img), axes=(-2,))
        return jnp.log1p(jnp.abs(f) ** 2)

    def cum_max_lse(x):
        return jax.lax.cummax(x, axis=1) + jax.lax.cumlogsumexp(x, axis=1)

    def ddpm(x, w1, w2, temb):
        betas = jnp.linspace(1e-4, 0.02, 20)
        alphas = 1 - betas
        abar = jnp.cumprod(alphas)

        def step(i, x):
            t = 19 - i
            h = jax.nn.silu(x @ w1 + temb[t])
            eps = h @ w2
            mean = (x - betas[t] / jnp.sqrt(1 - abar[t]) * eps) / jnp.sqrt(alphas[t])
            noise = jax.random.normal(jax.random.fold_in(jax.random.PRNGKey(0), t), x.shape)
            return mean + jnp.where(t > 0, jnp.sqrt(betas[t]), 0.0) * noise
        return jax.lax.fori_loop(0, 20, step, x)

    def group_norm(x, groups=8, eps=1e-5):
        b, h, w, c = x.shape
        g = x.reshape(b, h, w, groups, c // groups)
        m = jnp.mean(g, axis=(1, 2, 4), keepdims=True)
        v = jnp.var(g, axis=(1, 2, 4), keepdims=True)
        return ((g - m) * jax.lax.rsqrt(v + eps)).reshape(x.shape)

    def unet_up(x, skip, wt, w):
        dn = ('NHWC', 'HWIO', 'NHWC')
        u = jax.lax.conv_transpose(x, wt, (2, 2), 'SAME', dimension_numbers=dn)
        h = jnp.concatenate([u, skip], -1)
        h = jax.nn.silu(group_norm(h))
        return jax.lax.conv_general_dilated(h, w, (1, 1), 'SAME', dimension_numbers=dn)

    def vit_embed(img, wp, pos, wq, wk, wv):
        dn = ('NHWC', 'HWIO', 'NHWC')
        p = jax.lax.conv_general_dilated(img, wp, (16, 16), 'VALID', dimension_numbers=dn)
        t = p.reshape(p.shape[0], -1, p.shape[-1]) + pos
        t = (t - t.mean(-1, keepdims=True)) * jax.lax.rsqrt(t.var(-1, keepdims=True) + 1e-6)
        q = (t @ wq).reshape(t.shape[0], -1, 6, 64)
        k = (t @ wk).reshape(t.shape[0], -1, 6, 64)
        v = (t @ wv).reshape(t.shape[0], -1, 6, 64)
        s = jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q, k) / 8, -1)
        return jnp.einsum('bhqk,bkhd->bqhd', s, v)

    def mps_norm(tensors):
        # <psi|psi> of a 64-site matrix product state, bond 32, physical 2.
        def step(env, a):
            return jnp.einsum('ij,sik,sjl->kl', env, a, a), None
        env, _ = jax.lax.scan(step, jnp.eye(32, dtype=tensors.dtype), tensors)
        return jnp.trace(env)

    def bilateral(img):
        out = jnp.zeros_like(img)
        norm = jnp.zeros_like(img)
        pad = jnp.pad(img, 2, mode='edge')
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                nb = pad[2 + dy:2 + dy + img.shape[0], 2 + dx:2 + dx + img.shape[1]]
                w = jnp.exp(-(dx * dx + dy * dy) / 4.5 - (nb - img) ** 2 / 0.02)
                out = out + w * nb
                norm = norm + w
        return out / norm

    def sph_density(pos, mass):
        d2 = jnp.sum((pos[:, None] - pos[None]) ** 2, -1)
        h2 = 0.05
        w = jnp.where(d2 < h2, (h2 - d2) ** 3, 0.0)
        return w @ mass

    def spectral(a):
        return jnp.linalg.norm(a, ord=2, axis=(-2, -1)) + jnp.linalg.matrix_rank(a)

    def eigvalsh_c(re, im):
        a = re + 1j * im
        return jnp.linalg.eigvalsh(a + jnp.conj(jnp.swapaxes(a, -1, -2)))

    def svdvals_c(re, im):
        return jnp.linalg.svd(re + 1j * im, compute_uv=False)

    def vertex_normals(verts, faces):
        a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
        n = jnp.cross(b - a, c - a)
        acc = jnp.zeros_like(verts)
        acc = acc.at[faces[:, 0]].add(n).at[faces[:, 1]].add(n).at[faces[:, 2]].add(n)
        return acc / (jnp.linalg.norm(acc, axis=-1, keepdims=True) + 1e-9)

    def nan_stats(x):
        return jnp.nanmean(x, 1) + jnp.nanstd(x, 1) + jnp.nanmax(x, 1)

    def pixel_shuffle(x):
        b, h, w, c = x.shape
        y = x.reshape(b, h, w, 4, 4, c // 16).transpose(0, 1, 3, 2, 4, 5)
        return y.reshape(b, h * 4, w * 4, c // 16)

    nan_data = f32(4096, 1024)
    nan_data[r.rand(4096, 1024) < 0.1] = np.nan
    xs = np.sort(r.rand(4096).astype(np.float32) * 4 - 2)
    n_verts = 1 << 15
    faces = r.randint(0, n_verts, (1 << 16, 3)).astype(np.int32)
    return {
        'associative_scan linear recurrence 4096 x 256': (
            linear_recurrence, [np.float32(0.9) + 0.1 * np.tanh(f32(4096, 256)), f32(4096, 256)],
            1e-3),
        'fp8 e4m3 weight matmul 512x1024x1024': (
            fp8_matmul, [f32(512, 1024), f32(1024, 1024) * .05, np.abs(f32(1024))], 1e-2),
        'lax.switch activation 1024x1024': (
            switch_activation, [np.int32(1), f32(1024, 1024)]),
        'jnp.unique size 1024 of 2^16 ints': (
            unique_sized, [r.randint(0, 2000, 1 << 16).astype(np.int32)]),
        'weighted bincount 2^20 into 4096': (
            weighted_bincount, [r.randint(0, 4096, 1 << 20).astype(np.int32),
                                np.abs(f32(1 << 20))], 1e-2),
        'histogram 64 bins 2^20': (histogram, [f32(1 << 20)]),
        'murmur finalizer popcount clz 2^22': (
            hash_bits, [r.randint(0, 1 << 31, 1 << 22).astype(np.uint32)]),
        'lstsq 512x64, 16 rhs': (lstsq, [f32(512, 64), f32(512, 16)], 1e-3),
        'polyfit degree 5, 4096 points': (
            polyfit, [xs, (xs ** 3 - xs + 0.1 * f32(4096)).astype(np.float32)], 1e-2),
        'slogdet 64 x 64x64': (slogdet, [f32(64, 64, 64)], 1e-3),
        'corrcoef 256 x 4096': (jnp.corrcoef, [f32(256, 4096)], 1e-3),
        'jnp.interp 2^20 points 1024 knots': (
            interp, [r.rand(1 << 20).astype(np.float32) * 12 - 1,
                     np.sort(r.rand(1024).astype(np.float32) * 10), f32(1024)], 1e-4),
        'jnp.gradient magnitude 1024x1024': (image_gradient, [f32(1024, 1024)]),
        'random permutation 2^16 and choice without replacement': (
            permutation, [np.arange(1 << 16, dtype=np.int32)]),
        'categorical sampling 4096 x 1000': (categorical, [f32(4096, 1000)]),
        'power spectrum rfft2 fftshift b8 256x256': (power_spectrum, [f32(8, 256, 256)], 1e-3),
        'cummax + cumlogsumexp 512 x 4096': (cum_max_lse, [f32(512, 4096)], 1e-3),
        'ddpm sampling fori 20 b1024 d64': (
            ddpm, [f32(1024, 64), f32(64, 256) * .1, f32(256, 64) * .1, f32(20, 256) * .1],
            1e-3),
        'unet up block b4 32x32x128 -> 64x64 groupnorm': (
            unet_up, [f32(4, 32, 32, 128), f32(4, 64, 64, 64), f32(2, 2, 128, 64) * .1,
                      f32(3, 3, 128, 64) * .05], 1e-3),
        'vit patch embed + attention b8 224x224': (
            vit_embed, [f32(8, 224, 224, 3), f32(16, 16, 3, 384) * .05, f32(196, 384) * .1,
                        f32(384, 384) * .05, f32(384, 384) * .05, f32(384, 384) * .05], 1e-3),
        'mps norm scan 64 sites bond 32': (mps_norm, [f32(64, 2, 32, 32) * .125], 1e-3),
        'bilateral filter 5x5 1024x1024': (bilateral, [r.rand(1024, 1024).astype(np.float32)],
                                           1e-4),
        'expm 64 x 32x32': (jax.scipy.linalg.expm, [f32(64, 32, 32) * .2], 1e-3),
        'sph density 4096 particles': (
            sph_density, [r.rand(4096, 3).astype(np.float32), np.abs(f32(4096))], 1e-3),
        'spectral norm + matrix_rank 128 x 32x32': (spectral, [f32(128, 32, 32)], 1e-3),
        'complex eigvalsh 64 x 32x32': (eigvalsh_c, [f32(64, 32, 32), f32(64, 32, 32)], 1e-3),
        'complex singular values 64 x 48x32': (
            svdvals_c, [f32(64, 48, 32), f32(64, 48, 32)], 1e-3),
        'chained einsum bij,bjk,bkl b64 128': (
            lambda a, b, c: jnp.einsum('bij,bjk,bkl->bil', a, b, c),
            [f32(64, 128, 128), f32(64, 128, 128), f32(64, 128, 128)], 1e-3),
        'mesh vertex normals 2^15 verts 2^16 faces': (
            vertex_normals, [f32(n_verts, 3), faces], 1e-3),
        'nanmean nanstd nanmax 4096 x 1024': (nan_stats, [nan_data], 1e-3),
        'pixel shuffle x4 b8 64x64x256': (pixel_shuffle, [f32(8, 64, 64, 256)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
