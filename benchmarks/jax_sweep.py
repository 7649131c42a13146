#!/usr/bin/env python3
"""Benchmark (not a test): a sweep of common JAX programs that the other benchmarks do not
contain (attention, convolutions and pools, normalizations, gathers, random numbers, loops,
integer and shape ops), each lowered once to HLO text and run by Kiln's cpu-llvm and by
XLA:CPU on the same text and arrays in one run, outputs cross-checked. Meant to find what a
held-out JAX program hits: a failure, a step left to the host evaluator, or a slow kernel.

    .venv-peers/bin/python benchmarks/jax_sweep.py [--runs 10] [--only SUBSTRING]

benchmarks/jax_sweep_extra.py runs a second set the same way."""
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
ARGS.add_argument('--only', default='', help='run the programs whose name contains this')
ARGS.add_argument('--timeout', type=float, default=300, help='seconds per kiln process')
ARGS.add_argument('--save-hlo', default='', help='keep each module and its inputs here')
OPTS = ARGS.parse_args()


def programs():
    """name -> (function, inputs): inputs as NumPy arrays, made from one seed."""
    import jax
    import jax.numpy as jnp
    r = np.random.RandomState(0)

    def f32(*shape):
        return r.randn(*shape).astype(np.float32)

    def attention(q, k, v):
        s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / np.sqrt(q.shape[-1])
        mask = jnp.tril(jnp.ones((q.shape[2], k.shape[2]), bool))
        s = jnp.where(mask, s, -1e9)
        return jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s, axis=-1), v)

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def depthwise(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
                                            feature_group_count=x.shape[-1])

    def batchnorm(x, g, b):
        m = x.mean(axis=(0, 1, 2))
        v = ((x - m) ** 2).mean(axis=(0, 1, 2))
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def xent(logits, labels):
        return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, logits.shape[1]) *
                                 jax.nn.log_softmax(logits), axis=1))

    def rnn(xs, w, u):
        def step(h, x):
            h = jnp.tanh(x @ w + h @ u)
            return h, h
        return jax.lax.scan(step, jnp.zeros((xs.shape[1], u.shape[0]), xs.dtype), xs)[1]

    def laplacian(x):
        p = jnp.pad(x, 1)
        return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * x

    def layernorm_grad(x, g):
        def ln(x):
            m = x.mean(-1, keepdims=True)
            v = ((x - m) ** 2).mean(-1, keepdims=True)
            return jnp.sum(((x - m) * jax.lax.rsqrt(v + 1e-5) * g) ** 2)
        return jax.grad(ln)(x)

    def conv_net_grad(x, w1, w2):
        def loss(ws):
            h = jax.nn.relu(jax.lax.conv_general_dilated(
                x, ws[0], (2, 2), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC')))
            h = jax.lax.conv_general_dilated(h, ws[1], (1, 1), 'SAME',
                                             dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
            return jnp.mean(h ** 2)
        return jax.grad(loss)((w1, w2))

    def positional(t):
        pos = t[:, None] * jnp.exp(-jnp.arange(0, 256, 2) * (np.log(10000.0) / 256))[None]
        return jnp.concatenate([jnp.sin(pos), jnp.cos(pos)], axis=1)

    def dropout(k, x):
        keep = jax.random.bernoulli(jax.random.wrap_key_data(k), 0.9, x.shape)
        return jnp.where(keep, x / 0.9, 0)

    def max_pool(x):
        return jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                     'VALID')

    def adam(p, g, m, v):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        return p - 1e-3 * (m / 0.1) / (jnp.sqrt(v / 0.001) + 1e-8), m, v

    def attention_grad(q, k, v):
        def loss(q, k, v):
            s = jnp.einsum('bqd,bkd->bqk', q, k) / 8.0
            return jnp.sum(jnp.einsum('bqk,bkd->bqd', jax.nn.softmax(s, axis=-1), v) ** 2)
        return jax.grad(loss, argnums=(0, 1, 2))(q, k, v)

    def group_norm(x):
        g = x.reshape(x.shape[0], x.shape[1], x.shape[2], 8, -1)
        m = g.mean(axis=(1, 2, 4), keepdims=True)
        v = g.var(axis=(1, 2, 4), keepdims=True)
        return ((g - m) * jax.lax.rsqrt(v + 1e-5)).reshape(x.shape)

    spd = f32(128, 128)
    spd = spd @ spd.T + 128 * np.eye(128, dtype=np.float32)
    ids = r.randint(0, 30000, size=(64, 128)).astype(np.int32)
    return {
        'attention causal b8 h8 s256 d64': (attention, [f32(8, 8, 256, 64)] * 1 +
                                            [f32(8, 8, 256, 64), f32(8, 8, 256, 64)]),
        'conv3x3 b8 32x32 32->64': (conv, [f32(8, 32, 32, 32), f32(3, 3, 32, 64)]),
        'depthwise3x3 b8 56x56x64': (depthwise, [f32(8, 56, 56, 64), f32(3, 3, 1, 64)]),
        'max_pool 2x2 b8 64x64x32': (
            lambda x: jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 2, 2, 1),
                                            (1, 2, 2, 1), 'VALID'), [f32(8, 64, 64, 32)]),
        'avg_pool 3x3/1 b8 32x32x64': (
            lambda x: jax.lax.reduce_window(x, 0., jax.lax.add, (1, 3, 3, 1),
                                            (1, 1, 1, 1), 'SAME') / 9, [f32(8, 32, 32, 64)]),
        'batchnorm train b32 28x28x64': (batchnorm, [f32(32, 28, 28, 64), f32(64), f32(64)]),
        'log_softmax f32[4096,1000]': (lambda x: jax.nn.log_softmax(x), [f32(4096, 1000)]),
        'logsumexp columns f32[1000,4096]': (
            lambda x: jax.scipy.special.logsumexp(x, axis=0), [f32(1000, 4096)]),
        'gelu exact f32[2^22]': (lambda x: jax.nn.gelu(x, approximate=False),
                                 [f32(1 << 22)]),
        'cross-entropy b4096 x1000': (xent, [f32(4096, 1000),
                                             r.randint(0, 1000, 4096).astype(np.int32)]),
        'embedding take 30000x256': (lambda t, i: jnp.take(t, i, axis=0),
                                     [f32(30000, 256), ids]),
        'batched matmul 64x128x128x128': (lambda a, b: a @ b, [f32(64, 128, 128),
                                                              f32(64, 128, 128)]),
        'transpose+add f32[2048,2048]': (lambda x: x.T + x, [f32(2048, 2048)]),
        'pixel shuffle b8 64x64x64': (
            lambda x: x.reshape(8, 64, 64, 16, 2, 2).transpose(0, 1, 4, 2, 5, 3)
            .reshape(8, 128, 128, 16), [f32(8, 64, 64, 64)]),
        'laplacian stencil f32[2048,2048]': (laplacian, [f32(2048, 2048)]),
        'l2 normalize rows f32[8192,512]': (
            lambda x: x / jnp.linalg.norm(x, axis=1, keepdims=True), [f32(8192, 512)]),
        'random normal 2^20 (threefry)': (
            lambda k: jax.random.normal(jax.random.wrap_key_data(k), (1 << 20,)),
            [np.array([0, 42], np.uint32)]),
        'rnn scan 100 steps b32 128': (rnn, [f32(100, 32, 128), f32(128, 128) * 0.1,
                                             f32(128, 128) * 0.1]),
        'fori dynamic-update-slice 256 rows': (
            lambda x: jax.lax.fori_loop(0, 256, lambda i, a: a.at[i].set(a[i - 1] * 0.5 + 1),
                                        x), [f32(256, 1024)]),
        'fori small state 2000 steps f32[64]': (
            lambda x: jax.lax.fori_loop(0, 2000, lambda i, a: a * 0.999 + jnp.sin(a) * 1e-3,
                                        x), [f32(64)]),
        'layernorm grad f32[4096,768]': (layernorm_grad, [f32(4096, 768), f32(768)]),
        'int32 hash mix 2^22': (
            lambda x: ((x * 1103515245 + 12345) ^ (x >> 7)) % 1000,
            [r.randint(0, 1 << 30, 1 << 22).astype(np.int32)]),
        'mean over axis 0 f32[8192,1024]': (lambda x: x.mean(axis=0), [f32(8192, 1024)]),
        'median rows f32[512,4096]': (lambda x: jnp.median(x, axis=1), [f32(512, 4096)]),
        'bf16 matmul 1024^3': (lambda a, b: (a.astype(jnp.bfloat16) @ b.astype(jnp.bfloat16))
                               .astype(jnp.float32), [f32(1024, 1024), f32(1024, 1024)]),
        'cholesky 256 SPD': (lambda a: jnp.linalg.cholesky(a @ a.T + 256 * jnp.eye(256)),
                             [f32(256, 256)]),
        'conv net grad b16 32x32x16': (conv_net_grad, [f32(16, 32, 32, 16), f32(3, 3, 16, 32),
                                                        f32(3, 3, 32, 32)]),
        'sin/cos positions 4096x256': (positional, [np.arange(4096, dtype=np.float32)]),
        'dropout 0.1 f32[2^20]': (dropout, [np.array([0, 7], np.uint32), f32(1 << 20)]),
        'vmap matvec 512x256x256': (jax.vmap(lambda m, v: m @ v), [f32(512, 256, 256),
                                                                   f32(512, 256)]),
        'associative_scan cumsum 2^20': (lambda x: jax.lax.associative_scan(jnp.add, x),
                                         [f32(1 << 20)]),
        'int8 quantize f32[2048,1024]': (
            lambda x: jnp.clip(jnp.round(x / (jnp.max(jnp.abs(x)) / 127)), -127, 127)
            .astype(jnp.int8), [f32(2048, 1024)]),
        'solve 128 SPD, 16 rhs': (lambda a, b: jnp.linalg.solve(a, b), [spd, f32(128, 16)]),
        'inv 128 SPD': (lambda a: jnp.linalg.inv(a), [spd]),
        'qr 256x128': (lambda a: jnp.linalg.qr(a)[1], [f32(256, 128)]),
        'svd values 128x64': (lambda a: jnp.linalg.svd(a, compute_uv=False), [f32(128, 64)]),
        'segment_sum 2^16 into 1000': (
            lambda d, s: jax.ops.segment_sum(d, s, num_segments=1000),
            [f32(1 << 16, 32), r.randint(0, 1000, 1 << 16).astype(np.int32)]),
        'embedding grad 30000x256, 8192 ids': (
            lambda i, g: jax.vjp(lambda t: jnp.take(t, i, axis=0),
                                 jnp.zeros((30000, 256), jnp.float32))[1](g)[0],
            [ids, f32(64, 128, 256)]),
        'gather rows x[idx] 2^14 of 4096x64': (lambda t, i: t[i], [f32(4096, 64),
                                                                  r.randint(0, 4096, 1 << 14)
                                                                  .astype(np.int32)]),
        'fft rows f32[256,1024]': (lambda x: jnp.abs(jnp.fft.rfft(x, axis=1)),
                                   [f32(256, 1024)]),
        'max_pool grad b8 64x64x32': (jax.grad(lambda x: jnp.sum(max_pool(x) ** 2)),
                                      [f32(8, 64, 64, 32)]),
        'top_k 8 of f32[1024,1000]': (lambda x: jax.lax.top_k(x, 8), [f32(1024, 1000)]),
        'argsort rows f32[256,1024]': (lambda x: jnp.argsort(x, axis=1), [f32(256, 1024)]),
        'cumsum rows f32[1024,1024]': (lambda x: jnp.cumsum(x, axis=1), [f32(1024, 1024)]),
        'argmax rows f32[4096,1000]': (lambda x: jnp.argmax(x, axis=1), [f32(4096, 1000)]),
        'adam update 2^22 params': (adam, [f32(1 << 22), f32(1 << 22), f32(1 << 22),
                                           np.abs(f32(1 << 22))]),
        'attention grad b16 s256 d64': (attention_grad, [f32(16, 256, 64), f32(16, 256, 64),
                                                         f32(16, 256, 64)]),
        'conv_transpose s2 b8 16x16 64->32': (
            lambda x, w: jax.lax.conv_transpose(x, w, (2, 2), 'SAME',
                                                dimension_numbers=('NHWC', 'HWIO', 'NHWC')),
            [f32(8, 16, 16, 64), f32(3, 3, 64, 32)]),
        'take_along_axis f32[1024,1024]': (
            lambda x, i: jnp.take_along_axis(x, i, axis=1),
            [f32(1024, 1024), r.randint(0, 1024, (1024, 1024)).astype(np.int32)]),
        'bincount 2^20 into 4096': (lambda i: jnp.bincount(i, length=4096),
                                    [r.randint(0, 4096, 1 << 20).astype(np.int32)]),
        'group norm b8 32x32x256 g8': (group_norm, [f32(8, 32, 32, 256)]),
        'mean over axis 1 f32[64,512,256]': (lambda x: x.mean(axis=1), [f32(64, 512, 256)]),
        'roll+flip f32[2048,2048]': (lambda x: jnp.roll(x, 7, axis=1)[::-1] + x,
                                     [f32(2048, 2048)]),
    }


