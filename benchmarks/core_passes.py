#!/usr/bin/env python3
"""Benchmark (not a test) of issue #11's one compiler: what the core's passes and cpu-llvm's
fusion as HLO cost and gain, measured in the same run.

1. The seed CPU workloads (cpu_workloads.py's modules at its sizes, and the LSTMs) through
   `kiln run --device cpu-llvm --benchmark N`, with the core passes and with
   --no-core-passes, alternating rounds; prints the median run time of each and the ratio.
2. The same workloads with cpu-llvm's fusion decided as HLO (the kernel-fusion pass, the
   default) against the planner fusing by itself (KILN_CPU_FUSION=planner): run time and
   the kernel count of each.
3. Cold compile of every corpus module cpu-llvm compiles, plus the corpus's BERT and Llama
   modules: the core pipeline's time (`kiln opt --passes=simplification`, its per-pass sum)
   against the process's wall time with --no-core-passes (parse, plan, LLVM compile).

Usage: benchmarks/core_passes.py [--build DIR] [--runs N] [--rounds R]
Uses only the kiln binary and the Python standard library."""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import workload_hlo  # noqa: E402

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--runs', type=int, default=20)
ARGS.add_argument('--rounds', type=int, default=8, help='alternating with/without rounds')
OPTS = ARGS.parse_args()
KILN = os.path.join(OPTS.build, 'tools', 'kiln')
HLO = os.path.join(ROOT, 'examples', 'hlo')


def bench(path, extra, env=None):
    out = subprocess.run([KILN, 'run', path, '--device', 'cpu-llvm', '--benchmark',
                          str(OPTS.runs)] + extra, capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})))
    m = re.search(r'median_ms=([\d.]+)', out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError(f'{path}: {out.stderr.strip()[-300:]}')
    return float(m.group(1))


def workloads(tmp):
    texts = {
        'reduce_sum(x+y*z) 3xf32[2^24]': workload_hlo.sum_xyz(1 << 24),
        'softmax f32[4096,1024]': workload_hlo.softmax(4096, 1024),
        'layernorm+gelu f32[8192,768]': workload_hlo.layernorm_gelu(8192, 768),
        'mlp train step b256': workload_hlo.mlp_train_step(),
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = os.path.join(tmp, re.sub(r'\W+', '_', name) + '.hlo')
        with open(paths[name], 'w') as f:
            f.write(text)
    for f in ('dense_relu', 'lstm_stacked', 'lstm_stacked_while'):
        paths[f] = os.path.join(HLO, f + '.hlo')
    return paths


def pipeline_ms(path):
    out = subprocess.run([KILN, 'opt', path, '--passes=simplification'], capture_output=True,
                         text=True)
    return sum(float(x) for x in re.findall(r'^pass \S+: \w+ (?:\([^)]*\) )?([\d.]+) ms', out.stderr, re.M))


def wall(cmd):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, out.returncode


print(f'kiln: {KILN}, runs={OPTS.runs}, rounds={OPTS.rounds}')
def passes_changed(path, tmp):
    """How many core passes changed the module (their dumps; not the compile dump, not the
    plugin's own)."""
    d = os.path.join(tmp, 'dump_' + os.path.basename(path))
    subprocess.run([KILN, 'run', path, '--device', 'cpu-llvm', '--dump-to', d],
                   capture_output=True, text=True)
    return len([f for f in os.listdir(d)
                if f.endswith('.txt') and '.compile.' not in f and '.cpu-llvm.' not in f])


PLANNER = {'KILN_CPU_FUSION': 'planner'}


def kernels(path, env=None):
    out = subprocess.run([KILN, 'run', path, '--device', 'cpu-llvm'], capture_output=True,
                         text=True, env=dict(os.environ, KILN_CPU_DUMP_PLAN='1', **(env or {})))
    return len(re.findall(r' kernel$', out.stderr, re.M))


def alternate(title, labels, a_args, b_args, b_env, note_column, note):
    """Times every workload as A and as B in alternating rounds; prints the median and the
    minimum of the rounds' medians of each, and their ratios, plus one note column."""
    print(title)
    a_l, b_l = labels
    print(f'{"workload":34} {note_column:>8} {a_l:>8} {b_l:>8} {"ratio":>7} '
          f'{"min " + a_l:>10} {"min " + b_l:>10} {"ratio":>7}')
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in workloads(tmp).items():
            a_ms, b_ms = [], []
            for _ in range(OPTS.rounds):
                a_ms.append(bench(path, a_args))
                b_ms.append(bench(path, b_args, b_env))
            a, b = statistics.median(a_ms), statistics.median(b_ms)
            ma, mb = min(a_ms), min(b_ms)
            worst = max(worst, ma / mb)
            print(f'{name:34} {note(path, tmp):>8} {a:8.3f} {b:8.3f} {a / b:7.3f} '
                  f'{ma:10.3f} {mb:10.3f} {ma / mb:7.3f}')
    print(f'worst min ratio: {worst:.3f} (goal: <= 1.03)')


alternate('\n1. run time on cpu-llvm, core passes on vs off, alternating rounds: the median and\n'
          '   the minimum of the rounds\' medians (this machine is shared: its noise is bimodal);\n'
          '   "changed" = core passes that changed the module (0: the same module either way)',
          ('on', 'off'), [], ['--no-core-passes'], None, 'changed',
          lambda path, tmp: str(passes_changed(path, tmp)))
alternate('\n2. cpu-llvm fusion as HLO (kernel-fusion) vs in the planner (KILN_CPU_FUSION=planner);\n'
          '   "kernels" = kernel count with each',
          ('hlo', 'planner'), [], [], PLANNER, 'kernels',
          lambda path, tmp: f'{kernels(path)}/{kernels(path, PLANNER)}')

print('\n3. cold compile: core pipeline ms against the whole no-passes process (cpu-llvm)')
print(f'{"module":44} {"pipeline ms":>12} {"process s":>10} {"share":>7}')
corpus = sorted(glob.glob(os.path.join(ROOT, 'tests', 'hlo_corpus', '*.hlo')))
for path in corpus:
    name = os.path.basename(path)[:-4]
    secs, rc = wall([KILN, 'run', path, '--device', 'cpu-llvm', '--no-core-passes'])
    big = re.search(r'bert|llama', name) is not None
    if rc != 0 and not big:
        continue
    ms = pipeline_ms(path)
    note = '' if rc == 0 else '  (cpu-llvm refuses it: custom-call or collective)'
    print(f'{name:44} {ms:12.2f} {secs:10.2f} {ms / 1000 / secs:7.1%}{note}')
