#!/usr/bin/env python3
"""`kiln aot` end to end: compile modules ahead of time, link each into examples/aot/run_npy.c
with the system C compiler, run it, and compare every result with the interpreter's
(`kiln run --device interpreter`) element by element.

usage: aot_test.py KILN SOURCE_ROOT

- Hand-written modules for each way NAME_run places a value: results written in place,
  results copied (a parameter, a constant, a value returned twice), constants in read-only
  data, in-place dynamic-update-slice chains, multi-output fusions, a module with no
  arguments, integer, f64 and pred results, a convolution; and one linked with OpenBLAS
  (--gemm openblas) when the library is installed.
- The example modules and the corpus: each one either compiles and agrees with the
  interpreter, or is refused with one located `kiln aot: error:` line naming the instruction
  (control flow, custom calls, ...), never a crash.
- The header compiles as C++ and its class runs the module as NAME_run_simple does.
- aarch64 artifacts (`--target aarch64-linux-gnu`) linked by Debian's cross compiler and run
  under user-mode QEMU, compared the same way.
- `--parallel` artifacts linked with their runtime (libkiln_aot_runtime.a) and run on 2 and 3
  threads: split reductions, partitioned loops, the stacked LSTM.
- `kiln graph aot`: graphs with feeds and fetches, against the interpreter and `kiln graph
  run`; a feed or fetch that does not exist, an unfed Placeholder.
- Bad input: a bad name, a bad --gemm, a missing file, an unknown target; exit 2 or 1.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

KILN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CC = shutil.which("cc") or shutil.which("gcc")
CXX = shutil.which("c++") or shutil.which("g++")
TMP = tempfile.mkdtemp(prefix="kiln_aot_test_")
failures = []
counts = {"agree": 0, "refused": 0}

NP_TYPES = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "s64": np.int64,
            "s8": np.int8, "u8": np.uint8, "u32": np.uint32, "pred": np.bool_, "s16": np.int16,
            "u16": np.uint16, "u64": np.uint64, "f16": np.float16}
# Per-element tolerances (|a - b| <= atol + rtol * |b|, as numpy.allclose): the artifact and
# the interpreter sum in different orders.
TOLERANCE = {"f32": (1e-4, 1e-3), "f16": (1e-2, 1e-2), "f64": (1e-10, 1e-9)}


def fail(what, detail):
    failures.append(f"{what}: {detail}")
    print(f"FAIL {what}: {detail}", flush=True)


def aot(module, name, out, *extra):
    return subprocess.run([KILN, "aot", module, "--name", name, "--out-dir", out, *extra],
                          capture_output=True, text=True, timeout=600)


def header_buffers(header, name):
    """[(type, dims)] of the arguments and of the results, from NAME.h's tables."""
    def table(kind):
        out, i = [], 0
        while True:
            t = re.search(rf'#define {name.upper()}_{kind.upper()}{i}_TYPE "(\w+)"', header)
            if not t:
                return out
            d = re.search(rf"static const int64_t {name}_{kind}{i}_dims\[\d+\] = \{{([^}}]*)\}};",
                          header)
            r = int(re.search(rf"#define {name.upper()}_{kind.upper()}{i}_RANK (\d+)", header)[1])
            dims = [int(x) for x in d[1].split(",")][:r] if r else []
            out.append((t[1], dims))
            i += 1
    return table("arg"), table("result")


def random_input(dtype, dims, rng):
    if dtype == "pred":
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    if dtype.startswith(("s", "u")):
        return rng.integers(0, 8, size=dims).astype(NP_TYPES[dtype])
    return rng.uniform(-1, 1, size=dims).astype(NP_TYPES[dtype])


# aarch64: Debian's cross compiler links the artifact, user-mode QEMU runs it.
CROSS_CC = shutil.which("aarch64-linux-gnu-gcc")
QEMU = shutil.which("qemu-aarch64")
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"


