#!/usr/bin/env python3
"""bf16, f16 and f8 matrix products on cpu-llvm against XLA:CPU on the same HLO text (issues
#12 and #16: FP8 and bf16 models). Each module takes f32 matrices, converts them to the
narrow type and multiplies them (f8 into an f32 result, as FP8 training writes it), so both
sides read the same .npy inputs; Kiln's answer is checked against XLA's.

    .venv-peers/bin/python benchmarks/narrow_dots.py [--sizes 256,512,1024] [--runs N] [--threads T]

Prints one row per type and size: Kiln and XLA median ms and their ratio (below 1: Kiln is
faster).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402
import xla_peer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (operand type, result type, tolerance against XLA relative to the result's scale)
TYPES = [("bf16", "bf16", 2e-2), ("f16", "f16", 2e-3), ("f8e4m3fn", "f32", 1e-5),
         ("f8e5m2", "f32", 1e-5)]


def module(n, operand, result):
    return (f"HloModule narrow_dot\n\nENTRY main {{\n"
            f"  a = f32[{n},{n}] parameter(0)\n  b = f32[{n},{n}] parameter(1)\n"
            f"  ca = {operand}[{n},{n}] convert(a)\n  cb = {operand}[{n},{n}] convert(b)\n"
            f"  ROOT d = {result}[{n},{n}] dot(ca, cb), lhs_contracting_dims={{1}}, "
            f"rhs_contracting_dims={{0}}\n}}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "tools", "kiln"))
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    # XLA's GEMM (and Kiln's OpenBLAS) get the same thread count.
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    why = xla_peer.available()
    print(f"{'type':>9} {'n':>5} {'kiln ms':>9} {'xla ms':>9} {'kiln/xla':>9}  check")
    rng = np.random.default_rng(0)
    for n in [int(s) for s in args.sizes.split(",")]:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        for operand, result, tol in TYPES:
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "module.hlo")
                with open(path, "w") as f:
                    f.write(module(n, operand, result))
                inputs = [os.path.join(d, "in0.npy"), os.path.join(d, "in1.npy")]
                np.save(inputs[0], a)
                np.save(inputs[1], b)
                env = dict(os.environ, KILN_CPU_THREADS=str(args.threads))
                k = timing.kiln_benchmark(args.kiln, path, "cpu-llvm", args.runs, inputs,
                                          output_dir=d, env=env)
                x = why or xla_peer.run_child(d, args.runs, args.threads)
                check = "-"
                if isinstance(k, dict) and isinstance(x, dict):
                    got = np.load(os.path.join(d, "output_0.npy")).astype(np.float64)
                    want = np.load(os.path.join(d, "xla_out0.npy"))
                    if want.dtype.kind == "V":  # XLA's bf16 result, saved as raw bytes
                        import ml_dtypes
                        want = want.view(ml_dtypes.bfloat16)
                    want = want.astype(np.float64)
                    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
                    check = "ok" if err <= tol else f"DIFFERS (max error {err:.2g} of scale)"
                km = f"{k['median_ms']:.3f}" if isinstance(k, dict) else k
                xm = f"{x['median_ms']:.3f}" if isinstance(x, dict) else x
                ratio = (f"{k['median_ms'] / x['median_ms']:.2f}"
                         if isinstance(k, dict) and isinstance(x, dict) else "-")
                print(f"{operand:>9} {n:>5} {km:>9} {xm:>9} {ratio:>9}  {check}", flush=True)


if __name__ == "__main__":
    main()
