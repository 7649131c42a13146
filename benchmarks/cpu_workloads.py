#!/usr/bin/env python3
"""Benchmark (not a test) of Kiln issues #4 and #12: the CPU workloads through `kiln run
--benchmark` on cpu-llvm and on the interpreter, against XLA:CPU running the same HLO text
(benchmarks/xla_peer.py), PyTorch eager and torch.compile, and NumPy, measured in the same run
on the same inputs and thread count, and against a bound made of the STREAM-like bandwidth
(build/benchmarks/stream_bound) and NumPy/OpenBLAS's sgemm rate, also measured in this run.
Then the same workloads again with busy processes competing for the cores (--load, the
slowdown of each system against its own quiet run), the dot rate against the same BLAS,
compile and dispatch costs through the C ABI (build/benchmarks/bench_compile_dispatch), and
the MLP training step's peak memory against PyTorch eager. Prints ratios: the machine is
shared and noisy, only same-run ratios mean much.

Usage: .venv-peers/bin/python benchmarks/cpu_workloads.py [--build DIR] [--threads T]
           [--runs N] [--interp-timeout S] [--load P] [--load-repeats R] [--no-torch-compile]
The peers come from benchmarks/install_peers.sh (the .venv-peers interpreter has NumPy, JAX
and PyTorch); a missing one is reported in its column."""
import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument('--build', default=os.path.join(ROOT, 'build'))
ARGS.add_argument('--threads', type=int, default=os.cpu_count() or 1)
ARGS.add_argument('--runs', type=int, default=20, help='timed runs per measurement (median)')
ARGS.add_argument('--interp-timeout', type=float, default=120,
                  help='seconds per interpreter workload (it runs --benchmark 1)')
ARGS.add_argument('--load', type=int, default=2,
                  help='busy processes for the loaded table (0: no loaded table)')
ARGS.add_argument('--load-repeats', type=int, default=3,
                  help='loaded measurements of kiln and XLA each, taking turns (median)')
ARGS.add_argument('--no-torch-compile', action='store_true', help='skip torch.compile (slow)')
ARGS.add_argument('--torch-worker', nargs=2, metavar=('INDEX', 'DIR'), help=argparse.SUPPRESS)
# Imported (python_overhead.py reuses the workloads): the defaults.
OPTS = ARGS.parse_args() if __name__ == '__main__' else ARGS.parse_args([])
# Peers get kiln's thread count; OpenBLAS reads this at import (torch.set_num_threads does not
# reach Debian torch's OpenBLAS matmuls).
os.environ['OPENBLAS_NUM_THREADS'] = str(OPTS.threads)
os.environ['OMP_NUM_THREADS'] = str(OPTS.threads)

import numpy as np  # noqa: E402

import workload_hlo  # noqa: E402  (HLO text shared with gpu_workloads.py)
import xla_peer  # noqa: E402
from timing import kiln_benchmark, median_ms  # noqa: E402

# PyTorch runs in a child process per workload (--torch-worker): in one process with NumPy,
# OpenBLAS's spinning threads and torch's OpenMP threads fight over the 2 cores and torch
# measures several times slower than it is.
HAVE_TORCH = importlib.util.find_spec('torch') is not None
NO_XLA = xla_peer.available()  # None, or why XLA:CPU cannot run here
# Sleeping (not spinning) OpenMP workers: with spinning ones, torch's OpenMP threads and
# OpenBLAS's threads starve each other on 2 cores (measured: MLP step 156 ms vs 6.8 ms).
TORCH_ENV = dict(os.environ, OMP_WAIT_POLICY='PASSIVE')
torch = F = None

KILN = os.path.join(OPTS.build, 'tools', 'kiln')
HLO = os.path.join(ROOT, 'examples', 'hlo')
rng = np.random.default_rng(4)


def f32(*shape, scale=1.0):
    return (rng.uniform(-scale, scale, size=shape)).astype(np.float32)


def nbytes(arrays):
    return sum(a.nbytes for a in arrays)


