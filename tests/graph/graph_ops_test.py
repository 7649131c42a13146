#!/usr/bin/env python3
"""Every graph op of core/graph/ops against an independent NumPy evaluation, on one device.

usage: graph_ops_test.py KILN SOURCE_ROOT DEVICE
The graphs are tests/graph/ops_*.graph; compilable ones run with --must-compile (one module on
DEVICE), ops_where.graph with --auto-jit (host-only Where/NonZero between clusters); also
examples/graph/cnn.graph (conv, pool, dense, log-softmax, argmax together).
Convolution and pooling references are direct loops, not library calls.
"""
import math
import os
import sys

import numpy as np

from graph_check import GraphChecker

KILN, ROOT, DEVICE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
checker = GraphChecker(KILN, os.path.join(ROOT, "tests", "graph"))
rng = np.random.default_rng(11)
f32, s32, s64 = np.float32, np.int32, np.int64
COMPILED = ["--device", DEVICE, "--must-compile"]


def uniform(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(f32)


def same_padding(size, window, stride, dilation):
    """TF's SAME: output ceil(size/stride), the padding split with the extra one after."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (window - 1) * dilation + 1 - size)
    return out, total // 2


def conv2d_ref(x, f, strides, padding, dilations=(1, 1)):
    n, h, w, _ = x.shape
    kh, kw, _, co = f.shape
    outs, lows = [], []
    for size, k, s, d in ((h, kh, strides[0], dilations[0]), (w, kw, strides[1], dilations[1])):
        if padding == "SAME":
            o, lo = same_padding(size, k, s, d)
        else:
            o, lo = (size - (k - 1) * d - 1) // s + 1, 0
        outs.append(o)
        lows.append(lo)
    y = np.zeros((n, outs[0], outs[1], co), np.float64)
    for b in range(n):
        for i in range(outs[0]):
            for j in range(outs[1]):
                for di in range(kh):
                    for dj in range(kw):
                        r = i * strides[0] + di * dilations[0] - lows[0]
                        c = j * strides[1] + dj * dilations[1] - lows[1]
                        if 0 <= r < h and 0 <= c < w:
                            y[b, i, j, :] += x[b, r, c, :].astype(np.float64) @ f[di, dj]
    return y.astype(f32)


def pool_ref(x, ksize, strides, padding, reduce):
    """`reduce` over the valid (unpadded) elements under each window."""
    n, h, w, ch = x.shape
    outs, lows = [], []
    for size, k, s in ((h, ksize[0], strides[0]), (w, ksize[1], strides[1])):
        o, lo = same_padding(size, k, s, 1) if padding == "SAME" else ((size - k) // s + 1, 0)
        outs.append(o)
        lows.append(lo)
    y = np.zeros((n, outs[0], outs[1], ch), f32)
    for i in range(outs[0]):
        for j in range(outs[1]):
            r0, c0 = i * strides[0] - lows[0], j * strides[1] - lows[1]
            win = x[:, max(r0, 0):r0 + ksize[0], max(c0, 0):c0 + ksize[1], :]
            y[:, i, j, :] = reduce(win.reshape(n, -1, ch), axis=1)
    return y


def erf(v):
    return np.vectorize(math.erf)(v.astype(np.float64))


# Elementwise, with broadcasting across ranks.
a, b, c = uniform(2, 3, 4), uniform(4, lo=0.5, hi=2.0), uniform(3, 1)
a64 = a.astype(np.float64)
gelu_erf = (0.5 * a64 * (1 + erf(a64 / math.sqrt(2)))).astype(f32)
gelu_tanh = (0.5 * a64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (a64 + 0.044715 * a64 ** 3)))).astype(f32)
ci = (a * 4).astype(s32)  # truncation toward zero, like TF's Cast
checker.check("elementwise", "ops_elementwise.graph", [a, b, c],
              [a + b, c - a, np.abs(a), np.abs(a) ** b, gelu_erf, gelu_tanh, ci, ci.astype(f32),
               np.maximum(c, b)], COMPILED, rtol=1e-4, atol=1e-5)

# Comparisons and selects.
i, j = rng.integers(0, 4, (3, 4)).astype(s32), rng.integers(0, 4, 4).astype(s32)
x, y, rows = uniform(3, 4), uniform(3, 4), np.array([True, False, True])
checker.check("compare/select", "ops_compare.graph", [i, j, x, y, rows],
              [i == j, i != j, i < j, i <= j, i > j, i >= j, np.where(i < j, x, y),
               np.where(rows[:, None], x, y), np.where(i >= j, x, f32(0)),
               np.where(i == j, f32(0), y), np.where(j < 2, x, y),
               np.where(i > j, x, f32(0))], COMPILED)

# Batched matmuls, log-softmax, convolution, pooling.
p, q, w, v = uniform(2, 3, 4), uniform(2, 5, 4), uniform(4, 6), uniform(3, 1, 5, 3)
img, flt = uniform(2, 7, 6, 3), uniform(3, 2, 3, 4)
sh = p - p.max(axis=-1, keepdims=True)
checker.check("nn", "ops_nn.graph", [p, q, w, v, img, flt],
              [p @ q.transpose(0, 2, 1), p.transpose(0, 2, 1) @ p, p @ w, v @ p,
               sh - np.log(np.exp(sh).sum(axis=-1, keepdims=True)),
               conv2d_ref(img, flt, (2, 2), "SAME"),
               conv2d_ref(img, flt, (1, 1), "VALID", dilations=(2, 1)),
               pool_ref(img, (3, 3), (2, 2), "SAME", np.max),
               pool_ref(img, (3, 2), (2, 2), "SAME", np.mean),
               pool_ref(img, (2, 2), (1, 2), "VALID", np.mean),
               pool_ref(img, (2, 3), (3, 1), "VALID", np.max)], COMPILED, rtol=1e-4, atol=1e-5)

# Slicing, padding, joining, filling, adding and removing dimensions.
xa, ya, s = uniform(4, 5, 6), uniform(4, 2, 6), f32(2.5)
one = ya[0:1, 0:2, 0:1]
checker.check("array", "ops_array.graph", [xa, ya, s],
              [xa[1:3, 0:, 2:5], xa[0:4:2, 1:5:2, -1:0:-2], xa[1:, :-1, 3], xa[::-1],
               np.pad(ya, [(1, 0), (0, 2), (1, 1)]),
               np.pad(ya, [(0, 1), (2, 0), (0, 0)], constant_values=-1.5),
               np.concatenate([xa, ya, xa], axis=1), np.concatenate([ya, ya], axis=-1),
               np.tile(ya, (2, 1, 3)), np.full((2, 3), s), np.zeros_like(ya), np.ones_like(ya),
               ya[:, None], ya[..., None], np.squeeze(one), np.squeeze(one, axis=-1),
               xa.reshape(-1, 3)], COMPILED)

# Reductions, arg-reductions, one-hot, gathers.
xi = uniform(3, 5)
k = np.array([2, 0, 1, 2], s32)
m = np.array([[4, 0], [1, 1]], s64)
h = np.array([-1, 4, 0, 2], s32)
checker.check("index", "ops_index.graph", [xi, k, m, h],
              [xi.min(axis=1), xi.prod(axis=0, keepdims=True), np.prod(xi),
               np.argmax(xi, axis=1).astype(s64), np.argmin(xi, axis=0).astype(s32),
               (h[:, None] == np.arange(5)).astype(f32),
               np.where(np.arange(3)[:, None] == h[None, :], 2.5, -1).astype(f32),
               xi[k], xi[:, m]], COMPILED)

# Unknown dimensions: the same graph at two input sizes.
for rows, cols in [(3, 4), (6, 2)]:
    xd = uniform(rows, cols)
    kd = rng.integers(0, cols, 5).astype(s32)
    sd = xd[::-2, :]
    shd = xd - xd.max(axis=1, keepdims=True)
    checker.check(f"dynamic {rows}x{cols}", "ops_dynamic.graph", [xd, kd],
                  [sd, np.concatenate([xd, sd], axis=0),
                   np.tile(xd, (1, 2)), np.pad(xd, [(0, 1), (2, 0)]), xd[:, kd],
                   shd - np.log(np.exp(shd).sum(axis=1, keepdims=True)),
                   np.argmin(xd, axis=1).astype(s64)], COMPILED)

# examples/graph/cnn.graph: the ops together, at two batch sizes.
kc, wc = uniform(3, 3, 1, 4), uniform(64, 10)
for batch in [1, 3]:
    xc = uniform(batch, 8, 8, 1)
    pooled = pool_ref(np.maximum(conv2d_ref(xc, kc, (1, 1), "SAME"), 0), (2, 2), (2, 2), "VALID", np.max)
    logits = pooled.reshape(batch, -1) @ wc
    shc = logits - logits.max(axis=1, keepdims=True)
    lp = shc - np.log(np.exp(shc).sum(axis=1, keepdims=True))
    checker.check(f"cnn example batch={batch}", os.path.join(ROOT, "examples", "graph", "cnn.graph"),
                  [xc, kc, wc], [lp, np.argmax(lp, axis=1).astype(s64)], COMPILED, rtol=1e-4, atol=1e-5)

# Host-only Where / NonZero: data-dependent sizes, run by host kernels between clusters.
xw = uniform(3, 4)
coords = np.argwhere(xw > 0).astype(s64)
checker.check("where/nonzero", "ops_where.graph", [xw],
              [coords, np.stack(np.nonzero(xw)).astype(s64), coords + 1],
              ["--device", DEVICE, "--auto-jit"])

if checker.failures:
    print("\n".join("FAIL " + f for f in checker.failures))
    sys.exit(1)
print(f"all graph op checks passed on {DEVICE}")
