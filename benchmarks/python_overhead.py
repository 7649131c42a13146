#!/usr/bin/env python3
"""The Python package's cost, measured in one run (issue #13's benchmark):

1. per-call overhead of a tiny f32[4] add on cpu-llvm: through `kiln` with the inputs on the
   device (exe.execute on kiln.Buffer) and with NumPy arrays in and out (exe(x, y)), against
   the C ABI dispatch (build/benchmarks/bench_compile_dispatch, the same plugin and module)
   and against `jax.jit` dispatch (XLA:CPU, inputs already on its device, and from NumPy).
   Goals: below jax.jit, within 3 us of the C ABI.
2. the CPU workloads (benchmarks/cpu_workloads.py) through Python against the CLI's
   `kiln run --benchmark` figures (inputs on the device in both). Goal: within 5%.

usage: .venv/bin/python benchmarks/python_overhead.py [--build DIR] [--runs N] [--calls N]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))

ADD = """HloModule add4
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %s = f32[4] add(f32[4] %x, f32[4] %y)
}
"""


def per_call_us(fn, calls):
    """Median over 7 batches of the time per call, in us, after a warm-up batch."""
    batches = []
    for i in range(8):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        if i:
            batches.append((time.perf_counter() - t0) / calls * 1e6)
    return sorted(batches)[len(batches) // 2]


def c_abi_dispatch_us(build):
    exe = os.path.join(build, 'benchmarks', 'bench_compile_dispatch')
    plugin = os.path.join(build, 'plugins', 'libkiln_plugin_cpu_llvm.so')
    out = subprocess.run([exe, plugin, os.path.join(ROOT, 'examples', 'hlo', 'model_fn.hlo'), '1'],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r'dispatch_us=([0-9.]+)', out).group(1))


def overhead_table(build, calls):
    import kiln
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, np.float32)
    exe = kiln.compile(ADD, 'cpu-llvm')
    bx, by = kiln.device_put(x, 'cpu-llvm'), kiln.device_put(y, 'cpu-llvm')
    rows = [('C ABI (ExecuteBuffers, buffers on device)', c_abi_dispatch_us(build)),
            ('kiln: exe.execute(buffers) -> buffers', per_call_us(lambda: exe.execute(bx, by), calls)),
            ('kiln: exe(numpy, numpy) -> numpy', per_call_us(lambda: exe(x, y), calls))]
    try:
        import jax
        f = jax.jit(lambda a, b: a + b)
        jx, jy = jax.device_put(x), jax.device_put(y)
        f(jx, jy).block_until_ready()
        rows += [('jax.jit: f(jax arrays), block_until_ready',
                  per_call_us(lambda: f(jx, jy).block_until_ready(), calls)),
                 ('jax.jit: np.asarray(f(numpy, numpy))',
                  per_call_us(lambda: np.asarray(f(x, y)), calls))]
    except ImportError:
        rows.append(('jax.jit', None))
    print(f'Per-call overhead, f32[4] add on cpu-llvm (median of 7 batches of {calls} calls):')
    c_abi = rows[0][1]
    jax_dev = next((v for n, v in rows if n.startswith('jax.jit: f(')), None)
    for name, us in rows:
        if us is None:
            print(f'  {name:46s}  (not installed)')
            continue
        extra = f'  +{us - c_abi:5.2f} us over the C ABI' if name.startswith('kiln') else ''
        if name.startswith('kiln') and jax_dev:
            extra += f', {us / jax_dev:4.2f}x jax.jit on device arrays'
        print(f'  {name:46s} {us:7.2f} us{extra}')


def workload_table(build, runs):
    import cpu_workloads
    import kiln
    from timing import kiln_benchmark, median_ms
    cli = os.path.join(build, 'tools', 'kiln')
    print(f'\nCPU workloads, median ms of {runs} runs, inputs on the device in both '
          f'(KILN_CPU_THREADS={os.environ.get("KILN_CPU_THREADS", "all cores")}):')
    print(f'  {"workload":36s} {"CLI --benchmark":>16s} {"Python execute":>15s} {"ratio":>6s}'
          f' {"Python numpy":>13s}')
    with tempfile.TemporaryDirectory() as tmp:
        for make in cpu_workloads.WORKLOADS:
            w = make()
            inputs = cpu_workloads.save_workload(w, tmp)
            r = kiln_benchmark(cli, os.path.join(tmp, 'module.hlo'), 'cpu-llvm', runs, inputs)
            cli_ms = r['median_ms'] if isinstance(r, dict) else float('nan')
            exe = kiln.compile(w.hlo, 'cpu-llvm')
            bufs = [kiln.device_put(a, 'cpu-llvm') for a in w.inputs]
            py_ms = median_ms(lambda: exe.execute(*bufs), runs)
            host_ms = median_ms(lambda: exe(*w.inputs), runs)
            print(f'  {w.name:36s} {cli_ms:16.3f} {py_ms:15.3f} {py_ms / cli_ms:6.3f}'
                  f' {host_ms:13.3f}', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--runs', type=int, default=20)
    ap.add_argument('--calls', type=int, default=20000)
    ap.add_argument('--no-workloads', action='store_true')
    opts = ap.parse_args()
    print(f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, python {sys.version.split()[0]}, '
          f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    overhead_table(opts.build, opts.calls)
    if not opts.no_workloads:
        workload_table(opts.build, opts.runs)


if __name__ == '__main__':
    main()