def tt(arrays):
    return [torch.from_numpy(a.copy()) for a in arrays]  # copies: the SGD step updates in place


class Workload:
    """One row: HLO text, inputs, NumPy and PyTorch versions, and what bounds it.
    `mix` names the STREAM figure for its traffic: 'read' (read-only) or 'rw'."""

    def __init__(self, name, hlo, inputs, numpy_fn, torch_fns, out_bytes, flops, mix):
        self.name, self.hlo, self.inputs, self.numpy_fn = name, hlo, inputs, numpy_fn
        self.flops, self.mix = flops, mix
        # torch_fns(inputs) -> {variant: fn(*tensors)}; called only in the torch worker.
        self.torch_fns = torch_fns if callable(torch_fns) else lambda inputs: torch_fns
        self.bytes = nbytes(inputs) + out_bytes


def sum_xyz(n=1 << 24):
    hlo = workload_hlo.sum_xyz(n)
    xs = [f32(n) for _ in range(3)]
    return Workload('reduce_sum(x+y*z) 3xf32[2^24]', hlo, xs, lambda x, y, z: np.sum(x + y * z),
                    {'decomposed': lambda x, y, z: torch.sum(x + y * z)}, 4, 0, 'read')


def softmax(r=4096, c=1024):
    hlo = workload_hlo.softmax(r, c)

    def ref(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def decomposed(x):
        e = torch.exp(x - x.amax(1, keepdim=True))
        return e / e.sum(1, keepdim=True)
    return Workload('softmax f32[4096,1024]', hlo, [f32(r, c, scale=4)], ref,
                    {'torch.softmax': lambda x: torch.softmax(x, 1), 'decomposed': decomposed},
                    4 * r * c, 0, 'rw')


def layernorm_gelu(r=8192, c=768):
    hlo = workload_hlo.layernorm_gelu(r, c)

    def ref(x):
        xc = x - x.mean(1, keepdims=True)
        y = xc / np.sqrt((xc * xc).mean(1, keepdims=True) + 1e-5)
        return 0.5 * y * (1 + np.tanh(0.797884583 * (y + 0.044715 * y ** 3)))

    def decomposed(x):
        xc = x - x.mean(1, keepdim=True)
        y = xc * torch.rsqrt((xc * xc).mean(1, keepdim=True) + 1e-5)
        return 0.5 * y * (1 + torch.tanh(0.797884583 * (y + 0.044715 * y * y * y)))
    return Workload('layernorm+gelu f32[8192,768]', hlo, [f32(r, c, scale=3)], ref,
                    {'F.layer_norm+F.gelu': lambda x: F.gelu(F.layer_norm(x, (c,), eps=1e-5),
                                                             approximate='tanh'),
                     'decomposed': decomposed}, 4 * r * c, 0, 'rw')


def dense_relu(m=256, k=784, n=512):
    hlo = open(os.path.join(HLO, 'dense_relu.hlo')).read()
    xs = [f32(m, k), f32(k, n, scale=0.05), f32(n)]
    return Workload('relu(x@W+b) 256x784x512', hlo, xs, lambda x, w, b: np.maximum(x @ w + b, 0),
                    {'addmm+relu': lambda x, w, b: torch.relu(torch.addmm(b, x, w)),
                     'decomposed': lambda x, w, b: torch.relu(x @ w + b)},
                    4 * m * n, 2 * m * k * n, 'rw')


def mlp_train_step(batch=256, d_in=784, hidden=512, classes=10, lr=0.1):
    hlo = workload_hlo.mlp_train_step(batch, d_in, hidden, classes, lr)
    labels = rng.integers(0, classes, size=batch).astype(np.int32)
    xs = [f32(batch, d_in), labels, f32(d_in, hidden, scale=0.05), f32(hidden, scale=0.1),
          f32(hidden, classes, scale=0.1), f32(classes, scale=0.1)]

    def ref(*args):
        return workload_hlo.mlp_train_step_reference(np, lr, *args)

    def eager_step(x, labels, w1, b1, w2, b2):
        # Forward, autograd backward, SGD update in place: what a PyTorch training loop does.
        for p in (w1, b1, w2, b2):
            p.requires_grad_(True)
        loss = F.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, labels.long())
        loss.backward()
        with torch.no_grad():
            for p in (w1, b1, w2, b2):
                p -= lr * p.grad
                p.grad = None
        return loss
    flops = 2 * batch * d_in * hidden * 2 + 2 * batch * hidden * classes * 3
    return Workload('MLP 784-512-10 train step b256', hlo, xs, ref,
                    {'autograd+SGD': eager_step}, nbytes(xs[2:]) + 4, flops, 'rw')


