#!/usr/bin/env python3
"""Generates random HLO modules together with a NumPy evaluation of the same math, runs each
with `kiln run`, and compares. Usage: random_modules.py KILN DEVICE COUNT SEED."""
import os
import subprocess
import sys
import tempfile

import numpy as np


class Builder:
    """Emits HLO text and computes each value with NumPy (float64) at the same time."""

    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.params = []
        self.n = 0

    def name(self, base):
        self.n += 1
        return f'%{base}.{self.n}'

    @staticmethod
    def shape(dims):
        return 'f32[' + ','.join(map(str, dims)) + ']'

    def emit(self, op, dims, operands, attrs='', value=None):
        nm = self.name(op)
        ops = ', '.join(f'{self.shape(d)} {o}' for o, d in operands)
        extra = f', {attrs}' if attrs else ''
        self.lines.append(f'  {nm} = {self.shape(dims)} {op}({ops}){extra}')
        return (nm, tuple(dims), value)

    def param(self, dims):
        i = len(self.params)
        data = self.rng.uniform(-2, 2, size=dims).astype(np.float32)
        nm = f'%p{i}'
        self.params.append((nm, tuple(dims), data))
        self.lines.append(f'  {nm} = {self.shape(dims)} parameter({i})')
        return (nm, tuple(dims), data.astype(np.float64))

    def constant_scalar(self, v):
        nm = self.name('c')
        self.lines.append(f'  {nm} = f32[] constant({v!r})')
        return (nm, (), np.float64(np.float32(v)))


def rand_dims(rng):
    return [int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 4)))]


def grow(b, rng, pool):
    """Adds one random instruction built from values in the pool."""
    x = pool[int(rng.integers(len(pool)))]
    nm, dims, v = x
    kind = rng.choice(['binary', 'unary', 'broadcast', 'transpose', 'reshape', 'reduce',
                       'slice', 'concat', 'select'])
    same = [p for p in pool if p[1] == dims]
    if kind == 'binary':
        y = same[int(rng.integers(len(same)))]
        op = rng.choice(['add', 'subtract', 'multiply', 'maximum', 'minimum'])
        f = {'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply,
             'maximum': np.maximum, 'minimum': np.minimum}[op]
        return b.emit(op, dims, [(nm, dims), (y[0], dims)], value=f(v, y[2]))
    if kind == 'unary':
        op = rng.choice(['negate', 'abs', 'tanh', 'sine', 'logistic', 'floor'])
        f = {'negate': np.negative, 'abs': np.abs, 'tanh': np.tanh, 'sine': np.sin,
             'logistic': lambda a: 1 / (1 + np.exp(-a)), 'floor': np.floor}[op]
        if op == 'floor':  # avoid comparing floor at values within rounding of an integer
            return b.emit('tanh', dims, [(nm, dims)], value=np.tanh(v))
        return b.emit(op, dims, [(nm, dims)], value=f(v))
    if kind == 'broadcast' and len(dims) < 4:
        new = int(rng.integers(1, 4))
        pos = int(rng.integers(len(dims) + 1))
        out = list(dims[:pos]) + [new] + list(dims[pos:])
        mapping = [i if i < pos else i + 1 for i in range(len(dims))]
        val = np.broadcast_to(np.expand_dims(v, pos), out).copy()
        return b.emit('broadcast', out, [(nm, dims)],
                      'dimensions={' + ','.join(map(str, mapping)) + '}', val)
    if kind == 'transpose' and len(dims) > 1:
        perm = [int(i) for i in rng.permutation(len(dims))]
        out = [dims[p] for p in perm]
        return b.emit('transpose', out, [(nm, dims)],
                      'dimensions={' + ','.join(map(str, perm)) + '}', np.transpose(v, perm))
    if kind == 'reshape':
        out = [int(np.prod(dims))] if len(dims) > 1 else list(dims) + [1]
        return b.emit('reshape', out, [(nm, dims)], value=v.reshape(out))
    if kind == 'reduce' and len(dims) > 1:
        d = int(rng.integers(len(dims)))
        is_max = bool(rng.integers(2))
        out = [s for i, s in enumerate(dims) if i != d]
        init = b.constant_scalar(float('-inf') if is_max else 0.0)
        val = v.max(axis=d) if is_max else v.sum(axis=d)
        comp = '%max_f32' if is_max else '%add_f32'
        return b.emit('reduce', out, [(nm, dims), (init[0], ())],
                      f'dimensions={{{d}}}, to_apply={comp}', val)
    if kind == 'slice':
        starts = [int(rng.integers(s)) for s in dims]
        limits = [int(rng.integers(st + 1, s + 1)) for st, s in zip(starts, dims)]
        out = [lim - st for st, lim in zip(starts, limits)]
        idx = tuple(slice(st, lim) for st, lim in zip(starts, limits))
        spec = ', '.join(f'[{st}:{lim}]' for st, lim in zip(starts, limits))
        return b.emit('slice', out, [(nm, dims)], f'slice={{{spec}}}', v[idx])
    if kind == 'concat':
        y = same[int(rng.integers(len(same)))]
        d = int(rng.integers(len(dims)))
        out = list(dims)
        out[d] *= 2
        return b.emit('concatenate', out, [(nm, dims), (y[0], dims)],
                      f'dimensions={{{d}}}', np.concatenate([v, y[2]], axis=d))
    if kind == 'select':
        y = same[int(rng.integers(len(same)))]
        pnm = b.name('cmp')
        b.lines.append(f'  {pnm} = pred[{",".join(map(str, dims))}] compare('
                       f'{b.shape(dims)} {nm}, {b.shape(dims)} {y[0]}), direction=GT')
        return _select(b, pnm, nm, y, dims, v)
    return None


