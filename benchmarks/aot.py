#!/usr/bin/env python3
"""Issue #15's goals for `kiln aot`, measured in one run: the size of the linked example
programs and the time per run of the ahead-of-time artifact against cpu-llvm's JIT on the
same module, inputs and thread count (one thread: the artifact is single-threaded).

usage: /usr/bin/python3 benchmarks/aot.py [--runs N] [--threads T] [--kiln build/tools/kiln]

With --threads T > 1 the artifacts are built with --parallel and run on T threads, the JIT
(KILN_CPU_THREADS), OpenBLAS and oneDNN (OMP_NUM_THREADS) get T threads too; GEMMs emitted
into the artifact stay single-threaded.

For each module: `kiln aot` with the self-contained GEMM (`--gemm emitted`), with OpenBLAS
(`--gemm openblas`) and with oneDNN (`--gemm onednn`, cpu-llvm's own f32 GEMM), linked into examples/aot/run_npy.c, stripped; `size` per section; the
program's `--repeat N` time per run against `kiln run --device cpu-llvm --benchmark N` (its
median), best of three alternating rounds, at the same thread count; and the outputs of both against each other. Sizes
are of the stripped, dynamically linked program (the runtime is the artifact itself; libc
and libm excluded), plus the stacked LSTM's for aarch64 when the cross compiler is there.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["examples/hlo/lstm_stacked.hlo", "examples/hlo/lstm_stacked_while.hlo",
           "examples/hlo/model_fn.hlo",
           "examples/aot/mnist_classifier.hlo", "examples/hlo/dense_relu.hlo",
           "examples/hlo/lstm_cell.hlo"]


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, check=True, **kw)


def build(kiln, module, name, out, gemm, parallel=False):
    sh([kiln, "aot", module, "--name", name, "--out-dir", out, "--gemm", gemm]
       + (["--parallel"] if parallel else []))
    exe = os.path.join(out, "run")
    sh(["cc", "-O2", "-I" + out, "-I" + os.path.join(ROOT, "examples", "aot"),
        f"-DKILN_AOT_NAME={name}", f'-DKILN_AOT_HEADER="{name}.h"',
        os.path.join(ROOT, "examples", "aot", "run_npy.c"), os.path.join(out, name + ".o"),
        "-lm"] + {"openblas": ["-lopenblas"], "onednn": ["-ldnnl"]}.get(gemm, [])
       + ([os.path.join(out, "libkiln_aot_runtime.a"), "-lpthread"] if parallel else [])
       + ["-o", exe])
    sh(["strip", exe])
    return exe


def inputs_for(header, name, out):
    rng = np.random.default_rng(1)
    files, i = [], 0
    while True:
        d = re.search(rf"static const int64_t {name}_arg{i}_dims\[\d+\] = \{{([^}}]*)\}};", header)
        if not d:
            return files
        rank = int(re.search(rf"#define {name.upper()}_ARG{i}_RANK (\d+)", header)[1])
        dims = [int(x) for x in d[1].split(",")][:rank]
        f = os.path.join(out, f"in{i}.npy")
        np.save(f, (rng.uniform(-1, 1, size=dims) * 0.3).astype(np.float32))
        files.append(f)
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "tools", "kiln"))
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for the JIT and for --parallel artifacts (1: not parallel)")
    a = ap.parse_args()
    t = str(a.threads)
    env = dict(os.environ, KILN_CPU_THREADS=t, OPENBLAS_NUM_THREADS=t, OMP_NUM_THREADS=t)
    os.environ.update(env)
    parallel = a.threads > 1
    tmp = tempfile.mkdtemp(prefix="kiln_aot_bench_")
    print(f"{'module':<18} {'gemm':<9} {'program':>9} {'text':>8} {'data':>6} "
          f"{'aot us':>9} {'jit us':>9} {'aot/jit':>8} {'max |diff|':>10}")
    for rel in MODULES:
        module = os.path.join(ROOT, rel)
        base = os.path.basename(rel)[:-4]
        for gemm in ("emitted", "openblas", "onednn"):
            out = os.path.join(tmp, f"{base}_{gemm}")
            exe = build(a.kiln, module, base, out, gemm, parallel)
            header = open(os.path.join(out, base + ".h")).read()
            ins = inputs_for(header, base, out)
            text, data = [int(x) for x in sh(["size", exe]).stdout.splitlines()[1].split()[:2]]
            aot_dir, jit_dir = os.path.join(out, "aot"), os.path.join(out, "jit")
            os.makedirs(aot_dir)
            os.makedirs(jit_dir)
            aot_us, jit_us = [], []
            for _ in range(3):
                r = sh([exe, "--repeat", str(a.runs)] + (["--threads", t] if parallel else [])
                       + ins + [aot_dir])
                aot_us.append(float(r.stdout.split()[0]))
                r = sh([a.kiln, "run", module, "--device", "cpu-llvm", "--benchmark", str(a.runs),
                        "--output-dir", jit_dir] + sum((["--input", f] for f in ins), []))
                jit_us.append(1e3 * float(re.search(r"median_ms=([\d.]+)", r.stdout)[1]))
            diff, j = 0.0, 0
            while os.path.exists(os.path.join(aot_dir, f"output_{j}.npy")):
                x = np.load(os.path.join(aot_dir, f"output_{j}.npy")).astype(np.float64)
                y = np.load(os.path.join(jit_dir, f"output_{j}.npy")).astype(np.float64)
                diff = max(diff, float(np.abs(x - y).max()) if x.size else 0.0)
                j += 1
            print(f"{base:<18} {gemm:<9} {os.path.getsize(exe):>9} {text:>8} {data:>6} "
                  f"{min(aot_us):>9.1f} {min(jit_us):>9.1f} {min(aot_us) / min(jit_us):>8.2f} "
                  f"{diff:>10.2g}", flush=True)
    # The stacked LSTM for aarch64 (size only: it runs under QEMU here, not natively).
    if shutil.which("aarch64-linux-gnu-gcc"):
        out = os.path.join(tmp, "lstm_aarch64")
        module = os.path.join(ROOT, "examples", "hlo", "lstm_stacked.hlo")
        sh([a.kiln, "aot", module, "--name", "lstm", "--out-dir", out, "--target",
            "aarch64-linux-gnu"])
        exe = os.path.join(out, "run")
        sh(["aarch64-linux-gnu-gcc", "-O2", "-I" + out,
            "-I" + os.path.join(ROOT, "examples", "aot"), "-DKILN_AOT_NAME=lstm",
            '-DKILN_AOT_HEADER="lstm.h"', os.path.join(ROOT, "examples", "aot", "run_npy.c"),
            os.path.join(out, "lstm.o"), "-lm", "-o", exe])
        sh(["aarch64-linux-gnu-strip", exe])
        print("\naarch64 lstm_stacked (emitted GEMM), stripped program, `size`:")
        print(sh(["aarch64-linux-gnu-size", exe]).stdout.rstrip())
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