def torch_lstm_step(x, h, c, w, u, b):
    i, f, g, o = (x @ w + h @ u + b).chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def np_lstm_step(x, h, c, w, u, b):
    i, f, g, o = np.split(x @ w + h @ u + b, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c), c


def lstm_cell(batch=64, width=256, hidden=256):
    hlo = open(os.path.join(HLO, 'lstm_cell.hlo')).read()
    xs = [f32(batch, width), f32(batch, hidden), f32(batch, hidden), f32(width, 4 * hidden, scale=0.1),
          f32(hidden, 4 * hidden, scale=0.1), f32(4 * hidden)]

    def fns(xs):
        cell = torch.nn.LSTMCell(width, hidden)
        with torch.no_grad():
            cell.weight_ih.copy_(torch.from_numpy(xs[3].T.copy()))
            cell.weight_hh.copy_(torch.from_numpy(xs[4].T.copy()))
            cell.bias_ih.copy_(torch.from_numpy(xs[5]))
            cell.bias_hh.zero_()
        return {'nn.LSTMCell': lambda x, h, c, w, u, b: cell(x, (h, c)),
                'decomposed': torch_lstm_step}
    flops = 2 * batch * (width + hidden) * 4 * hidden
    return Workload('LSTM cell b64 256->256', hlo, xs, np_lstm_step, fns,
                    2 * 4 * batch * hidden, flops, 'rw')


def lstm_stacked(layers=3, hidden=60, steps=20, batch=64, file='lstm_stacked.hlo',
                 name='stacked LSTM 3x60, 20 steps b64'):
    hlo = open(os.path.join(HLO, file)).read()
    xs = [f32(steps, batch, hidden)]
    for _ in range(layers):
        xs += [f32(hidden, 4 * hidden, scale=0.2), f32(hidden, 4 * hidden, scale=0.2),
               f32(4 * hidden, scale=0.2)]

    def run(step, zeros, xs_, *wub):
        h, c, ys = [zeros] * layers, [zeros] * layers, []
        for t in range(steps):
            x = xs_[t]
            for l in range(layers):
                h[l], c[l] = step(x, h[l], c[l], *wub[3 * l:3 * l + 3])
                x = h[l]
            ys.append(x)
        return ys, h, c
    def ref(*a):
        return tuple(np.stack(v) for v in run(np_lstm_step, np.zeros((batch, hidden), np.float32), *a))

    def fns(xs):
        zeros = torch.zeros(batch, hidden)
        net = torch.nn.LSTM(hidden, hidden, num_layers=layers)
        with torch.no_grad():
            for l in range(layers):
                getattr(net, f'weight_ih_l{l}').copy_(torch.from_numpy(xs[1 + 3 * l].T.copy()))
                getattr(net, f'weight_hh_l{l}').copy_(torch.from_numpy(xs[2 + 3 * l].T.copy()))
                getattr(net, f'bias_ih_l{l}').copy_(torch.from_numpy(xs[3 + 3 * l]))
                getattr(net, f'bias_hh_l{l}').zero_()
        return {'nn.LSTM': lambda xs_, *wub: net(xs_),
                'decomposed': lambda *a: run(torch_lstm_step, zeros, *a)}
    flops = steps * layers * 2 * 2 * batch * hidden * 4 * hidden
    out_bytes = 4 * (steps + 2 * layers) * batch * hidden
    return Workload(name, hlo, xs, ref, fns, out_bytes, flops, 'rw')


