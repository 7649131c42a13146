#!/usr/bin/env python3
"""Benchmark (not a test) of issue #12's real models: each is written in JAX, lowered once to
HLO text (jax.jit(f).lower(...).as_text(dialect='hlo')), and that same text is run by Kiln
(`kiln run --benchmark`, cpu-llvm) and by XLA:CPU (benchmarks/xla_peer.py) on the same .npy
inputs and thread count; outputs are cross-checked. Prints time per run and compile time side
by side, and can keep the lowered modules (--save-hlo DIR).

Models: a 4-layer BERT encoder (hidden 256, 4 heads, seq 128, batch 8), a GPT-2 block
(hidden 768, 12 heads, causal, seq 256), a small ResNet forward (CIFAR ResNet-8 style, 16/32/64
channels, batch 8, inference batch norm), and an MNIST MLP training step (784-512-512-10,
batch 128, cross-entropy, SGD).

Usage: .venv-peers/bin/python benchmarks/jax_models.py [--build DIR] [--threads T] [--runs N]
           [--only NAME] [--save-hlo DIR]
JAX comes from benchmarks/install_peers.sh."""
import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--threads', type=int, default=os.cpu_count() or 1)
ARGS.add_argument('--runs', type=int, default=10)
ARGS.add_argument('--only', help='run only the model whose name contains this')
ARGS.add_argument('--save-hlo', metavar='DIR', help='also write each lowered module here')
OPTS = ARGS.parse_args()

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import xla_peer  # noqa: E402
from timing import kiln_benchmark  # noqa: E402

KILN = os.path.join(OPTS.build, 'tools', 'kiln')
rng = np.random.default_rng(12)


def f32(*shape, scale=1.0):
    return rng.normal(0, scale, size=shape).astype(np.float32)


def layer_norm(x, g, b):
    import jax.numpy as jnp
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jnp.reciprocal(jnp.sqrt(v + 1e-5)) * g + b


def attention(x, wqkv, wo, heads, causal):
    import jax
    import jax.numpy as jnp
    b, s, d = x.shape
    q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
    split = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads).astype(np.float32)
    if causal:
        logits = jnp.where(jnp.tril(jnp.ones((s, s), bool)), logits, -1e9)
    o = jax.nn.softmax(logits, axis=-1) @ v
    return o.transpose(0, 2, 1, 3).reshape(b, s, d) @ wo


def bert(layers=4, d=256, heads=4, ffn=1024, seq=128, batch=8):
    import jax
    params = []
    for _ in range(layers):
        params += [f32(d, 3 * d, scale=0.05), f32(d, d, scale=0.05), np.ones(d, np.float32),
                   np.zeros(d, np.float32), f32(d, ffn, scale=0.05), f32(ffn),
                   f32(ffn, d, scale=0.05), f32(d), np.ones(d, np.float32),
                   np.zeros(d, np.float32)]

    def fn(x, *p):
        for i in range(layers):
            wqkv, wo, g1, b1, w1, c1, w2, c2, g2, b2 = p[10 * i:10 * i + 10]
            x = layer_norm(x + attention(x, wqkv, wo, heads, False), g1, b1)
            x = layer_norm(x + jax.nn.gelu(x @ w1 + c1, approximate=False) @ w2 + c2, g2, b2)
        return x
    return fn, [f32(batch, seq, d)] + params


def gpt2_block(d=768, heads=12, seq=256, batch=1):
    import jax

    def fn(x, g1, b1, wqkv, wo, g2, b2, w1, c1, w2, c2):
        x = x + attention(layer_norm(x, g1, b1), wqkv, wo, heads, True)
        return x + jax.nn.gelu(layer_norm(x, g2, b2) @ w1 + c1, approximate=True) @ w2 + c2
    ones, zeros = np.ones(d, np.float32), np.zeros(d, np.float32)
    return fn, [f32(batch, seq, d), ones, zeros, f32(d, 3 * d, scale=0.02), f32(d, d, scale=0.02),
                ones, zeros, f32(d, 4 * d, scale=0.02), f32(4 * d, scale=0.02),
                f32(4 * d, d, scale=0.02), f32(d, scale=0.02)]


