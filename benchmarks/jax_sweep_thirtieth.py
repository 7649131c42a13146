#!/usr/bin/env python3
"""Benchmark (not a test): a thirtieth sweep of JAX programs, run exactly as jax_sweep.py
runs its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked),
on inference at batch 1, where latency is the point and every product is thin: two BERT-base
encoder layers over 128 tokens, a GPT-2 decode step against a 512-token cache, a Llama-style
decode step (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU) against a 1024-token
cache, a ResNet basic block at 56x56x64, a MobileNetV2 inverted residual block, a ViT-Tiny
block over 197 tokens with its patch embedding, a one-layer LSTM over 64 steps, a WaveNet-style
dilated convolution stack, an MLP-Mixer block, a Whisper-style convolutional stem over a
log-mel spectrogram, a U-Net down block and a two-layer GRU decoding 32 steps greedily.
Written as held-out programs: the earlier sweeps and the model benchmark run these at batch 8
or more, or not at all.

    .venv/bin/python benchmarks/jax_sweep_thirtieth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    r = np.random.RandomState(30)

    def f32(*s, scale=1.0):
        return (r.randn(*s) * scale).astype(np.float32)

    def w(*s):  # a weight scaled by its fan-in
        return f32(*s, scale=1.0 / np.sqrt(np.prod(s[:-1])))

    def layer_norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g + b

    def rms_norm(x, g):
        return x * lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    def conv(x, k, stride=1, groups=1, dilation=1, padding='SAME'):
        return lax.conv_general_dilated(x, k, (stride,) * (x.ndim - 2), padding,
                                        rhs_dilation=(dilation,) * (x.ndim - 2),
                                        dimension_numbers=('NHWC', 'HWIO', 'NHWC') if x.ndim == 4
                                        else ('NWC', 'WIO', 'NWC'),
                                        feature_group_count=groups)

    def batch_norm_inference(x, p):  # folded scale and shift
        return x * p[0] + p[1]

    # BERT-base: two layers, 12 heads of 64.
    def bert_layer(x, p):
        wqkv, wo, w1, w2, g1, b1, g2, b2 = p
        s, d = x.shape[1], x.shape[2]
        q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
        q, k, v = (t.reshape(1, s, 12, d // 12) for t in (q, k, v))
        a = jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q, k) / 8.0, axis=-1)
        x = layer_norm(x + jnp.einsum('bhqk,bkhd->bqhd', a, v).reshape(1, s, d) @ wo, g1, b1)
        return layer_norm(x + jax.nn.gelu(x @ w1) @ w2, g2, b2)

    def bert_params(d=768):
        return [w(d, 3 * d), w(d, d), w(d, 4 * d), w(4 * d, d), np.ones(d, np.float32),
                np.zeros(d, np.float32), np.ones(d, np.float32), np.zeros(d, np.float32)]

    def bert2(x, *p):
        return bert_layer(bert_layer(x, p[:8]), p[8:])

    # GPT-2 small: one decode step of one layer against a cache of 512 tokens.
    def gpt2_decode(x, kc, vc, wqkv, wo, w1, w2):
        q, k, v = jnp.split(x @ wqkv, 3, axis=-1)  # x: [1, 768]
        q = q.reshape(12, 64)
        keys = jnp.concatenate([kc, k.reshape(1, 12, 64)], 0)  # [513, 12, 64]
        vals = jnp.concatenate([vc, v.reshape(1, 12, 64)], 0)
        a = jax.nn.softmax(jnp.einsum('hd,khd->hk', q, keys) / 8.0, axis=-1)
        h = x + jnp.einsum('hk,khd->hd', a, vals).reshape(1, 768) @ wo
        return h + jax.nn.gelu(h @ w1) @ w2, keys, vals

    # Llama-style: d 1024, 16 query heads and 4 key/value heads of 64, SwiGLU of 2816.
    def rope(x, pos):
        half = x.shape[-1] // 2
        freq = 1.0 / (10000 ** (jnp.arange(half) / half))
        ang = pos * freq
        c, s = jnp.cos(ang), jnp.sin(ang)
        return jnp.concatenate([x[..., :half] * c - x[..., half:] * s,
                                x[..., :half] * s + x[..., half:] * c], -1)

    def llama_decode(x, kc, vc, pos, wq, wk, wv, wo, wg, wu, wd, g1, g2):
        h = rms_norm(x, g1)  # x: [1, 1024]
        q = rope((h @ wq).reshape(16, 64), pos)
        k = rope((h @ wk).reshape(4, 64), pos)
        v = (h @ wv).reshape(4, 64)
        kc = lax.dynamic_update_slice(kc, k[None], (pos, 0, 0))  # [1024, 4, 64]
        vc = lax.dynamic_update_slice(vc, v[None], (pos, 0, 0))
        qg = q.reshape(4, 4, 64)
        logits = jnp.einsum('gqd,kgd->gqk', qg, kc) / 8.0
        mask = jnp.arange(kc.shape[0]) <= pos
        a = jax.nn.softmax(jnp.where(mask, logits, -1e30), axis=-1)
        x = x + jnp.einsum('gqk,kgd->gqd', a, vc).reshape(1, 1024) @ wo
        h = rms_norm(x, g2)
        return x + (jax.nn.silu(h @ wg) * (h @ wu)) @ wd, kc, vc

    def resnet_block(x, k1, k2, p1, p2):
        y = jax.nn.relu(batch_norm_inference(conv(x, k1), p1))
        return jax.nn.relu(x + batch_norm_inference(conv(y, k2), p2))

    def mobilenet_block(x, ke, kd, kp, pe, pd, pp):
        y = jax.nn.relu6(batch_norm_inference(conv(x, ke), pe))
        y = jax.nn.relu6(batch_norm_inference(conv(y, kd, groups=y.shape[-1]), pd))
        return x + batch_norm_inference(conv(y, kp), pp)

    def vit_block(img, kpatch, cls, posemb, *p):
        t = conv(img, kpatch, stride=16, padding='VALID').reshape(1, 196, 192)
        x = jnp.concatenate([cls, t], 1) + posemb
        wqkv, wo, w1, w2 = p
        h = layer_norm(x, 1.0, 0.0)
        q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
        q, k, v = (u.reshape(1, 197, 3, 64) for u in (q, k, v))
        a = jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q, k) / 8.0, axis=-1)
        x = x + jnp.einsum('bhqk,bkhd->bqhd', a, v).reshape(1, 197, 192) @ wo
        return x + jax.nn.gelu(layer_norm(x, 1.0, 0.0) @ w1) @ w2

    def lstm(xs, wx, wh, b):
        def step(carry, x):
            h, c = carry
            z = x @ wx + h @ wh + b
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zero = jnp.zeros((1, wh.shape[0]), xs.dtype)
        return lax.scan(step, (zero, zero), xs)[1]

    def wavenet(x, ks, kr):
        for i in range(6):
            y = conv(x, ks[i], dilation=2 ** i, padding=[(2 ** i, 0)])  # causal, width 2
            a, b = jnp.split(y, 2, axis=-1)
            x = x + conv(jnp.tanh(a) * jax.nn.sigmoid(b), kr[i])
        return x

    def mixer_block(x, wt1, wt2, wc1, wc2):
        y = layer_norm(x, 1.0, 0.0).transpose(0, 2, 1)  # [1, c, tokens]
        x = x + (jax.nn.gelu(y @ wt1) @ wt2).transpose(0, 2, 1)
        return x + jax.nn.gelu(layer_norm(x, 1.0, 0.0) @ wc1) @ wc2

    def whisper_stem(mel, k1, k2):
        y = jax.nn.gelu(conv(mel, k1))
        return jax.nn.gelu(conv(y, k2, stride=2))

    def unet_down(x, k1, k2):
        y = jax.nn.silu(conv(x, k1))
        y = jax.nn.silu(conv(y, k2))
        return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID'), y

    def gru_greedy(emb, wx, wh, wo, h0):
        def step(carry, _):
            h, tok = carry
            x = emb[tok]
            zr = x @ wx[:, :512] + h @ wh[:, :512]
            z, rr = jax.nn.sigmoid(zr[..., :256]), jax.nn.sigmoid(zr[..., 256:])
            n = jnp.tanh(x @ wx[:, 512:] + (rr * h) @ wh[:, 512:])
            h = (1 - z) * n + z * h
            tok = jnp.argmax(h @ wo, -1)[0].astype(jnp.int32)
            return (h, tok), tok
        return lax.scan(step, (h0, jnp.zeros((), jnp.int32)), None, length=32)[1]

    bn = [np.stack([1 + 0.1 * f32(c), 0.1 * f32(c)]) for c in (64, 64, 144, 144, 24)]
    return {
        'bert-base 2 layers s128 b1': (bert2, [f32(1, 128, 768)] + bert_params() + bert_params(),
                                       1e-3),
        'gpt-2 decode step cache 512 b1': (
            gpt2_decode, [f32(1, 768), f32(512, 12, 64), f32(512, 12, 64), w(768, 2304),
                          w(768, 768), w(768, 3072), w(3072, 768)], 1e-3),
        'llama decode step d1024 gqa cache 1024 b1': (
            llama_decode, [f32(1, 1024), f32(1024, 4, 64), f32(1024, 4, 64), np.int32(700),
                           w(1024, 1024), w(1024, 256), w(1024, 256), w(1024, 1024),
                           w(1024, 2816), w(1024, 2816), w(2816, 1024),
                           np.ones(1024, np.float32), np.ones(1024, np.float32)], 1e-3),
        'resnet basic block 56x56x64 b1': (
            resnet_block, [f32(1, 56, 56, 64), w(3, 3, 64, 64), w(3, 3, 64, 64), bn[0], bn[1]],
            1e-3),
        'mobilenetv2 block 56x56 24->144->24 b1': (
            mobilenet_block, [f32(1, 56, 56, 24), w(1, 1, 24, 144), w(3, 3, 1, 144),
                              w(1, 1, 144, 24), bn[2], bn[3], bn[4]], 1e-3),
        'vit-tiny block with patch embedding 224 b1': (
            vit_block, [f32(1, 224, 224, 3), w(16, 16, 3, 192), f32(1, 1, 192),
                        f32(1, 197, 192, scale=0.02), w(192, 576), w(192, 192), w(192, 768),
                        w(768, 192)], 1e-3),
        'lstm d512 scan 64 steps b1': (lstm, [f32(64, 1, 256), w(256, 2048), w(512, 2048),
                                              f32(2048, scale=0.1)], 1e-3),
        'wavenet 6 dilated layers 64ch 4096 samples b1': (
            wavenet, [f32(1, 4096, 64), np.stack([w(2, 64, 128) for _ in range(6)]),
                      np.stack([w(1, 64, 64) for _ in range(6)])], 1e-3),
        'mlp-mixer block 196 tokens 512ch b1': (
            mixer_block, [f32(1, 196, 512), w(196, 256), w(256, 196), w(512, 2048),
                          w(2048, 512)], 1e-3),
        'whisper conv stem 80 mels x 3000 b1': (
            whisper_stem, [f32(1, 3000, 80), w(3, 80, 384), w(3, 384, 384)], 1e-3),
        'unet down block 64x64 64->128 b1': (
            unet_down, [f32(1, 64, 64, 64), w(3, 3, 64, 128), w(3, 3, 128, 128)], 1e-3),
        'gru greedy decode 32 steps vocab 1000 b1': (
            gru_greedy, [f32(1000, 128), w(128, 768), w(256, 768), w(256, 1000),
                         f32(1, 256, scale=0.1)]),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
