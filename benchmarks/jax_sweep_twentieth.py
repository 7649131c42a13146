#!/usr/bin/env python3
"""Benchmark (not a test): a twentieth sweep of JAX programs, run exactly as jax_sweep.py runs its
own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked): FFTs of
lengths that are not powers of two (1000, 224x224, 48000), jax.lax.approx_max_k (a full sort
and a slice on CPU), the 'rbg' PRNG (rng-bit-generator), reduce_precision, a convolution with
batch_group_count, nextafter, bitcasts, interior and negative padding, a dilated max pool,
int16/uint16 arithmetic, an e5m2 matmul, polygamma and zeta, Bessel functions; and complex
linear algebra (solve, inv, qr, cholesky, eigvals, slogdet, expm, lu, triangular solve),
hessenberg, eigh_tridiagonal, stft, welch and sqrtm.
Written as held-out programs: none of them is in the other nineteen sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentieth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(20)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def rbg(x):
        k = jax.random.key(3, impl='rbg')
        return x + jax.random.normal(k, x.shape)

    def cplx(a, b):
        return a + 1j * b

    def c_solve(a, b, c, d):
        return jnp.linalg.solve(cplx(a, b) + 8 * jnp.eye(a.shape[-1]), cplx(c, d))

    def c_inv(a, b):
        return jnp.linalg.inv(cplx(a, b) + 8 * jnp.eye(a.shape[-1]))

    def c_qr(a, b):
        q, rr = jnp.linalg.qr(cplx(a, b))
        return jnp.abs(q @ rr)

    def c_chol(a, b):
        z = cplx(a, b)
        return jnp.linalg.cholesky(z @ jnp.conj(z.T) + 64 * jnp.eye(z.shape[0]))

    def c_eig(a, b):
        return jnp.sort_complex(jnp.linalg.eigvals(cplx(a, b)))

    def c_det(a, b):
        return jnp.linalg.slogdet(cplx(a, b) + 8 * jnp.eye(a.shape[-1]))

    def c_expm(a, b):
        return jax.scipy.linalg.expm(cplx(a, b) * 0.1)

    def c_lu(a, b):
        _, lower, upper = jax.scipy.linalg.lu(cplx(a, b))
        return jnp.abs(lower @ upper)

    def c_tri(a, b, c, d):
        t = jnp.tril(cplx(a, b)) + 8 * jnp.eye(a.shape[-1])
        return jax.scipy.linalg.solve_triangular(t, cplx(c, d), lower=True)

    def stft(x):
        return jnp.abs(jax.scipy.signal.stft(x, nperseg=200, noverlap=100)[2])

    def sqrtm(a):
        return jax.scipy.linalg.sqrtm(a @ a.T + 64 * jnp.eye(a.shape[0])).real

    def conv_batch_groups(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'VALID', batch_group_count=4,
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def halve_bits(x):
        bits = jax.lax.bitcast_convert_type(x, jnp.uint32) >> 1
        return jax.lax.bitcast_convert_type(bits, jnp.float32)

    def dilated_pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME',
                                     window_dilation=(1, 2, 2, 1))

    def e5m2(a, b):
        return jnp.dot(a.astype(jnp.float8_e5m2), b.astype(jnp.float8_e5m2),
                       preferred_element_type=jnp.float32)

    def polygamma_zeta(x):
        return (jax.scipy.special.polygamma(2, jnp.abs(x) + 1)
                + jax.scipy.special.zeta(jnp.abs(x) + 2, 1.5))

    return {
        'fft 1000 b64': (lambda x: jnp.fft.fft(x).real, [f32(64, 1000)]),
        'rfft2 224x224 b8': (lambda x: jnp.abs(jnp.fft.rfft2(x)), [f32(8, 224, 224)]),
        'rfft 48000 b4': (lambda x: jnp.abs(jnp.fft.rfft(x)), [f32(4, 48000)]),
        'rbg normal 2^20': (rbg, [f32(1 << 20)]),
        'reduce_precision bf16-ish 2^20': (lambda x: jax.lax.reduce_precision(x, 5, 7) * 2,
                                           [f32(1 << 20)]),
        'approx_max_k 64 of 8192 b128': (lambda x: jax.lax.approx_max_k(x, 64)[0],
                                         [f32(128, 8192)]),
        'conv batch_group_count': (conv_batch_groups, [f32(8, 16, 16, 32), f32(3, 3, 32, 8)]),
        'nextafter 2^20': (jnp.nextafter, [f32(1 << 20), f32(1 << 20)]),
        'bitcast u32 tricks 2^20': (halve_bits, [np.abs(f32(1 << 20))]),
        'pad interior negative 1024x1024': (
            lambda x: jax.lax.pad(x, 0.0, [(-3, 2, 1), (4, -5, 0)]), [f32(1024, 1024)]),
        'reduce_window dilated 8x128x128x16': (dilated_pool, [f32(8, 128, 128, 16)]),
        'int16 uint16 arithmetic 2^20': (
            lambda a, b: (a * b + (a >> 3)) ^ b.astype(jnp.int16),
            [r.randint(-3000, 3000, 1 << 20).astype(np.int16),
             r.randint(0, 60000, 1 << 20).astype(np.uint16)]),
        'e5m2 matmul 512': (e5m2, [f32(512, 512), f32(512, 512)]),
        'polygamma zeta 2^16': (polygamma_zeta, [f32(1 << 16)]),
        'bessel i1e 2^20': (lambda x: jax.scipy.special.i1e(x) + jax.scipy.special.i0(x * .1),
                            [f32(1 << 20)]),
        'complex solve b16 64x64': (c_solve, [f32(16, 64, 64), f32(16, 64, 64), f32(16, 64, 4),
                                              f32(16, 64, 4)], 1e-3),
        'complex inv 128': (c_inv, [f32(128, 128), f32(128, 128)], 1e-3),
        'complex qr 256x128': (c_qr, [f32(256, 128), f32(256, 128)], 1e-3),
        'complex cholesky 128': (c_chol, [f32(128, 128), f32(128, 128)], 1e-3),
        'complex eigvals 64': (c_eig, [f32(64, 64), f32(64, 64)], 1e-3),
        'complex slogdet b32 32x32': (c_det, [f32(32, 32, 32), f32(32, 32, 32)], 1e-3),
        'hessenberg 128': (jax.scipy.linalg.hessenberg, [f32(128, 128)], 1e-3),
        'eigh_tridiagonal 512': (
            lambda d, e: jax.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True),
            [f32(512), f32(511)], 1e-3),
        'stft nperseg 200 b8 16000': (stft, [f32(8, 16000)], 1e-3),
        'welch 256 b8 2^16': (lambda x: jax.scipy.signal.welch(x, nperseg=256)[1],
                              [f32(8, 1 << 16)], 1e-3),
        'complex expm 32': (c_expm, [f32(32, 32), f32(32, 32)], 1e-3),
        'complex lu 128': (c_lu, [f32(128, 128), f32(128, 128)], 1e-3),
        'complex triangular solve 128': (c_tri, [f32(128, 128), f32(128, 128), f32(128, 16),
                                                 f32(128, 16)], 1e-3),
        'sqrtm 64': (sqrtm, [f32(64, 64)], 1e-2),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
