#!/usr/bin/env python3
"""Benchmark (not a test): common JAX operations on shapes drawn at random from odd extents
(3 to 1025: primes, one off a power of two, 1000), run exactly as jax_sweep.py runs its
programs (same HLO text and arrays for Kiln's cpu-llvm and XLA:CPU, outputs cross-checked).
Meant to find what no hand-written sweep chose: a kernel that compiles for seconds at one
extent, a loop left short of a vector, a gap that only some shapes show. Each seed gives
another set: strided sums, middle-axis means, softmax, transposes, column maxima,
cumulative sums, pads with strided slices, concatenations, average pools, 3x3
convolutions, layer norms, matrix products, strided column sums and argmax; and with
KILN_FUZZ_MORE=N, N more from their own stream: attention, depthwise convolutions, row
cumulative sums, SAME max pools, row gathers and tanh RNN scans; with KILN_FUZZ_TYPED=N,
N in bf16, f16 and 8- and 32-bit integers (softmax, products, layer norms, sums, maxima,
cumulative sums, floor division and remainder, argmax, shifts).

    .venv/bin/python benchmarks/jax_shape_fuzz.py [--runs 10] [--only SUBSTRING]
    KILN_FUZZ_SEED=2 KILN_FUZZ_COUNT=40 KILN_FUZZ_MORE=20 .venv/bin/python benchmarks/jax_shape_fuzz.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_sweep  # noqa: E402  (parses the same command line)

EXTENTS = [3, 5, 7, 9, 13, 17, 31, 33, 63, 65, 97, 127, 129, 143, 255, 257, 337, 511, 1000,
           1023, 1025]


def programs():
    """name -> (function, inputs): KILN_FUZZ_COUNT programs from seed KILN_FUZZ_SEED."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    r = np.random.RandomState(int(os.environ.get('KILN_FUZZ_SEED', '1')))

    def pick():
        return int(r.choice(EXTENTS))

    def f32(*s):
        return r.randn(*s).astype(np.float32)

    def image(a, b):  # a spatial extent from 9 to 138
        return a % 130 + 9, b % 130 + 9

    def layer_norm(x):
        return (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)

    def avg_pool(stride):
        return lambda x: lax.reduce_window(x, 0., lax.add, (1, 3, 3, 1), (1, stride, stride, 1),
                                           'VALID')

    def conv(stride):
        return lambda x, w: lax.conv_general_dilated(x, w, (stride, stride), 'SAME',
                                                     dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def attention(q, k, v):
        return jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -1) @ v

    def depthwise(stride):
        return lambda x, w: lax.conv_general_dilated(
            x, w, (stride, stride), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
            feature_group_count=x.shape[-1])

    def max_pool_same(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME')

    def rnn(xs, w):
        return lax.scan(lambda h, x: (jnp.tanh(x + h @ w),) * 2, jnp.zeros_like(xs[0]), xs)[1]

    out = {}
    for i in range(int(os.environ.get('KILN_FUZZ_COUNT', '40'))):
        kind = r.randint(0, 14)
        a, b, c = pick(), pick(), pick()
        if a * b * c > 4_000_000:
            c = 3
        s1, s2 = int(r.randint(1, 5)), int(r.randint(1, 5))
        if kind == 0:
            out[f'{i} strided sum {a}x{b} s{s1},{s2}'] = (
                lambda x, s1=s1, s2=s2: x[::s1, ::s2].sum(), [f32(a, b)])
        elif kind == 1:
            out[f'{i} mean axis1 {a}x{b}x{c}'] = (lambda x: x.mean(1), [f32(a, b, c)])
        elif kind == 2:
            out[f'{i} softmax {a}x{b}'] = (lambda x: jax.nn.softmax(x, -1), [f32(a, b)])
        elif kind == 3:
            out[f'{i} transpose {a}x{b}x{c}'] = (lambda x: jnp.transpose(x, (2, 0, 1)) * 2,
                                                 [f32(a, b, c)])
        elif kind == 4:
            out[f'{i} max axis0 {a}x{b}'] = (lambda x: x.max(0), [f32(a, b)])
        elif kind == 5:
            out[f'{i} cumsum axis0 {a}x{b}'] = (lambda x: jnp.cumsum(x, 0), [f32(a, b)])
        elif kind == 6:
            out[f'{i} pad+slice {a}x{b}'] = (
                lambda x, s1=s1: jnp.pad(x, ((s1, 2), (1, s1)))[::s1] + 1, [f32(a, b)])
        elif kind == 7:
            out[f'{i} concat {a}x{b},{a}x{c}'] = (
                lambda x, y: jnp.concatenate([x, y, x], 1) * 3, [f32(a, b), f32(a, c)])
        elif kind == 8:
            h, w = image(a, b)
            out[f'{i} avgpool3 s{s1} b2 {h}x{w}x{c % 40 + 1}'] = (
                avg_pool(s1), [f32(2, h, w, c % 40 + 1)])
        elif kind == 9:
            h, w = image(a, b)
            cin = c % 40 + 1
            out[f'{i} conv3x3 s{s1} b2 {h}x{w} {cin}->{s2 * 7}'] = (
                conv(s1), [f32(2, h, w, cin), f32(3, 3, cin, s2 * 7)])
        elif kind == 10:
            out[f'{i} layernorm {a}x{b}'] = (layer_norm, [f32(a, b)])
        elif kind == 11:
            out[f'{i} matmul {a}x{b}x{c}'] = (lambda x, y: jnp.tanh(x @ y),
                                              [f32(a, b), f32(b, c)])
        elif kind == 12:
            out[f'{i} sum axis0 strided {a}x{b} s{s1}'] = (lambda x, s1=s1: x[::s1].sum(0),
                                                           [f32(a, b)])
        else:
            out[f'{i} argmax {a}x{b}'] = (lambda x: jnp.argmax(x, 0), [f32(a, b)])
    # More kinds, drawn from a stream of their own (the programs above stay those of the seed).
    r = np.random.RandomState(1000 + int(os.environ.get('KILN_FUZZ_SEED', '1')))
    for i in range(int(os.environ.get('KILN_FUZZ_MORE', '0'))):
        kind = r.randint(0, 6)
        a, b, c = pick(), pick(), pick()
        if kind == 0:
            s, d = a % 300 + 1, (b % 8 + 1) * 8
            out[f'm{i} attention b2 h3 s{s} d{d}'] = (attention, [f32(2, 3, s, d) for _ in range(3)])
        elif kind == 1:
            h, w = image(a, b)
            ch, st = c % 48 + 1, int(r.randint(1, 3))
            out[f'm{i} depthwise3x3 s{st} b2 {h}x{w}x{ch}'] = (
                depthwise(st), [f32(2, h, w, ch), f32(3, 3, 1, ch)])
        elif kind == 2:
            out[f'm{i} cumsum axis1 {a}x{b}'] = (lambda x: jnp.cumsum(x, 1), [f32(a, b)])
        elif kind == 3:
            h, w = image(a, b)
            out[f'm{i} maxpool3 s2 same b2 {h}x{w}x{c % 40 + 1}'] = (
                max_pool_same, [f32(2, h, w, c % 40 + 1)])
        elif kind == 4:
            out[f'm{i} gather {c} rows of {a}x{b}'] = (
                lambda t, j: t[j] * 2, [f32(a, b), r.randint(0, a, c).astype(np.int32)])
        else:
            out[f'm{i} tanh rnn scan {a % 200 + 1} steps d{b % 128 + 1}'] = (
                rnn, [f32(a % 200 + 1, 4, b % 128 + 1), f32(b % 128 + 1, b % 128 + 1) * 0.1])
    # Other element types (KILN_FUZZ_TYPED=N), from a third stream: 16-bit floats and integers.
    r = np.random.RandomState(2000 + int(os.environ.get('KILN_FUZZ_SEED', '1')))
    import ml_dtypes
    floats = {'bf16': ml_dtypes.bfloat16, 'f16': np.float16}
    ints = {'s8': np.int8, 'u8': np.uint8, 's32': np.int32, 'u32': np.uint32}
    for i in range(int(os.environ.get('KILN_FUZZ_TYPED', '0'))):
        kind = r.randint(0, 8)
        a, b = pick(), pick()
        fname = list(floats)[r.randint(0, 2)]
        iname = list(ints)[r.randint(0, 4)]
        ft, it = floats[fname], ints[iname]

        def ints_of(*s, it=it):
            info = np.iinfo(it)
            return r.randint(max(info.min, -1000), min(info.max, 1000) + 1, s).astype(it)
        if kind == 0:
            out[f't{i} {fname} softmax {a}x{b}'] = (lambda x: jax.nn.softmax(x, -1),
                                                    [f32(a, b).astype(ft)], 2e-2)
        elif kind == 1:
            out[f't{i} {fname} matmul {a}x{b}x{a}'] = (
                lambda x, y: x @ y, [f32(a, b).astype(ft), f32(b, a).astype(ft)], 3e-2)
        elif kind == 2:
            out[f't{i} {fname} layernorm {a}x{b}'] = (
                lambda x: layer_norm(x.astype(jnp.float32)).astype(x.dtype),
                [f32(a, b).astype(ft)], 2e-2)
        elif kind == 3:
            out[f't{i} {iname} sum axis0 and max axis1 {a}x{b}'] = (
                lambda x: (x.sum(0), x.max(1)), [ints_of(a, b)])
        elif kind == 4:
            out[f't{i} {iname} cumsum axis1 {a}x{b}'] = (lambda x: jnp.cumsum(x, 1),
                                                          [ints_of(a, b)])
        elif kind == 5:
            out[f't{i} {iname} floor divide and remainder {a}x{b}'] = (
                lambda x, y: (x // jnp.where(y == 0, 1, y), x % jnp.where(y == 0, 1, y)),
                [ints_of(a, b), ints_of(a, b)])
        elif kind == 6:
            out[f't{i} {iname} argmax axis0 and shifts {a}x{b}'] = (
                lambda x: (jnp.argmax(x, 0), x << 3, x >> 2), [ints_of(a, b)])
        else:
            out[f't{i} {fname} sum and mean {a}x{b}'] = (
                lambda x: (x.sum(1), x.mean(0)), [f32(a, b).astype(ft)], 3e-2)
    return out


if __name__ == '__main__':
    jax_sweep.main(programs)
