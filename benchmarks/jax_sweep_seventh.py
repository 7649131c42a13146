#!/usr/bin/env python3
"""Benchmark (not a test): a seventh sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
mixed precision as JAX users write it (bf16 attention, a bf16 MLP's gradient, bf16 einsums
and convolutions, a bf16 recurrent scan with small matmuls per step, f16 matmuls, bf16
layer norm), plus f32 pieces of training steps none of the other sweeps has (a GRU scan's
gradient, a depthwise convolution, a cross-entropy with integer labels and its gradient,
global-norm gradient clipping, an EMA of parameters, a weighted mean pool). Written as
held-out programs: none of them is in the other six sweeps.

    .venv-peers/bin/python benchmarks/jax_sweep_seventh.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(7)
    bf = jnp.bfloat16

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def bf16_attention(q, k, v):
        s = jnp.einsum('bqhd,bkhd->bhqk', q.astype(bf), k.astype(bf),
                       preferred_element_type=jnp.float32) / 8.0
        p = jax.nn.softmax(s, axis=-1).astype(bf)
        return jnp.einsum('bhqk,bkhd->bqhd', p, v.astype(bf),
                          preferred_element_type=jnp.float32)

    def bf16_mlp_grad(w1, w2, x, y):
        def loss(w1, w2):
            h = jax.nn.relu(x.astype(bf) @ w1.astype(bf))
            out = (h @ w2.astype(bf)).astype(jnp.float32)
            return jnp.mean((out - y) ** 2)
        return jax.grad(loss, argnums=(0, 1))(w1, w2)

    def bf16_einsum_heads(x, w):
        return jnp.einsum('bsd,dhk->bshk', x.astype(bf), w.astype(bf)).astype(jnp.float32)

    def bf16_conv(x, w):
        y = jax.lax.conv_general_dilated(x.astype(bf), w.astype(bf), (1, 1), 'SAME',
                                         dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
        return jax.nn.relu(y).astype(jnp.float32)

    def bf16_rnn(h0, xs, w, u):
        wb, ub = w.astype(bf), u.astype(bf)

        def step(h, x):
            h = jnp.tanh((x.astype(bf) @ wb + h.astype(bf) @ ub).astype(jnp.float32))
            return h, h
        return jax.lax.scan(step, h0, xs)[1]

    def f16_matmul(a, b):
        return (a.astype(jnp.float16) @ b.astype(jnp.float16)).astype(jnp.float32)

    def bf16_layernorm(x, g):
        xb = x.astype(bf)
        m = jnp.mean(xb, axis=-1, keepdims=True)
        v = jnp.mean((xb - m) ** 2, axis=-1, keepdims=True)
        return ((xb - m) * jax.lax.rsqrt(v + 1e-5) * g.astype(bf)).astype(jnp.float32)

    def gru_grad(h0, xs, wz, wr, wh):
        def loss(wz, wr, wh):
            def step(h, x):
                hx = jnp.concatenate([h, x], axis=-1)
                z = jax.nn.sigmoid(hx @ wz)
                rr = jax.nn.sigmoid(hx @ wr)
                c = jnp.tanh(jnp.concatenate([rr * h, x], axis=-1) @ wh)
                h = (1 - z) * h + z * c
                return h, None
            return jnp.sum(jax.lax.scan(step, h0, xs)[0] ** 2)
        return jax.grad(loss, argnums=(0, 1, 2))(wz, wr, wh)

    def depthwise(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
                                            feature_group_count=x.shape[-1])

    def xent_grad(logits, labels):
        def loss(z):
            lp = jax.nn.log_softmax(z, axis=-1)
            return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=-1))
        return jax.value_and_grad(loss)(logits)

    def clip_by_global_norm(g1, g2, g3):
        norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in (g1, g2, g3)))
        scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        return g1 * scale, g2 * scale, g3 * scale

    def param_ema(e1, e2, p1, p2):
        return 0.999 * e1 + 0.001 * p1, 0.999 * e2 + 0.001 * p2

    def masked_mean_pool(x, mask):
        m = mask[..., None].astype(x.dtype)
        return jnp.sum(x * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1.0)

    return {
        'bf16 attention b4 s512 h8 d64': (bf16_attention, [f32(4, 512, 8, 64), f32(4, 512, 8, 64), f32(4, 512, 8, 64)], 5e-2),
        'bf16 mlp grad 256x512x1024': (bf16_mlp_grad, [f32(512, 1024) * .04, f32(1024, 512) * .03, f32(256, 512), f32(256, 512)], 5e-2),
        'bf16 einsum heads 8x256x512 -> 8x64': (bf16_einsum_heads, [f32(8, 256, 512), f32(512, 8, 64) * .05], 5e-2),
        'bf16 conv 3x3 8x32x32x64 -> 64': (bf16_conv, [f32(8, 32, 32, 64), f32(3, 3, 64, 64) * .05], 5e-2),
        'bf16 rnn scan 64 steps b32 256': (bf16_rnn, [f32(32, 256), f32(64, 32, 256), f32(256, 256) * .06, f32(256, 256) * .06], 5e-2),
        'f16 matmul 1024^3': (f16_matmul, [f32(1024, 1024), f32(1024, 1024)], 5e-2),
        'bf16 layernorm 4096x1024': (bf16_layernorm, [f32(4096, 1024), f32(1024)], 5e-2),
        'gru scan grad 32 steps b16 128': (gru_grad, [f32(16, 128), f32(32, 16, 64), f32(192, 128) * .1, f32(192, 128) * .1, f32(192, 128) * .1], 1e-3),
        'depthwise conv 3x3 8x56x56x128': (depthwise, [f32(8, 56, 56, 128), f32(3, 3, 1, 128)], 1e-4),
        'cross-entropy value_and_grad 1024x10000': (xent_grad, [f32(1024, 10000), r.randint(0, 10000, 1024).astype(np.int32)], 1e-4),
        'clip by global norm 3 tensors 2^20': (clip_by_global_norm, [f32(1 << 20), f32(1024, 512), f32(256, 1024)], 1e-4),
        'param ema 2 x 2^21': (param_ema, [f32(1 << 21), f32(1 << 21), f32(1 << 21), f32(1 << 21)]),
        'masked mean pool 64x512x256': (masked_mean_pool, [f32(64, 512, 256), r.rand(64, 512) > 0.3], 1e-4),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
