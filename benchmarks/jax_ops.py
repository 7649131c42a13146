#!/usr/bin/env python3
"""Benchmark (not a test) of JAX ops that are not elementwise, reduce or dot as JAX writes
them, on Kiln's cpu-llvm and on XLA:CPU with the same HLO text and the same arrays, in one
run: arg-max (a two-operand reduce), cumsum and cummax (reduce-window scans), sort and
argsort (a sort with JAX's NaN-canonicalizing comparator), top-k and a scatter-add. Before Kiln rewrote
the first two and typed the third's comparator, they ran on its host evaluator, 100x to
1000x behind XLA. Outputs are cross-checked against XLA's.

    .venv-peers/bin/python benchmarks/jax_ops.py [--runs 10] [--rows 512] [--cols 8192]"""
import argparse
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import xla_peer  # noqa: E402
from timing import kiln_benchmark  # noqa: E402

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--runs', type=int, default=10)
ARGS.add_argument('--rows', type=int, default=512)
ARGS.add_argument('--cols', type=int, default=8192)
ARGS.add_argument('--timeout', type=float, default=300, help='seconds per kiln process')
OPTS = ARGS.parse_args()


def programs():
    import jax
    import jax.numpy as jnp
    return {
        'argmax rows': lambda x: jnp.argmax(x, axis=1),
        'cumsum rows': lambda x: jnp.cumsum(x, axis=1),
        'cummax columns': lambda x: jax.lax.cummax(x, axis=0),
        'sort rows': lambda x: jnp.sort(x, axis=1),
        'argsort rows': lambda x: jnp.argsort(x, axis=1),
        'top_k 5 rows': lambda x: jax.lax.top_k(x, 5)[1],
        # rows added into a table at spread indices (an embedding gradient)
        'scatter-add rows': lambda x: jnp.zeros((1000, x.shape[1]), x.dtype).at[
            jnp.arange(x.shape[0]) * 7 % 1000].add(x),
    }


def main():
    why = xla_peer.available()
    if why:
        sys.exit(f'MISSING: {why}')
    import jax
    kiln = os.path.join(OPTS.build, 'tools', 'kiln')
    x = np.random.RandomState(0).randn(OPTS.rows, OPTS.cols).astype(np.float32)
    print(f'f32[{OPTS.rows},{OPTS.cols}], median of {OPTS.runs} runs, cpu-llvm threads '
          f'{os.environ.get("KILN_CPU_THREADS", "all")}, XLA:CPU pinned to as many cores')
    threads = int(os.environ.get('KILN_CPU_THREADS', len(os.sched_getaffinity(0))))
    rows = []
    for name, f in programs().items():
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'module.hlo'), 'w') as out:
                out.write(jax.jit(f).lower(x).as_text(dialect='hlo'))
            np.save(os.path.join(d, 'in0.npy'), x)
            k = kiln_benchmark(kiln, os.path.join(d, 'module.hlo'), 'cpu-llvm', OPTS.runs,
                               [os.path.join(d, 'in0.npy')], output_dir=os.path.join(d, 'kiln'),
                               timeout=OPTS.timeout)
            xr = xla_peer.run_child(d, OPTS.runs, threads)
            check = 'n/a'
            if isinstance(k, dict) and isinstance(xr, dict):
                got = np.load(os.path.join(d, 'kiln', 'output_0.npy'))
                want = np.load(os.path.join(d, 'xla_out0.npy'))
                ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-3)
                check = 'ok' if ok else 'DIFFERENT'
            rows.append((name, k, xr, check))
            kt = f"{k['median_ms']:.2f}" if isinstance(k, dict) else k
            xt = f"{xr['median_ms']:.2f}" if isinstance(xr, dict) else xr
            print(f'  {name}: kiln {kt} ms, xla {xt} ms, {check}', flush=True)
    print()
    print('| op | kiln ms | xla ms | xla/kiln | kiln compile ms | xla compile ms | check |')
    print('|---|---|---|---|---|---|---|')
    for name, k, xr, check in rows:
        def ms(r, key):
            return f'{r[key]:.2f}' if isinstance(r, dict) else str(r)
        ratio = (f"{xr['median_ms'] / k['median_ms']:.2f}"
                 if isinstance(k, dict) and isinstance(xr, dict) else '-')
        print(f"| {name} | {ms(k, 'median_ms')} | {ms(xr, 'median_ms')} | {ratio} | "
              f"{ms(k, 'compile_ms')} | {ms(xr, 'compile_ms')} | {check} |")


if __name__ == '__main__':
    main()
