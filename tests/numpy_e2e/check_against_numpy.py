#!/usr/bin/env python3
"""Runs HLO modules with `kiln run` and compares every output with an independent NumPy
evaluation of the same computation. Usage: check_against_numpy.py KILN SOURCE_ROOT [DEVICE]."""
import os
import subprocess
import sys
import tempfile

import numpy as np

rng = np.random.default_rng(20261123)


def f32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def model_fn():
    x, y, z = f32(1024), f32(1024), f32(1024)
    return [x, y, z], [np.float32((x.astype(np.float64) + y * z).sum())]


def softmax_case():
    x = f32(64, 128, lo=-5, hi=5)
    return [x], [softmax(x.astype(np.float64))]


def dense_relu():
    x, w, b = f32(256, 784), f32(784, 512, lo=-0.05, hi=0.05), f32(512)
    return [x, w, b], [np.maximum(x.astype(np.float64) @ w + b, 0)]


def mlp_train_step():
    x = f32(256, 784)
    labels = rng.integers(0, 10, size=256).astype(np.int32)
    w1, b1 = f32(784, 512, lo=-0.05, hi=0.05), f32(512, lo=-0.1, hi=0.1)
    w2, b2 = f32(512, 10, lo=-0.1, hi=0.1), f32(10, lo=-0.1, hi=0.1)
    X, W1, B1, W2, B2 = (a.astype(np.float64) for a in (x, w1, b1, w2, b2))
    pre = X @ W1 + B1
    h = np.maximum(pre, 0)
    logits = h @ W2 + B2
    p = softmax(logits)
    onehot = np.eye(10)[labels]
    loss = -(onehot * np.log(p)).sum() / 256
    dlogits = (p - onehot) / 256
    dw2, db2 = h.T @ dlogits, dlogits.sum(0)
    dpre = (dlogits @ W2.T) * (pre > 0)
    dw1, db1 = X.T @ dpre, dpre.sum(0)
    lr = 0.1
    return ([x, labels, w1, b1, w2, b2],
            [loss, W1 - lr * dw1, B1 - lr * db1, W2 - lr * dw2, B2 - lr * db2])


def layernorm_gelu():
    x, g, b = f32(16, 64, lo=-3, hi=3), f32(64, lo=0.5, hi=1.5), f32(64)
    X = x.astype(np.float64)
    mu = X.mean(1, keepdims=True)
    var = ((X - mu) ** 2).mean(1, keepdims=True)
    y = (X - mu) / np.sqrt(var + 1e-5) * g + b
    gelu = 0.5 * y * (1 + np.tanh(0.797884583 * (y + 0.044715 * y ** 3)))
    return [x, g, b], [gelu]


def attention():
    q, k, v = f32(2, 8, 64), f32(2, 8, 64), f32(2, 8, 64)
    Q, K, V = (a.astype(np.float64) for a in (q, k, v))
    p = softmax(Q @ K.transpose(0, 2, 1) * 0.125)
    return [q, k, v], [p @ V]


def conv2d():
    x, w, b = f32(2, 9, 9, 3), f32(3, 3, 3, 4), f32(4)
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((2, 5, 5, 4))
    for i in range(5):
        for j in range(5):
            patch = xp[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3, :]
            out[:, i, j, :] = np.einsum('nhwc,hwco->no', patch, w)
    return [x, w, b], [np.maximum(out + b, 0)]


def while_power():
    a = f32(8, lo=-4, hi=4)
    s = np.abs(a.astype(np.float64)) + 1
    x = s.copy()
    for _ in range(10):
        x = 0.5 * (x + s / x)
    return [a], [x]


def gather_scatter():
    table, grads = f32(10, 4), f32(6, 4)
    ids = np.array([3, 0, 9, 3, 7, 3], dtype=np.int32)
    acc = np.zeros((10, 4))
    np.add.at(acc, ids, grads.astype(np.float64))
    return [table, ids, grads], [table[ids], acc]


def sort_kv():
    keys = rng.permutation(64).reshape(4, 16).astype(np.float32)
    order = np.argsort(-keys, axis=1, kind='stable')
    return [keys], [np.take_along_axis(keys, order, 1), order.astype(np.int32)]