def lstm_stacked_while():
    return lstm_stacked(file='lstm_stacked_while.hlo', name='  same, as a while loop')


def kiln_run(hlo_path, input_paths, device, runs, timeout=None, output_dir=None):
    """`kiln run --benchmark` at OPTS.threads: returns median_ms, or a reason string."""
    r = kiln_benchmark(KILN, hlo_path, device, runs, input_paths, output_dir,
                       dict(os.environ, KILN_CPU_THREADS=str(OPTS.threads)), timeout)
    return r['median_ms'] if isinstance(r, dict) else r


def stream_bandwidth():
    """GB/s by traffic mix at OPTS.threads threads: 'read' = read-only sum, 'rw' = the best of
    copy, non-temporal copy and triad (the most this machine moves with writes)."""
    exe = os.path.join(OPTS.build, 'benchmarks', 'stream_bound')
    out = subprocess.run([exe, str(OPTS.threads)], capture_output=True, text=True, check=True)
    rates = {}
    for line in out.stdout.splitlines():
        f = dict(kv.split('=') for kv in line.split()[1:])
        rates[(f['kernel'], int(f['threads']))] = float(f['gbps'])
    t = OPTS.threads
    return rates, {'read': rates[('sum', t)],
                   'rw': max(rates[(k, t)] for k in ('copy', 'copy_nt', 'triad'))}


def sgemm_gflops(m, k, n, runs=5, best=False):
    """NumPy/OpenBLAS sgemm rate: from the median run, or the fastest one with best=True."""
    a, b = f32(m, k), f32(k, n)
    ms = median_ms(lambda: a @ b, runs) if not best else min(
        median_ms(lambda: a @ b, 1) for _ in range(runs))
    return 2 * m * k * n / ms / 1e6


def fmt_ms(v):
    return f'{v:.2f}' if isinstance(v, float) else str(v)


def ratio(a, b):
    return f'{a / b:.2f}' if isinstance(a, float) and isinstance(b, float) else '-'


WORKLOADS = (sum_xyz, softmax, layernorm_gelu, dense_relu, mlp_train_step, lstm_cell,
             lstm_stacked, lstm_stacked_while)


def torch_worker(index, folder):
    """Child process: times each PyTorch variant of WORKLOADS[index] on the inputs saved in
    `folder`, then torch.compile of the decomposed one (unless --no-torch-compile); prints
    `variant ms` lines, and `compile:torch.compile ms` for the compile (first call)."""
    global torch, F
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(OPTS.threads)
    w = WORKLOADS[index]()
    inputs = [np.load(os.path.join(folder, f'in{i}.npy')) for i in range(len(w.inputs))]
    variants = w.torch_fns(inputs)
    if not OPTS.no_torch_compile:
        variants['torch.compile'] = torch.compile(variants.get('decomposed') or
                                                  next(iter(variants.values())))
    for label, fn in variants.items():
        args = tt(inputs)
        with torch.enable_grad() if w.name.startswith('MLP') else torch.no_grad():
            if label == 'torch.compile':
                start = time.perf_counter()
                fn(*args)
                print(f'compile:{label}', (time.perf_counter() - start) * 1e3, flush=True)
            print(label, median_ms(lambda: fn(*args), OPTS.runs), flush=True)


def torch_ms(index, folder):
    """{variant: ms} from a torch worker, or a reason string."""
    if not HAVE_TORCH:
        return 'no torch'
    cmd = [sys.executable, os.path.abspath(__file__), '--build', OPTS.build, '--threads',
           str(OPTS.threads), '--runs', str(OPTS.runs), '--torch-worker', str(index), folder]
    out = subprocess.run(cmd + (['--no-torch-compile'] if OPTS.no_torch_compile else []),
                         capture_output=True, text=True, env=TORCH_ENV)
    if out.returncode != 0:
        return 'failed: ' + (out.stderr.strip().splitlines() or ['?'])[-1]
    return {line.rsplit(' ', 1)[0]: float(line.rsplit(' ', 1)[1])
            for line in out.stdout.strip().splitlines()}


