#!/usr/bin/env python3
"""`kiln graph run` on examples/graph/*.graph against NumPy evaluations of the same math.

usage: graph_run_test.py KILN SOURCE_ROOT
Also checks: the Unique graph fails in --must-compile naming the node and works in
--auto-jit (reference np.unique), and parse/verify errors are one located line.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from graph_check import GraphChecker

KILN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
EX = os.path.join(ROOT, "examples", "graph")
checker = GraphChecker(KILN, EX)
run, check, failures = checker.run, checker.check, checker.failures


rng = np.random.default_rng(7)
f32 = np.float32

x, y, z = (rng.uniform(-1, 1, (4, 8)).astype(f32) for _ in range(3))
for mode in ["--auto-jit", "--must-compile"]:
    check(f"model_fn {mode}", "model_fn.graph", [x, y, z], [np.sum(x + y * z, dtype=f32)], [mode])

logits = rng.uniform(-3, 3, (4, 10)).astype(f32)
e = np.exp(logits - logits.max(axis=1, keepdims=True))
check("softmax", "softmax.graph", [logits],
      [e / e.sum(axis=1, keepdims=True), logits.max(axis=1, keepdims=True)])

w = rng.uniform(-1, 1, (3, 4)).astype(f32)
bias = np.array([0.5, -0.25, 0.0, 1.0], f32)
for rows in [2, 5]:  # the Placeholder's first dimension is -1: any batch size
    xd = rng.uniform(-1, 1, (rows, 3)).astype(f32)
    check(f"dense rows={rows}", "dense.graph", [xd, w], [np.maximum(xd @ w + bias, 0)],
          ["--must-compile"])
# The same graphs on the reference interpreter, named explicitly.
check("softmax interpreter", "softmax.graph", [logits],
      [e / e.sum(axis=1, keepdims=True), logits.max(axis=1, keepdims=True)],
      ["--device", "interpreter"])
check("dense interpreter", "dense.graph", [xd, w], [np.maximum(xd @ w + bias, 0)],
      ["--device", "interpreter", "--auto-jit"])

a = rng.uniform(-1, 1, (3, 2)).astype(f32)
b = rng.uniform(-1, 1, (4, 3)).astype(f32)
r_ = (a.T @ b.T).T.reshape(2, -1)
d_ = r_ - r_.mean(axis=1, keepdims=True)
sq1 = d_ * d_ + 1
check("ops", "ops.graph", [a, b],
      [np.exp(-d_) / np.sqrt(sq1), np.maximum(np.tanh(d_), 1 / (1 + np.exp(-d_))),
       np.minimum(np.log(sq1), 1 / np.sqrt(sq1))], rtol=1e-4, atol=1e-5)

# `kiln graph lower` prints an HLO module that `kiln run` parses and runs to the same values.
with tempfile.TemporaryDirectory() as d:
    xd = rng.uniform(-1, 1, (3, 3)).astype(f32)
    np.save(os.path.join(d, "x.npy"), xd)
    np.save(os.path.join(d, "w.npy"), w)
    ins = ["--input", os.path.join(d, "x.npy"), "--input", os.path.join(d, "w.npy")]
    r = run(["lower", os.path.join(EX, "dense.graph")] + ins)
    if r.returncode != 0:
        failures.append(f"lower dense: {r.stderr.strip()}")
    else:
        hlo = os.path.join(d, "dense.hlo")
        with open(hlo, "w") as f:
            f.write(r.stdout)
        rr = subprocess.run([KILN, "run", hlo, "--device", "interpreter", "--output-dir", d] + ins,
                            capture_output=True, text=True, timeout=120)
        got = np.load(os.path.join(d, "output_0.npy")) if rr.returncode == 0 else None
        if got is None or not np.allclose(got, np.maximum(xd @ w + bias, 0), rtol=1e-5, atol=1e-5):
            failures.append(f"lower dense + kiln run: {rr.stderr.strip()}")
        else:
            print("ok lower dense + kiln run")

# Unique: host-only, so must-compile names it; auto-jit runs it between two clusters.
xu = np.array([3, 1, 3, 2, 1, 7, 2, 3], f32)
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "x.npy")
    np.save(p, xu)
    r = run(["run", os.path.join(EX, "unique.graph"), "--input", p, "--must-compile"])
    want_msg = "node u (Unique): data-dependent output shape, cannot be compiled"
    if r.returncode != 1 or want_msg not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
        failures.append(f"unique --must-compile: exit {r.returncode}, stderr {r.stderr!r}")
    else:
        print("ok unique --must-compile fails naming the node")
vals, inv = np.unique(xu * 2, return_inverse=True)
r = check("unique --auto-jit", "unique.graph", [xu],
          [vals * vals, inv.astype(np.int32), np.sum(vals * vals)],
          ["--auto-jit", "--log-compiles", "--log-device-placement"])
if r is not None and r.returncode == 0:
    # Two compiled clusters around the host op: two compilations, Unique on the host.
    if "2 compilations" not in r.stderr or "node u (Unique) -> host" not in r.stderr:
        failures.append(f"unique logs: {r.stderr!r}")

# A requested device that does not exist: an error, or --device with --soft-placement.
with tempfile.TemporaryDirectory() as d:
    g = os.path.join(d, "dev.graph")
    with open(g, "w") as f:
        f.write('x = Placeholder[dtype=f32, shape=(3)]()\ny = Neg[device="nope"](x)\noutputs: y\n')
    xs = np.array([1, -2, 3], f32)
    np.save(os.path.join(d, "x.npy"), xs)
    base = ["run", g, "--input", os.path.join(d, "x.npy"), "--output-dir", d]
    r = run(base)
    if r.returncode != 1 or "no plugin named 'nope'" not in r.stderr:
        failures.append(f"device nope: exit {r.returncode}, {r.stderr!r}")
    r = run(base + ["--soft-placement", "--device", "interpreter", "--log-device-placement",
                    "--dump-clusters", os.path.join(d, "c.dot")])
    ok = r.returncode == 0 and np.array_equal(np.load(os.path.join(d, "output_0.npy")), -xs)
    ok = ok and "node y (Neg) -> interpreter" in r.stderr
    ok = ok and 'subgraph cluster_0' in open(os.path.join(d, "c.dot")).read()
    if not ok:
        failures.append(f"soft placement: exit {r.returncode}, {r.stderr!r}")
    else:
        print("ok device request: error, soft placement, cluster dump")

# Located errors from the parser and verifier, one line each.
bad_cases = [
    ("x = Placeholder[dtype=f32, shape=(2)]()\ny = Foo(x)\noutputs: y\n", "bad.graph:2:1: node y (Foo): unknown op 'Foo'"),
    ("x = Placeholder[dtype=f32, shape=(2)]()\ny = Neg(x\noutputs: y\n", "bad.graph:2:10: expected ',' or ')'"),
    ("x = Placeholder[dtype=f32, shape=(2)]()\ny = Sum[axes=1](x)\noutputs: y\n",
     "bad.graph:2:1: node y (Sum): attribute 'axes' must be list of ints, got int 1"),
    ("x = Placeholder[dtype=f32, shape=(2,3)]()\nw = Placeholder[dtype=f32, shape=(2,3)]()\n"
     "y = MatMul(x, w)\noutputs: y\n", "bad.graph:3:1: node y (MatMul): MatMul contracting dimensions differ"),
    ("a = Neg(b)\nb = Neg(a)\noutputs: b\n", "cycle: a -> b -> a"),
]
with tempfile.TemporaryDirectory() as d:
    for text, want in bad_cases:
        p = os.path.join(d, "bad.graph")
        with open(p, "w") as f:
            f.write(text)
        r = subprocess.run([KILN, "graph", "print", "bad.graph"], capture_output=True, text=True, cwd=d)
        if r.returncode != 1 or want not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
            failures.append(f"error case {want!r}: exit {r.returncode}, stderr {r.stderr!r}")
        else:
            print(f"ok error: {want}")

# Without --input, inputs are generated when every Placeholder's shape is known: softmax rows
# then sum to 1; a Placeholder with a -1 dimension is one error line naming it.
with tempfile.TemporaryDirectory() as d:
    r = subprocess.run([KILN, "graph", "run", os.path.join(EX, "softmax.graph"), "--output-dir", d],
                       capture_output=True, text=True)
    got = np.load(os.path.join(d, "output_0.npy")) if r.returncode == 0 else None
    if got is None or got.shape != (4, 10) or not np.allclose(got.sum(axis=1), 1, atol=1e-5):
        failures.append(f"generated inputs: softmax rc={r.returncode} {r.stderr.strip()}")
    else:
        print("ok generated inputs: softmax rows sum to 1")
    r = subprocess.run([KILN, "graph", "run", os.path.join(EX, "dense.graph")], capture_output=True,
                       text=True)
    if r.returncode != 1 or "Placeholder x has shape (-1,3)" not in r.stderr or \
            len(r.stderr.strip().splitlines()) != 1:
        failures.append(f"generated inputs: dense rc={r.returncode} {r.stderr!r}")
    else:
        print("ok generated inputs: a -1 dimension needs --input")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("all graph run checks passed")
