#!/usr/bin/env python3
"""`kiln run --save-executable / --load-executable`: a saved cpu-llvm executable runs with the
same outputs as a compiled one (bit for bit: the same object code), loading compiles nothing
(its compile_ms is a fraction of the compile's), and every file that does not fit is refused
with its reason: another module, another device, another build (a changed key), damaged,
truncated, or a device of `auto`. The interpreter's executables (HLO text) round-trip too.

usage: save_executable_test.py KILN SOURCE_ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

KILN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TMP = tempfile.mkdtemp(prefix="kiln_save_exe_test_")
failures = []


def run(*args):
    return subprocess.run([KILN, "run", *args], capture_output=True, text=True, timeout=600)


def fail(what, detail):
    failures.append(what)
    print(f"FAIL {what}: {detail}", flush=True)


def outputs(directory):
    files = sorted(f for f in os.listdir(directory) if f.endswith(".npy"))
    return [np.load(os.path.join(directory, f)) for f in files]


def compile_ms(stdout):
    m = re.search(r"compile_ms=([\d.]+)", stdout)
    return float(m[1]) if m else None


def check_round_trip(module, device):
    name = f"{os.path.basename(module)}.{device}"
    saved = os.path.join(TMP, name + ".kexe")
    a, b = os.path.join(TMP, name + ".compiled"), os.path.join(TMP, name + ".loaded")
    r1 = run(module, "--device", device, "--save-executable", saved, "--output-dir", a,
             "--benchmark", "2")
    r2 = run(module, "--device", device, "--load-executable", saved, "--output-dir", b,
             "--benchmark", "2")
    if r1.returncode != 0 or r2.returncode != 0:
        fail(name, f"save {r1.returncode} {r1.stderr[-300:]} / load {r2.returncode} "
                   f"{r2.stderr[-300:]}")
        return None
    for i, (x, y) in enumerate(zip(outputs(a), outputs(b))):
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
            fail(name, f"output {i} of the loaded executable differs from the compiled one")
    print(f"{name}: compile {compile_ms(r1.stdout)} ms, load {compile_ms(r2.stdout)} ms")
    return saved, compile_ms(r1.stdout), compile_ms(r2.stdout)


def expect_refusal(what, args, code, text):
    r = run(*args)
    if r.returncode != code or text not in r.stderr:
        fail(what, f"want exit {code} with '{text}', got {r.returncode}: {r.stderr.strip()[:400]}")


def main():
    lstm = os.path.join(ROOT, "examples", "hlo", "lstm_stacked_while.hlo")
    gpt2 = os.path.join(ROOT, "tests", "jax_lowered", "gpt2.hlo")
    softmax = os.path.join(ROOT, "examples", "hlo", "softmax.hlo")
    saved = None
    for module in (lstm, gpt2, softmax):
        got = check_round_trip(module, "cpu-llvm")
        if module == gpt2 and got:
            _, compiled, loaded = got
            # The load plans again but compiles nothing: far below the LLVM compile.
            if loaded is None or compiled is None or loaded * 5 > compiled:
                fail("gpt2 load time", f"load {loaded} ms against compile {compiled} ms")
        if module == softmax and got:
            saved = got[0]
    check_round_trip(softmax, "interpreter")
    if saved is None:
        return finish()

    expect_refusal("another module", [lstm, "--device", "cpu-llvm", "--load-executable", saved],
                   1, "saved from another module")
    expect_refusal("another device", [softmax, "--device", "interpreter", "--load-executable",
                                      saved], 1, "saved by device cpu-llvm, not interpreter")
    expect_refusal("auto load", [softmax, "--load-executable", saved], 1, "not auto")
    expect_refusal("auto save", [softmax, "--save-executable", os.path.join(TMP, "x")], 2,
                   "named --device")
    expect_refusal("both", [softmax, "--device", "cpu-llvm", "--save-executable", saved,
                            "--load-executable", saved], 2, "exclude each other")
    data = open(saved, "rb").read()
    damaged = [
        ("truncated", data[:len(data) // 2], "truncated or damaged"),
        ("not a file of ours", b"HloModule m\n" + data, "not a Kiln executable file"),
        # Another build: the plugin binary named in the objects' key differs.
        ("another build", data.replace(b"binary=", b"binary/", 1), "another build of cpu-llvm"),
        ("another target", re.sub(rb"\nllvm(\d)", rb"\nllvX\1", data, count=1),
         "another target or with other options"),
        ("damaged objects", data[:-40] + bytes(40), "damaged"),
        ("empty", b"", "empty file"),
    ]
    for what, content, text in damaged:
        path = os.path.join(TMP, what.replace(" ", "_") + ".kexe")
        with open(path, "wb") as f:
            f.write(content)
        r = run(softmax, "--device", "cpu-llvm", "--load-executable", path)
        if r.returncode != 1 or text not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
            fail(what, f"want exit 1 with '{text}', got {r.returncode}: {r.stderr.strip()[:400]}")
    return finish()


def finish():
    shutil.rmtree(TMP, ignore_errors=True)
    print(f"save_executable_test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
