#!/usr/bin/env python3
"""Benchmark (not a test) of Kiln issue #6: gpu-nvptx on large memory-bound workloads against
XLA:GPU (jax.jit) and the device's copy bandwidth, all measured in the same run.

Workloads (HLO text from workload_hlo.py, shared with cpu_workloads.py): sum(x+y*z) over
3 x f32[2^28], softmax f32[65536,1024], layernorm+GELU f32[65536,768], an MLP 784-512-10
training step at batch 4096. Each is timed with `kiln run --benchmark`, its output checked
against JAX's (NumPy's without JAX), and its bytes moved turned into GB/s and compared with a
device-to-device copy (ctypes on libcuda.so.1, read + write counted).

Usage, from the repository root after building:
    python3 benchmarks/gpu_workloads.py [--runs N] [--only sum,softmax,layernorm,mlp]
Smoke test without a GPU:
    python3 benchmarks/gpu_workloads.py --device cpu-llvm --small
What is missing (JAX, a CUDA driver, the gpu-nvptx plugin) is reported, the rest still runs."""
import argparse
import ctypes
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

import workload_hlo
from timing import kiln_benchmark, median_ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--device', default='gpu-nvptx', help='kiln device (cpu-llvm for a smoke test)')
ARGS.add_argument('--runs', type=int, default=20, help='timed runs per measurement (median)')
ARGS.add_argument('--scale', type=float, help='multiplies the large dimension of each workload')
ARGS.add_argument('--small', action='store_true',
                  help='smoke test: --scale 1/64 and a 16 MiB copy buffer unless given')
ARGS.add_argument('--copy-mib', type=int, help='copy bandwidth buffer (default 1024 MiB)')
ARGS.add_argument('--only', help='comma-separated subset of: ' + 'sum,softmax,layernorm,mlp')
ARGS.add_argument('--timeout', type=float, default=300, help='seconds per kiln process')
ARGS.add_argument('--budget', type=float, default=30,
                  help='seconds of timed kiln runs per workload: fewer than --runs if one is slow')
ARGS.add_argument('--jax-precision', default='highest',
                  help="jax_default_matmul_precision: 'highest' is full f32, as cuBLAS SGEMM")
ARGS.add_argument('--copy-worker', type=int, metavar='MIB', help=argparse.SUPPRESS)
OPTS = ARGS.parse_args()
SCALE = OPTS.scale or (1 / 64 if OPTS.small else 1.0)
COPY_MIB = OPTS.copy_mib or (16 if OPTS.small else 1024)
KILN = os.path.join(OPTS.build, 'tools', 'kiln')
NO_DRIVER_RC = 3  # the copy worker's exit status when libcuda.so.1 cannot be loaded

# JAX grabs 75% of GPU memory at its first use by default, which would leave the kiln
# processes started after it too little; growing on demand is enough for these sizes.
os.environ.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')


# ---- device-to-device copy bandwidth through the CUDA driver (child process) ----

