#!/usr/bin/env python3
"""`kiln graph run examples/graph/mnist_train.graph --steps N` against an independent NumPy
implementation of the same SGD: the initial weights come from a NumPy re-implementation of
the documented counter-based initializer (core/graph/README.md), so the check covers the
initializers, the gradient ops, the updates and the state kept across steps.

usage: mnist_train_test.py KILN SOURCE_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

KILN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
EX = os.path.join(ROOT, "examples", "graph")
sys.path.insert(0, EX)
from mnist_data import make_batch  # noqa: E402

STEPS = 20
M64 = (1 << 64) - 1
failures = []


def mix(z):  # splitmix64's finalizer on uint64 arrays (wrapping arithmetic)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform01(seed, idx):
    key = mix(np.array([seed], np.uint64))[0]
    return (mix(key + idx.astype(np.uint64)) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def normal(seed, idx):
    u1, u2 = uniform01(seed, 2 * idx), uniform01(seed, 2 * idx + 1)
    return np.sqrt(-2 * np.log1p(-u1)) * np.cos(2 * np.pi * u2)


def truncated_normal(seed, shape, stddev):
    n = int(np.prod(shape))
    idx = np.arange(n, dtype=np.uint64)
    z = normal(seed, idx)
    for k in range(1, 64):
        bad = np.abs(z) > 2
        if not bad.any():
            break
        z[bad] = normal(seed, idx[bad] + np.uint64(k * n))
    return (stddev * z).astype(np.float32).reshape(shape)


def numpy_sgd(x, labels, steps, lr=np.float32(0.2)):
    w1 = truncated_normal(1, (784, 512), 0.05)
    b1 = np.zeros(512, np.float32)
    w2 = truncated_normal(2, (512, 10), 0.05)
    b2 = np.zeros(10, np.float32)
    onehot = np.eye(10, dtype=np.float32)[labels]
    losses = []
    for _ in range(steps):
        h1 = np.maximum(x @ w1 + b1, 0)
        logits = h1 @ w2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        losses.append(float(-(onehot * logp).sum(axis=1).mean()))
        d_logits = (np.exp(logp) - onehot) / np.float32(len(x))
        d_h1 = (d_logits @ w2.T) * (h1 > 0)
        w1 = w1 - lr * (x.T @ d_h1)
        b1 = b1 - lr * d_h1.sum(axis=0)
        w2 = w2 - lr * (h1.T @ d_logits)
        b2 = b2 - lr * d_logits.sum(axis=0)
    return losses


x, labels = make_batch(0)
want = numpy_sgd(x, labels, STEPS)
print("numpy:", " ".join(f"{v:.4f}" for v in want))


def train(d, extra):
    return subprocess.run([KILN, "graph", "run", os.path.join(EX, "mnist_train.graph"),
                           "--input", os.path.join(d, "x.npy"), "--input", os.path.join(d, "labels.npy"),
                           "--output-dir", d] + extra, capture_output=True, text=True, timeout=300)


with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "labels.npy"), labels)
    # The default device (the compiled clusters on the best plugin) and the interpreter.
    for device in ["auto", "interpreter"]:
        r = train(d, ["--steps", str(STEPS), "--device", device, "--log-compiles",
                      "--log-device-placement"])
        if r.returncode != 0:
            failures.append(f"{device}: kiln exit {r.returncode}: {r.stderr.strip()}")
            continue
        got = [float(v) for v in re.findall(r"^step \d+: loss = (\S+)$", r.stdout, re.M)]
        last = float(np.load(os.path.join(d, "output_0.npy")))
        print(f"{device}:", " ".join(f"{v:.4f}" for v in got))
        if len(got) != STEPS:
            failures.append(f"{device}: {len(got)} step lines, want {STEPS}: {r.stdout!r}")
            continue
        if not np.allclose(got, want, rtol=2e-4, atol=1e-5):
            failures.append(f"{device}: loss differs from NumPy: max abs "
                            f"{np.max(np.abs(np.subtract(got, want)))}")
        if abs(last - got[-1]) > 1e-6 * abs(got[-1]) + 1e-6:
            failures.append(f"{device}: output_0.npy {last} is not the last step's loss {got[-1]}")
        if not got[-1] < 0.5 * got[0]:
            failures.append(f"{device}: loss did not decrease substantially: {got[0]} -> {got[-1]}")
        # The compile cache holds across steps: one compilation per compiled cluster.
        m = re.search(r"kiln graph: (\d+) compilations?", r.stderr)
        clusters = len(set(re.findall(r"-> \S+ \[(cluster_\d+)\]", r.stderr)))
        if m is None or int(m.group(1)) != clusters:
            failures.append(f"{device}: expected {clusters} compilations over {STEPS} steps: {r.stderr!r}")
        for var in ["w1", "b1", "w2", "b2"]:
            line = f"kiln graph: colocate node upd_{var} (ApplyGradientDescent) with variable {var} on host"
            if line not in r.stderr or f"node upd_{var} (ApplyGradientDescent) -> host" not in r.stderr:
                failures.append(f"{device}: placement of upd_{var} not logged as colocated: {r.stderr!r}")
        print(f"ok mnist_train on {device}: {STEPS} steps match NumPy, loss {got[0]:.4f} -> {got[-1]:.4f}")
    r = train(d, ["--steps", "0"])
    if r.returncode != 2 or "--steps 0: expected a positive integer" not in r.stderr:
        failures.append(f"--steps 0: exit {r.returncode}, {r.stderr!r}")
    else:
        print("ok --steps 0 is a usage error")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("all mnist_train checks passed")