def check_module(path, name, extra=(), libs=(), aarch64=False, threads=0):
    """Compile, link, run and compare; True when it agreed. Refusals return the failed run."""
    out = os.path.join(TMP, name)
    if aarch64:
        extra = tuple(extra) + ("--target", "aarch64-linux-gnu")
    r = aot(path, name, out, *extra)
    if r.returncode != 0:
        return r
    header = open(os.path.join(out, name + ".h")).read()
    args, results = header_buffers(header, name)
    exe = os.path.join(out, "run")
    if threads:  # a --parallel artifact: its runtime beside it
        libs = tuple(libs) + (os.path.join(out, "libkiln_aot_runtime.a"), "-lpthread")
    link = subprocess.run(
        [CROSS_CC if aarch64 else CC, "-O2", "-Wall", "-Werror", "-I" + out, "-I" + os.path.join(ROOT, "examples", "aot"),
         f"-DKILN_AOT_NAME={name}", f'-DKILN_AOT_HEADER="{name}.h"',
         os.path.join(ROOT, "examples", "aot", "run_npy.c"), os.path.join(out, name + ".o"),
         "-lm", *libs, "-o", exe], capture_output=True, text=True)
    if link.returncode != 0:
        fail(path, "the artifact does not link: " + link.stderr[-2000:])
        return False
    rng = np.random.default_rng(7)
    inputs = []
    for i, (dtype, dims) in enumerate(args):
        f = os.path.join(out, f"in{i}.npy")
        np.save(f, random_input(dtype, dims, rng))
        inputs.append(f)
    got_dir, want_dir = os.path.join(out, "got"), os.path.join(out, "want")
    os.makedirs(got_dir)
    os.makedirs(want_dir)
    runner = [QEMU, "-L", AARCH64_SYSROOT] if aarch64 else []
    options = ["--threads", str(threads)] if threads else []
    ran = subprocess.run(runner + [exe] + options + inputs + [got_dir], capture_output=True,
                         text=True, timeout=300)
    if ran.returncode != 0:
        fail(path, f"the linked program exited {ran.returncode}: {ran.stderr[-1000:]}")
        return False
    ref = subprocess.run([KILN, "run", path, "--device", "interpreter", "--output-dir", want_dir]
                         + sum((["--input", f] for f in inputs), []),
                         capture_output=True, text=True, timeout=600)
    if ref.returncode != 0:
        fail(path, "the interpreter cannot run a module AOT compiled: " + ref.stderr[-500:])
        return False
    for j, (dtype, dims) in enumerate(results):
        got = np.load(os.path.join(got_dir, f"output_{j}.npy"))
        want = np.load(os.path.join(want_dir, f"output_{j}.npy"))
        if got.shape != want.shape or got.dtype != want.dtype:
            fail(path, f"result {j}: {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}")
            return False
        atol, rtol = TOLERANCE.get(dtype, (0, 0))
        bad = ~np.isclose(got, want, atol=atol, rtol=rtol, equal_nan=True)
        if bad.any() and dtype in ("f32", "f16"):
            # Where cpu-llvm's JIT (the same code generator) is itself further from the
            # interpreter than the tolerance (long f32 sums in another order: GPT-2), the
            # artifact must be as close as the JIT is.
            jit = jit_distance(path, inputs, j, want, os.path.join(out, "jit"))
            aot_distance = float(np.nanmax(np.abs(got.astype(np.float64) - want)))
            if jit is not None and aot_distance <= 1.5 * jit:
                print(f"note: {os.path.relpath(path, ROOT)} result {j}: off the interpreter by "
                      f"{aot_distance:.3g} (cpu-llvm's JIT: {jit:.3g})")
                continue
        if bad.any():
            at = tuple(int(x) for x in np.argwhere(bad)[0])
            fail(path, f"result {j}: {int(bad.sum())} elements differ, first at {at}: "
                       f"{got[at]} vs the interpreter's {want[at]}")
            return False
    counts["agree"] += 1
    return True