def copy_worker(mib):
    """Child process: prints `name=<device>` and `gbps=<float>` for cuMemcpyDtoDAsync of `mib`
    MiB on device 0, counting read + write. A child, so that a driver problem (or a bad ctypes
    signature) cannot take the benchmark down, and its memory is gone when it exits."""
    try:
        cuda = ctypes.CDLL('libcuda.so.1')
    except OSError as e:
        print(f'libcuda.so.1 not loadable: {e}', file=sys.stderr)
        sys.exit(NO_DRIVER_RC)
    u64, vp = ctypes.c_uint64, ctypes.c_void_p
    # Every argument type is declared: ctypes would otherwise pass 64-bit device pointers and
    # sizes as 32-bit ints.
    sigs = {'cuInit': [ctypes.c_uint],
            'cuDeviceGet': [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
            'cuDeviceGetName': [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
            'cuDevicePrimaryCtxRetain': [ctypes.POINTER(vp), ctypes.c_int],
            'cuCtxSetCurrent': [vp],
            'cuMemAlloc_v2': [ctypes.POINTER(u64), ctypes.c_size_t],
            'cuMemsetD8_v2': [u64, ctypes.c_ubyte, ctypes.c_size_t],
            'cuMemcpyDtoDAsync_v2': [u64, u64, ctypes.c_size_t, vp],
            'cuCtxSynchronize': [],
            'cuGetErrorName': [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]}
    for name, argtypes in sigs.items():
        getattr(cuda, name).argtypes = argtypes
        getattr(cuda, name).restype = ctypes.c_int

    def check(name, *args):
        rc = getattr(cuda, name)(*args)
        if rc != 0:
            err = ctypes.c_char_p()
            cuda.cuGetErrorName(rc, ctypes.byref(err))
            sys.exit(f'{name}: {(err.value or b"error %d" % rc).decode()}')

    dev, ctx = ctypes.c_int(), vp()
    check('cuInit', 0)
    check('cuDeviceGet', ctypes.byref(dev), 0)
    name = ctypes.create_string_buffer(256)
    check('cuDeviceGetName', name, 256, dev)
    check('cuDevicePrimaryCtxRetain', ctypes.byref(ctx), dev)  # the context JAX and kiln use
    check('cuCtxSetCurrent', ctx)
    size = mib << 20
    src, dst = u64(), u64()
    check('cuMemAlloc_v2', ctypes.byref(src), size)
    check('cuMemAlloc_v2', ctypes.byref(dst), size)
    check('cuMemsetD8_v2', src, 1, size)
    # Copies queue on the default stream; a batch is timed from the host around a context
    # synchronize (launch cost is microseconds against a copy of ~1 ms), best batch kept.
    best = float('inf')
    for batch in range(6):
        check('cuCtxSynchronize')
        t0 = time.perf_counter()
        for _ in range(10):
            check('cuMemcpyDtoDAsync_v2', dst, src, size, None)
        check('cuCtxSynchronize')
        if batch:  # the first batch is a warm-up
            best = min(best, (time.perf_counter() - t0) / 10)
    print(f'name={name.value.decode()}')
    print(f'gbps={2 * size / best / 1e9}')
    # The process exit releases the memory and the context.


def copy_bandwidth():
    """(GB/s, device name) from a copy worker, or a (short reason, detail) pair of strings."""
    try:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), '--copy-worker',
                              str(COPY_MIB)], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return 'copy timed out', 'the copy worker ran over 300 s'
    detail = (out.stderr.strip().splitlines() or [f'exit status {out.returncode}'])[-1]
    if out.returncode == NO_DRIVER_RC:
        return 'no CUDA driver', detail
    if out.returncode != 0:
        return 'CUDA error', detail
    fields = dict(line.split('=', 1) for line in out.stdout.strip().splitlines())
    return float(fields['gbps']), fields['name']


# ---- JAX (optional) ----

jax = jnp = None


def load_jax():
    """Imports JAX; returns None, or (short reason, detail) when it cannot be used."""
    global jax, jnp
    if importlib.util.find_spec('jax') is None:
        return 'no JAX', 'the jax module is not installed'
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update('jax_default_matmul_precision', OPTS.jax_precision)
        jax.devices()
    except Exception as e:  # a broken install must not stop the kiln measurements
        return 'JAX failed', f'{type(e).__name__}: {e}'
    return None


def leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def jax_sync(out):
    for leaf in leaves(out):
        leaf.block_until_ready()
    return out


def jax_run(fn, inputs):
    """jax.jit of fn(jnp, ...) on the inputs already on the device: (median ms, outputs)."""
    args = [jax.device_put(a) for a in inputs]
    f = jax.jit(lambda *a: fn(jnp, *a))
    out = jax_sync(f(*args))  # compiles; median_ms warms up once more
    ms = median_ms(lambda: jax_sync(f(*args)), OPTS.runs)
    return ms, [np.asarray(o) for o in leaves(out)]


