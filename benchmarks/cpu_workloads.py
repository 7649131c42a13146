#!/usr/bin/env python3
"""Benchmark (not a test): the cpu-llvm issue's workloads through `kiln run --benchmark`
against NumPy measured in the same run, plus a bound from a copy kernel (NumPy's np.copyto,
one thread) and NumPy's sgemm rate, both measured in the same run. Prints ratios, since the machine
is shared and noisy. Usage: cpu_workloads.py [KILN] [DEVICE] [RUNS]"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
"""


def sum_xyz(n):
    hlo = f"""HloModule sum_xyz
{ADD}
ENTRY %main (x: f32[{n}], y: f32[{n}], z: f32[{n}]) -> f32[] {{
  %x = f32[{n}] parameter(0)
  %y = f32[{n}] parameter(1)
  %z = f32[{n}] parameter(2)
  %yz = f32[{n}] multiply(%y, %z)
  %s = f32[{n}] add(%x, %yz)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%s, %zero), dimensions={{0}}, to_apply=%add
}}
"""
    args = [np.random.rand(n).astype(np.float32) for _ in range(3)]
    return hlo, args, lambda x, y, z: np.sum(x + y * z), 3 * 4 * n, 0


def softmax(r, c):
    hlo = f"""HloModule softmax
{ADD}
ENTRY %main (x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %mb = f32[{r},{c}] broadcast(%m), dimensions={{0}}
  %d = f32[{r},{c}] subtract(%x, %mb)
  %e = f32[{r},{c}] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[{r}] reduce(%e, %zero), dimensions={{1}}, to_apply=%add
  %sb = f32[{r},{c}] broadcast(%s), dimensions={{0}}
  ROOT %y = f32[{r},{c}] divide(%e, %sb)
}}
"""

    def ref(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return hlo, [np.random.rand(r, c).astype(np.float32)], ref, 2 * 4 * r * c, 0


def layernorm_gelu(r, c):
    hlo = f"""HloModule layernorm_gelu
{ADD}
ENTRY %main (x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %zero = f32[] constant(0)
  %invn = f32[] constant({1.0 / c!r})
  %invnb = f32[{r}] broadcast(%invn), dimensions={{}}
  %sum = f32[{r}] reduce(%x, %zero), dimensions={{1}}, to_apply=%add
  %mean = f32[{r}] multiply(%sum, %invnb)
  %meanb = f32[{r},{c}] broadcast(%mean), dimensions={{0}}
  %xc = f32[{r},{c}] subtract(%x, %meanb)
  %sq = f32[{r},{c}] multiply(%xc, %xc)
  %ss = f32[{r}] reduce(%sq, %zero), dimensions={{1}}, to_apply=%add
  %var = f32[{r}] multiply(%ss, %invnb)
  %eps = f32[] constant(1e-05)
  %epsb = f32[{r}] broadcast(%eps), dimensions={{}}
  %ve = f32[{r}] add(%var, %epsb)
  %rs = f32[{r}] rsqrt(%ve)
  %rsb = f32[{r},{c}] broadcast(%rs), dimensions={{0}}
  %y = f32[{r},{c}] multiply(%xc, %rsb)
  %half = f32[] constant(0.5)
  %one = f32[] constant(1)
  %k = f32[] constant(0.797884583)
  %a = f32[] constant(0.044715)
  %halfb = f32[{r},{c}] broadcast(%half), dimensions={{}}
  %oneb = f32[{r},{c}] broadcast(%one), dimensions={{}}
  %kb = f32[{r},{c}] broadcast(%k), dimensions={{}}
  %ab = f32[{r},{c}] broadcast(%a), dimensions={{}}
  %y2 = f32[{r},{c}] multiply(%y, %y)
  %y3 = f32[{r},{c}] multiply(%y2, %y)
  %ay3 = f32[{r},{c}] multiply(%ab, %y3)
  %in = f32[{r},{c}] add(%y, %ay3)
  %kin = f32[{r},{c}] multiply(%kb, %in)
  %t = f32[{r},{c}] tanh(%kin)
  %ot = f32[{r},{c}] add(%oneb, %t)
  %hy = f32[{r},{c}] multiply(%halfb, %y)
  ROOT %g = f32[{r},{c}] multiply(%hy, %ot)
}}
"""

    def ref(x):
        mu = x.mean(1, keepdims=True)
        xc = x - mu
        y = xc / np.sqrt((xc * xc).mean(1, keepdims=True) + 1e-5)
        return 0.5 * y * (1 + np.tanh(0.797884583 * (y + 0.044715 * y ** 3)))
    return hlo, [np.random.rand(r, c).astype(np.float32)], ref, 2 * 4 * r * c, 0


def dense_relu(m, k, n):
    hlo = f"""HloModule dense_relu
ENTRY %main (x: f32[{m},{k}], w: f32[{k},{n}], b: f32[{n}]) -> f32[{m},{n}] {{
  %x = f32[{m},{k}] parameter(0)
  %w = f32[{k},{n}] parameter(1)
  %b = f32[{n}] parameter(2)
  %d = f32[{m},{n}] dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %bb = f32[{m},{n}] broadcast(%b), dimensions={{1}}
  %s = f32[{m},{n}] add(%d, %bb)
  %zero = f32[] constant(0)
  %zb = f32[{m},{n}] broadcast(%zero), dimensions={{}}
  ROOT %r = f32[{m},{n}] maximum(%s, %zb)
}}
"""
    args = [np.random.rand(m, k).astype(np.float32), np.random.rand(k, n).astype(np.float32),
            np.random.rand(n).astype(np.float32)]
    return hlo, args, lambda x, w, b: np.maximum(x @ w + b, 0), 4 * (m * k + k * n + m * n), 2 * m * k * n


def median_ms(fn, runs):
    fn()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return sorted(t)[len(t) // 2]


def copy_gbps():
    a = np.ones(1 << 25, np.float32)
    b = np.empty_like(a)
    ms = median_ms(lambda: np.copyto(b, a), 5)
    return 2 * a.nbytes / ms / 1e6


def sgemm_gflops():
    a = np.random.rand(1024, 1024).astype(np.float32)
    ms = median_ms(lambda: a @ a, 5)
    return 2 * 1024 ** 3 / ms / 1e6


def main():
    kiln = sys.argv[1] if len(sys.argv) > 1 else 'build/tools/kiln'
    device = sys.argv[2] if len(sys.argv) > 2 else 'cpu-llvm'
    runs = sys.argv[3] if len(sys.argv) > 3 else '10'
    bw = copy_gbps()
    gf = sgemm_gflops()
    print(f'copy bandwidth (NumPy, 1 thread, this run): {bw:.1f} GB/s; '
          f'sgemm (NumPy/OpenBLAS, this run): {gf:.0f} GFLOP/s')
    print('bound = max(minimum bytes / copy bandwidth, flops / sgemm rate)')
    print(f'{"workload":28s} {"kiln ms":>9s} {"numpy ms":>9s} {"numpy/kiln":>10s} {"bound ms":>9s} {"kiln/bound":>10s}')
    cases = [('sum(x+y*z) 3xf32[2^24]', sum_xyz(1 << 24)),
             ('softmax f32[4096,1024]', softmax(4096, 1024)),
             ('layernorm+gelu f32[8192,768]', layernorm_gelu(8192, 768)),
             ('relu(x@W+b) 256x784x512', dense_relu(256, 784, 512))]
    with tempfile.TemporaryDirectory() as tmp:
        for name, (hlo, args, ref, min_bytes, flops) in cases:
            path = os.path.join(tmp, 'm.hlo')
            open(path, 'w').write(hlo)
            cmd = [kiln, 'run', path, '--device', device, '--benchmark', runs]
            for i, a in enumerate(args):
                p = os.path.join(tmp, f'in{i}.npy')
                np.save(p, a)
                cmd += ['--input', p]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                print(f'{name:28s} kiln failed: {out.stderr.strip()}')
                continue
            fields = dict(kv.split('=') for kv in out.stdout.strip().splitlines()[-1].split())
            kms = float(fields['median_ms'])
            nms = median_ms(lambda: ref(*args), int(runs))
            bound = max(min_bytes / bw / 1e6, flops / gf / 1e6)
            print(f'{name:28s} {kms:9.2f} {nms:9.2f} {nms / kms:10.2f} {bound:9.2f} {kms / bound:10.2f}')


if __name__ == '__main__':
    main()