def jit_distance(path, inputs, j, want, out):
    """The largest |cpu-llvm JIT - interpreter| of result j, or None when the JIT fails."""
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([KILN, "run", path, "--device", "cpu-llvm", "--output-dir", out]
                       + sum((["--input", f] for f in inputs), []),
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None
    jit = np.load(os.path.join(out, f"output_{j}.npy"))
    return float(np.nanmax(np.abs(jit.astype(np.float64) - want)))


def expect_refusal(path, r):
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1 or len(lines) != 1 or not lines[0].startswith("kiln aot: error: "):
        fail(path, f"refused without one clean error line (exit {r.returncode}): {r.stderr[-800:]}")
        return
    counts["refused"] += 1


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"


def softmax_module(rows, cols, also_sums):
    """Softmax over the rows of f32[rows, cols]; with also_sums, (y, the row sums)."""
    y = f"  {'' if also_sums else 'ROOT '}y = f32[{rows},{cols}] divide(e, sb)"
    root = f"  ROOT t = (f32[{rows},{cols}], f32[{rows}]) tuple(y, s)\n" if also_sums else ""
    return ("max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT c = f32[] maximum(a, b)\n}\n" + ADD + f"""
ENTRY main {{
  x = f32[{rows},{cols}] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = f32[{rows},{cols}] broadcast(m), dimensions={{0}}
  xm = f32[{rows},{cols}] subtract(x, mb)
  e = f32[{rows},{cols}] exponential(xm)
  s = f32[{rows}] reduce(e, zero), dimensions={{1}}, to_apply=add
  sb = f32[{rows},{cols}] broadcast(s), dimensions={{0}}
{y}
{root}}}
""")
MODULES = {
    # A result written in place, a parameter and a constant returned (copied), one value twice.
    "placements": ADD + """
ENTRY main {
  x = f32[8,64] parameter(0)
  w = f32[64,32] parameter(1)
  k = f32[32] constant({0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31})
  zero = f32[] constant(0)
  d = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  kb = f32[8,32] broadcast(k), dimensions={1}
  s = f32[8,32] add(d, kb)
  z = f32[8,32] broadcast(zero), dimensions={}
  r = f32[8,32] maximum(s, z)
  m = f32[8] reduce(r, zero), dimensions={1}, to_apply=add
  ROOT t = (f32[8,32], f32[8], f32[64,32], f32[32], f32[8,32]) tuple(r, m, w, k, r)
}
""",
    # Rows written one by one into a fresh buffer (in place), and into a parameter (copied).
    "update_rows": """
ENTRY main {
  p = f32[16,8] parameter(0)
  u = f32[1,8] parameter(1)
  i = s32[] parameter(2)
  a = f32[16,8] exponential(p)
  zero = s32[] constant(0)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  i2 = s32[] add(i1, one)
  d1 = f32[16,8] dynamic-update-slice(a, u, i, zero)
  d2 = f32[16,8] dynamic-update-slice(d1, u, i1, zero)
  d3 = f32[16,8] dynamic-update-slice(d2, u, i2, zero)
  q = f32[16,8] dynamic-update-slice(p, u, i2, zero)
  ROOT t = (f32[16,8], f32[16,8], f32[16,8]) tuple(d3, q, p)
}
""",
    # Softmax: row statistics generated inside the consumers; several outputs.
    "softmax": softmax_module(32, 100, also_sums=True),
    # GEMM steps with either operand stored transposed, batched, an f64 dot, and one whose
    # sizes leave edges around the register tiles and a partial block of k.
    "gemm_forms": """
ENTRY main {
  a = f32[48,40] parameter(0)
  b = f32[56,48] parameter(1)
  x = f32[4,16,33] parameter(2)
  y = f32[4,33,40] parameter(3)
  p = f64[20,30] parameter(4)
  q = f64[30,40] parameter(5)
  g = f32[37,600] parameter(6)
  h = f32[600,530] parameter(7)
  edges = f32[37,530] dot(g, h), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  tn = f32[40,56] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  nt = f32[56,40] dot(b, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bd = f32[4,16,40] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  d64 = f64[20,40] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[40,56], f32[56,40], f32[4,16,40], f64[20,40], f32[37,530]) tuple(tn, nt, bd, d64, edges)
}
""",
    # A loop that swaps two state elements (staged copies), counts, and writes one row of a
    # third per iteration (updated in its state slot).
    "while_loop": """
cond {
  s = (s32[], f32[4,3], f32[4,3], f32[6,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4,3], f32[4,3], f32[6,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[4,3] get-tuple-element(s), index=1
  b = f32[4,3] get-tuple-element(s), index=2
  rows = f32[6,3] get-tuple-element(s), index=3
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a2 = f32[4,3] add(a, b)
  zero = s32[] constant(0)
  row = f32[1,3] slice(a2), slice={[1:2], [0:3]}
  rows2 = f32[6,3] dynamic-update-slice(rows, row, i, zero)
  ROOT t = (s32[], f32[4,3], f32[4,3], f32[6,3]) tuple(i1, b, a, rows2)
}

ENTRY main {
  a = f32[4,3] parameter(0)
  b = f32[4,3] parameter(1)
  rows = f32[6,3] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[4,3], f32[4,3], f32[6,3]) tuple(zero, a, b, rows)
  w = (s32[], f32[4,3], f32[4,3], f32[6,3]) while(init), condition=cond, body=body
  wa = f32[4,3] get-tuple-element(w), index=1
  wb = f32[4,3] get-tuple-element(w), index=2
  wr = f32[6,3] get-tuple-element(w), index=3
  wi = s32[] get-tuple-element(w), index=0
  ROOT r = (f32[4,3], f32[4,3], f32[6,3], s32[], f32[6,3]) tuple(wa, wb, wr, wi, rows)
}
""",
    # Conditionals on a pred and on an index (out of range: the last branch).
    "conditional": """
neg {
  x = f32[8] parameter(0)
  ROOT n = f32[8] negate(x)
}

expo {
  x = f32[8] parameter(0)
  ROOT e = f32[8] exponential(x)
}

twice {
  x = f32[8] parameter(0)
  ROOT t = f32[8] add(x, x)
}

ENTRY main {
  x = f32[8] parameter(0)
  k = s32[] parameter(1)
  p = pred[] parameter(2)
  c1 = f32[8] conditional(p, x, x), true_computation=neg, false_computation=expo
  c2 = f32[8] conditional(k, x, x, x), branch_computations={neg, expo, twice}
  big = s32[] constant(7)
  c3 = f32[8] conditional(big, x, x, x), branch_computations={neg, expo, twice}
  ROOT t = (f32[8], f32[8], f32[8]) tuple(c1, c2, c3)
}
""",
    # Large enough that its kernels are split across threads with --parallel.
    "softmax_large": softmax_module(512, 1000, also_sums=False),
    "no_arguments": """
ENTRY main {
  i = s32[5,7] iota(), iota_dimension=1
  c = s32[5,7] constant({{1,2,3,4,5,6,7},{1,2,3,4,5,6,7},{1,2,3,4,5,6,7},{1,2,3,4,5,6,7},{1,2,3,4,5,6,7}})
  ROOT m = s32[5,7] multiply(i, c)
}
""",
    "types": """
ENTRY main {
  a = f64[6,5] parameter(0)
  b = s32[6,5] parameter(1)
  c = f64[6,5] convert(b)
  s = f64[6,5] add(a, c)
  g = pred[6,5] compare(a, c), direction=GT
  n = s32[6,5] negate(b)
  ss = f64[6,5] multiply(s, s)
  r = f64[6,5] sqrt(ss)
  ROOT t = (f64[6,5], pred[6,5], s32[6,5]) tuple(r, g, n)
}
""",
    "convolution": """
ENTRY main {
  x = f32[2,9,9,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,7,7,4] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f
}
""",
    # A scalar reduction over a large input (one kernel, no split parts in the artifact).
    "big_sum": ADD + """
ENTRY main {
  x = f32[512,1024] parameter(0)
  zero = f32[] constant(0)
  t = f32[512,1024] tanh(x)
  ROOT s = f32[] reduce(t, zero), dimensions={0,1}, to_apply=add
}
""",
}


def main():
    if CC is None:
        print("aot_test: no C compiler (cc) on PATH: cannot link artifacts", file=sys.stderr)
        return 1
    mod_dir = os.path.join(TMP, "modules")
    os.makedirs(mod_dir)
    for name, body in MODULES.items():
        path = os.path.join(mod_dir, name + ".hlo")
        with open(path, "w") as f:
            f.write(f"HloModule {name}\n\n{body}")
        r = check_module(path, name)
        if not isinstance(r, bool):
            fail(path, f"refused (exit {r.returncode}): {r.stderr.strip()}")

    # Large dots through OpenBLAS, when this machine has the library to link.
    have_openblas = subprocess.run([CC, "-x", "c", "-", "-lopenblas", "-o", os.devnull],
                                   input="int main(void){return 0;}", capture_output=True,
                                   text=True).returncode == 0
    if have_openblas:
        for hlo in ("dense_relu.hlo", "lstm_cell.hlo"):
            path = os.path.join(ROOT, "examples", "hlo", hlo)
            r = check_module(path, "blas_" + hlo[:-4], ("--gemm", "openblas"), ("-lopenblas",))
            if not isinstance(r, bool):
                fail(path, f"refused with --gemm openblas: {r.stderr.strip()}")
            obj = open(os.path.join(TMP, "blas_" + hlo[:-4], "blas_" + hlo[:-4] + ".o"), "rb").read()
            if b"cblas_sgemm" not in obj:
                fail(path, "--gemm openblas did not call cblas_sgemm")
    else:
        print("note: OpenBLAS cannot be linked here; --gemm openblas not tried")
    have_onednn = subprocess.run([CC, "-x", "c", "-", "-ldnnl", "-o", os.devnull],
                                 input="int main(void){return 0;}", capture_output=True,
                                 text=True).returncode == 0
    if have_onednn:
        path = os.path.join(TMP, "modules", "gemm_forms.hlo")
        r = check_module(path, "dnnl_gemm_forms", ("--gemm", "onednn"), ("-ldnnl",))
        if not isinstance(r, bool):
            fail(path, f"refused with --gemm onednn: {r.stderr.strip()}")
        obj = open(os.path.join(TMP, "dnnl_gemm_forms", "dnnl_gemm_forms.o"), "rb").read()
        if b"dnnl_sgemm" not in obj:
            fail(path, "--gemm onednn did not call dnnl_sgemm")

    # --parallel: large kernels (and split reductions) across the runtime's thread pool.
    for hlo, threads in (("big_sum", 2), ("big_sum", 3), ("softmax_large", 2)):
        path = os.path.join(mod_dir, hlo + ".hlo")
        r = check_module(path, f"par{threads}_{hlo}", ("--parallel",), threads=threads)
        if not isinstance(r, bool):
            fail(path, f"refused with --parallel: {r.stderr.strip()}")
        elif b"kiln_aot_parallel_for" not in open(
                os.path.join(TMP, f"par{threads}_{hlo}", f"par{threads}_{hlo}.o"), "rb").read():
            fail(path, "--parallel did not call the thread pool")
    for hlo, name in (("examples/hlo/lstm_stacked.hlo", "par_lstm"),
                      ("examples/hlo/dense_relu.hlo", "par_dense"),
                      ("examples/aot/mnist_classifier.hlo", "par_mnist")):
        path = os.path.join(ROOT, hlo)
        r = check_module(path, name, ("--parallel",), threads=2)
        if not isinstance(r, bool):
            fail(path, f"refused with --parallel: {r.stderr.strip()}")
    # Column strips of emitted GEMMs across threads, with edges and several blocks of k.
    path = os.path.join(mod_dir, "gemm_forms.hlo")
    r = check_module(path, "par_gemm_forms", ("--parallel",), threads=3)
    if not isinstance(r, bool):
        fail(path, f"refused with --parallel: {r.stderr.strip()}")

    # The same artifacts for aarch64, run under QEMU.
    if CROSS_CC and QEMU:
        for name in ("placements", "update_rows", "softmax", "types", "gemm_forms"):
            path = os.path.join(mod_dir, name + ".hlo")
            r = check_module(path, "arm_" + name, aarch64=True)
            if not isinstance(r, bool):
                fail(path, f"refused for aarch64: {r.stderr.strip()}")
        path = os.path.join(ROOT, "examples", "hlo", "lstm_stacked.hlo")
        r = check_module(path, "arm_lstm", aarch64=True)
        if not isinstance(r, bool):
            fail(path, f"refused for aarch64: {r.stderr.strip()}")
        obj = open(os.path.join(TMP, "arm_lstm", "arm_lstm.o"), "rb").read(20)
        if obj[18] != 183:  # e_machine EM_AARCH64
            fail(path, "the --target aarch64-linux-gnu object is not an AArch64 ELF file")
    else:
        print("note: no aarch64-linux-gnu-gcc or qemu-aarch64 (setup.sh installs them); "
              "aarch64 not tried")

    # Every example and corpus module: agrees with the interpreter, or a clean refusal.
    paths = sorted(glob.glob(os.path.join(ROOT, "examples", "hlo", "*.hlo")) +
                   glob.glob(os.path.join(ROOT, "examples", "aot", "*.hlo")) +
                   glob.glob(os.path.join(ROOT, "tests", "hlo_corpus", "0*.hlo")) +
                   glob.glob(os.path.join(ROOT, "tests", "jax_lowered", "*.hlo")))
    for n, path in enumerate(paths):
        name = f"m{n}"
        r = check_module(path, name)
        if not isinstance(r, bool):
            expect_refusal(path, r)
            print(f"refused {os.path.relpath(path, ROOT)}: {r.stderr.strip()[:160]}")

    check_link_line()
    check_graph_aot()
    check_cpp_class()
    check_bad_input()
    print(f"aot_test: {counts['agree']} modules agree with the interpreter, "
          f"{counts['refused']} refused cleanly, {len(failures)} failures")
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failures else 0


def check_link_line():
    """The issue's link line works for every artifact: `cc prog.c DIR/*.o DIR/*.a -lm
    -lpthread` (DIR always holds libkiln_aot_runtime.a, empty for another architecture)."""
    prog = os.path.join(TMP, "link_line.c")
    with open(prog, "w") as f:
        f.write('#include "m.h"\nint main(void) { return m_num_args == 1 ? 0 : 1; }\n')
    for extra, cc in (([], CC), (["--parallel"], CC),
                      (["--target", "aarch64-linux-gnu"], CROSS_CC)):
        if cc is None:
            continue
        out = os.path.join(TMP, "link_line_" + "_".join(a.strip("-") for a in extra))
        r = aot(os.path.join(TMP, "modules", "softmax.hlo"), "m", out, *extra)
        if r.returncode != 0:
            fail("link line " + " ".join(extra), r.stderr)
            continue
        cmd = f"{cc} -I{out} {prog} {out}/*.o {out}/*.a -lm -lpthread -o {out}/prog"
        linked = subprocess.run(cmd, shell=True, capture_output=True, text=True)
        if linked.returncode != 0:
            fail("link line " + " ".join(extra), f"{cmd}: {linked.stderr[-800:]}")


def check_graph_aot():
    """`kiln graph aot`: a graph's fetches with its fed Placeholders, linked and run, against
    `kiln graph run --device interpreter` on the same inputs; bad feeds and fetches."""
    cases = [("model_fn", [], []), ("dense", ["--feed", "x=f32[8,3]", "--feed", "w"], []),
             ("model_fn", [], ["--fetch", "yz", "--fetch", "s"])]
    for n, (graph, feeds, fetches) in enumerate(cases):
        path = os.path.join(ROOT, "examples", "graph", graph + ".graph")
        name = f"graph{n}"
        out = os.path.join(TMP, name)
        r = subprocess.run([KILN, "graph", "aot", path, "--name", name, "--out-dir", out]
                           + feeds + fetches, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail(path, f"graph aot {feeds + fetches}: {r.stderr.strip()}")
            continue
        hlo = os.path.join(out, name + ".hlo")
        exe = os.path.join(out, "run")
        subprocess.run([CC, "-O2", "-I" + out, "-I" + os.path.join(ROOT, "examples", "aot"),
                        f"-DKILN_AOT_NAME={name}", f'-DKILN_AOT_HEADER="{name}.h"',
                        os.path.join(ROOT, "examples", "aot", "run_npy.c"),
                        os.path.join(out, name + ".o"), "-lm", "-o", exe], check=True)
        args, results = header_buffers(open(os.path.join(out, name + ".h")).read(), name)
        rng = np.random.default_rng(3)
        inputs = []
        for i, (dtype, dims) in enumerate(args):
            inputs.append(os.path.join(out, f"in{i}.npy"))
            np.save(inputs[-1], random_input(dtype, dims, rng))
        got, want = os.path.join(out, "got"), os.path.join(out, "want")
        os.makedirs(got)
        subprocess.run([exe] + inputs + [got], check=True, capture_output=True)
        # The graph run by the interpreter (with its own fetches: the lowered module's).
        ref = subprocess.run([KILN, "run", hlo, "--device", "interpreter", "--output-dir", want]
                             + sum((["--input", f] for f in inputs), []),
                             capture_output=True, text=True)
        graph_ref = subprocess.run([KILN, "graph", "run", path, "--device", "interpreter",
                                    "--output-dir", want + "_graph"]
                                   + sum((["--input", f] for f in inputs), []),
                                   capture_output=True, text=True)
        if ref.returncode != 0 or graph_ref.returncode != 0:
            fail(path, f"reference runs failed: {ref.stderr[-300:]} {graph_ref.stderr[-300:]}")
            continue
        for j in range(len(results)):
            a = np.load(os.path.join(got, f"output_{j}.npy"))
            b = np.load(os.path.join(want, f"output_{j}.npy"))
            if not np.allclose(a, b, atol=1e-5, rtol=1e-4):
                fail(path, f"graph aot result {j} differs from the interpreter")
        if not fetches:  # the graph's own outputs: the graph run gives the same values
            for j in range(len(results)):
                a = np.load(os.path.join(got, f"output_{j}.npy"))
                b = np.load(os.path.join(want + "_graph", f"output_{j}.npy"))
                if not np.allclose(a, b, atol=1e-5, rtol=1e-4):
                    fail(path, f"graph aot result {j} differs from kiln graph run")
        counts["agree"] += 1
    model_fn = os.path.join(ROOT, "examples", "graph", "model_fn.graph")
    out = os.path.join(TMP, "graph_bad")
    for extra, text in [(["--feed", "nope"], "no Placeholder named 'nope'"),
                        (["--feed", "x", "--feed", "y"], "model_fn.graph:4:1: Placeholder z is not fed"),
                        (["--fetch", "nope:1"], "no node named 'nope'"),
                        (["--feed", "x=f32[oops"], "expected NAME=SHAPE")]:
        r = subprocess.run([KILN, "graph", "aot", model_fn, "--name", "g", "--out-dir", out]
                           + extra, capture_output=True, text=True)
        if r.returncode == 0 or text not in r.stderr:
            fail("graph aot " + " ".join(extra), f"want '{text}', got {r.returncode}: {r.stderr}")


def check_cpp_class():
    """The header's C++ class runs the module: same results as NAME_run_simple."""
    out = os.path.join(TMP, "placements")
    prog = os.path.join(out, "class.cc")
    with open(prog, "w") as f:
        f.write("""#include <cstdio>
#include <cstring>
#include "placements.h"
int main() {
  kiln_aot::placements m;
  if (!m.ok()) return 2;
  for (int i = 0; i < PLACEMENTS_ARG0_ELEMENTS; ++i) m.arg0()[i] = 0.01f * (i % 17) - 0.05f;
  for (int i = 0; i < PLACEMENTS_ARG1_ELEMENTS; ++i) m.arg1()[i] = 0.02f * (i % 13) - 0.1f;
  if (!m.Run()) return 3;
  static float r[5][2048];
  void* results[5] = {r[0], r[1], r[2], r[3], r[4]};
  const void* args[2] = {m.arg0(), m.arg1()};
  if (placements_run_simple(args, results) != 0) return 4;
  for (int j = 0; j < kiln_aot::placements::kNumResults; ++j)
    if (std::memcmp(r[j], m.result_data(j), placements_result_bytes[j]) != 0) return 10 + j;
  std::printf("%g %g\\n", m.result0()[0], m.result3()[31]);
  return 0;
}
""")
    exe = os.path.join(out, "class")
    built = subprocess.run([CXX, "-std=c++17", "-O1", "-Wall", "-Werror", "-I" + out, prog,
                            os.path.join(out, "placements.o"), "-lm", "-o", exe],
                           capture_output=True, text=True)
    if built.returncode != 0:
        fail("C++ class", built.stderr[-1500:])
        return
    ran = subprocess.run([exe], capture_output=True, text=True)
    if ran.returncode != 0 or ran.stdout.split()[1] != "31":
        fail("C++ class", f"exit {ran.returncode}, output {ran.stdout!r}")


def check_bad_input():
    path = os.path.join(TMP, "modules", "softmax.hlo")
    out = os.path.join(TMP, "bad")
    cases = [
        (["aot", path, "--name", "9lives", "--out-dir", out], 2, "not a C identifier"),
        (["aot", path, "--name", "s", "--out-dir", out, "--gemm", "mkl"], 2, "--gemm"),
        (["aot", path, "--name", "s"], 2, "--out-dir"),
        (["aot", os.path.join(TMP, "missing.hlo"), "--name", "s", "--out-dir", out], 1,
         "cannot open"),
        (["aot", path, "--name", "s", "--out-dir", out, "--target", "nonsense-cpu-os"], 1,
         "target"),
        (["aot", path, "--name", "s", "--out-dir", out, "--target", "aarch64-linux-gnu",
          "--parallel"], 1, "this host's architecture only"),
    ]
    malformed = os.path.join(TMP, "malformed.hlo")
    with open(malformed, "w") as f:
        f.write("HloModule m\nENTRY main {\n  ROOT x = f32[2] parameter(0\n}\n")
    cases.append((["aot", malformed, "--name", "m", "--out-dir", out], 1, "malformed.hlo:4:1:"))
    for args, code, text in cases:
        r = subprocess.run([KILN] + args, capture_output=True, text=True, timeout=120)
        if r.returncode != code or text not in r.stderr or "Segmentation" in r.stderr:
            fail("bad input " + " ".join(args[3:]),
                 f"want exit {code} and '{text}', got {r.returncode}: {r.stderr.strip()[:300]}")


if __name__ == "__main__":
    sys.exit(main())
