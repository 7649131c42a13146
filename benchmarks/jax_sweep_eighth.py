#!/usr/bin/env python3
"""Benchmark (not a test): an eighth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
top-k sampling over a vocabulary, a max pool's gradient (select-and-scatter), logaddexp,
integer argsort, per-example gradients (vmap of grad), a symmetric eigensolver, a scan
with a cond in its step, a while loop that runs until it converges, jax.nn's attention and
a masked segment mean. Written as held-out programs: none of them is in the other seven
sweeps.

    .venv/bin/python benchmarks/jax_sweep_eighth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(8)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def top_k_sampling(logits):
        v, i = jax.lax.top_k(logits, 50)
        return jax.nn.softmax(v, axis=-1), i

    def maxpool_grad(x):
        def pool(x):
            return jnp.sum(jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1),
                                                 (1, 2, 2, 1), 'VALID') ** 2)
        return jax.grad(pool)(x)

    def logaddexp(a, b):
        return jnp.logaddexp(a, b)

    def int_argsort(k):
        return jnp.argsort(k)

    def per_example_grads(w, x, y):
        def loss(w, x, y):
            return jnp.sum((jnp.tanh(x @ w) - y) ** 2)
        return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, x, y).sum(axis=-1)

    def eigh(a):
        return jnp.linalg.eigh(a + a.T)[0]

    def scan_with_cond(xs):
        def step(c, x):
            c = jax.lax.cond(x > 0, lambda c: c * 0.99 + x, lambda c: c - 0.5 * x, c)
            return c, c
        return jax.lax.scan(step, 0.0, xs)[1]

    def newton_until_converged(a):
        def cond(s):
            y, prev, i = s
            return (jnp.max(jnp.abs(y - prev)) > 1e-6) & (i < 100)
        def body(s):
            y, _, i = s
            return 0.5 * (y + a / y), y, i + 1
        return jax.lax.while_loop(cond, body, (jnp.ones_like(a), jnp.zeros_like(a), 0))[0]

    def nn_attention(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)

    def segment_mean(x, ids):
        s = jax.ops.segment_sum(x, ids, num_segments=256)
        n = jax.ops.segment_sum(jnp.ones_like(ids, dtype=x.dtype), ids, num_segments=256)
        return s / jnp.maximum(n, 1.0)[:, None]

    return {
        'top-k sampling 8 x 50257 k50': (top_k_sampling, [f32(8, 50257)], 1e-5),
        'maxpool 2x2 grad b8 64x64x32': (maxpool_grad, [f32(8, 64, 64, 32)], 1e-4),
        'logaddexp 2^22': (logaddexp, [f32(1 << 22), f32(1 << 22)], 1e-5),
        'int argsort 2^18': (int_argsort, [r.randint(0, 1 << 30, 1 << 18).astype(np.int32)]),
        'per-example grads 1024 x 256x64': (per_example_grads, [f32(256, 64) * .1, f32(1024, 256), f32(1024, 64)], 1e-4),
        'eigh values 128': (eigh, [f32(128, 128)], 1e-3),
        'scan with cond 2^12': (scan_with_cond, [f32(1 << 12)], 1e-3),
        'newton until converged f32[4096]': (newton_until_converged, [np.abs(f32(4096)) + 0.1], 1e-5),
        'nn.dot_product_attention causal b4 s256 h8 d64': (nn_attention, [f32(4, 256, 8, 64), f32(4, 256, 8, 64), f32(4, 256, 8, 64)], 1e-4),
        'segment mean 2^16 x 32 into 256': (segment_mean, [f32(1 << 16, 32), r.randint(0, 256, 1 << 16).astype(np.int32)], 1e-4),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