def xla_ms(folder, n_outputs):
    """XLA:CPU on the same module.hlo and in*.npy: (median ms, compile ms, outputs) or a reason
    string."""
    if NO_XLA:
        return NO_XLA
    r = xla_peer.run_child(folder, OPTS.runs, OPTS.threads)
    if isinstance(r, str):
        return r
    outs = [np.load(os.path.join(folder, f'xla_out{i}.npy')) for i in range(n_outputs)]
    return r['median_ms'], r['compile_ms'], outs


class BusyProcesses:
    """`count` processes spinning on the CPU while the block runs: a machine where something
    else runs, as users' machines are."""

    def __init__(self, count):
        self.count, self.procs = count, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
                      for _ in range(self.count)]
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def save_workload(w, tmp):
    """Writes module.hlo and in*.npy into tmp (removing the last workload's .npy files: the XLA
    peer takes every in<i>.npy it finds); returns the input paths."""
    for name in os.listdir(tmp):
        if name.endswith('.npy'):
            os.remove(os.path.join(tmp, name))
    with open(os.path.join(tmp, 'module.hlo'), 'w') as f:
        f.write(w.hlo)
    inputs = []
    for i, a in enumerate(w.inputs):
        inputs.append(os.path.join(tmp, f'in{i}.npy'))
        np.save(inputs[-1], a)
    return inputs


def max_diff(got, want):
    return f'{max(float(np.abs(g - np.asarray(v)).max()) for g, v in zip(got, want)):.1e}'


def fastest_eager(variants):
    eager = {k: v for k, v in variants.items() if ':' not in k and k != 'torch.compile'}
    return min(eager.values())


def workload_table(tmp, measure_bound):
    """Measures every workload quiet, then calls measure_bound() -> (bandwidth by mix, sgemm
    peak), prints the table; returns the quiet times for the loaded table."""
    cols = ['workload', 'kiln ms', 'xla ms', 't.comp ms', 'torch ms', 'numpy ms', 'interp ms',
            'bound ms', 'kiln/bound', 'xla/kiln', 't.comp/kiln', 'torch/kiln',
            'max|kiln-xla|', 'max|kiln-np|']
    widths = [32, 8, 8, 9, 8, 8, 9, 8, 10, 8, 11, 10, 13, 12]
    notes, measured, quiet = [], [], []
    for index, make in enumerate(WORKLOADS):
        w = make()
        inputs = save_workload(w, tmp)
        out_dir = os.path.join(tmp, 'out')
        os.makedirs(out_dir, exist_ok=True)
        kms = kiln_run(os.path.join(tmp, 'module.hlo'), inputs, 'cpu-llvm', OPTS.runs,
                       output_dir=out_dir)
        ims = kiln_run(os.path.join(tmp, 'module.hlo'), inputs, 'interpreter', 1,
                       timeout=OPTS.interp_timeout)
        nms = median_ms(lambda: w.numpy_fn(*w.inputs), OPTS.runs)
        want = w.numpy_fn(*w.inputs)
        want = want if isinstance(want, tuple) else (want,)
        err = xerr = '-'
        got = None
        if isinstance(kms, float):
            got = [np.load(os.path.join(out_dir, f'output_{i}.npy')) for i in range(len(want))]
            err = max_diff(got, want)
        xla = xla_ms(tmp, len(want))
        xms = xla
        if isinstance(xla, tuple):
            xms = xla[0]
            notes.append(f'  {w.name}: XLA:CPU compile {xla[1]:.0f} ms')
            if got is not None:
                xerr = max_diff(got, xla[2])
        variants = torch_ms(index, tmp)
        tms = tcms = variants
        if isinstance(variants, dict):
            tms = fastest_eager(variants)
            tcms = variants.get('torch.compile', '-')
            notes += [f'  {w.name}: {k} {v:.2f} ms' for k, v in variants.items()]
        else:
            notes.append(f'  {w.name}: {variants}')
        measured.append((w, kms, xms, tcms, tms, nms, ims, xerr, err))
        quiet.append((kms, xms, tcms, tms))
    bw, peak_gflops = measure_bound()
    print('| ' + ' | '.join(c.ljust(w) for c, w in zip(cols, widths)) + ' |')
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for w, kms, xms, tcms, tms, nms, ims, xerr, err in measured:
        bound = max(w.bytes / bw[w.mix] / 1e6, w.flops / peak_gflops / 1e6)
        row = [w.name, fmt_ms(kms), fmt_ms(xms), fmt_ms(tcms), fmt_ms(tms), fmt_ms(nms),
               fmt_ms(ims), f'{bound:.2f}', ratio(kms, bound), ratio(xms, kms), ratio(tcms, kms),
               ratio(tms, kms), xerr, err]
        print('| ' + ' | '.join(c.ljust(w_) for c, w_ in zip(row, widths)) + ' |')
    print('xla: XLA:CPU (jaxlib) compiling the same HLO text, default options, pinned to T cores; '
          't.comp: torch.compile of the decomposed form; torch: fastest PyTorch eager variant, '
          'each workload in its own process with OMP_WAIT_POLICY=PASSIVE. Per workload:')
    print('\n'.join(notes) if HAVE_TORCH or not NO_XLA else
          '  PyTorch and JAX not installed: run benchmarks/install_peers.sh')
    return quiet


