#!/usr/bin/env python3
"""Benchmark (not a test): a tenth sweep of JAX programs, run exactly as jax_sweep.py runs
its own (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked):
a scan over stacked layers (flax's nn.scan pattern), a rematerialized MLP gradient (jax.checkpoint
writes opt-barrier), the Newton-Schulz orthogonalization of the Muon optimizer, pairwise box
IoU, greedy non-maximum suppression in a fori loop, a LoRA dense layer, soft-capped attention,
nucleus (top-p) sampling, RGB to HSV, an integral image, edge padding, sliding-window local
attention, instance norm and a diagonal Gaussian mixture log-likelihood. Written as held-out
programs: none of them is in the other nine sweeps.

    .venv/bin/python benchmarks/jax_sweep_tenth.py [--runs 10] [--only SUBSTRING]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)


def programs():
    """name -> (function, inputs[, tolerance]): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(10)

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def scan_layers(x, ws, bs):
        # Eight residual dense layers with stacked weights, applied by a scan.
        def layer(h, wb):
            w, b = wb
            return h + jax.nn.gelu(h @ w + b), None
        return jax.lax.scan(layer, x, (ws, bs))[0]

    def remat_mlp_grad(x, w1, w2, w3):
        @jax.checkpoint
        def block(h, w):
            return jnp.tanh(h @ w)

        def loss(ws):
            h = block(block(x, ws[0]), ws[1])
            return jnp.mean((h @ ws[2]) ** 2)
        return jax.grad(loss)((w1, w2, w3))

    def newton_schulz(g):
        # Muon's quintic iteration, 5 steps, on a 512x1024 gradient.
        a, b, c = 3.4445, -4.7750, 2.0315
        x = g / (jnp.linalg.norm(g) + 1e-7)
        for _ in range(5):
            m = x @ x.T
            x = a * x + (b * m + c * m @ m) @ x
        return x

    def box_iou(a, b):
        lt = jnp.maximum(a[:, None, :2], b[None, :, :2])
        rb = jnp.minimum(a[:, None, 2:], b[None, :, 2:])
        wh = jnp.clip(rb - lt, 0)
        inter = wh[..., 0] * wh[..., 1]
        area = lambda t: (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1])
        return inter / (area(a)[:, None] + area(b)[None, :] - inter)

    def nms(boxes, scores):
        # Greedy NMS over 512 boxes sorted by score: a fori loop suppressing by IoU.
        order = jnp.argsort(-scores)
        boxes = boxes[order]
        iou = box_iou(boxes, boxes)
        n = boxes.shape[0]

        def step(i, keep):
            sup = (iou[i] > 0.5) & (jnp.arange(n) > i) & keep[i]
            return keep & ~sup
        return jax.lax.fori_loop(0, n, step, jnp.ones(n, bool))

    def lora(x, w, a, b):
        return x @ w + 0.5 * ((x @ a) @ b)

    def softcap_attention(q, k, v):
        s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / 8.0
        s = 30.0 * jnp.tanh(s / 30.0)
        return jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s, -1), v)

    def top_p(logits, u):
        # Nucleus sampling with p = 0.9: sort, cumulative softmax, mask, then inverse-CDF draw.
        srt = jnp.sort(logits, axis=-1)[:, ::-1]
        probs = jax.nn.softmax(srt, -1)
        cum = jnp.cumsum(probs, -1)
        keep = cum - probs < 0.9
        p = jnp.where(keep, probs, 0)
        p = p / p.sum(-1, keepdims=True)
        idx = jnp.sum(jnp.cumsum(p, -1) < u[:, None], -1)
        return jnp.take_along_axis(srt, idx[:, None], -1)[:, 0]

    def rgb_to_hsv(img):
        rr, gg, bb = img[..., 0], img[..., 1], img[..., 2]
        mx = jnp.max(img, -1)
        mn = jnp.min(img, -1)
        d = mx - mn
        s = jnp.where(mx > 0, d / jnp.where(mx > 0, mx, 1), 0)
        safe = jnp.where(d > 0, d, 1)
        h = jnp.where(mx == rr, (gg - bb) / safe % 6,
                      jnp.where(mx == gg, (bb - rr) / safe + 2, (rr - gg) / safe + 4))
        h = jnp.where(d > 0, h / 6, 0)
        return jnp.stack([h, s, mx], -1)

    def integral_image(x):
        return jnp.cumsum(jnp.cumsum(x, 1), 2)

    def edge_pad(x):
        return jnp.pad(x, ((0, 0), (3, 3), (3, 3), (0, 0)), mode='edge')

    def local_attention(q, k, v):
        # Causal attention within a window of 64 positions.
        s = jnp.einsum('bqd,bkd->bqk', q, k) / 8.0
        i = jnp.arange(q.shape[1])
        ok = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < 64)
        s = jnp.where(ok[None], s, -jnp.inf)
        return jnp.einsum('bqk,bkd->bqd', jax.nn.softmax(s, -1), v)

    def instance_norm(x, g, b):
        m = x.mean((1, 2), keepdims=True)
        v = x.var((1, 2), keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def gmm_loglik(x, mu, logsig, logw):
        # log sum_k w_k N(x; mu_k, diag sigma_k^2), x [N, D], mu [K, D].
        z = (x[:, None, :] - mu[None]) * jnp.exp(-logsig)[None]
        lp = -0.5 * jnp.sum(z * z, -1) - jnp.sum(logsig, -1)[None] - 0.5 * x.shape[1] * np.log(2 * np.pi)
        return jax.nn.logsumexp(lp + jax.nn.log_softmax(logw)[None], -1)

    def boxes(n):
        xy = r.rand(n, 2).astype(np.float32) * 100
        wh = r.rand(n, 2).astype(np.float32) * 20 + 1
        return np.concatenate([xy, xy + wh], 1)

    return {
        'scan over 8 stacked layers b256 512': (
            scan_layers, [f32(256, 512), f32(8, 512, 512) * .03, f32(8, 512) * .1], 1e-3),
        'remat mlp grad b256 512x512x512x10': (
            remat_mlp_grad, [f32(256, 512), f32(512, 512) * .05, f32(512, 512) * .05,
                             f32(512, 10) * .05], 1e-3),
        'newton-schulz 5 steps 512x1024': (newton_schulz, [f32(512, 1024)], 1e-3),
        'box iou 1024x1024': (box_iou, [boxes(1024), boxes(1024)], 1e-4),
        'nms fori 512 boxes': (nms, [boxes(512), r.rand(512).astype(np.float32)]),
        'lora dense b512 1024x1024 r16': (
            lora, [f32(512, 1024), f32(1024, 1024) * .03, f32(1024, 16) * .03, f32(16, 1024) * .03],
            1e-3),
        'softcap attention b4 h8 s256 d64': (
            softcap_attention, [f32(4, 8, 256, 64), f32(4, 8, 256, 64), f32(4, 8, 256, 64)], 1e-3),
        'top-p sampling 64 x 32000': (
            top_p, [f32(64, 32000) * 3, r.rand(64).astype(np.float32)], 1e-4),
        'rgb to hsv b16 128x128': (rgb_to_hsv, [r.rand(16, 128, 128, 3).astype(np.float32)], 1e-4),
        'integral image b16 256x256': (integral_image, [f32(16, 256, 256)], 1e-3),
        'edge pad 3 b8 128x128x32': (edge_pad, [f32(8, 128, 128, 32)]),
        'local attention w64 b8 s1024 d64': (
            local_attention, [f32(8, 1024, 64), f32(8, 1024, 64), f32(8, 1024, 64)], 1e-3),
        'instance norm b16 64x64x64': (
            instance_norm, [f32(16, 64, 64, 64), f32(64), f32(64)], 1e-3),
        'gmm loglik 8192 x 32 comps d16': (
            gmm_loglik, [f32(8192, 16), f32(32, 16), f32(32, 16) * .1, f32(32)], 1e-3),
    }


if __name__ == '__main__':
    jax_sweep.main(programs)
