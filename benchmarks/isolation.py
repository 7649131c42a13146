#!/usr/bin/env python3
"""What running a plugin isolated costs (issue #18's benchmark), measured in one run against
the same plugin in process:

1. dispatch of a cached tiny executable (an f32[4] add on cpu-llvm, inputs on the device),
   through the Python package: isolated minus in-process, per call. Goal: <= 30 us added.
2. moving a 256 MiB buffer to the plugin and back (kiln.device_put, numpy.asarray) against
   memcpy of the same bytes (NumPy copy) in the same process. Goal: >= 80% of memcpy.
3. the CPU workloads of benchmarks/cpu_workloads.py on `kiln run --benchmark`, isolated and
   in process, alternating. Goal: within 5%.

Every figure comes from child processes that differ only in KILN_ISOLATE.

usage: .venv-peers/bin/python benchmarks/isolation.py [--build DIR] [--runs N]
(any Python with NumPy that can import the build's `kiln` package; .venv works for 1 and 2,
.venv-peers has what cpu_workloads.py needs for 3)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--runs', type=int, default=20)
OPTS = ARGS.parse_args()

# Run in a child process; {bench} is this folder, for python_overhead's module and timer.
CHILD = r"""
import sys, time
sys.path.insert(0, {bench!r})
import numpy as np
import kiln
from python_overhead import ADD, per_call_us
def median_s(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]
exe = kiln.compile(ADD, 'cpu-llvm')
x = kiln.device_put(np.arange(4, dtype=np.float32), 'cpu-llvm')
dispatch_us = per_call_us(lambda: exe.execute(x, x), 2000)
big = np.random.default_rng(0).standard_normal(64 << 20).astype(np.float32)  # 256 MiB
def round_trip():
    np.asarray(kiln.device_put(big, 'cpu-llvm'))
round_trip()
trip_s = median_s(round_trip, 5)
memcpy_s = median_s(lambda: big.copy(), 5)
print(f'dispatch_us={{dispatch_us:.2f}} trip_s={{trip_s:.4f}} memcpy_s={{memcpy_s:.4f}}')
""".format(bench=os.path.join(ROOT, 'benchmarks'))


def child(isolate):
    env = dict(os.environ, PYTHONPATH=os.path.join(OPTS.build, 'python'))
    env.pop('KILN_ISOLATE', None)
    if isolate:
        env['KILN_ISOLATE'] = 'cpu-llvm'
    out = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit('child failed: ' + out.stderr.strip()[-500:])
    return {k: float(v) for k, v in (f.split('=') for f in out.stdout.split())}


def kiln_ms(module, inputs, isolate, runs):
    env = dict(os.environ)
    env.pop('KILN_ISOLATE', None)
    if isolate:
        env['KILN_ISOLATE'] = 'cpu-llvm'
    cmd = [os.path.join(OPTS.build, 'tools', 'kiln'), 'run', module, '--device', 'cpu-llvm',
           '--benchmark', str(runs)] + [a for p in inputs for a in ('--input', p)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = re.search(r'median_ms=([0-9.]+)', out.stdout)
    return float(m.group(1)) if m else None


def main():
    inproc, isolated = child(False), child(True)
    print('1. dispatch of a cached f32[4] add on cpu-llvm (Python, inputs on the device):')
    print(f'   in process {inproc["dispatch_us"]:.2f} us, isolated {isolated["dispatch_us"]:.2f} us,'
          f' added {isolated["dispatch_us"] - inproc["dispatch_us"]:.2f} us (goal <= 30 us)')
    print('2. 256 MiB to the plugin and back (device_put + numpy.asarray) vs memcpy (NumPy copy):')
    for name, r in (('in process', inproc), ('isolated', isolated)):
        bw = 2 * 256 / 1024 / r['trip_s']  # GiB moved per second, both ways
        mc = 256 / 1024 / r['memcpy_s']
        print(f'   {name}: {bw:.2f} GiB/s against memcpy {mc:.2f} GiB/s = {100 * bw / mc:.0f}% '
              '(goal >= 80% isolated)')
    try:
        import cpu_workloads as cw
    except ImportError as e:
        print(f'3. CPU workloads: skipped ({e}; run with .venv-peers)')
        return
    print(f'3. CPU workloads, kiln run --benchmark {OPTS.runs} (median ms), isolated / in process:')
    with tempfile.TemporaryDirectory() as tmp:
        for make in cw.WORKLOADS:
            w = make()
            folder = os.path.join(tmp, str(len(os.listdir(tmp))))
            os.makedirs(folder)
            module = os.path.join(folder, 'module.hlo')
            with open(module, 'w') as f:
                f.write(w.hlo)
            inputs = cw.save_workload(w, folder)
            a, b = [], []
            for _ in range(2):  # alternate, so drifts of the machine hit both
                a.append(kiln_ms(module, inputs, False, OPTS.runs))
                b.append(kiln_ms(module, inputs, True, OPTS.runs))
            if None in a + b:
                print(f'   {w.name:<34} failed')
                continue
            print(f'   {w.name:<34} in process {min(a):8.3f}  isolated {min(b):8.3f}  '
                  f'ratio {min(b) / min(a):.3f} (goal <= 1.05)')


if __name__ == '__main__':
    main()
