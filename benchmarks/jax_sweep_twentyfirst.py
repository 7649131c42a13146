#!/usr/bin/env python3
"""Benchmark (not a test): a twenty-first sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
flax.linen models (a ResNet-style training step with batch norm and AdamW, a transformer
encoder layer's gradient, a GRU through nn.RNN, a tied-embedding language model's loss and
gradient), random samplers with rejection loops (poisson, binomial, dirichlet, gamma, choice
with p), a dilated SAME transposed convolution, a depthwise convolution with a channel
multiplier, nan-reductions, percentiles, histogram2d, digitize, triu_indices gathers, a
lanczos5 antialiased resize, scale_and_translate, activations (celu, selu, mish, glu,
standardize), complex lstsq and pinv, gamma.cdf and norm.ppf, a complex associative scan,
unravel_index, correlate, diff and gradient, a weighted average; shard_map with psum on one
device, custom_jvp, a cond with mixed outputs, matrix_power, f16 sort, bf16 cumsum, top_k of
bf16 and int8, causal dot_product_attention, fp8 variants, int4, uint8 image ops, a
four-operand einsum and a checkpointed gradient.
Written as held-out programs: none of them is in the other twenty sweeps.

    .venv/bin/python benchmarks/jax_sweep_twentyfirst.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def flax_programs(r, f32):
    """The flax.linen models: name -> (function of flat arrays, arrays, tolerance)."""
    import jax
    import flax.linen as nn
    import optax
    key = jax.random.PRNGKey(0)

    def flat(variables):
        leaves, tree = jax.tree_util.tree_flatten(variables)
        return [np.asarray(a) for a in leaves], tree

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, train=True):
            y = nn.relu(nn.BatchNorm(use_running_average=not train)(nn.Conv(64, (3, 3))(x)))
            y = nn.BatchNorm(use_running_average=not train)(nn.Conv(64, (3, 3))(y))
            return nn.relu(x + y)

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x, train=True):
            x = nn.Conv(64, (3, 3), strides=(2, 2))(x)
            x = Block()(Block()(x, train), train)
            return nn.Dense(10)(nn.avg_pool(x, (2, 2), (2, 2)).mean((1, 2)))

    net, tx = Net(), optax.adamw(1e-3)
    images, labels = f32(16, 32, 32, 3), r.randint(0, 10, 16).astype(np.int32)
    variables = net.init(key, images)
    resnet_leaves, resnet_tree = flat((variables['params'], variables['batch_stats'],
                                       tx.init(variables['params'])))

    def resnet_step(*args):
        params, stats, opt = jax.tree_util.tree_unflatten(resnet_tree, args[:-2])
        x, y = args[-2:]

        def loss(p):
            logits, upd = net.apply({'params': p, 'batch_stats': stats}, x,
                                    mutable=['batch_stats'])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), upd
        (value, upd), grads = jax.value_and_grad(loss, has_aux=True)(params)
        updates, opt = tx.update(grads, opt, params)
        return optax.apply_updates(params, updates), upd['batch_stats'], opt, value

    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=4, qkv_features=128)(h, h)
            h = nn.Dense(512)(nn.LayerNorm()(x))
            return x + nn.Dense(128)(nn.gelu(h))

    enc, tokens_in = Encoder(), f32(8, 64, 128)
    enc_leaves, enc_tree = flat(enc.init(key, tokens_in))

    def encoder_grad(*args):
        params = jax.tree_util.tree_unflatten(enc_tree, args[:-1])
        return jax.grad(lambda p: (enc.apply(p, args[-1]) ** 2).mean())(params)

    class Gru(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.RNN(nn.GRUCell(128))(x)

    gru, sequence = Gru(), f32(16, 50, 32)
    gru_leaves, gru_tree = flat(gru.init(key, sequence))

    class Lm(nn.Module):
        @nn.compact
        def __call__(self, t):
            embed = nn.Embed(8000, 128)
            h = nn.LayerNorm()(embed(t))
            h = nn.Dense(128)(nn.relu(nn.Dense(256)(h))) + h
            return embed.attend(h)

    lm, tokens = Lm(), r.randint(0, 8000, (8, 64)).astype(np.int32)
    lm_leaves, lm_tree = flat(lm.init(key, tokens))

    def lm_loss_grad(*args):
        params, t = jax.tree_util.tree_unflatten(lm_tree, args[:-1]), args[-1]

        def loss(p):
            logits = lm.apply(p, t[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, t[:, 1:]).mean()
        return jax.value_and_grad(loss)(params)

    return {
        'flax resnet-ish train step adamw b16 32x32': (
            resnet_step, resnet_leaves + [images, labels], 2e-3),
        'flax encoder layer grad b8 s64 d128': (encoder_grad, enc_leaves + [tokens_in], 1e-3),
        'flax GRU nn.RNN b16 t50 d128': (
            lambda *a: gru.apply(jax.tree_util.tree_unflatten(gru_tree, a[:-1]), a[-1]),
            gru_leaves + [sequence], 1e-3),
        'flax tied-embedding LM loss grad vocab 8000': (lm_loss_grad, lm_leaves + [tokens], 1e-3),
    }


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec
    r = np.random.RandomState(21)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def samplers(seed):
        k1, k2, k3, k4, k5 = jax.random.split(jax.random.wrap_key_data(seed), 5)
        p = jnp.arange(1000.) / 499500.
        return (jax.random.poisson(k1, 3.5, (4096,)).astype(jnp.float32).mean()
                + jax.random.binomial(k2, 20, 0.3, (4096,)).mean()
                + jax.random.dirichlet(k3, jnp.ones(8) * 0.5, (1024,)).sum()
                + jax.random.gamma(k4, 0.2, (4096,)).mean()
                + jax.random.choice(k5, 1000, (256,), p=p).astype(jnp.float32).sum())

    def conv_transpose(x, w):
        return jax.lax.conv_transpose(x, w, (2, 2), 'SAME', rhs_dilation=(2, 2),
                                      dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def depthwise_multiplier(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', feature_group_count=16,
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def nan_stats(x):
        x = jnp.where(x > 2, jnp.nan, x)
        return jnp.nanmean(x, 1), jnp.nanstd(x, 1), jnp.nanargmax(x, 1)

    def triu_gather(a):
        i, j = jnp.triu_indices(128, 1)
        return a[:, i, j]

    def activations(x):
        return (jax.nn.celu(x) + jax.nn.selu(x) + jax.nn.mish(x) + jax.nn.log_sigmoid(x)
                + jax.nn.glu(x, axis=-1).repeat(2, -1) + jax.nn.standardize(x, axis=-1))

    def complex_scan(a, b):
        return jax.lax.associative_scan(lambda u, v: u * v + v, (a + 1j * b) * 0.1, axis=0)

    mesh = Mesh(np.array(jax.devices()[:1]), ('x',))

    def psum_shard_map(x):
        return jax.shard_map(lambda a: jax.lax.psum(a, 'x') * 2, mesh=mesh,
                             in_specs=PartitionSpec('x'), out_specs=PartitionSpec('x'))(x)

    @jax.custom_jvp
    def softplus(x):
        return jnp.logaddexp(x, 0.)
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))

    def cond_mixed(x, i):
        return jax.lax.cond(i[0] > 0, lambda v: (v.sum(), (v * 2).astype(jnp.int32)),
                            lambda v: (v.max(), v.astype(jnp.int32)), x)

    def fp8_variants(x):
        return (x.astype(jnp.float8_e4m3fnuz).astype(jnp.float32)
                + x.astype(jnp.float8_e4m3b11fnuz).astype(jnp.float32))

    def checkpointed_grad(w, x):
        f = jax.checkpoint(lambda w, x: jnp.tanh(x @ w).sum(),
                           policy=jax.checkpoint_policies.dots_saveable)
        return jax.grad(f)(w, x)

    out = {
        'random poisson binomial dirichlet gamma choice': (
            samplers, [np.array([0, 9], np.uint32)], 1e-2),
        'conv_transpose dilated same b8 32x32 32->16': (
            conv_transpose, [f32(8, 32, 32, 32), f32(3, 3, 32, 16) * .1], 1e-3),
        'depthwise multiplier 4 b8 64x64x16': (
            depthwise_multiplier, [f32(8, 64, 64, 16), f32(3, 3, 1, 64) * .1], 1e-3),
        'nanmean nanstd nanargmax 1024x1024': (nan_stats, [f32(1024, 1024)], 1e-3),
        'percentile 5/50/95 rows 512x2048': (
            lambda x: jnp.percentile(x, jnp.array([5., 50., 95.]), axis=1), [f32(512, 2048)],
            1e-3),
        'histogram2d 32x32 of 2^18': (
            lambda x, y: jnp.histogram2d(x, y, bins=32, range=[[-3, 3], [-3, 3]])[0],
            [f32(1 << 18), f32(1 << 18)]),
        'digitize 2^20 into 101 edges': (lambda x: jnp.digitize(x, jnp.linspace(-3, 3, 101)),
                                         [f32(1 << 20)]),
        'triu_indices gather b16 128x128': (triu_gather, [f32(16, 128, 128)]),
        'resize lanczos5 antialias b8 256->96': (
            lambda x: jax.image.resize(x, (8, 96, 96, 3), 'lanczos5', antialias=True),
            [f32(8, 256, 256, 3)], 1e-3),
        'scale_and_translate cubic b8 128->200': (
            lambda x: jax.image.scale_and_translate(x, (8, 200, 200, 3), (1, 2),
                                                    jnp.array([1.5, 1.5]),
                                                    jnp.array([3., -2.]), 'cubic'),
            [f32(8, 128, 128, 3)], 1e-3),
        'activations celu selu mish glu standardize 4096x512': (
            activations, [f32(4096, 512)], 1e-3),
        'complex lstsq 256x64': (
            lambda a, b, c, d: jnp.linalg.lstsq(a + 1j * b, c + 1j * d)[0],
            [f32(256, 64), f32(256, 64), f32(256, 4), f32(256, 4)], 1e-3),
        'complex pinv 96x64': (lambda a, b: jnp.linalg.pinv(a + 1j * b),
                               [f32(96, 64), f32(96, 64)], 1e-3),
        'gamma.cdf norm.ppf 2^16': (
            lambda x: (jax.scipy.stats.gamma.cdf(jnp.abs(x), 2.0)
                       + jax.scipy.stats.norm.ppf(jax.nn.sigmoid(x))), [f32(1 << 16)], 1e-3),
        'associative_scan complex 4096x64': (complex_scan, [f32(4096, 64), f32(4096, 64)], 1e-3),
        'unravel_index 2^16': (lambda i: jnp.stack(jnp.unravel_index(i, (64, 32, 16))),
                               [r.randint(0, 32768, 1 << 16).astype(np.int32)]),
        'correlate valid 2^16 k257': (lambda x, w: jnp.correlate(x, w, mode='valid'),
                                      [f32(1 << 16), f32(257)], 1e-3),
        'diff n2 + gradient 1024x1024': (
            lambda x: jnp.diff(x, n=2, axis=1) + jnp.gradient(x, axis=1)[:, 1:-1],
            [f32(1024, 1024)], 1e-3),
        'weighted average 4096x1024': (
            lambda x, w: jnp.average(x, axis=0, weights=jnp.abs(w)),
            [f32(4096, 1024), f32(4096, 1024)], 1e-3),
        'shard_map psum 1 device': (psum_shard_map, [f32(1024, 64)]),
        'custom_jvp grad softplus 2^18': (jax.grad(lambda x: softplus(x).sum()), [f32(1 << 18)]),
        'cond mixed outputs': (cond_mixed, [f32(4096), np.array([1], np.int32)]),
        'matrix_power 13 b8 32': (lambda a: jnp.linalg.matrix_power(a * .2, 13),
                                  [f32(8, 32, 32)], 1e-3),
        'f16 sort 2^16': (lambda x: jnp.sort(x.astype(jnp.float16)), [f32(1 << 16)]),
        'bf16 cumsum 4096x256': (
            lambda x: jnp.cumsum(x.astype(jnp.bfloat16), axis=1).astype(jnp.float32),
            [f32(4096, 256)], 5e-2),
        'top_k bf16 8 of 4096x512': (
            lambda x: jax.lax.top_k(x.astype(jnp.bfloat16), 8)[0].astype(jnp.float32),
            [f32(4096, 512)]),
        'top_k int8 8 of 4096x512': (lambda x: jax.lax.top_k((x * 30).astype(jnp.int8), 8)[1],
                                     [f32(4096, 512)]),
        'dot_product_attention causal b4 s256 h8 d64': (
            lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
            [f32(4, 256, 8, 64), f32(4, 256, 8, 64), f32(4, 256, 8, 64)], 1e-3),
        'e4m3fnuz and e4m3b11 roundtrip 2^16': (fp8_variants, [f32(1 << 16)]),
        'int4 elementwise 2^16': (
            lambda a: ((a * 3).astype(jnp.int4) + jnp.int4(2)).astype(jnp.int32),
            [f32(1 << 16)]),
        'uint8 image ops b8 128x128x3': (
            lambda x: jnp.clip(jnp.round(x * 60 + 128), 0, 255).astype(jnp.uint8)
            .astype(jnp.float32).mean(axis=(1, 2)), [f32(8, 128, 128, 3)]),
        'einsum 4 operands': (
            lambda a, b, c, d: jnp.einsum('ij,jk,kl,lm->im', a, b, c, d),
            [f32(64, 128), f32(128, 256), f32(256, 32), f32(32, 64)], 1e-3),
        'checkpoint policy mlp grad': (checkpointed_grad, [f32(256, 256), f32(512, 256)], 1e-3),
    }
    out.update(flax_programs(r, f32))
    return out


if __name__ == '__main__':
    jax_sweep.main(programs)
