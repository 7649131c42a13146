#!/usr/bin/env python3
"""Host custom-call handlers (ABI 1.5) through `kiln run --custom-calls LIB.so`: a module
with registered custom-calls runs on the interpreter, on cpu-llvm and on auto (one cluster,
cpu-llvm claims the call), with values checked against NumPy, tuple results included; a
failing handler, an unregistered target, a module run without the library and a library
that does not load each fail with a clear message.

usage: custom_calls_test.py KILN LIB.so
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

KILN, LIB = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


SCALE_ADD = """HloModule scale_add
ENTRY %main (a: f32[3,4], b: f32[3,4]) -> f32[3,4] {
  %a = f32[3,4] parameter(0)
  %b = f32[3,4] parameter(1)
  %e = f32[3,4] exponential(%a)
  %c = f32[3,4] custom-call(%e, %b), custom_call_target="test.scale_add", backend_config="factor=3"
  ROOT %r = f32[3,4] tanh(%c)
}
"""

SUM_AND_NEGATE = """HloModule sum_and_negate
ENTRY %main (a: f32[5]) -> (f32[], f32[5]) {
  %a = f32[5] parameter(0)
  %t = (f32[], f32[5]) custom-call(%a), custom_call_target="test.sum_and_negate"
  %s = f32[] get-tuple-element(%t), index=0
  %n = f32[5] get-tuple-element(%t), index=1
  %m = f32[5] multiply(%n, %n)
  ROOT %r = (f32[], f32[5]) tuple(%s, %m)
}
"""


def module(tmp, name, text):
    path = os.path.join(tmp, name + ".hlo")
    with open(path, "w") as f:
        f.write(text.replace("test.scale_add", "test." + name) if name in ("fail", "missing")
                else text)
    return path


def run(args):
    return subprocess.run([KILN, "run"] + args, capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    np.save(os.path.join(tmp, "a.npy"), a)
    np.save(os.path.join(tmp, "b.npy"), b)
    inputs = ["--input", os.path.join(tmp, "a.npy"), "--input", os.path.join(tmp, "b.npy")]
    want = np.tanh(np.exp(a) * np.float32(3) + b)
    scale_add = module(tmp, "scale_add", SCALE_ADD)
    for device in ("interpreter", "cpu-llvm", "auto"):
        out = os.path.join(tmp, "out_" + device)
        p = run([scale_add, "--device", device, "--custom-calls", LIB, "--output-dir", out,
                 "--log-partition"] + inputs)
        check(p.returncode == 0, f"{device}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        if p.returncode == 0:
            got = np.load(os.path.join(out, "output_0.npy"))
            check(np.allclose(got, want, rtol=1e-5, atol=1e-6),
                  f"{device}: max |diff| {np.max(np.abs(got - want))}")
        if device == "auto":  # cpu-llvm claims the call: no cluster boundary around it
            check("cluster" not in p.stderr or p.stderr.count("cluster ") <= 1,
                  f"auto was partitioned: {p.stderr.strip()[-400:]}")

    x = rng.uniform(-1, 1, 5).astype(np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    sum_neg = module(tmp, "sum_and_negate", SUM_AND_NEGATE)
    for device in ("interpreter", "cpu-llvm"):
        out = os.path.join(tmp, "tuple_" + device)
        p = run([sum_neg, "--device", device, "--custom-calls", LIB, "--output-dir", out,
                 "--input", os.path.join(tmp, "x.npy")])
        check(p.returncode == 0, f"tuple {device}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        if p.returncode == 0:
            s = np.load(os.path.join(out, "output_0.npy"))
            m = np.load(os.path.join(out, "output_1.npy"))
            check(abs(float(s) - float(x.sum())) < 1e-5, f"tuple {device}: sum {s} vs {x.sum()}")
            check(np.allclose(m, x * x, rtol=1e-6), f"tuple {device}: squares differ")

    # Bad cases: each a non-zero exit and a message that says what went wrong.
    fail = module(tmp, "fail", SCALE_ADD)
    missing = module(tmp, "missing", SCALE_ADD)
    for args, code, phrase in [
        ([fail, "--device", "cpu-llvm", "--custom-calls", LIB] + inputs, 1,
         "deliberate failure for the test"),
        ([fail, "--device", "interpreter", "--custom-calls", LIB] + inputs, 1, "test.fail"),
        ([missing, "--custom-calls", LIB] + inputs, 1, "test.missing"),
        ([scale_add] + inputs, 1, "test.scale_add"),
        ([scale_add, "--custom-calls", os.path.join(tmp, "nope.so")] + inputs, 2, "nope.so"),
    ]:
        p = run(args)
        check(p.returncode == code and phrase in p.stderr,
              f"{' '.join(args[:5])}: exit {p.returncode} (want {code}), stderr: "
              f"{p.stderr.strip()[-300:]}")

for f in failures:
    print("FAIL:", f)
print("custom_calls_test:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
