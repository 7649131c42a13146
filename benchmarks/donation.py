#!/usr/bin/env python3
"""What buffer donation (ABI 1.3) saves: a while loop that writes 8 rows of a 16 MiB state,
run on cpu-llvm from a device buffer kept by the caller (the state is copied before the
first update) and from a donated one (updated in place, the output is the argument's
memory). Both in the same run; checked against NumPy.

usage: PYTHONPATH=build/python .venv/bin/python benchmarks/donation.py [--runs N] [--device D]
"""
import argparse
import time

import numpy as np

import kiln

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--runs', type=int, default=30)
ARGS.add_argument('--device', default='cpu-llvm')
OPTS = ARGS.parse_args()

ROWS, COLS, STEPS = 4096, 1024, 8
S = f'f32[{ROWS},{COLS}]'
HLO = f"""HloModule rows
%cond (s: (s32[], {S})) -> pred[] {{
  %s = (s32[], {S}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant({STEPS})
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}
%body (s: (s32[], {S})) -> (s32[], {S}) {{
  %s = (s32[], {S}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = {S} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %z = s32[] constant(0)
  %f = f32[] convert(%i1)
  %row = f32[1,{COLS}] broadcast(%f), dimensions={{}}
  %u = {S} dynamic-update-slice(%x, %row, %i, %z)
  ROOT %t = (s32[], {S}) tuple(%i1, %u)
}}
ENTRY %main (x: {S}) -> {S} {{
  %x = {S} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], {S}) tuple(%zero, %x)
  %w = (s32[], {S}) while(%init), condition=%cond, body=%body
  ROOT %r = {S} get-tuple-element(%w), index=1
}}
"""


def median_ms(exe, x, donate):
    cur = kiln.device_put(x, OPTS.device)
    times = []
    for _ in range(OPTS.runs):
        start = time.perf_counter()
        (cur,) = exe.execute(cur, donate=(0,) if donate else ())
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3, np.asarray(cur)


def main():
    exe = kiln.compile(HLO, OPTS.device)
    x = np.zeros((ROWS, COLS), np.float32)
    want = x.copy()
    want[:STEPS] = np.arange(1, STEPS + 1, dtype=np.float32)[:, None]
    for _ in range(2):  # alternate, so drifts of the machine hit both
        kept, a = median_ms(exe, x, False)
        given, b = median_ms(exe, x, True)
        ok = np.array_equal(a, want) and np.array_equal(b, want)
        print(f'{OPTS.device}: 8-row update of {S} (16 MiB), median of {OPTS.runs}: kept '
              f'{kept:.3f} ms, donated {given:.3f} ms, kept/donated {kept / given:.0f}x, '
              f'{"ok" if ok else "WRONG"} vs NumPy')


if __name__ == '__main__':
    main()
