#!/usr/bin/env python3
"""Partitioning by plugin capability through the CLI, with the test-elementwise plugin.

usage: partition_test.py KILN TEST_PLUGIN_DIR SOURCE_ROOT HAVE_CPU_LLVM(0|1)
`kiln run --device auto` splits a module between test-elementwise and the next plugin,
sends an f16 reduce-precision cpu-llvm declines to the interpreter, keeps an opt-barrier (what
jax.checkpoint writes), an arg-max's variadic reduce and a row scatter on cpu-llvm, names an instruction no plugin runs;
`kiln graph run` places nodes per capability and draws the clusters as SVG/HTML. Every
value is checked against NumPy.
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

KILN, PLUGIN_DIR, ROOT = (os.path.abspath(a) for a in sys.argv[1:4])
NEXT = 'cpu-llvm' if sys.argv[4] == '1' else 'interpreter'
TMP = tempfile.mkdtemp(prefix='kiln_partition_')
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
WITH_PLUGIN = dict(os.environ, KILN_PLUGIN_PATH=PLUGIN_DIR)
failures = []

MIXED = '''HloModule mixed

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4,3], w: f32[3,5], y: f32[4,5]) -> (f32[4,5], f32[4]) {
  %x = f32[4,3]{1,0} parameter(0)
  %w = f32[3,5]{1,0} parameter(1)
  %y = f32[4,5]{1,0} parameter(2)
  %x2 = f32[4,3]{1,0} multiply(f32[4,3]{1,0} %x, f32[4,3]{1,0} %x)
  %x3 = f32[4,3]{1,0} add(f32[4,3]{1,0} %x2, f32[4,3]{1,0} %x)
  %x4 = f32[4,3]{1,0} tanh(f32[4,3]{1,0} %x3)
  %x5 = f32[4,3]{1,0} subtract(f32[4,3]{1,0} %x4, f32[4,3]{1,0} %x)
  %dot = f32[4,5]{1,0} dot(f32[4,3]{1,0} %x5, f32[3,5]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %e1 = f32[4,5]{1,0} multiply(f32[4,5]{1,0} %dot, f32[4,5]{1,0} %y)
  %e2 = f32[4,5]{1,0} exponential(f32[4,5]{1,0} %e1)
  %e3 = f32[4,5]{1,0} add(f32[4,5]{1,0} %e2, f32[4,5]{1,0} %dot)
  %e4 = f32[4,5]{1,0} negate(f32[4,5]{1,0} %e3)
  %zero = f32[] constant(0)
  %r = f32[4]{0} reduce(f32[4,5]{1,0} %e4, f32[] %zero), dimensions={1}, to_apply=%add_f32
  ROOT %out = (f32[4,5]{1,0}, f32[4]{0}) tuple(f32[4,5]{1,0} %e4, f32[4]{0} %r)
}
'''

ROUNDING_BETWEEN = '''HloModule rounding_between

ENTRY %main (x: f32[16], y: f32[16]) -> f32[16] {
  %x = f32[16]{0} parameter(0)
  %y = f32[16]{0} parameter(1)
  %a = f32[16]{0} multiply(f32[16]{0} %x, f32[16]{0} %y)
  %b = f32[16]{0} add(f32[16]{0} %a, f32[16]{0} %x)
  %c = f32[16]{0} tanh(f32[16]{0} %b)
  %d = f32[16]{0} subtract(f32[16]{0} %c, f32[16]{0} %y)
  %dh = f16[16]{0} convert(f32[16]{0} %d)
  %sh = f16[16]{0} reduce-precision(f16[16]{0} %dh), exponent_bits=5, mantissa_bits=10
  %s = f32[16]{0} convert(f16[16]{0} %sh)
  %e = f32[16]{0} multiply(f32[16]{0} %s, f32[16]{0} %s)
  %f = f32[16]{0} add(f32[16]{0} %e, f32[16]{0} %x)
  %g = f32[16]{0} exponential(f32[16]{0} %f)
  ROOT %h = f32[16]{0} negate(f32[16]{0} %g)
}
'''

# A rematerialized tanh layer as JAX lowers it: the backward's operands behind a barrier.
REMAT = '''HloModule remat

ENTRY %main (x: f32[8,16], w: f32[16,16], g: f32[8,16]) -> (f32[8,16], f32[16,16]) {
  %x = f32[8,16]{1,0} parameter(0)
  %w = f32[16,16]{1,0} parameter(1)
  %g = f32[8,16]{1,0} parameter(2)
  %fwd = f32[8,16]{1,0} dot(f32[8,16]{1,0} %x, f32[16,16]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %act = f32[8,16]{1,0} tanh(f32[8,16]{1,0} %fwd)
  %t = (f32[8,16]{1,0}, f32[16,16]{1,0}, f32[8,16]{1,0}) tuple(%x, %w, %g)
  %b = (f32[8,16]{1,0}, f32[16,16]{1,0}, f32[8,16]{1,0}) opt-barrier(%t)
  %bx = f32[8,16]{1,0} get-tuple-element(%b), index=0
  %bw = f32[16,16]{1,0} get-tuple-element(%b), index=1
  %bg = f32[8,16]{1,0} get-tuple-element(%b), index=2
  %re = f32[8,16]{1,0} dot(%bx, %bw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %th = f32[8,16]{1,0} tanh(%re)
  %dg = f32[8,16]{1,0} multiply(%bg, %th)
  %gw = f32[16,16]{1,0} dot(%bx, %dg), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %r = (f32[8,16]{1,0}, f32[16,16]{1,0}) tuple(%act, %gw)
}
'''

# jnp.argmax as JAX lowers it: a variadic (value, index) reduce, which cpu-llvm's compile
# splits into two emitted reduces; placement must judge it as the compile will run it.
ARGMAX = '''HloModule argmax

%region (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(2)
  %gt = pred[] compare(%a, %b), direction=GT
  %ne = pred[] compare(%a, %a), direction=NE
  %pick = pred[] or(%gt, %ne)
  %v = f32[] select(%pick, %a, %b)
  %eq = pred[] compare(%a, %b), direction=EQ
  %i = s32[] parameter(1)
  %j = s32[] parameter(3)
  %lt = pred[] compare(%i, %j), direction=LT
  %tie = pred[] and(%eq, %lt)
  %first = pred[] or(%pick, %tie)
  %k = s32[] select(%first, %i, %j)
  ROOT %t = (f32[], s32[]) tuple(%v, %k)
}

ENTRY %main (x: f32[64,100]) -> s32[64] {
  %x = f32[64,100]{1,0} parameter(0)
  %io = s32[100]{0} iota(), iota_dimension=0
  %iota = s32[64,100]{1,0} broadcast(%io), dimensions={1}
  %ninf = f32[] constant(-inf)
  %zero = s32[] constant(0)
  %r = (f32[64]{0}, s32[64]{0}) reduce(%x, %iota, %ninf, %zero), dimensions={1}, to_apply=%region
  ROOT %idx = s32[64]{0} get-tuple-element(%r), index=1
}
'''

# jax.ops.segment_sum as JAX lowers it: a scatter-add of rows, which cpu-llvm runs natively
# (scatter_rows.h) on what its plan calls an evaluator step.
SEGMENT_SUM = '''HloModule segment_sum

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (d: f32[300,8], s: s32[300]) -> f32[20,8] {
  %zero = f32[] constant(0)
  %table = f32[20,8]{1,0} broadcast(%zero), dimensions={}
  %s = s32[300]{0} parameter(1)
  %idx = s32[300,1]{1,0} reshape(%s)
  %d = f32[300,8]{1,0} parameter(0)
  ROOT %r = f32[20,8]{1,0} scatter(%table, %idx, %d), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}
'''

GRAPH = '''x = Placeholder[dtype=f32, shape=(-1,3)]()
w = Placeholder[dtype=f32, shape=(3,4)]()
a = Mul(x, x)
b = Add(a, x)
c = Tanh(b)
m = MatMul(c, w)
e = Exp(m)
f = Neg(e)
outputs: f, m
'''


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


def save(name, a):
    path = os.path.join(TMP, name)
    np.save(path, a)
    return path


def run(args, env=WITH_PLUGIN):
    return subprocess.run([KILN] + args, capture_output=True, text=True, env=env, timeout=120)


def expect(cond, what):
    if not cond:
        failures.append(what)
    return cond


def close(name, got_path, want, rtol=1e-5, atol=1e-5):
    got = np.load(got_path)
    expect(got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol),
           f'{name}: got {got!r}, want {want!r}')


rng = np.random.default_rng(11)
f32 = np.float32

# (a) elementwise clusters on test-elementwise, dot and reduce on the next plugin.
x = rng.uniform(-1, 1, (4, 3)).astype(f32)
w = rng.uniform(-1, 1, (3, 5)).astype(f32)
y = rng.uniform(-1, 1, (4, 5)).astype(f32)
dot = (np.tanh(x * x + x) - x) @ w
e4 = -(np.exp(dot * y) + dot)
out = os.path.join(TMP, 'mixed')
mixed = write('mixed.hlo', MIXED)
inputs = ['--input', save('x.npy', x), '--input', save('w.npy', w), '--input', save('y.npy', y)]
r = run(['run', mixed] + inputs + ['--output-dir', out, '--log-partition', '--benchmark', '2'])
if expect(r.returncode == 0, f'mixed: exit {r.returncode}: {r.stderr}'):
    for line in ['cluster 0: test-elementwise (4 instructions', f'cluster 1: {NEXT} (1 instruction,',
                 'cluster 2: test-elementwise (4 instructions', f'cluster 3: {NEXT} (2 instructions']:
        expect(line in r.stderr, f'mixed: no {line!r} in {r.stderr!r}')
    last = r.stdout.strip().splitlines()[-1]
    expect(re.fullmatch(r'compile_ms=[0-9.]+ median_ms=[0-9.]+ min_ms=[0-9.]+ runs=2 '
                        rf'device=test-elementwise\+{NEXT}', last), f'mixed: {last!r}')
    close('mixed output_0', os.path.join(out, 'output_0.npy'), e4)
    close('mixed output_1', os.path.join(out, 'output_1.npy'), e4.sum(axis=1))
    print('ok mixed module partitioned: test-elementwise +', NEXT)
r = run(['run', mixed] + inputs + ['--compare', 'interpreter'])
expect(r.returncode == 0 and r.stdout.count(' ok ') == 2, f'mixed --compare: {r.stdout} {r.stderr}')

# Without the test plugin one plugin runs everything: no partition.
r = run(['run', mixed, '--log-partition'], env=dict(os.environ))
expect(r.returncode == 0 and f'cluster 0: {NEXT} (' in r.stderr and 'whole module' in r.stderr,
       f'whole module: {r.stderr!r}')

# (c) an f16 reduce-precision cpu-llvm declines runs on the interpreter between two cpu-llvm
# clusters (it emits f32 and f64 ones).
if NEXT == 'cpu-llvm':
    sx = rng.uniform(-1, 1, 16).astype(f32)
    sy = rng.uniform(-1, 1, 16).astype(f32)
    # f16's exponent and mantissa widths: rounding to f16 and back (the values fit).
    s = (np.tanh(sx * sy + sx) - sy).astype(np.float16).astype(f32)
    out = os.path.join(TMP, 'sort')
    r = run(['run', write('sort.hlo', ROUNDING_BETWEEN), '--input', save('sx.npy', sx), '--input',
             save('sy.npy', sy), '--output-dir', out, '--log-partition'], env=dict(os.environ))
    if expect(r.returncode == 0, f'sort: exit {r.returncode}: {r.stderr}'):
        for line in ['cluster 0: cpu-llvm (5 instructions', 'cluster 1: interpreter (1 instruction,',
                     'cluster 2: cpu-llvm (5 instructions']:
            expect(line in r.stderr, f'sort: no {line!r} in {r.stderr!r}')
        close('sort', os.path.join(out, 'output_0.npy'), -np.exp(s * s + sx), rtol=1e-5, atol=1e-5)
        print('ok reduce-precision declined by cpu-llvm runs on the interpreter')

# An opt-barrier stays on cpu-llvm (no interpreter cluster around it): its compile drops it.
if NEXT == 'cpu-llvm':
    rx = rng.uniform(-1, 1, (8, 16)).astype(f32)
    rw = rng.uniform(-1, 1, (16, 16)).astype(f32)
    rg = rng.uniform(-1, 1, (8, 16)).astype(f32)
    act = np.tanh(rx @ rw)
    out = os.path.join(TMP, 'remat')
    r = run(['run', write('remat.hlo', REMAT), '--input', save('rx.npy', rx), '--input',
             save('rw.npy', rw), '--input', save('rg.npy', rg), '--output-dir', out,
             '--log-partition'], env=dict(os.environ))
    if expect(r.returncode == 0, f'remat: exit {r.returncode}: {r.stderr}'):
        expect('cluster 0: cpu-llvm (' in r.stderr and 'whole module' in r.stderr,
               f'remat: not one cpu-llvm cluster: {r.stderr!r}')
        close('remat act', os.path.join(out, 'output_0.npy'), act)
        close('remat grad', os.path.join(out, 'output_1.npy'), rx.T @ (rg * act), rtol=1e-4)
        print('ok opt-barrier runs on cpu-llvm')

# An arg-max's variadic reduce stays on cpu-llvm too: its compile splits it into two kernels.
if NEXT == 'cpu-llvm':
    ax = rng.uniform(-1, 1, (64, 100)).astype(f32)
    out = os.path.join(TMP, 'argmax')
    r = run(['run', write('argmax.hlo', ARGMAX), '--input', save('ax.npy', ax), '--output-dir',
             out, '--log-partition'], env=dict(os.environ))
    if expect(r.returncode == 0, f'argmax: exit {r.returncode}: {r.stderr}'):
        expect('cluster 0: cpu-llvm (' in r.stderr and 'whole module' in r.stderr,
               f'argmax: not one cpu-llvm cluster: {r.stderr!r}')
        got = np.load(os.path.join(out, 'output_0.npy'))
        expect(np.array_equal(got, np.argmax(ax, axis=1)), f'argmax: got {got!r}')
        print('ok arg-max reduce runs on cpu-llvm')
    sd = rng.uniform(-1, 1, (300, 8)).astype(f32)
    ss = rng.integers(0, 20, 300).astype(np.int32)
    want = np.zeros((20, 8), f32)
    np.add.at(want, ss, sd)
    out = os.path.join(TMP, 'segment_sum')
    r = run(['run', write('segment_sum.hlo', SEGMENT_SUM), '--input', save('sd.npy', sd),
             '--input', save('ss.npy', ss), '--output-dir', out, '--log-partition'],
            env=dict(os.environ))
    if expect(r.returncode == 0, f'segment_sum: exit {r.returncode}: {r.stderr}'):
        expect('cluster 0: cpu-llvm (' in r.stderr and 'whole module' in r.stderr,
               f'segment_sum: not one cpu-llvm cluster: {r.stderr!r}')
        close('segment_sum', os.path.join(out, 'output_0.npy'), want)
        print('ok row scatter runs on cpu-llvm')

# (c) a custom-call no plugin runs: one clear line naming it, non-zero exit.
cc = os.path.join(ROOT, 'tests', 'hlo_corpus', '006_jaxdecomp_pfft3d_f64_customcall.hlo')
r = run(['run', cc])
expect(r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and
       "no available plugin can run instruction 'custom-call.4.0' (custom-call)" in r.stderr and
       "interpreter: 'custom-call.4.0' is a custom-call ('pfft3d')" in r.stderr,
       f'custom-call: exit {r.returncode}: {r.stderr!r}')
r = run(['run', mixed, '--min-cluster-size', '0'])
expect(r.returncode != 0 and '--min-cluster-size needs a positive integer' in r.stderr,
       f'bad --min-cluster-size: {r.stderr!r}')

# (b) graph placement per node: elementwise on test-elementwise, MatMul on the next plugin.
gx = rng.uniform(-1, 1, (5, 3)).astype(f32)
gw = rng.uniform(-1, 1, (3, 4)).astype(f32)
m = np.tanh(gx * gx + gx) @ gw
out = os.path.join(TMP, 'graph')
svg, html = os.path.join(TMP, 'c.svg'), os.path.join(TMP, 'c.html')
base = ['graph', 'run', write('mm.graph', GRAPH), '--input', save('gx.npy', gx), '--input',
        save('gw.npy', gw), '--output-dir', out, '--log-device-placement']
r = run(base + ['--dump-clusters', svg])
if expect(r.returncode == 0, f'graph: exit {r.returncode}: {r.stderr}'):
    for n, op in [('a', 'Mul'), ('b', 'Add'), ('c', 'Tanh'), ('e', 'Exp'), ('f', 'Neg')]:
        expect(f'node {n} ({op}) -> test-elementwise' in r.stderr, f'graph {n}: {r.stderr!r}')
    expect(f'node m (MatMul) -> {NEXT}' in r.stderr, f'graph m: {r.stderr!r}')
    close('graph f', os.path.join(out, 'output_0.npy'), -np.exp(m), rtol=1e-4)
    close('graph m', os.path.join(out, 'output_1.npy'), m)
    labels = [t.text for t in ET.parse(svg).getroot().iter('{http://www.w3.org/2000/svg}text')]
    expect('cluster_0 on test-elementwise' in labels and f'cluster_1 on {NEXT}' in labels,
           f'svg labels: {labels}')
    print('ok graph placement per node and SVG picture')
r = run(base + ['--dump-clusters', html])
expect(r.returncode == 0 and '<svg' in open(html).read() and 'subgraph cluster_0' in open(html).read(),
       f'html dump: {r.stderr!r}')

if failures:
    print('\n'.join('FAIL ' + f for f in failures))
    sys.exit(1)
print('all partition checks passed')