def run_one(name, f, inputs, kiln, threads, folder, tol=2e-3):
    import jax
    with open(os.path.join(folder, 'module.hlo'), 'w') as out:
        out.write(jax.jit(f).lower(*inputs).as_text(dialect='hlo'))
    paths = []
    for i, a in enumerate(inputs):
        paths.append(os.path.join(folder, f'in{i}.npy'))
        np.save(paths[-1], a)
    k = kiln_benchmark(kiln, os.path.join(folder, 'module.hlo'), 'cpu-llvm', OPTS.runs, paths,
                       output_dir=os.path.join(folder, 'kiln'), timeout=OPTS.timeout)
    x = xla_peer.run_child(folder, OPTS.runs, threads)
    check = 'n/a'
    if isinstance(k, dict) and isinstance(x, dict):
        check, i = 'ok', 0
        while os.path.exists(os.path.join(folder, f'xla_out{i}.npy')):
            want = np.load(os.path.join(folder, f'xla_out{i}.npy'))
            if want.dtype == np.dtype('V2'):  # NumPy saves bfloat16 as raw bytes
                import ml_dtypes
                want = want.view(ml_dtypes.bfloat16)
            got = np.load(os.path.join(folder, 'kiln', f'output_{i}.npy'))
            # Complex outputs compare as complex (a float cast drops the imaginary part).
            wide = np.complex128 if np.iscomplexobj(want) else np.float64
            # NaN where XLA has NaN agrees (a NaN in `want` made the scale, and the check, NaN).
            finite = np.abs(want.astype(wide))[np.isfinite(want.astype(wide))]
            scale = max(1.0, float(np.max(finite)) if finite.size else 1)
            if got.shape != want.shape:
                check = f'DIFFERENT (output {i}: shape {got.shape}, xla {want.shape})'
            elif np.issubdtype(want.dtype, np.integer) and not np.array_equal(got, want):
                # Rounding a quotient: XLA:CPU divides by multiplying by the reciprocal, so
                # x / d that is exactly k + 0.5 may land on the other side.
                off = np.abs(got.astype(np.int64) - want.astype(np.int64))
                check = (f'{np.count_nonzero(off)} of {off.size} off by 1 (output {i})'
                         if off.max() <= 1 else f'DIFFERENT (output {i})')
            elif not np.allclose(got.astype(wide), want.astype(wide), rtol=tol,
                                 atol=tol * scale, equal_nan=True):
                check = f'DIFFERENT (output {i})'
            i += 1
    return k, x, check