def jax_copy_gbps():
    # x*2, not x*1: XLA may fold x*1 to the parameter itself; x*2 moves the same bytes.
    x = jnp.ones(COPY_MIB << 18, jnp.float32)
    f = jax.jit(lambda x: x * 2)

    def ten():  # queued back to back, one wait at the end: device time, not dispatch
        for _ in range(10):
            y = f(x)
        y.block_until_ready()
    return 2 * x.nbytes / (median_ms(ten, 5) / 10) / 1e6


rng = np.random.default_rng(6)


def f32(*shape, scale=1.0):
    a = rng.random(shape, dtype=np.float32)  # in place: the sum's inputs are 1 GiB each
    a *= 2 * scale
    a -= scale
    return a


class Workload:
    """One row. fn(xp, *inputs) is the same math for xp = numpy (the reference without JAX)
    and xp = jax.numpy; `bytes` is the least traffic (inputs read once, outputs written once);
    tol = (rtol, atol) for np.allclose against the reference."""

    def __init__(self, key, name, hlo, inputs, fn, out_bytes, tol, flops=0):
        self.key, self.name, self.hlo, self.inputs, self.fn = key, name, hlo, inputs, fn
        self.bytes = sum(a.nbytes for a in inputs) + out_bytes
        self.tol, self.flops = tol, flops


def pow2(n):
    return f'2^{n.bit_length() - 1}' if n & (n - 1) == 0 else str(n)


def sum_xyz():
    n = max(1, int((1 << 28) * SCALE))
    # A float sum's error grows with its length whatever the order: 1e-7 * n is several times
    # what even a plain sequential f32 sum of these terms drifts (~sqrt(n) roundings of ~1e-3
    # near the running total ~1e4), while dropping or doubling 10^4 elements moves it ~70.
    return Workload('sum', f'sum(x+y*z) 3xf32[{pow2(n)}]', workload_hlo.sum_xyz(n),
                    [f32(n) for _ in range(3)], lambda xp, x, y, z: (x + y * z).sum(), 4,
                    (1e-5, 1e-7 * n))


def softmax_fn(xp, x):
    e = xp.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def softmax():
    r, c = max(1, int(65536 * SCALE)), 1024
    return Workload('softmax', f'softmax f32[{r},{c}]', workload_hlo.softmax(r, c),
                    [f32(r, c, scale=4)], softmax_fn, 4 * r * c, (1e-4, 1e-6))


def layernorm_gelu_fn(xp, x):
    xc = x - x.mean(1, keepdims=True)
    y = xc * (1 / xp.sqrt((xc * xc).mean(1, keepdims=True) + 1e-5))  # rsqrt per row, as the HLO
    return 0.5 * y * (1 + xp.tanh(0.797884583 * (y + 0.044715 * y * y * y)))


def layernorm_gelu():
    r, c = max(1, int(65536 * SCALE)), 768
    return Workload('layernorm', f'layernorm+gelu f32[{r},{c}]', workload_hlo.layernorm_gelu(r, c),
                    [f32(r, c, scale=3)], layernorm_gelu_fn, 4 * r * c, (1e-4, 1e-5))


def mlp_train_step(d_in=784, hidden=512, classes=10, lr=0.1):
    batch = max(1, int(4096 * SCALE))

    def fn(xp, *args):
        return workload_hlo.mlp_train_step_reference(xp, lr, *args)
    xs = [f32(batch, d_in), rng.integers(0, classes, size=batch).astype(np.int32),
          f32(d_in, hidden, scale=0.05), f32(hidden, scale=0.1), f32(hidden, classes, scale=0.1),
          f32(classes, scale=0.1)]
    flops = 2 * batch * d_in * hidden * 2 + 2 * batch * hidden * classes * 3
    return Workload('mlp', f'MLP {d_in}-{hidden}-{classes} train step b{batch}',
                    workload_hlo.mlp_train_step(batch, d_in, hidden, classes, lr), xs, fn,
                    sum(a.nbytes for a in xs[2:]) + 4, (1e-3, 1e-4), flops)


