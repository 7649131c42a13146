"""Asynchronous dispatch (ABI 1.7) from Python: a chain of small steps through
Executable.execute, each fed the previous output, waited for after every step against queued
and waited for once at the end; microseconds per step and the ratio, best of five rounds.

Usage: PYTHONPATH=build/python .venv/bin/python benchmarks/async_dispatch.py [--steps N]
"""
import argparse
import time

import numpy as np

import kiln

HLO = """HloModule step
ENTRY main {
  x = f32[64,64] parameter(0)
  w = f32[64,64] parameter(1)
  d = f32[64,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[64,64] tanh(d)
}
"""


def per_step_us(exe, x, wb, device, steps, wait_each):
    best = float("inf")
    for _ in range(5):
        cur = kiln.device_put(x, device)
        start = time.perf_counter()
        for _ in range(steps):
            (cur,) = exe.execute(cur, wb)
            if wait_each:
                cur.block_until_ready()
        cur.block_until_ready()
        best = min(best, time.perf_counter() - start)
    return best / steps * 1e6


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--steps", type=int, default=2000)
    opts = args.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    print("| device | steps | waited us/step | queued us/step | waited/queued |")
    print("|---|---|---|---|---|")
    for d in kiln.devices():
        if not d.available or d.name not in ("cpu-llvm", "interpreter"):
            continue
        steps = opts.steps if d.name == "cpu-llvm" else max(1, opts.steps // 10)
        exe = kiln.compile(HLO, d.name)
        wb = kiln.device_put(w, d.name)
        waited = per_step_us(exe, x, wb, d.name, steps, True)
        queued = per_step_us(exe, x, wb, d.name, steps, False)
        print(f"| {d.name} | {steps} | {waited:.1f} | {queued:.1f} | {waited / queued:.2f} |")


if __name__ == "__main__":
    main()
