#!/usr/bin/env python3
"""Programs as deep as a real one can get must not overflow any stack: on every device given,
`kiln run` either computes the right answer or fails with one clear `error:` line and exit
code 1 -- never a crash (a signal) or a hang.

usage: deep_programs_test.py KILN DEVICE [DEVICE...]

- a dependency chain of 100,000 instructions (x = x + y, repeated), checked against NumPy;
- 10,000 nested calls (each computation calls the next; the innermost adds 1), which the
  interpreter refuses (its evaluator nests at most 128 computations) and every other device
  must run or refuse the same clean way;
- a result of 400 GB, which no device can allocate: one clean error naming the instruction
  and "out of memory".
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

KILN, DEVICES = os.path.abspath(sys.argv[1]), sys.argv[2:]
CHAIN, NESTED = 100_000, 10_000
TIMEOUT = 600
failures = []


def chain_module():
    lines = ["HloModule chain", "", "ENTRY main {",
             "  x0 = f32[4] parameter(0)", "  y = f32[4] parameter(1)"]
    for i in range(1, CHAIN + 1):
        lines.append(f"  x{i} = f32[4] add(f32[4] x{i - 1}, f32[4] y)")
    lines.append(f"  ROOT out = f32[4] multiply(f32[4] x{CHAIN}, f32[4] y)")
    return "\n".join(lines + ["}", ""])


def nested_module():
    lines = ["HloModule nested", "", f"c{NESTED} {{", "  p = f32[4] parameter(0)",
             "  one = f32[] constant(1)", "  ones = f32[4] broadcast(f32[] one), dimensions={}",
             "  ROOT r = f32[4] add(f32[4] p, f32[4] ones)", "}", ""]
    for i in range(NESTED - 1, 0, -1):
        lines += [f"c{i} {{", "  p = f32[4] parameter(0)",
                  f"  ROOT r = f32[4] call(f32[4] p), to_apply=c{i + 1}", "}", ""]
    lines += ["ENTRY main {", "  p = f32[4] parameter(0)",
              "  ROOT r = f32[4] call(f32[4] p), to_apply=c1", "}", ""]
    return "\n".join(lines)


def run(path, device, inputs, out):
    try:
        return subprocess.run([KILN, "run", path, "--device", device, "--output-dir", out] +
                              [a for i in inputs for a in ("--input", i)],
                              capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None


TOO_BIG = """HloModule too_big
ENTRY main {
  p = f32[100000] parameter(0)
  b = f32[1000000,100000] broadcast(f32[100000] p), dimensions={1}
  ROOT e = f32[1000000,100000] exponential(f32[1000000,100000] b)
}
"""

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "too_big.hlo")
    with open(path, "w") as f:
        f.write(TOO_BIG)
    for device in DEVICES:
        r = run(path, device, [], os.path.join(d, "too_big_out"))
        if r is None or r.returncode != 1 or r.stderr.count("error:") != 1 or \
                "out of memory" not in r.stderr or "instruction %" not in r.stderr:
            failures.append(f"too_big on {device}: " + ("timeout" if r is None else
                            f"rc={r.returncode} {r.stderr.strip()[-300:]}"))
        else:
            print(f"too_big on {device}: {r.stderr.strip()}")

with tempfile.TemporaryDirectory() as d:
    x = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    y = np.array([1e-3, 2e-3, -1e-3, 0.0], np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    want = x.copy()
    for _ in range(CHAIN):
        want = want + y  # float32 each step, as the module rounds
    want = want * y
    for name, text, inputs, expected in [
            ("chain", chain_module(), ["x.npy", "y.npy"], want),
            ("nested", nested_module(), ["x.npy"], x + 1)]:
        path = os.path.join(d, name + ".hlo")
        with open(path, "w") as f:
            f.write(text)
        for device in DEVICES:
            out = os.path.join(d, f"{name}_{device}")
            r = run(path, device, [os.path.join(d, i) for i in inputs], out)
            label = f"{name} on {device}"
            if r is None:
                failures.append(f"{label}: timed out after {TIMEOUT} s")
            elif r.returncode == 0:
                got = np.load(os.path.join(out, "output_0.npy"))
                if not np.allclose(got, expected, rtol=1e-4, atol=1e-6):
                    failures.append(f"{label}: {got} != {expected}")
                else:
                    print(f"{label}: ran, matches NumPy")
            elif r.returncode == 1 and r.stderr.count("error:") == 1:
                print(f"{label}: refused cleanly: {r.stderr.strip()[:200]}")
                if name == "chain":  # a plain chain is valid and small: it must run
                    failures.append(f"{label}: refused a valid chain: {r.stderr.strip()[:300]}")
            else:
                failures.append(f"{label}: rc={r.returncode} (a negative rc is a signal): "
                                f"{r.stderr.strip()[-300:]}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