# The MLP step is dot-bound (flops > 0): the copy-bandwidth goal applies to the others.
WORKLOADS = {'sum': sum_xyz, 'softmax': softmax, 'layernorm': layernorm_gelu,
             'mlp': mlp_train_step}
BW_GOAL, XLA_GOAL = 0.85, 1 / 1.1


# ---- kiln ----

def kiln_device():
    """(available, `kiln devices` line for OPTS.device)."""
    out = subprocess.run([KILN, 'devices'], capture_output=True, text=True, timeout=120)
    for line in out.stdout.splitlines():
        f = line.split(None, 3)
        if len(f) >= 3 and f[0] == OPTS.device:
            return f[2] == 'available', ' '.join(f)
    return False, f'{OPTS.device}: not listed by `kiln devices`'


def kiln_run(hlo_path, input_paths, runs, output_dir=None):
    """`kiln run --benchmark` on OPTS.device: returns median_ms, or a reason string."""
    r = kiln_benchmark(KILN, hlo_path, OPTS.device, runs, input_paths, output_dir,
                       timeout=OPTS.timeout)
    return r['median_ms'] if isinstance(r, dict) else r


def kiln_measure(w, tmp):
    """(median ms or reason, runs, outputs or None). One run first (it also writes the
    outputs), then as many as --runs that fit in --budget seconds."""
    path = os.path.join(tmp, f'{w.key}.hlo')
    with open(path, 'w') as f:
        f.write(w.hlo)
    inputs = []
    for i, a in enumerate(w.inputs):
        inputs.append(os.path.join(tmp, f'{w.key}_in{i}.npy'))
        np.save(inputs[-1], a)
    out_dir = os.path.join(tmp, f'{w.key}_out')
    ms = kiln_run(path, inputs, 1, out_dir)
    if not isinstance(ms, float):
        return ms, 0, None
    outputs, i = [], 0
    while os.path.exists(os.path.join(out_dir, f'output_{i}.npy')):
        outputs.append(np.load(os.path.join(out_dir, f'output_{i}.npy')))
        i += 1
    runs = max(1, min(OPTS.runs, int(OPTS.budget * 1e3 / max(ms, 1e-3))))
    if runs > 1:
        ms = kiln_run(path, inputs, runs)
    for p in inputs:
        os.remove(p)  # the sum's inputs are 3 GiB
    return ms, runs, outputs


def compare(got, want, tol):
    """('ok' | 'MISMATCH', max abs difference) over the output leaves."""
    if len(got) != len(want):
        return f'MISMATCH ({len(got)} outputs, want {len(want)})', '-'
    ok, err = True, 0.0
    for g, v in zip(got, want):
        v = np.asarray(v, dtype=g.dtype)
        if g.shape != v.shape:
            return f'MISMATCH (shape {g.shape}, want {v.shape})', '-'
        ok = ok and bool(np.allclose(g, v, rtol=tol[0], atol=tol[1]))
        err = max(err, float(np.max(np.abs(g - v))) if g.size else 0.0)
    return 'ok' if ok else 'MISMATCH', f'{err:.1e}'


# ---- the table ----

def fmt(v, digits=2):
    return f'{v:.{digits}f}' if isinstance(v, float) else v


def ratio(a, b):
    return f'{a / b:.2f}' if isinstance(a, float) and isinstance(b, float) else '-'


def gbps(v):
    return fmt(v, 0 if v >= 10 else 1) if isinstance(v, float) else v


def na(reason):
    return f'n/a ({reason})'