def median_or_reason(values):
    """The median of the measured times, or the first reason when one failed."""
    failed = [v for v in values if not isinstance(v, float)]
    return failed[0] if failed else float(np.median(values))


def loaded_table(tmp, quiet):
    """The workloads again with OPTS.load busy processes: each system's time against its own
    quiet time. Kiln's slowdown must be no worse than the peers'."""
    print(f'\nWith {OPTS.load} busy processes on the {os.cpu_count()} cores (loaded ms, and '
          'loaded / quiet for each system; quiet times from the table above; kiln and xla: '
          f'median of {OPTS.load_repeats} measurements taking turns, torch: one):')
    cols = ['workload', 'kiln', 'xla', 't.comp', 'torch', 'kiln slow', 'xla slow',
            't.comp slow', 'torch slow']
    widths = [32, 8, 8, 8, 8, 9, 8, 11, 10]
    print('| ' + ' | '.join(c.ljust(w) for c, w in zip(cols, widths)) + ' |')
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for index, make in enumerate(WORKLOADS):
        w = make()
        inputs = save_workload(w, tmp)
        with BusyProcesses(OPTS.load):
            # A run of a few ms either gets a core to itself or shares one, by the scheduler's
            # luck: kiln and XLA are measured OPTS.load_repeats times, taking turns, and each
            # gets the median of its repeats.
            kiln_times, xla_times = [], []
            for r in range(OPTS.load_repeats):
                for system in (('kiln', 'xla') if r % 2 == 0 else ('xla', 'kiln')):
                    if system == 'kiln':
                        kiln_times.append(kiln_run(os.path.join(tmp, 'module.hlo'), inputs,
                                                   'cpu-llvm', OPTS.runs))
                    else:
                        x = xla_ms(tmp, 0)
                        xla_times.append(x[0] if isinstance(x, tuple) else x)
            variants = torch_ms(index, tmp)
        kms, xms = median_or_reason(kiln_times), median_or_reason(xla_times)
        tms = tcms = variants
        if isinstance(variants, dict):
            tms, tcms = fastest_eager(variants), variants.get('torch.compile', '-')
        qk, qx, qtc, qt = quiet[index]
        row = [w.name, fmt_ms(kms), fmt_ms(xms), fmt_ms(tcms), fmt_ms(tms), ratio(kms, qk),
               ratio(xms, qx), ratio(tcms, qtc), ratio(tms, qt)]
        print('| ' + ' | '.join(c.ljust(w_) for c, w_ in zip(row, widths)) + ' |', flush=True)