def int_ops():
    a = np.array([7, -7, 100, -2147483648, 5, 0, 123456, -1], dtype=np.int32)
    b = np.array([2, 2, 0, -1, -3, 0, 1000, 0], dtype=np.int32)
    # XLA: x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0; C-style truncation.
    div = np.empty(8, np.int64)
    rem = np.empty(8, np.int64)
    for i in range(8):
        x, y = int(a[i]), int(b[i])
        if y == 0:
            div[i], rem[i] = -1, x
        elif x == -2**31 and y == -1:
            div[i], rem[i] = x, 0
        else:
            q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
            div[i], rem[i] = q, x - q * y
    sl = (a.astype(np.int64) << 3).astype(np.uint64).astype(np.uint32).view(np.int32)
    sra = a >> 3
    clz = np.array([32 - int(v).bit_length() for v in a.view(np.uint32)], dtype=np.uint32)
    return [a, b], [div.astype(np.int32), rem.astype(np.int32), sl, sra, clz]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_step(x, h, c, w, u, b):
    """PyTorch's LSTM cell in float64: gates (i, f, g, o) are column blocks of x@W + h@U + b."""
    i, f, g, o = np.split(x @ w + h @ u + b, 4, axis=1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def lstm_cell():
    x, h, c = f32(64, 256), f32(64, 256), f32(64, 256, lo=-2, hi=2)
    w, u, b = f32(256, 1024, lo=-0.1, hi=0.1), f32(256, 1024, lo=-0.1, hi=0.1), f32(1024)
    return [x, h, c, w, u, b], list(lstm_step(*(a.astype(np.float64) for a in (x, h, c, w, u, b))))


def lstm_stacked():
    layers, hidden, steps, batch = 3, 60, 20, 64
    xs = f32(steps, batch, hidden)
    weights = [[f32(hidden, 4 * hidden, lo=-0.2, hi=0.2), f32(hidden, 4 * hidden, lo=-0.2, hi=0.2),
                f32(4 * hidden, lo=-0.2, hi=0.2)] for _ in range(layers)]
    h = [np.zeros((batch, hidden))] * layers
    c = [np.zeros((batch, hidden))] * layers
    ys = []
    for t in range(steps):
        x = xs[t].astype(np.float64)
        for l, (w, u, b) in enumerate(weights):
            h[l], c[l] = lstm_step(x, h[l], c[l], w.astype(np.float64), u.astype(np.float64), b)
            x = h[l]
        ys.append(x)
    return [xs] + [a for wub in weights for a in wub], [np.stack(ys), np.stack(h), np.stack(c)]


CASES = {
    'examples/hlo/model_fn.hlo': model_fn,
    'examples/hlo/softmax.hlo': softmax_case,
    'examples/hlo/dense_relu.hlo': dense_relu,
    'examples/hlo/mlp_train_step.hlo': mlp_train_step,
    'examples/hlo/lstm_cell.hlo': lstm_cell,
    'examples/hlo/lstm_stacked.hlo': lstm_stacked,
    'examples/hlo/lstm_stacked_while.hlo': lstm_stacked,
    'tests/numpy_e2e/modules/layernorm_gelu.hlo': layernorm_gelu,
    'tests/numpy_e2e/modules/attention.hlo': attention,
    'tests/numpy_e2e/modules/conv2d.hlo': conv2d,
    'tests/numpy_e2e/modules/while_power.hlo': while_power,
    'tests/numpy_e2e/modules/gather_scatter.hlo': gather_scatter,
    'tests/numpy_e2e/modules/sort_kv.hlo': sort_kv,
    'tests/numpy_e2e/modules/int_ops.hlo': int_ops,
}


def main():
    kiln, root = sys.argv[1], sys.argv[2]
    device = sys.argv[3] if len(sys.argv) > 3 else 'interpreter'
    failures = 0
    for rel, make in CASES.items():
        inputs, expected = make()
        with tempfile.TemporaryDirectory() as tmp:
            args = [kiln, 'run', os.path.join(root, rel), '--device', device,
                    '--output-dir', tmp]
            for i, a in enumerate(inputs):
                path = os.path.join(tmp, f'in_{i}.npy')
                np.save(path, a)
                args += ['--input', path]
            proc = subprocess.run(args, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f'FAIL {rel}: kiln exited {proc.returncode}: {proc.stderr.strip()}')
                failures += 1
                continue
            for i, want in enumerate(expected):
                got = np.load(os.path.join(tmp, f'output_{i}.npy'))
                want = np.asarray(want)
                if got.shape != want.shape:
                    print(f'FAIL {rel} output {i}: shape {got.shape} != {want.shape}')
                    failures += 1
                    continue
                if np.issubdtype(want.dtype, np.integer):
                    ok = np.array_equal(got, want)
                    err = int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max(initial=0))
                else:
                    err = float(np.abs(got.astype(np.float64) - want).max(initial=0))
                    ok = np.allclose(got, want, rtol=2e-4, atol=2e-5)
                print(f'{"ok  " if ok else "FAIL"} {rel} output {i}: max abs error {err:.3g}')
                failures += 0 if ok else 1
    print(f'{len(CASES)} modules, {failures} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