class Result:
    """One workload's measurements: kms, jms and copy are floats, or the reason they are
    missing; the inputs are dropped once measured."""

    def __init__(self, w, kms, jms, check, err):
        self.name, self.bytes, self.flops = w.name, w.bytes, w.flops
        self.kms, self.jms, self.check, self.err = kms, jms, check, err

    def cells(self, copy):
        kgbs = self.bytes / self.kms / 1e6 if isinstance(self.kms, float) else '-'
        jgbs = self.bytes / self.jms / 1e6 if isinstance(self.jms, float) else na(self.jms)
        jms, jk = fmt(self.jms), ratio(self.jms, self.kms)
        if isinstance(self.jms, str):
            jms = jk = na(self.jms)
        if not isinstance(copy, float):
            kcopy = jcopy = na(copy)
        elif self.flops:  # dot-bound: the copy goal does not apply
            kcopy = jcopy = '- (dots)'
        else:
            kcopy, jcopy = ratio(kgbs, copy), ratio(jgbs, copy)
        missed = []
        if kcopy[0].isdigit() and float(kcopy) < BW_GOAL:
            missed.append('bw')
        if jk[0].isdigit() and float(jk) < XLA_GOAL:
            missed.append('xla')
        judged = kcopy[0].isdigit() or jk[0].isdigit()
        goals = 'no: ' + ', '.join(missed) if missed else 'yes' if judged else '-'
        kms = self.kms  # a failure's message is in the notes, too long for a cell
        kms = fmt(kms) if not isinstance(kms, str) or kms[0] == '>' else (
            'failed' if kms.startswith('failed') else na(kms))
        return [self.name, kms, jms, jk, gbps(kgbs), kcopy, gbps(jgbs), jcopy,
                self.check, self.err, goals]


HEADER = ['workload', 'kiln ms', 'jax ms', 'jax/kiln', 'kiln GB/s', 'kiln/copy', 'jax GB/s',
          'jax/copy', 'check', 'max abs diff', 'goals met']


def markdown(rows):
    widths = [max(len(str(r[i])) for r in [HEADER] + rows) for i in range(len(HEADER))]
    lines = ['| ' + ' | '.join(str(c).ljust(n) for c, n in zip(HEADER, widths)) + ' |',
             '|' + '|'.join('-' * (n + 2) for n in widths) + '|']
    lines += ['| ' + ' | '.join(str(c).ljust(n) for c, n in zip(r, widths)) + ' |' for r in rows]
    return '\n'.join(lines)


def measure(w, tmp, kiln_ok, jax_missing):
    """Times one workload on kiln and JAX and checks kiln's outputs; returns (Result, notes)."""
    kms, runs, got = (kiln_measure(w, tmp) if kiln_ok else (f'{OPTS.device} unavailable', 0,
                                                            None))
    notes, jms, reference = [], jax_missing, 'jax'
    if jax_missing is None:
        try:
            jms, want = jax_run(w.fn, w.inputs)
        except Exception as e:  # e.g. out of memory: the kiln row still counts
            jms = 'JAX error'
            notes.append(f'{w.name}: jax {type(e).__name__}: {str(e).splitlines()[0]}')
    if isinstance(jms, str):
        reference = 'numpy'
        want = [np.asarray(o) for o in leaves(w.fn(np, *w.inputs))]
    check, err = compare(got, want, w.tol) if got is not None else ('-', '-')
    if check != '-':
        check += f' vs {reference}'
    if kiln_ok and isinstance(kms, str):
        notes.append(f'{w.name}: kiln {kms}')
    elif isinstance(kms, float) and runs < OPTS.runs:
        notes.append(f'{w.name}: kiln timed {runs} run(s), one takes {kms:.1f} ms')
    if w.flops:
        rates = [f'{name} {w.flops / ms / 1e6:.0f} GFLOP/s' for name, ms in
                 (('kiln', kms), ('jax', jms)) if isinstance(ms, float)]
        notes.append(f'{w.name}: {", ".join(rates) or "-"} ({w.flops / 1e9:.1f} GFLOP)')
    return Result(w, kms, jms, check, err), notes


