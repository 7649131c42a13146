#!/usr/bin/env python3
"""Benchmark (not a test): an eleventh sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
a Chamfer distance between point clouds, a Dice loss (softmax over 4 classes), a beam search
step, attention computed blockwise by a scan (the flash-attention recurrence), an adaptive
Runge-Kutta integration in a while loop, Conway's game of life in a fori loop, a Mandelbrot
iteration on complex numbers, an image warp with map_coordinates, a convolution through 2-D
FFTs, a focal loss, a language-model head's cross-entropy over a 32000 vocabulary, point
clouds rotated by batched 3x3 matrices, and a Vandermonde matrix. Written as held-out
programs: none of them is in the other ten sweeps.

    .venv/bin/python benchmarks/jax_sweep_eleventh.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    from jax.scipy import ndimage
    r = np.random.RandomState(11)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def chamfer(a, b):
        d = jnp.sum((a[:, :, None, :] - b[:, None, :, :]) ** 2, -1)
        return jnp.mean(jnp.min(d, 2), 1) + jnp.mean(jnp.min(d, 1), 1)

    def dice(logits, labels):
        p = jax.nn.softmax(logits, -1)
        t = jax.nn.one_hot(labels, 4)
        inter = jnp.sum(p * t, (1, 2))
        return 1 - jnp.mean(2 * inter / (jnp.sum(p, (1, 2)) + jnp.sum(t, (1, 2)) + 1e-6))

    def beam_step(scores, logits):
        # 8 sequences, 4 beams, vocabulary 32000: the best 4 continuations of each sequence.
        lp = jax.nn.log_softmax(logits, -1) + scores[:, :, None]
        flat = lp.reshape(lp.shape[0], -1)
        v, i = jax.lax.top_k(flat, 4)
        return v, i // logits.shape[-1], i % logits.shape[-1]

    def flash_attention(q, k, v):
        # Keys in 8 blocks of 128: running max, normalizer and output, as a scan.
        kb = k.reshape(k.shape[0], 8, -1, k.shape[-1]).transpose(1, 0, 2, 3)
        vb = v.reshape(v.shape[0], 8, -1, v.shape[-1]).transpose(1, 0, 2, 3)

        def step(carry, kv):
            m, l, o = carry
            s = jnp.einsum('bqd,bkd->bqk', q, kv[0]) / 8.0
            mn = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - mn[..., None])
            c = jnp.exp(m - mn)
            return (mn, l * c + p.sum(-1), o * c[..., None] + p @ kv[1]), None

        b, n, d = q.shape
        init = (jnp.full((b, n), -jnp.inf), jnp.zeros((b, n)), jnp.zeros((b, n, d)))
        m, l, o = jax.lax.scan(step, init, (kb, vb))[0]
        return o / l[..., None]

    def adaptive_rk(y0):
        # Heun-Euler with step-size control on dy/dt = -y + sin(t) * y^2 / 10 up to t = 5.
        def f(t, y):
            return -y + jnp.sin(t) * y * y / 10

        def body(s):
            t, h, y, n = s
            k1 = f(t, y)
            k2 = f(t + h, y + h * k1)
            hi = y + h / 2 * (k1 + k2)
            err = jnp.max(jnp.abs(hi - (y + h * k1)))
            ok = err < 1e-4
            t2 = jnp.where(ok, t + h, t)
            y2 = jnp.where(ok, hi, y)
            h2 = jnp.clip(h * 0.9 * jnp.sqrt(1e-4 / (err + 1e-12)), 1e-4, 0.5)
            return t2, jnp.minimum(h2, 5.0 - t2 + 1e-6), y2, n + 1

        s = jax.lax.while_loop(lambda s: (s[0] < 5.0) & (s[3] < 10000), body,
                               (jnp.float32(0), jnp.float32(0.01), y0, jnp.int32(0)))
        return s[2]

    def life(board):
        def step(_, b):
            n = sum(jnp.roll(jnp.roll(b, dy, 0), dx, 1)
                    for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
            return ((n == 3) | ((b == 1) & (n == 2))).astype(jnp.int32)
        return jax.lax.fori_loop(0, 10, step, board)

    def mandelbrot(re, im):
        c = re + 1j * im

        def step(_, s):
            z, n = s
            z = z * z + c
            return z, n + (jnp.abs(z) <= 2).astype(jnp.int32)

        return jax.lax.fori_loop(0, 50, step, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))[1]

    def warp(img, flow):
        # Bilinear resampling of 16 channels at positions displaced by a flow field.
        h, w = img.shape[1:]
        yy, xx = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32),
                              indexing='ij')
        coords = [yy + flow[0], xx + flow[1]]
        return jax.vmap(lambda ch: ndimage.map_coordinates(ch, coords, order=1, mode='nearest'))(img)

    def fft_conv(x, k):
        s = x.shape[-2:]
        return jnp.fft.irfft2(jnp.fft.rfft2(x) * jnp.fft.rfft2(k, s), s)

    def focal(logits, labels):
        p = jax.nn.sigmoid(logits)
        pt = jnp.where(labels > 0, p, 1 - p)
        return -jnp.mean(0.25 * (1 - pt) ** 2 * jnp.log(jnp.clip(pt, 1e-7, 1.0)))

    def lm_head_xent(h, w, labels):
        logits = h @ w
        lse = jax.nn.logsumexp(logits, -1)
        return jnp.mean(lse - jnp.take_along_axis(logits, labels[:, None], -1)[:, 0])

    def rotate(rot, pts):
        return jnp.einsum('bij,bnj->bni', rot, pts)

    def vander(x):
        return jnp.vander(x, 8)

    return {
        'chamfer distance b8 1024x1024 points': (chamfer, [f32(8, 1024, 3), f32(8, 1024, 3)], 1e-3),
        'dice loss b16 128x128 4 classes': (
            dice, [f32(16, 128, 128, 4), r.randint(0, 4, (16, 128, 128)).astype(np.int32)], 1e-4),
        'beam search step 8x4 beams vocab 32000': (beam_step, [f32(8, 4), f32(8, 4, 32000)], 1e-4),
        'flash attention scan b8 s1024 d64': (
            flash_attention, [f32(8, 1024, 64), f32(8, 1024, 64), f32(8, 1024, 64)], 1e-3),
        'adaptive heun while f32[4096]': (adaptive_rk, [np.abs(f32(4096))], 1e-3),
        'game of life fori 10 1024x1024': (
            life, [(r.rand(1024, 1024) < 0.3).astype(np.int32)]),
        'mandelbrot fori 50 512x512': (
            mandelbrot, [np.tile(np.linspace(-2, 1, 512, dtype=np.float32), (512, 1)),
                         np.tile(np.linspace(-1.5, 1.5, 512, dtype=np.float32)[:, None], (1, 512))]),
        'map_coordinates warp 16x256x256': (warp, [f32(16, 256, 256), f32(2, 256, 256) * 3], 1e-4),
        'fft conv2d b8 128x128 k9': (fft_conv, [f32(8, 128, 128), f32(9, 9)], 1e-3),
        'focal loss 2^20': (focal, [f32(1 << 20), (r.rand(1 << 20) < 0.1).astype(np.float32)], 1e-4),
        'lm head xent b512 d256 vocab 32000': (
            lm_head_xent, [f32(512, 256), f32(256, 32000) * .05,
                           r.randint(0, 32000, 512).astype(np.int32)], 1e-3),
        'rotate point clouds b256 x 2048 by 3x3': (rotate, [f32(256, 3, 3), f32(256, 2048, 3)], 1e-4),
        'vandermonde 2^16 x 8': (vander, [f32(1 << 16) * .5], 1e-4),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