def resnet(batch=8, widths=(16, 32, 64), classes=10):
    import jax
    import jax.numpy as jnp

    def conv(x, w, stride=1):
        return jax.lax.conv_general_dilated(x, w, (stride, stride), 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'))

    def bn_relu(x, scale, shift, relu=True):
        y = x * scale + shift
        return jnp.maximum(y, 0) if relu else y

    params = [f32(3, 3, 3, widths[0], scale=0.2), np.ones(widths[0], np.float32),
              f32(widths[0], scale=0.1)]
    cin = widths[0]
    for w in widths:  # one basic block per stage; stages after the first halve the size
        params += [f32(3, 3, cin, w, scale=(2 / (9 * cin)) ** 0.5), np.ones(w, np.float32),
                   f32(w, scale=0.1), f32(3, 3, w, w, scale=(2 / (9 * w)) ** 0.5),
                   np.ones(w, np.float32), f32(w, scale=0.1), f32(1, 1, cin, w, scale=0.2)]
        cin = w
    params += [f32(cin, classes, scale=0.1), f32(classes)]

    def fn(x, *p):
        y = bn_relu(conv(x, p[0]), p[1], p[2])
        for i, w in enumerate(widths):
            c1, s1, t1, c2, s2, t2, proj = p[3 + 7 * i:10 + 7 * i]
            stride = 1 if i == 0 else 2
            h = bn_relu(conv(y, c1, stride), s1, t1)
            h = bn_relu(conv(h, c2), s2, t2, relu=False)
            y = jnp.maximum(h + conv(y, proj, stride), 0)
        return jax.nn.log_softmax(y.mean((1, 2)) @ p[-2] + p[-1])
    return fn, [f32(batch, 32, 32, 3)] + params


def resnet_step(batch=8, lr=0.01):
    """The ResNet-8 above trained one SGD step: its convolutions' gradients are convolutions
    too (by the input: lhs-dilated; by the kernel: windows as large as the output)."""
    import jax
    import jax.numpy as jnp
    forward, inputs = resnet(batch)

    def loss(p, x, labels):
        return -jnp.mean(jnp.take_along_axis(forward(x, *p), labels[:, None], 1))

    def fn(x, labels, *p):
        value, grads = jax.value_and_grad(loss)(list(p), x, labels)
        return (value,) + tuple(w - lr * g for w, g in zip(p, grads))
    labels = rng.integers(0, 10, size=batch).astype(np.int32)
    return fn, [inputs[0], labels] + inputs[1:]


def mnist_step(batch=128, sizes=(784, 512, 512, 10), lr=0.05):
    import jax
    import jax.numpy as jnp
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [f32(a, b, scale=(2 / a) ** 0.5), np.zeros(b, np.float32)]

    def loss(p, x, labels):
        h = x
        for i in range(0, len(p) - 2, 2):
            h = jax.nn.relu(h @ p[i] + p[i + 1])
        logits = h @ p[-2] + p[-1]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1))

    def fn(x, labels, *p):
        value, grads = jax.value_and_grad(loss)(list(p), x, labels)
        return (value,) + tuple(w - lr * g for w, g in zip(p, grads))
    labels = rng.integers(0, sizes[-1], size=batch).astype(np.int32)
    return fn, [f32(batch, sizes[0]), labels] + params


MODELS = (('BERT encoder 4x256 s128 b8', bert), ('GPT-2 block 768 s256', gpt2_block),
          ('ResNet-8 forward 32x32 b8', resnet), ('ResNet-8 train step b8', resnet_step),
          ('MNIST MLP train step b128', mnist_step))


def lower(fn, inputs):
    import jax
    return jax.jit(fn).lower(*inputs).as_text(dialect='hlo')


def kiln_run(folder, n_inputs):
    r = kiln_benchmark(KILN, os.path.join(folder, 'module.hlo'), 'cpu-llvm', OPTS.runs,
                       [os.path.join(folder, f'in{i}.npy') for i in range(n_inputs)],
                       os.path.join(folder, 'kiln'),
                       dict(os.environ, KILN_CPU_THREADS=str(OPTS.threads)))
    return r if isinstance(r, dict) else r[:78]


def main():
    import jax
    print(f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, threads={OPTS.threads}, '
          f'runs={OPTS.runs}, jax {jax.__version__}, load average {os.getloadavg()[0]:.1f} on '
          f'{os.cpu_count()} cores')
    cols = ['model', 'instrs', 'kiln ms', 'xla ms', 'xla/kiln', 'kiln compile', 'xla compile',
            'max|kiln-xla|']
    widths = [28, 6, 8, 8, 8, 12, 11, 13]
    print('| ' + ' | '.join(c.ljust(w) for c, w in zip(cols, widths)) + ' |')
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for name, make in MODELS:
        if OPTS.only and OPTS.only.lower() not in name.lower():
            continue
        fn, inputs = make()
        text = lower(fn, inputs)
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, 'module.hlo'), 'w') as f:
                f.write(text)
            if OPTS.save_hlo:
                os.makedirs(OPTS.save_hlo, exist_ok=True)
                slug = name.split()[0].lower().replace('-', '')
                slug += '_step' if make is resnet_step else ''
                with open(os.path.join(OPTS.save_hlo, f'{slug}.hlo'), 'w') as f:
                    f.write(f'// Lowered from JAX by benchmarks/jax_models.py --save-hlo (jax '
                            f'{jax.__version__}): see that file\'s {slug} model.\n' + text)
            for i, a in enumerate(inputs):
                np.save(os.path.join(tmp, f'in{i}.npy'), a)
            k = kiln_run(tmp, len(inputs))
            x = xla_peer.run_child(tmp, OPTS.runs, OPTS.threads)
            diff = '-'
            if isinstance(k, dict) and isinstance(x, dict):
                i, worst = 0, 0.0
                while os.path.exists(os.path.join(tmp, f'xla_out{i}.npy')):
                    a = np.load(os.path.join(tmp, 'kiln', f'output_{i}.npy'))
                    b = np.load(os.path.join(tmp, f'xla_out{i}.npy'))
                    worst = max(worst, float(np.abs(a.astype(np.float64) - b).max()))
                    i += 1
                diff = f'{worst:.1e}'
        instrs = sum(1 for line in text.splitlines() if ' = ' in line)
        kms = k['median_ms'] if isinstance(k, dict) else k
        xms = x['median_ms'] if isinstance(x, dict) else x
        row = [name, str(instrs), f'{kms:.2f}' if isinstance(kms, float) else kms,
               f'{xms:.2f}' if isinstance(xms, float) else xms,
               f'{xms / kms:.2f}' if isinstance(kms, float) and isinstance(xms, float) else '-',
               f'{k["compile_ms"]:.0f} ms' if isinstance(k, dict) else '-',
               f'{x["compile_ms"]:.0f} ms' if isinstance(x, dict) else '-', diff]
        print('| ' + ' | '.join(c.ljust(w) for c, w in zip(row, widths)) + ' |', flush=True)
    print('Same HLO text on both; kiln: kiln run --benchmark (cpu-llvm, KILN_CPU_THREADS=T); '
          'xla: XLA:CPU through jaxlib (xla_peer.py), pinned to T cores; compile: cold, in the '
          'process (kiln: compile_ms of kiln run, object cache as configured).')


if __name__ == '__main__':
    main()
