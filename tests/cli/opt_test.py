#!/usr/bin/env python3
"""End-to-end tests of `kiln opt` and the dump flags: fusion counts on the example modules
(printed), the optimized text re-parses with `kiln print`, the optimized module computes
the same outputs as the original on the interpreter (and both match NumPy where the math is
simple), --dump-to writes files only for passes that changed the module and --dump-pass-re
filters them, `kiln run --dump-to` dumps the core passes and the module the device runs, and unknown pass
names / bad regexes are one-line errors with a non-zero exit.
Run by meson with: opt_test.py KILN SOURCE_ROOT."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

KILN, ROOT = sys.argv[1:3]
TMP = tempfile.mkdtemp(prefix='kiln_opt_test_')
EXAMPLES = os.path.join(ROOT, 'examples', 'hlo')
failures, passes = [], []


def run(args):
    p = subprocess.run([KILN] + args, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=''):
    (passes if cond else failures).append(name if cond else f'{name}: {detail}')
    print(('PASS ' if cond else 'FAIL ') + name + ('' if cond else ': ' + detail))


def summary_counts(stderr):
    """The counts `kiln opt` prints on stderr."""
    m = re.search(r'^fusions: (\d+) \(loop (\d+), input (\d+), output (\d+), custom (\d+)\)$',
                  stderr, re.M)
    d = re.search(r'^dots: (\d+)$', stderr, re.M)
    i = re.search(r'^instructions: (\d+) -> (\d+)', stderr, re.M)
    if not (m and d and i):
        return None
    f = [int(g) for g in m.groups()]
    return dict(fusions=f[0], loop=f[1], input=f[2], output=f[3], custom=f[4],
                dots=int(d.group(1)), before=int(i.group(1)), after=int(i.group(2)))


def changed_passes(stderr):
    """Pass names the summary says changed the module (without the pipeline prefix)."""
    return {m.group(1).split('/')[-1] for m in re.finditer(r'^pass (\S+): changed', stderr, re.M)}


def optimize(name, extra=()):
    rc, out, err = run(['opt', os.path.join(EXAMPLES, name + '.hlo')] + list(extra))
    path = os.path.join(TMP, name + '.opt.hlo')
    with open(path, 'w') as f:
        f.write(out)
    return rc, path, err


def run_outputs(module, inputs, outdir):
    args = ['run', module, '--device', 'interpreter', '--output-dir', outdir]
    for i in inputs:
        args += ['--input', i]
    rc, _, err = run(args)
    if rc != 0:
        return None, err.strip()
    files = sorted(f for f in os.listdir(outdir) if f.startswith('output_'))
    return [np.load(os.path.join(outdir, f)) for f in sorted(files, key=lambda s: int(s[7:-4]))], ''


def close(got, want, rtol):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False, f'shape {got.shape} != {want.shape}'
    # Relative to the output's magnitude, so that elements near zero do not dominate.
    scale = max(float(np.abs(want).max(initial=0)), 1e-30)
    err = float(np.abs(got - want).max(initial=0)) / scale
    return err <= rtol, f'max relative error {err:.3g} > {rtol}'


def save_inputs(name, arrays):
    paths = []
    for i, a in enumerate(arrays):
        p = os.path.join(TMP, f'{name}_in{i}.npy')
        np.save(p, a)
        paths.append(p)
    return paths


rng = np.random.default_rng(7)


def model_fn_case():
    x, y, z = (rng.uniform(-1, 1, 1024).astype(np.float32) for _ in range(3))
    return [x, y, z], [np.sum(x.astype(np.float64) + y.astype(np.float64) * z)]


def softmax_case():
    x = rng.uniform(-4, 4, (64, 128)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return [x], [e / e.sum(axis=1, keepdims=True)]


def dense_relu_case():
    x = rng.uniform(-1, 1, (256, 784)).astype(np.float32)
    w = rng.uniform(-0.1, 0.1, (784, 512)).astype(np.float32)
    b = rng.uniform(-1, 1, 512).astype(np.float32)
    return [x, w, b], [np.maximum(x.astype(np.float64) @ w + b, 0)]


# (module, NumPy inputs and expected outputs or None for kiln's generated inputs, count check)
CASES = [
    ('model_fn', model_fn_case, lambda c: c['fusions'] == 1, 'exactly one fusion'),
    ('softmax', softmax_case, lambda c: 1 <= c['fusions'] <= 2, 'at most two fusions'),
    ('dense_relu', dense_relu_case,
     lambda c: (c['dots'] == 1 and c['fusions'] <= 1) or
               (c['dots'] == 0 and c['fusions'] == 1 and c['output'] == 1),
     'a dot plus at most one fusion, or one kOutput fusion'),
    ('mlp_train_step', None, lambda c: c['fusions'] >= 1 and c['after'] < c['before'],
     'fewer instructions and some fusions'),
]

for name, make, count_ok, what in CASES:
    rc, opt_path, err = optimize(name)
    if rc != 0:
        check(f'{name}: kiln opt', False, f'exit {rc}: {err.strip()}')
        continue
    counts = summary_counts(err)
    if counts is None:
        check(f'{name}: summary', False, 'no counts on stderr: ' + err)
        continue
    print(f'COUNTS {name}: fusions={counts["fusions"]} (loop {counts["loop"]}, input '
          f'{counts["input"]}, output {counts["output"]}) dots={counts["dots"]} entry '
          f'instructions {counts["before"]} -> {counts["after"]}')
    check(f'{name}: {what}', count_ok(counts), str(counts))
    n_text = len(re.findall(r'^\s*(?:ROOT )?%\S+ = .* fusion\(', open(opt_path).read(), re.M))
    check(f'{name}: fusion count matches the text', n_text == counts['fusions'],
          f'{n_text} fusion instructions in the text, summary says {counts["fusions"]}')

    rc, printed, perr = run(['print', opt_path])
    check(f'{name}: optimized text re-parses with kiln print', rc == 0, perr.strip())

    inputs, expected = (make() if make else ([], None))
    paths = save_inputs(name, inputs)
    orig, e1 = run_outputs(os.path.join(EXAMPLES, name + '.hlo'), paths,
                           os.path.join(TMP, name + '_orig'))
    opt, e2 = run_outputs(opt_path, paths, os.path.join(TMP, name + '_opt'))
    if orig is None or opt is None:
        check(f'{name}: kiln run original and optimized', False, e1 or e2)
        continue
    ok = len(orig) == len(opt)
    detail = f'{len(orig)} vs {len(opt)} outputs'
    for i, (a, b) in enumerate(zip(opt, orig)):
        good, d = close(a, b, 1e-5)
        if not good:
            ok, detail = False, f'output {i}: {d}'
    check(f'{name}: optimized == original on the interpreter (1e-5 relative)', ok, detail)
    if expected is not None:
        ok, detail = len(opt) == len(expected), 'output count'
        for i, (a, b) in enumerate(zip(opt, expected)):
            good, d = close(a, b, 1e-4)
            if not good:
                ok, detail = False, f'output {i}: {d}'
        check(f'{name}: optimized matches NumPy', ok, detail)

# --dump-to: one text file per pass that changed the module, named after the pass.
mlp = os.path.join(EXAMPLES, 'mlp_train_step.hlo')
dump_all = os.path.join(TMP, 'dump_all')
rc, _, err = run(['opt', mlp, '--dump-to', dump_all])
changed = changed_passes(err)
txt = sorted(f for f in os.listdir(dump_all) if f.endswith('.txt')) if rc == 0 else []
dumped = {re.match(r'.*\.\d+\.(.+)\.txt$', f).group(1) for f in txt}
check('dump: files for exactly the changed passes', rc == 0 and dumped == changed and changed,
      f'rc={rc} dumped={dumped} changed={changed}')
check('dump: text, dot and html per dump',
      all(os.path.exists(os.path.join(dump_all, f[:-4] + ext)) for f in txt
          for ext in ('.dot', '.html')), str(sorted(os.listdir(dump_all))))
ok = True
for f in txt:
    rc2, _, e = run(['print', os.path.join(dump_all, f)])
    ok = ok and rc2 == 0
check('dump: dumped text re-parses', ok and txt, 'kiln print failed on a dump')
dot = open(os.path.join(dump_all, txt[-1][:-4] + '.dot')).read() if txt else ''
check('dump: fusions drawn as clusters', 'subgraph cluster' in dot, dot[:200])

dump_re = os.path.join(TMP, 'dump_re')
rc, _, err = run(['opt', mlp, '--dump-to', dump_re, '--dump-pass-re', '^multi'])
files = sorted(os.listdir(dump_re)) if os.path.isdir(dump_re) else []
names = {re.match(r'.*\.\d+\.(.+)\.txt$', f).group(1) for f in files if f.endswith('.txt')}
check('dump: --dump-pass-re keeps only matching passes', rc == 0 and names == {'multi-output-fusion'},
      f'rc={rc} {files}')
dump_none = os.path.join(TMP, 'dump_none')
rc, _, _ = run(['opt', mlp, '--dump-to', dump_none, '--dump-pass-re', 'no-pass-is-called-this'])
check('dump: a regex matching no pass writes nothing',
      rc == 0 and not (os.path.isdir(dump_none) and os.listdir(dump_none)), f'rc={rc}')
rc, _, err = run(['opt', mlp, '--dump-to', os.path.join(TMP, 'dump_bad'), '--dump-pass-re', '('])
check('dump: bad regex is a one-line error', rc != 0 and len(err.strip().splitlines()) == 1,
      f'rc={rc} {err!r}')

# Named passes run in the order given; a pass that changes nothing is not dumped.
dump_named = os.path.join(TMP, 'dump_named')
rc, out, err = run(['opt', mlp, '--passes=dce,fusion,multi-output-fusion', '--dump-to', dump_named])
order = re.findall(r'^pass (\S+):', err, re.M)
names = sorted(os.listdir(dump_named)) if os.path.isdir(dump_named) else []
check('--passes runs the named passes in order',
      rc == 0 and order == ['dce', 'fusion', 'multi-output-fusion'], f'rc={rc} {order} {err}')
check('--passes dumps only what changed',
      not any('.dce.' in f for f in names) and any('.fusion.' in f for f in names), str(names))

# A simplification pass is dumped under its own name: x*broadcast(1) and negate(negate(.))
# fold away in algsimp, leaving the parameter.
SIMP = """HloModule simp

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %one = f32[] constant(1)
  %ones = f32[8]{0} broadcast(f32[] %one), dimensions={}
  %m = f32[8]{0} multiply(f32[8]{0} %x, f32[8]{0} %ones)
  %n = f32[8]{0} negate(f32[8]{0} %m)
  ROOT %nn = f32[8]{0} negate(f32[8]{0} %n)
}
"""
simp = os.path.join(TMP, 'simp.hlo')
with open(simp, 'w') as f:
    f.write(SIMP)
dump_simp = os.path.join(TMP, 'dump_simp')
rc, out, err = run(['opt', simp, '--dump-to', dump_simp])
files = sorted(os.listdir(dump_simp)) if os.path.isdir(dump_simp) else []
check('simplification: algsimp leaves the parameter and is dumped',
      rc == 0 and re.search(r'ROOT %x = f32\[8\]\{0\} parameter\(0\)', out)
      and 'simp.00.algsimp.txt' in files and 'changed' in err
      and re.search(r'^instructions: 6 -> 1 ', err, re.M), f'rc={rc} {files} {out} {err}')

# kiln run: the core passes run on the module that executes, and --dump-to shows them and
# then the exact module the device compiles; --no-core-passes hands it over as written.
x8 = np.linspace(-2, 2, 8).astype(np.float32)
np.save(os.path.join(TMP, 'x8.npy'), x8)
listed = run(['devices'])[1]
for device in ['interpreter'] + (['cpu-llvm'] if re.search(r'^cpu-llvm +\d+ +available', listed, re.M) else []):
    for extra, want_instructions in (([], 1), (['--no-core-passes'], 6)):
        d = os.path.join(TMP, f'run_dump_{device}_{len(extra)}')
        o = os.path.join(TMP, f'run_out_{device}_{len(extra)}')
        rc, _, err = run(['run', simp, '--device', device, '--input', os.path.join(TMP, 'x8.npy'),
                          '--output-dir', o, '--dump-to', d] + extra)
        files = sorted(os.listdir(d)) if os.path.isdir(d) else []
        compiled = [f for f in files if f.endswith(f'.compile.{device}.txt')]
        text = open(os.path.join(d, compiled[0])).read() if len(compiled) == 1 else ''
        body = text[text.find('ENTRY'):]
        n = len([l for l in body.splitlines() if ' = ' in l])
        label = f'run --dump-to on {device} {" ".join(extra)}'
        check(label + ': right answer', rc == 0 and np.array_equal(np.load(os.path.join(o, 'output_0.npy')), x8),
              f'rc={rc} {err}')
        check(label + ': algsimp dumped exactly when the core passes ran',
              ('simp.00.algsimp.txt' in files) == (not extra), str(files))
        check(label + f': the device compiles {want_instructions} instruction(s)',
              n == want_instructions, f'{files} {text}')

# cpu-llvm dumps its own pass after the core's: the module after kernel-fusion is the program
# it runs, softmax as one fusion holding both row reductions.
if re.search(r'^cpu-llvm +\d+ +available', listed, re.M):
    d = os.path.join(TMP, 'run_dump_softmax')
    rc, _, err = run(['run', os.path.join(EXAMPLES, 'softmax.hlo'), '--device', 'cpu-llvm',
                      '--dump-to', d])
    files = sorted(f for f in os.listdir(d) if f.endswith('.txt')) if os.path.isdir(d) else []
    last = open(os.path.join(d, files[-1])).read() if files else ''
    entry = last[last.find('ENTRY'):]
    check('run --dump-to on cpu-llvm ends with its kernel-fusion: one fusion, two reduces inside',
          rc == 0 and files and files[-1].endswith('.cpu-llvm.kernel-fusion.txt')
          and entry.count(' fusion(') == 1 and last.count(' reduce(') == 2, f'rc={rc} {files} {err}')

# kiln opt --device NAME prints what that plugin runs: cpu-llvm's kernel-fusion output (one
# fusion), the interpreter's the core's module (no fusion: it has no passes of its own).
for device, fusions in (('cpu-llvm', 1), ('interpreter', 0)):
    if device == 'cpu-llvm' and not re.search(r'^cpu-llvm +\d+ +available', listed, re.M):
        continue
    rc, out, err = run(['opt', os.path.join(EXAMPLES, 'softmax.hlo'), '--device', device])
    entry = out[out.find('ENTRY'):]
    check(f'opt --device {device}: prints the program it runs ({fusions} fusion)',
          rc == 0 and entry.count(' fusion(') == fusions and out.count(' reduce(') == 2
          and f'device {device}' in err, f'rc={rc} {err} {out[-500:]}')
rc, _, err = run(['opt', os.path.join(EXAMPLES, 'softmax.hlo'), '--device', 'interpreter',
                  '--passes=dce'])
check('opt --device with --passes is a usage error', rc == 2 and '--passes' in err, f'rc={rc} {err}')

# --no-verify: a module the verifier rejects (a dead instruction with a wrong declared
# shape) is refused without it and optimized with it.
BAD = SIMP.replace('%n = f32[8]{0} negate(f32[8]{0} %m)',
                   '%n = f32[8]{0} negate(f32[8]{0} %m)\n  %bad = f32[4]{0} negate(f32[8]{0} %x)')
bad = os.path.join(TMP, 'bad.hlo')
with open(bad, 'w') as f:
    f.write(BAD)
rc1, _, err1 = run(['opt', bad])
rc2, out2, _ = run(['opt', bad, '--no-verify'])
check('--no-verify: verifier error without it, optimized with it',
      rc1 != 0 and 'bad' in err1 and len(err1.strip().splitlines()) == 1 and rc2 == 0
      and 'f32[4]' not in out2, f'rc1={rc1} {err1!r} rc2={rc2}')

rc, out, _ = run(['opt', '--list-passes'])
check('--list-passes names the passes', rc == 0 and {'dce', 'cse', 'constant-folding', 'algsimp',
      'transpose-folding', 'tuple-simplifier', 'fusion', 'multi-output-fusion'} <= set(out.split()),
      out)
rc, _, err = run(['run', simp, '--dump-pass-re', 'x'])
check('run --dump-pass-re without --dump-to is a usage error', rc == 2, f'rc={rc} {err!r}')

# Unknown pass: non-zero exit and one line that lists the known passes.
rc, out, err = run(['opt', mlp, '--passes=algsimp,no-such-pass'])
lines = err.strip().splitlines()
check('unknown pass: non-zero exit, one line naming it and the known passes',
      rc != 0 and out == '' and len(lines) == 1 and 'no-such-pass' in lines[0]
      and 'multi-output-fusion' in lines[0] and 'algsimp' in lines[0], f'rc={rc} {err!r}')

# --buffer-report: the totals before and after.
rc, _, err = run(['opt', mlp, '--buffer-report'])
m = {k: re.search(r'^buffers %s: .*total_allocation_bytes=(\d+).* peak_live_bytes=(\d+).* '
                  r'sum_intermediate_bytes=(\d+)' % k, err, re.M) for k in ('before', 'after')}
check('--buffer-report: totals before and after', rc == 0 and all(m.values()), err[-500:])
if all(m.values()):
    b, a = (tuple(int(g) for g in m[k].groups()) for k in ('before', 'after'))
    print(f'BUFFERS mlp_train_step: total/peak/intermediates before {b} after {a}')
    check('--buffer-report: fusion shrinks the sum of intermediates', a[2] < b[2], f'{b} -> {a}')

shutil.rmtree(TMP, ignore_errors=True)
print(f'{len(passes)} passed, {len(failures)} failed')
sys.exit(1 if failures else 0)