def main(programs=programs):
    why = xla_peer.available()
    if why:
        sys.exit(f'MISSING: {why}')
    kiln = os.path.join(OPTS.build, 'tools', 'kiln')
    threads = int(os.environ.get('KILN_CPU_THREADS', len(os.sched_getaffinity(0))))
    print(f'median of {OPTS.runs} runs, cpu-llvm threads '
          f'{os.environ.get("KILN_CPU_THREADS", "all")}, XLA:CPU pinned to as many cores')
    rows = []
    for name, (f, inputs, *tol) in programs().items():
        if OPTS.only not in name:
            continue
        tol = tol[0] if tol else 2e-3  # a program may give its own tolerance
        if OPTS.save_hlo:
            folder = os.path.join(OPTS.save_hlo, name.split()[0] + '_' + str(len(rows)))
            os.makedirs(folder, exist_ok=True)
            k, x, check = run_one(name, f, inputs, kiln, threads, folder, tol)
        else:
            with tempfile.TemporaryDirectory() as folder:
                k, x, check = run_one(name, f, inputs, kiln, threads, folder, tol)
        rows.append((name, k, x, check))
        kt = f"{k['median_ms']:.2f}" if isinstance(k, dict) else k
        xt = f"{x['median_ms']:.2f}" if isinstance(x, dict) else x
        print(f'  {name}: kiln {kt} ms, xla {xt} ms, {check}', flush=True)
    print()
    print('| program | kiln ms | xla ms | xla/kiln | kiln compile ms | xla compile ms | check |')
    print('|---|---|---|---|---|---|---|')
    for name, k, x, check in rows:
        def ms(r, key):
            return f'{r[key]:.2f}' if isinstance(r, dict) else str(r)
        ratio = (f"{x['median_ms'] / k['median_ms']:.2f}"
                 if isinstance(k, dict) and isinstance(x, dict) else '-')
        print(f"| {name} | {ms(k, 'median_ms')} | {ms(x, 'median_ms')} | {ratio} | "
              f"{ms(k, 'compile_ms')} | {ms(x, 'compile_ms')} | {check} |")


if __name__ == '__main__':
    main()