def _select(b, pnm, nm, y, dims, v):
    out = b.name('select')
    pshape = 'pred[' + ','.join(map(str, dims)) + ']'
    b.lines.append(f'  {out} = {b.shape(dims)} select({pshape} {pnm}, {b.shape(dims)} {nm}, '
                   f'{b.shape(dims)} {y[0]})')
    return (out, tuple(dims), np.where(v > y[2], v, y[2]))


HEADER = """HloModule random_{seed}

%add_f32 (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}

%max_f32 (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}}
"""


def make_module(seed):
    rng = np.random.default_rng(seed)
    b = Builder(rng)
    pool = [b.param(rand_dims(rng)) for _ in range(int(rng.integers(1, 4)))]
    for _ in range(int(rng.integers(3, 15))):
        r = grow(b, rng, pool)
        if r is not None:
            pool.append(r)
    # Every computed value is an output, so that no instruction goes unchecked.
    outs = pool[len(b.params):] or pool[-1:]
    sig = ', '.join(f'{p[0][1:]}: {b.shape(p[1])}' for p in b.params)
    body = '\n'.join(b.lines)
    tshape = '(' + ', '.join(b.shape(o[1]) for o in outs) + ')'
    operands = ', '.join(f'{b.shape(o[1])} {o[0]}' for o in outs)
    text = (HEADER.format(seed=seed) +
            f'\nENTRY %main ({sig}) -> {tshape} {{\n{body}\n'
            f'  ROOT %out = {tshape} tuple({operands})\n}}\n')
    return text, [p[2] for p in b.params], [o[2] for o in outs]


def main():
    kiln, device, count, seed0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    failures = 0
    for seed in range(seed0, seed0 + count):
        text, inputs, want = make_module(seed)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'm.hlo')
            open(path, 'w').write(text)
            args = [kiln, 'run', path, '--device', device, '--output-dir', tmp]
            for i, a in enumerate(inputs):
                np.save(os.path.join(tmp, f'in{i}.npy'), a)
                args += ['--input', os.path.join(tmp, f'in{i}.npy')]
            proc = subprocess.run(args, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f'FAIL seed {seed}: {proc.stderr.strip()}\n{text}')
                failures += 1
                continue
            for k, w in enumerate(want):
                got = np.load(os.path.join(tmp, f'output_{k}.npy'))
                if got.shape != w.shape or not np.allclose(got, w, rtol=1e-4, atol=1e-4):
                    print(f'FAIL seed {seed} output {k}: values differ\n{text}')
                    failures += 1
                    break
    print(f'{count} random modules, {failures} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
