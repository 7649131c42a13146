#!/usr/bin/env python3
"""The C++ embedding example (examples/embed/embed.cc) runs reduce_sum(x + y*z) with
x = 1..8, y = 2, z = 0.5 through the core's entry point: 36 + 8 = 44 (hand-computed), on auto
and on every device given; a missing module file is one error line and exit 1.

usage: embed_test.py EXAMPLE DEVICE..."""
import subprocess
import sys

EXE, DEVICES = sys.argv[1], sys.argv[2:]
failures = []


def run(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120)


for device in ["auto"] + DEVICES:
    r = run("-", device)
    ok = r.returncode == 0 and "output_0 = 44\n" in r.stdout and "device: " in r.stdout
    print(("PASS " if ok else "FAIL ") + f"{device}: rc={r.returncode} {r.stdout.strip()} {r.stderr.strip()}")
    failures += [] if ok else [device]
r = run("/no/such/module.hlo")
ok = r.returncode == 1 and r.stderr.count("error:") == 1 and "module.hlo" in r.stderr
print(("PASS " if ok else "FAIL ") + f"missing file: rc={r.returncode} {r.stderr.strip()}")
failures += [] if ok else ["missing file"]
sys.exit(1 if failures else 0)
