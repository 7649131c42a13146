#!/usr/bin/env python3
"""KILN_CPU_PROFILE=1: cpu-llvm prints where a module's time went, per step.

usage: profile_test.py KILN SOURCE_ROOT

On dense_relu.hlo (a dot, then bias + relu) the table must name the dot as a library call
and the bias+relu as a kernel, count one call per timed run (the warm-up run is left out), and its shares
must add up to 100%; without the variable nothing is printed."""
import os
import re
import subprocess
import sys

KILN, ROOT = sys.argv[1], sys.argv[2]
MODULE = os.path.join(ROOT, 'examples', 'hlo', 'dense_relu.hlo')
failures = []


def run(env_value):
    env = dict(os.environ)
    env.pop('KILN_CPU_PROFILE', None)
    if env_value is not None:
        env['KILN_CPU_PROFILE'] = env_value
    return subprocess.run([KILN, 'run', MODULE, '--device', 'cpu-llvm', '--benchmark', '3'],
                          capture_output=True, text=True, env=env, timeout=120)


on = run('1')
if on.returncode != 0:
    failures.append(f'run failed: {on.stderr.strip()}')
rows = [m.groups() for m in re.finditer(r'^\s*([\d.]+)\s+([\d.]+)%\s+(\d+)\s+(\S+) = (\S+)',
                                        on.stderr, re.M)]
kinds = {kind for *_, kind in rows}
if 'KILN_CPU_PROFILE' not in on.stderr or not {'library', 'kernel'} <= kinds:
    failures.append(f'expected a library and a kernel row:\n{on.stderr}')
if any(int(calls) != 3 for _, _, calls, _, _ in rows):  # 3 timed runs; the warm-up is left out
    failures.append(f'expected 3 calls per step:\n{on.stderr}')
total = sum(float(share) for _, share, _, _, _ in rows)
if rows and abs(total - 100) > 1:
    failures.append(f'shares add up to {total}%')
for value in (None, '0'):
    off = run(value)
    if 'KILN_CPU_PROFILE' in off.stderr:
        failures.append(f'KILN_CPU_PROFILE={value}: printed a profile')

print('\n'.join(failures) or 'PASS profile table names library and kernel steps')
sys.exit(1 if failures else 0)