def dot_table(tmp):
    print('Dot through kiln (cpu-llvm) vs NumPy/OpenBLAS sgemm, same shape, same threads:')
    for m, k, n in ((256, 784, 512), (2048, 2048, 2048)):
        hlo = f"""HloModule dot
ENTRY %main (a: f32[{m},{k}], b: f32[{k},{n}]) -> f32[{m},{n}] {{
  %a = f32[{m},{k}] parameter(0)
  %b = f32[{k},{n}] parameter(1)
  ROOT %d = f32[{m},{n}] dot(%a, %b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""
        path = os.path.join(tmp, 'dot.hlo')
        with open(path, 'w') as f:
            f.write(hlo)
        kms = kiln_run(path, [], 'cpu-llvm', 10)
        blas = sgemm_gflops(m, k, n, 10)
        if isinstance(kms, float):
            kg = 2 * m * k * n / kms / 1e6
            print(f'  {m}x{k}x{n}: kiln {kg:.0f} GFLOP/s, OpenBLAS {blas:.0f} GFLOP/s, '
                  f'kiln = {100 * kg / blas:.0f}% (goal >= 90%)')
        else:
            print(f'  {m}x{k}x{n}: kiln {kms}')


# A small launcher between this (large) process and the measured one: on Linux a child's
# ru_maxrss starts from its parent's RSS at fork, so the measured process must be a grandchild.
LAUNCH = """import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
print(r.stdout, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r.returncode)
"""


def peak_rss_mb(cmd, env=None):
    """Runs cmd as a grandchild; returns (its max RSS in MB, its stdout)."""
    out = subprocess.run([sys.executable, '-c', LAUNCH] + cmd, capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    return int(out[-1]) / 1024, ' '.join(out[:-1])


TORCH_STEP_RSS = """
import resource, sys
import numpy as np, torch, torch.nn.functional as F
torch.set_num_threads(int(sys.argv[1]))
base = int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize()
x, labels, w1, b1, w2, b2 = (torch.from_numpy(np.load(p)) for p in sys.argv[2:8])
for _ in range(5):
    for p in (w1, b1, w2, b2):
        p.requires_grad_(True)
    loss = F.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, labels.long())
    loss.backward()
    with torch.no_grad():
        for p in (w1, b1, w2, b2):
            p -= 0.1 * p.grad
            p.grad = None
