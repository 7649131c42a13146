#!/usr/bin/env python3
"""`kiln run --compare` is a strict judge: element by element, with the worst element named.

usage: compare_test.py KILN WRONG_PLUGIN_DIR SOURCE_ROOT

test-wrong (tests/plugins/wrong_answer_plugin.cc) is the evaluator's answer with element 1 of
every output off by 0.5. Against the interpreter it must be caught beside a large element
(the output [1e8, 1.5, 2, 3] against [1e8, 1, 2, 3]), in integers, and by
cross_device_test.py; identical answers, NaN and infinity at the same places, and an
explicit --atol that covers the error must pass.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

KILN, PLUGIN_DIR, ROOT = (os.path.abspath(a) for a in sys.argv[1:4])
ENV = dict(os.environ, KILN_PLUGIN_PATH=PLUGIN_DIR)
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV, timeout=120)


IDENTITY = """HloModule identity
ENTRY main {
  ROOT p = %s parameter(0)
}
"""

with tempfile.TemporaryDirectory() as d:
    def module(shape):
        path = os.path.join(d, f"identity_{len(os.listdir(d))}.hlo")
        with open(path, "w") as f:
            f.write(IDENTITY % shape)
        return path

    def npy(values, dtype):
        path = os.path.join(d, f"in_{len(os.listdir(d))}.npy")
        np.save(path, np.array(values, dtype=dtype))
        return path

    # The example: a 0.5 error beside 1e8 is a mismatch, reported at its index.
    f32 = module("f32[4]")
    big = npy([1e8, 1, 2, 3], np.float32)
    r = kiln("run", f32, "--input", big, "--device", "test-wrong", "--compare", "interpreter")
    expect(r.returncode == 3, f"off-by-0.5 beside 1e8: rc={r.returncode} {r.stdout} {r.stderr}")
    expect("MISMATCH" in r.stdout and "worst at [1]: 1.5 vs reference 1" in r.stdout,
           f"worst element not named: {r.stdout}")
    expect("1 mismatches" in r.stdout, f"mismatch count: {r.stdout}")

    # A tolerance that covers the error passes; one that does not still fails.
    r = kiln("run", f32, "--input", big, "--device", "test-wrong", "--compare", "interpreter",
             "--atol", "0.6")
    expect(r.returncode == 0 and ": ok " in r.stdout, f"--atol 0.6 should pass: {r.stdout} {r.stderr}")
    r = kiln("run", f32, "--input", big, "--device", "test-wrong", "--compare", "interpreter",
             "--rtol", "0.4")
    expect(r.returncode == 3, f"--rtol 0.4 should still fail (0.5 > 0.4*1): {r.stdout}")
    r = kiln("run", f32, "--input", big, "--device", "test-wrong", "--compare", "interpreter",
             "--atol", "x")
    expect(r.returncode == 2 and "--atol" in r.stderr, f"bad --atol: {r.returncode} {r.stderr}")

    # Multi-dimensional index of the worst element; integers are exact.
    s32 = module("s32[2,3]")
    r = kiln("run", s32, "--input", npy([[1, 2, 3], [4, 5, 6]], np.int32), "--device", "test-wrong",
             "--compare", "interpreter")
    expect(r.returncode == 3 and "worst at [0,1]: 3 vs reference 2" in r.stdout, f"s32: {r.stdout}")

    # Identical answers with NaN and infinity at the same places pass.
    special = npy([np.nan, np.inf, -np.inf, 0.0], np.float32)
    r = kiln("run", f32, "--input", special, "--device", "interpreter", "--compare", "interpreter")
    expect(r.returncode == 0 and r.stdout.count(": ok ") == 1, f"NaN/inf by position: {r.stdout}")
    # ... and an infinity turned into a finite number (inf + 0.5 stays inf: use element 1 = 7).
    r = kiln("run", f32, "--input", npy([np.nan, 7, 1, 2], np.float32), "--device", "test-wrong",
             "--compare", "interpreter", "--atol", "0.6")
    expect(r.returncode == 0, f"NaN at the same place with a covered error: {r.stdout}")

# The cross-device test, which relies on --compare, must fail on the wrong plugin.
r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "cli", "cross_device_test.py"),
                    KILN, ROOT, "test-wrong", "interpreter", "softmax,int_ops"],
                   capture_output=True, text=True, env=ENV, timeout=600)
expect(r.returncode == 1 and "FAIL" in r.stdout, f"cross_device_test passed a wrong plugin: {r.stdout[-2000:]}")

for f in failures:
    print("FAIL", f)
print(f"compare_test: {'ok' if not failures else f'{len(failures)} failures'}")
sys.exit(1 if failures else 0)
