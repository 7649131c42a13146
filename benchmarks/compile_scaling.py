#!/usr/bin/env python3
"""Benchmark (not a test) of issue #12's compile-time goal: how cpu-llvm's compile time grows
with module size. Generates modules of N instructions (default 1k, 4k, 16k) and prints the
cold compile time (`kiln run --benchmark 1`, no object cache) against N, with the time per
1000 instructions (flat when growth is linear), beside XLA:CPU compiling the same text
(benchmarks/xla_peer.py) when JAX is installed.

Two shapes of module: `chain`, N elementwise instructions on f32[256] where each reads the
previous one and one from further back (what a long fused elementwise region looks like);
and `layers`, a stack of small dense layers (dot + bias + tanh + a row reduction), N/8
layers of 8 instructions (many kernels and GEMMs, as in a real model).

Usage: .venv-peers/bin/python benchmarks/compile_scaling.py [--build DIR] [--sizes 1000,4000]
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--sizes', default='1000,4000,16000')
ARGS.add_argument('--timeout', type=float, default=600, help='seconds per compile')
OPTS = ARGS.parse_args()
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import xla_peer  # noqa: E402
from timing import kiln_benchmark  # noqa: E402

OPS = ('add', 'multiply', 'subtract', 'maximum')


def chain(n):
    """n instructions: parameters, then elementwise ops each on the previous value and one
    seven back (a unary op every fifth, so costly math is in the mix too). Names avoid ones
    XLA's parser takes for types (s1, u8, ...)."""
    lines = ['HloModule chain_%d' % n, '', 'ENTRY main {']
    lines += [f'  p{i} = f32[256] parameter({i})' for i in range(2)]
    names = ['p0', 'p1']
    for i in range(n - 3):
        a, b = names[-1], names[max(0, len(names) - 7)]
        if i % 5 == 4:
            lines.append(f'  v{i} = f32[256] tanh({a})')
        else:
            lines.append(f'  v{i} = f32[256] {OPS[i % len(OPS)]}({a}, {b})')
        names.append(f'v{i}')
    lines.append(f'  ROOT out = f32[256] negate({names[-1]})')
    return '\n'.join(lines + ['}', ''])


def layers(n, width=64, batch=16):
    """n/8 dense layers of 8 instructions: dot, bias broadcast + add, tanh, a row max, its
    broadcast and subtract (a softmax-like normalization), and the next layer's weights."""
    lines = ['HloModule layers_%d' % n, '',
             'max_f32 {', '  a = f32[] parameter(0)', '  b = f32[] parameter(1)',
             '  ROOT m = f32[] maximum(a, b)', '}', '', 'ENTRY main {',
             f'  x = f32[{batch},{width}] parameter(0)',
             f'  w = f32[{width},{width}] parameter(1)',
             f'  bias = f32[{width}] parameter(2)',
             '  ninf = f32[] constant(-inf)']
    h = 'x'
    for i in range(max(1, n // 8)):
        lines += [
            f'  dot{i} = f32[{batch},{width}] dot({h}, w), lhs_contracting_dims={{1}}, '
            'rhs_contracting_dims={0}',
            f'  bias{i} = f32[{batch},{width}] broadcast(bias), dimensions={{1}}',
            f'  pre{i} = f32[{batch},{width}] add(dot{i}, bias{i})',
            f'  act{i} = f32[{batch},{width}] tanh(pre{i})',
            f'  rmax{i} = f32[{batch}] reduce(act{i}, ninf), dimensions={{1}}, to_apply=max_f32',
            f'  rmaxb{i} = f32[{batch},{width}] broadcast(rmax{i}), dimensions={{0}}',
            f'  cent{i} = f32[{batch},{width}] subtract(act{i}, rmaxb{i})',
            f'  sq{i} = f32[{batch},{width}] multiply(cent{i}, cent{i})']
        h = f'sq{i}'
    lines.append(f'  ROOT out = f32[{batch},{width}] negate({h})')
    return '\n'.join(lines + ['}', ''])


def kiln_compile_ms(path):
    env = dict(os.environ)
    env.pop('KILN_CPU_CACHE_DIR', None)  # cold: no object cache
    r = kiln_benchmark(os.path.join(OPTS.build, 'tools', 'kiln'), path, 'cpu-llvm', 1, env=env,
                       timeout=OPTS.timeout)
    return r['compile_ms'] if isinstance(r, dict) else r[:68]


def xla_compile_ms(text):
    if xla_peer.available():
        return 'no jax'
    code = ('import sys; sys.path.insert(0, %r); import xla_peer; '
            'print(xla_peer.compile_hlo(open(sys.argv[1]).read())[2])' %
            os.path.join(ROOT, 'benchmarks'))
    with tempfile.NamedTemporaryFile('w', suffix='.hlo') as f:
        f.write(text)
        f.flush()
        try:
            out = subprocess.run([sys.executable, '-c', code, f.name], capture_output=True,
                                 text=True, timeout=OPTS.timeout)
        except subprocess.TimeoutExpired:
            return f'>{OPTS.timeout:.0f}s'
    if out.returncode != 0:
        return 'failed'
    return float(out.stdout.strip().splitlines()[-1])


def fmt(v):
    return f'{v:.0f}' if isinstance(v, float) else v


def main():
    sizes = [int(s) for s in OPTS.sizes.split(',')]
    print('| module | instructions | kiln compile ms | per 1k instrs | XLA:CPU compile ms | '
          'xla/kiln |')
    print('|---|---|---|---|---|---|')
    for make in (chain, layers):
        for n in sizes:
            text = make(n)
            count = sum(1 for line in text.splitlines() if ' = ' in line)
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, 'module.hlo')
                with open(path, 'w') as f:
                    f.write(text)
                k = kiln_compile_ms(path)
            x = xla_compile_ms(text)
            per = f'{k / count * 1000:.0f}' if isinstance(k, float) else '-'
            ratio = f'{x / k:.2f}' if isinstance(k, float) and isinstance(x, float) else '-'
            print(f'| {make.__name__} | {count} | {fmt(k)} | {per} | {fmt(x)} | {ratio} |',
                  flush=True)
    print('kiln: compile_ms of `kiln run --device cpu-llvm --benchmark 1` (parse excluded, core '
          'passes, planning, LLVM, no object cache); XLA:CPU: hlo_module_from_text to '
          'compile_and_load.')


if __name__ == '__main__':
    main()