print(base / 2**20, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def memory_report(tmp):
    print('\nPeak memory of the MLP training step (max RSS over a baseline):')
    w = mlp_train_step()
    inputs = []
    for i, a in enumerate(w.inputs):
        inputs.append(os.path.join(tmp, f'mem{i}.npy'))
        np.save(inputs[-1], a)
    tiny = os.path.join(tmp, 'tiny.hlo')
    with open(tiny, 'w') as f:
        f.write('HloModule tiny\nENTRY %main (a: f32[4]) -> f32[4] {\n'
                '  ROOT %a = f32[4] parameter(0)\n}\n')
    env = dict(os.environ, KILN_CPU_THREADS=str(OPTS.threads))
    run = [KILN, 'run', '--device', 'cpu-llvm', '--benchmark', '5']
    base, _ = peak_rss_mb(run[:2] + [tiny] + run[2:], env)
    peak, _ = peak_rss_mb(run[:2] + [os.path.join(HLO, 'mlp_train_step.hlo')] + run[2:] +
                          [a for p in inputs for a in ('--input', p)], env)
    print(f'  kiln cpu-llvm: {peak - base:.1f} MB (peak {peak:.1f} MB minus {base:.1f} MB for '
          'the same command on a trivial module: process, plugins, LLVM)')
    # With the kernels' objects in the on-disk cache, LLVM's code generation (its heap and the
    # pages of libLLVM it touches) is out of the figure: what a deployed, warmed-up run costs.
    cached = dict(env, KILN_CPU_CACHE_DIR=os.path.join(tmp, 'object_cache'))
    mlp = run[:2] + [os.path.join(HLO, 'mlp_train_step.hlo')] + run[2:] + \
        [a for p in inputs for a in ('--input', p)]
    peak_rss_mb(mlp, cached)  # fills the cache
    warm, _ = peak_rss_mb(mlp, cached)
    print(f'  kiln cpu-llvm, kernels from the object cache: {warm - base:.1f} MB')
    if not HAVE_TORCH:
        print('  PyTorch: not installed (benchmarks/install_peers.sh)')
        return
    _, out = peak_rss_mb([sys.executable, '-c', TORCH_STEP_RSS, str(OPTS.threads)] + inputs,
                         TORCH_ENV)
    tbase, tpeak = (float(v) for v in out.split())
    print(f'  PyTorch eager: {tpeak - tbase:.1f} MB (peak {tpeak:.1f} MB minus {tbase:.1f} MB '
          'after imports)')
    print(f'  both include loading the {nbytes(w.inputs) / 2**20:.1f} MB of inputs; 5 steps each')


def main():
    if OPTS.torch_worker:
        return torch_worker(int(OPTS.torch_worker[0]), OPTS.torch_worker[1])
    for exe in (KILN, os.path.join(OPTS.build, 'benchmarks', 'stream_bound')):
        if not os.path.exists(exe):
            sys.exit(f'{exe} not found: build first (ninja -C {OPTS.build})')
    print(f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, threads={OPTS.threads} '
          f'(KILN_CPU_THREADS, torch.set_num_threads, OPENBLAS_NUM_THREADS), runs={OPTS.runs}, '
          f'numpy {np.__version__}, torch {"found" if HAVE_TORCH else "missing"}, '
          f'XLA:CPU {"found" if not NO_XLA else "missing"}, '
          f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    # Bandwidth and the sgemm peak are measured before and after the workloads and the best
    # is kept: a bound must not be loose because another job held the cores for a moment.
    rates, bw = stream_bandwidth()
    peak = sgemm_gflops(2048, 2048, 2048, runs=7, best=True)

    def measure_bound():
        rates2, bw2 = stream_bandwidth()
        best = {k: max(v, rates2[k]) for k, v in rates.items()}
        print('STREAM (GB/s, best of 7, before and after): ' + ', '.join(
            f'{k}/{t}t {v:.1f}' for (k, t), v in sorted(best.items())))
        bw_best = {m: max(bw[m], bw2[m]) for m in bw}
        peak_best = max(peak, sgemm_gflops(2048, 2048, 2048, runs=7, best=True))
        print(f'bound = max(bytes in+out / bandwidth (read-only: {bw_best["read"]:.1f} GB/s, with '
              f'writes: {bw_best["rw"]:.1f} GB/s), flops / {peak_best:.0f} GFLOP/s (OpenBLAS '
              'sgemm 2048^3, best run))')
        print(f'interpreter: --benchmark 1 (one warm-up + one timed run), '
              f'{OPTS.interp_timeout:.0f} s timeout per workload\n')
        return bw_best, peak_best

    with tempfile.TemporaryDirectory() as tmp:
        dot_table(tmp)
        print()
        quiet = workload_table(tmp, measure_bound)
        if OPTS.load > 0:
            loaded_table(tmp, quiet)
        memory_report(tmp)
    cd = os.path.join(OPTS.build, 'benchmarks', 'bench_compile_dispatch')
    if os.path.exists(cd):
        print('\nCompile and dispatch through the C ABI (bench_compile_dispatch):')
        env = dict(os.environ, KILN_CPU_THREADS=str(OPTS.threads))
        out = subprocess.run([cd], capture_output=True, text=True, env=env)
        print('\n'.join('  ' + line for line in (out.stdout + out.stderr).strip().splitlines()[1:-1]
                        or [out.stderr.strip()]))


if __name__ == '__main__':
    main()
