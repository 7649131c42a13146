#!/usr/bin/env python3
"""Benchmark (not a test): a nineteenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked), all
with 64-bit types enabled (jax_enable_x64), as scientific JAX code runs: f64 matrix products,
an f64 MLP, softmax and layer norm, f64 transcendental and special functions, f64 Cholesky
solves, eigh, inverse and determinant, normal equations, an f64 rfft, an RK4 Lorenz integration
in a fori loop, a Newton iteration in a while loop, f64 cumulative sums and sorts, int64
cumulative sums, division and argsort, a splitmix64 hash on uint64, f64 random normals,
an f64 convolution, complex128 products and exponentials, int64-indexed gathers and segment
sums, and a mixed f32/f64 product.
Written as held-out programs: none of them is in the other eighteen sweeps (which all run in
32 bits).

    .venv/bin/python benchmarks/jax_sweep_nineteenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    jax.config.update('jax_enable_x64', True)
    import jax.numpy as jnp
    import jax.scipy.special as jss
    r = np.random.RandomState(19)

    def f64(*s):
        return r.randn(*s)

    def mlp(x, w1, b1, w2, b2):
        h = jnp.tanh(x @ w1 + b1)
        return jax.nn.log_softmax(jax.nn.gelu(h @ w2 + b2, approximate=False), -1)

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-12) * g + b

    def transcendental(x):
        a = jnp.abs(x) + 0.1
        return (jnp.sin(x) * jnp.cos(2 * x) + jnp.exp(-x * x) + jnp.log(a) + jnp.log1p(a)
                + jnp.expm1(-a) + jnp.arctan2(x, a) + a ** 1.7 + jnp.tanh(x) + jnp.sqrt(a)
                + jnp.cbrt(x))

    def special(x):
        a = jnp.abs(x) + 0.5
        return (jss.erf(x) + jss.erfc(x) + jss.gammaln(a) + jss.digamma(a) + jss.ndtri(
            jax.nn.sigmoid(x)) + jss.i0e(x) + jax.nn.sigmoid(x))

    def cho_solve(a, b):
        spd = a @ jnp.swapaxes(a, -1, -2) + 256 * jnp.eye(a.shape[-1])
        c = jax.scipy.linalg.cho_factor(spd)
        return jax.scipy.linalg.cho_solve(c, b)

    def normal_equations(x, y):
        return jnp.linalg.solve(x.T @ x, x.T @ y)

    def inv_det(a):
        return jnp.linalg.inv(a), jnp.linalg.det(a)

    def eigh(a):
        return jnp.linalg.eigvalsh(a + a.T)

    def rfft_power(x):
        f = jnp.fft.rfft(x, axis=-1)
        return jnp.abs(f) ** 2, jnp.angle(f)

    def lorenz(s0):
        def f(s):
            x, y, z = s[..., 0], s[..., 1], s[..., 2]
            return jnp.stack([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z], -1)

        def step(_, s):
            h = 1e-3
            k1 = f(s)
            k2 = f(s + h / 2 * k1)
            k3 = f(s + h / 2 * k2)
            k4 = f(s + h * k3)
            return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return jax.lax.fori_loop(0, 2000, step, s0)

    def newton_sqrt(a):
        a = jnp.abs(a) + 1.0

        def cond(c):
            x, it = c
            return (jnp.max(jnp.abs(x * x - a) / a) > 1e-15) & (it < 100)

        def body(c):
            x, it = c
            return 0.5 * (x + a / x), it + 1
        return jax.lax.while_loop(cond, body, (a, 0))

    def int64_ops(x, y):
        c = jnp.cumsum(x)
        return c, x // y, x % y, jnp.argsort(x)

    def splitmix(seed):
        z = seed + jnp.arange(1 << 20, dtype=jnp.uint64) * jnp.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> 30)) * jnp.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> 27)) * jnp.uint64(0x94D049BB133111EB)
        return z ^ (z >> 31)

    def normals(key_data):
        key = jax.random.wrap_key_data(key_data)
        k1, k2 = jax.random.split(key)
        return (jax.random.normal(k1, (1 << 20,), jnp.float64).mean()
                + jax.random.uniform(k2, (1024, 1024), jnp.float64))

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def complex128(a, b, c, d):
        z = (a + 1j * b) @ (c + 1j * d)
        return jnp.exp(z * 0.01) + jnp.conj(z)

    def gather_segment(t, idx, seg):
        g = t[idx]
        return g, jax.ops.segment_sum(g, seg, num_segments=4096)

    def mixed(x, w):
        y = x.astype(jnp.float32) @ w.astype(jnp.float32)
        return jnp.sum(y.astype(jnp.float64) ** 2, axis=0) + x.sum(0) @ w

    n_idx = 1 << 16
    return {
        'f64 matmul 512x512x512': (lambda a, b: a @ b, [f64(512, 512), f64(512, 512)]),
        'f64 mlp tanh gelu log_softmax b256 512-1024-256': (
            mlp, [f64(256, 512), f64(512, 1024) * .05, f64(1024) * .1, f64(1024, 256) * .05,
                  f64(256) * .1]),
        'f64 softmax 1024x1024': (lambda x: jax.nn.softmax(x, -1), [f64(1024, 1024)]),
        'f64 layernorm 4096x1024': (layernorm, [f64(4096, 1024), f64(1024), f64(1024)]),
        'f64 transcendentals 2^20': (transcendental, [f64(1 << 20)]),
        'f64 special functions 2^18': (special, [f64(1 << 18)]),
        'f64 cho_solve b8 256x256': (cho_solve, [f64(8, 256, 256) * .1, f64(8, 256, 4)]),
        'f64 normal equations 8192x64': (normal_equations, [f64(8192, 64), f64(8192, 3)]),
        'f64 inv and det 128x128': (inv_det, [f64(128, 128) + 12 * np.eye(128)]),
        'f64 eigvalsh 256x256': (eigh, [f64(256, 256)]),
        'f64 rfft power and phase 16 x 2^16': (rfft_power, [f64(16, 1 << 16)]),
        'f64 rk4 lorenz fori 2000 steps 1024 states': (
            lorenz, [np.array([1.0, 1.0, 20.0]) + 0.01 * f64(1024, 3)]),
        'f64 newton sqrt while 2^16': (newton_sqrt, [f64(1 << 16) * 100]),
        'f64 cumsum 2^22': (jnp.cumsum, [f64(1 << 22)]),
        'f64 sort 2^20': (jnp.sort, [f64(1 << 20)]),
        'int64 cumsum div mod argsort 2^20': (
            int64_ops, [r.randint(-10 ** 12, 10 ** 12, 1 << 20).astype(np.int64),
                        r.choice([-7, -3, 5, 11, 1 << 33], 1 << 20).astype(np.int64)]),
        'uint64 splitmix64 2^20': (splitmix, [np.uint64(12345)]),
        'f64 random normal and uniform': (normals, [np.array([0, 42], np.uint32)]),
        'f64 conv 3x3 b8 32x32 16->32': (conv, [f64(8, 32, 32, 16), f64(3, 3, 16, 32) * .1]),
        'complex128 matmul and exp 256': (
            complex128, [f64(256, 256), f64(256, 256), f64(256, 256), f64(256, 256)]),
        'int64 gather and segment_sum 2^16 of 8192x64': (
            gather_segment, [f64(8192, 64), r.randint(0, 8192, n_idx).astype(np.int64),
                             np.sort(r.randint(0, 4096, n_idx)).astype(np.int64)]),
        'mixed f32 product f64 sums 4096x256x256': (mixed, [f64(4096, 256), f64(256, 256)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
