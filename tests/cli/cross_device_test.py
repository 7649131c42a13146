#!/usr/bin/env python3
"""One device against a reference device (`kiln run --compare REF`) on every module we have.

usage: cross_device_test.py KILN SOURCE_ROOT DEVICE REF [ONLY]

ONLY, a comma-separated list of substrings, keeps the modules whose path holds one of them
(compare_test.py runs a deliberately wrong plugin on a few this way).

- Every module of tests/hlo_corpus, tests/jax_lowered, tests/regressions, examples/hlo and
  tests/numpy_e2e/modules: when REF runs
  it, DEVICE must agree within the dtype tolerance of `--compare`; when REF cannot (custom
  calls, collectives, memory), DEVICE must fail too, with one clear `error:` line and exit
  code 1, never a crash or a hang. tests/regressions holds reproducers of crashes that were
  fixed: REF must run those.
- The f32 example and NumPy e2e modules again in bf16 and in f16 (every `f32` of the text
  replaced), so low-precision rounding is compared too (see check_low_precision).
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "conformance"))
import wider_truth  # noqa: E402

KILN, ROOT, DEVICE, REF = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ONLY = [s for s in sys.argv[5].split(",") if s] if len(sys.argv) > 5 else []
TIMEOUT = 240
# KILN_CHECK_JOBS modules are judged at once (one by default: CI's machines have two cores; a
# GPU machine's sixteen make the whole test several times faster).
JOBS = max(1, int(os.environ.get("KILN_CHECK_JOBS", "1")))
failures = []
counts = {"agree": 0, "both fail": 0}
_lock = threading.Lock()
_judging = threading.local()  # the failure, if any, of the module this thread is judging


def fail(message):
    with _lock:
        failures.append(message)
    _judging.failure = message


def count(outcome):
    with _lock:
        counts[outcome] = counts.get(outcome, 0) + 1


def run(args):
    try:
        return subprocess.run([KILN, "run"] + args, capture_output=True, text=True,
                               timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None


# Modules the interpreter cannot finish within TIMEOUT on these machines: the device alone
# runs them (it must succeed), counted, not compared.
TOO_SLOW_FOR_THE_INTERPRETER = {
    # A ResNet training backward pass on 200x200 images (its cuDNN calls lowered to
    # convolutions): cpu-llvm takes about 14 s, the interpreter more than 4 minutes.
    "019_tf_cluster_cnn_backward.hlo",
}


def check(path, label):
    if REF == "interpreter" and os.path.basename(path) in TOO_SLOW_FOR_THE_INTERPRETER:
        with tempfile.TemporaryDirectory() as d:
            got = run([path, "--device", DEVICE, "--output-dir", d])
        if got is None or got.returncode != 0:
            rc = "timeout" if got is None else got.returncode
            fail(f"{label}: {DEVICE} alone gives rc={rc}")
        else:
            count("device only")
        return
    with tempfile.TemporaryDirectory() as d:
        ref = run([path, "--device", REF, "--output-dir", d])
        if ref is None:
            fail(f"{label}: {REF} timed out")
            return
        if ref.returncode != 0 and os.sep + "regressions" + os.sep in path:
            fail(f"{label}: {REF} fails on a regression module: "
                            f"{ref.stderr.strip().splitlines()[-1:]}")
            return
        if ref.returncode != 0:
            got = run([path, "--device", DEVICE, "--output-dir", d])
            if got is None or got.returncode != 1 or "error:" not in got.stderr:
                rc = "timeout" if got is None else got.returncode
                fail(f"{label}: {REF} fails but {DEVICE} gives rc={rc}")
            else:
                count("both fail")
            return
        got = run([path, "--device", DEVICE, "--compare", REF, "--output-dir", d])
        if got is not None and got.returncode == 3 and "f32" in open(path).read():
            # Beyond the f32 tolerance: an ill-conditioned f32 module (a softmax of logits
            # in the thousands after chained dots) is judged against its f64 version instead.
            worst = [l for l in got.stdout.splitlines() if "MISMATCH" in l][:1]
            check_against_truth(path, widened(path, "f32", "f64"), label, wider_truth.ULP["f32"], d,
                                worst)
            return
        if got is None or got.returncode != 0:
            err = "timeout" if got is None else got.stderr.strip().splitlines()[-1:]
            fail(f"{label}: {DEVICE} vs {REF}: {err}")
            return
        # `compare output_N ...` lines go to stdout, one per output; any not ok is a failure
        # even if the exit status somehow said otherwise.
        mismatches = [l for l in got.stdout.splitlines() if l.startswith("compare") and ": ok " not in l]
        if mismatches:
            fail(f"{label}: {mismatches[0]}")
        else:
            count("agree")


TMP = tempfile.mkdtemp(prefix="kiln_cross_device_")


def widened(path, narrow, wide):
    """`path` with every `narrow` type of its text written as `wide` (or narrower)."""
    out = os.path.join(TMP, f"{wide}_{os.path.basename(path)}")
    with open(out, "w") as f:
        f.write(wider_truth.widened_text(open(path).read(), [narrow], wide))
    return out


def check_against_truth(path, truth_path, label, ulp, device_outputs, why=()):
    """When DEVICE and REF differ beyond the tolerance of `path`'s type, each is measured
    against the same module in a wider type (tools/conformance/wider_truth.py); the device's
    outputs are those its compared run wrote to `device_outputs`."""
    reason = wider_truth.judge(KILN, path, truth_path, DEVICE, REF, ulp, TIMEOUT, device_outputs)
    if reason:
        fail(f"{label}: {DEVICE} vs {REF} beyond tolerance: {reason} {list(why)}")
    else:
        count("agree (vs wider)")


def check_low_precision(low_path, f32_path, label):
    """Low-precision modules must agree with the reference device like any other, or else
    be no further than 2x REF's error from the f32 module's result (check_against_truth)."""
    with tempfile.TemporaryDirectory() as d:
        got = run([low_path, "--device", DEVICE, "--compare", REF, "--output-dir", d])
        if got is not None and got.returncode == 0:
            count("agree")
            return
        check_against_truth(low_path, f32_path, label,
                            wider_truth.ULP["bf16" if "bf16" in label else "f16"], d)


modules = sorted(glob.glob(os.path.join(ROOT, "tests", "hlo_corpus", "*.hlo")) +
                 glob.glob(os.path.join(ROOT, "tests", "jax_lowered", "*.hlo")) +
                 glob.glob(os.path.join(ROOT, "tests", "regressions", "*.hlo")))
f32_modules = sorted(glob.glob(os.path.join(ROOT, "examples", "hlo", "*.hlo")) +
                     glob.glob(os.path.join(ROOT, "tests", "numpy_e2e", "modules", "*.hlo")))


def wanted(path):
    return not ONLY or any(s in path for s in ONLY)


modules = [m for m in modules if wanted(m)]
f32_modules = [m for m in f32_modules if wanted(m)]


def judged(label, judge, *args):
    """One line per module as it is judged (a run cut short still shows how far it got)."""
    _judging.failure = None
    judge(*args)
    line = ("FAIL " + _judging.failure) if _judging.failure else f"ok {label}"
    print(line, flush=True)


tasks = [(os.path.relpath(p, ROOT), check, p, os.path.relpath(p, ROOT)) for p in modules + f32_modules]
for low in ("bf16", "f16"):
    for path in f32_modules:
        if "f32" in open(path).read():
            label = f"{os.path.relpath(path, ROOT)} as {low}"
            tasks.append((label, check_low_precision, widened(path, "f32", low), path, label))
with ThreadPoolExecutor(JOBS) as pool:
    for done in [pool.submit(judged, *t) for t in tasks]:
        done.result()  # raises what a judge raised

shutil.rmtree(TMP, ignore_errors=True)
print(f"{DEVICE} vs {REF}: {counts['agree']} agree, {counts.get('agree (vs wider)', 0)} agree as errors "
      f"against the same module in a wider type, {counts['both fail']} fail on both, "
      f"{counts.get('device only', 0)} run on {DEVICE} alone (too slow for the interpreter)")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