def main():
    if OPTS.copy_worker:
        return copy_worker(OPTS.copy_worker)
    keys = OPTS.only.split(',') if OPTS.only else list(WORKLOADS)
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        sys.exit(f'--only: unknown workload(s) {",".join(unknown)}; known: {",".join(WORKLOADS)}')
    if not os.path.exists(KILN):
        sys.exit(f'{KILN} not found: build first (ninja -C {OPTS.build})')
    command = shlex.join([os.path.basename(sys.executable)] + sys.argv)
    started = time.time()
    print(f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  {command}')
    print(f'scale {SCALE:g}, runs {OPTS.runs} (fewer where they would take over '
          f'{OPTS.budget:g} s), numpy {np.__version__}')

    kiln_ok, kiln_line = kiln_device()
    print(f'kiln device: {kiln_line}')
    if not kiln_ok:
        print(f'MISSING: kiln device {OPTS.device} is not available (see the line above); the '
              'kiln columns are empty, the rest still runs')

    copy, cuda_name = copy_bandwidth()
    if isinstance(copy, float):
        print(f'CUDA device 0: {cuda_name}; copy bandwidth (cuMemcpyDtoDAsync, {COPY_MIB} MiB, '
              f'read + write): {copy:.0f} GB/s')
    else:
        print(f'MISSING: {copy} ({cuda_name}); the kiln/copy and jax/copy columns are empty')

    jax_missing, jax_desc = load_jax(), None
    if jax_missing is None:
        d = jax.devices()[0]
        jax_desc = f'JAX {jax.__version__} on {jax.default_backend()} ({d.device_kind})'
        print(f'{jax_desc}, matmul precision {OPTS.jax_precision}; copy-like x*2 on '
              f'{COPY_MIB} MiB: {jax_copy_gbps():.0f} GB/s')
        if OPTS.device.startswith('gpu') and jax.default_backend() != 'gpu':
            print('WARNING: JAX has no GPU backend here: the jax columns are XLA:CPU')
    else:
        print(f'MISSING: {jax_missing[0]} ({jax_missing[1]}); the jax columns are empty, kiln '
              'outputs are checked against NumPy')
        jax_missing = jax_missing[0]
    print()

    results, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            t0 = time.time()
            r, n = measure(WORKLOADS[key](), tmp, kiln_ok, jax_missing)
            results.append(r)
            notes += n
            ms = [f'{fmt(v)} ms' if isinstance(v, float) else v for v in (r.kms, r.jms)]
            print(f'  {r.name}: kiln {ms[0]}, jax {ms[1]}, check {r.check} '
                  f'({time.time() - t0:.0f} s)', flush=True)

    if isinstance(copy, float):  # again after the workloads, the best kept (clocks, noise)
        again, _ = copy_bandwidth()
        copy = max(copy, again) if isinstance(again, float) else copy
        print(f'copy bandwidth, best of before and after: {copy:.0f} GB/s')
    print()
    print(markdown([r.cells(copy) for r in results]))
    print(f'\ngoals (issue #6): kiln/copy >= {BW_GOAL} on the memory-bound rows (not the MLP '
          f'step: dots), jax/kiln >= {XLA_GOAL:.2f} (kiln within 1.1x of XLA). GB/s = bytes of '
          'inputs + outputs, each once / median time; copy = cuMemcpyDtoDAsync, read + write.')
    for n in notes:
        print(f'  {n}')
    print(f'command: {command}')
    print(f'device: kiln {kiln_line}' + (f'; CUDA {cuda_name}' if isinstance(copy, float) else '')
          + (f'; {jax_desc}' if jax_desc else ''))
    print(f'total {time.time() - started:.0f} s')


if __name__ == '__main__':
    main()
