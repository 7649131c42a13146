#!/usr/bin/env python3
"""Conformance runner: a folder of HLO modules through Kiln, with totals and buckets of
failures (issue #16's measure).

usage: run_conformance.py KILN DIR [--xla-python PY] [--device DEV] [--reference REF]
                          [--jobs N] [--timeout S] [--limit N] [--json OUT] [--buckets K]
                          [--no-run]

For each DIR/*.hlo (sorted):
  1. with --xla-python (a Python with jaxlib, e.g. .venv-peers/bin/python): whether XLA's own
     parser and verifier accept the module (jaxlib._hlo.hlo_module_from_text); the totals
     then count only what XLA accepts, as the issue does;
  2. `kiln print`: parses and verifies, or fails with a located error (bucketed by its message
     with names, numbers and locations taken out);
  3. printing is a fixed point: `kiln print` of the printed text gives the same text;
  4. unless --no-run, `kiln run --device DEV --compare REF` (default cpu-llvm against the interpreter) with
     generated inputs: both agree, they differ (exit 3), one refuses cleanly (exit 1: bucketed
     by message), or something crashes (a signal) or hangs (past --timeout, default 60 s).
     A float module that differs is judged again against its f64 twin run on REF
     (wider_truth.py, with NumPy): "agree vs f64" when DEV is no further from it than twice
     REF's own error, else a mismatch.
Prints the totals, then the K largest buckets of each kind with an example module; --json
writes one record per module. Exit status 0 unless a module crashed or hung, or the runner
itself failed.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

try:  # NumPy is needed only to judge mismatches against a module's f64 twin
    import wider_truth
except ImportError:
    wider_truth = None

XLA_CHECK = r"""
import sys
import jaxlib._hlo as hlo
for path in sys.argv[1:]:
    try:
        hlo.hlo_module_from_text(open(path).read())
        print(path + "\tok", flush=True)
    except Exception as e:
        msg = " ".join(str(e).split())[:300]
        print(path + "\t" + msg, flush=True)
"""


def normalize(message):
    """The error's kind: locations, quoted names, numbers and shapes taken out."""
    m = message.strip().splitlines()[-1] if message.strip() else "(no message)"
    m = re.sub(r"^kiln \w+: error: ", "", m)
    m = re.sub(r"^\S+\.hlo(:\d+)*:\s*", "", m)
    m = re.sub(r"'[^']*'", "'_'", m)
    m = re.sub(r"%[\w.\-]+", "%_", m)
    m = re.sub(r"\b[a-z]+\d*\[[\d,<=?]*\](\{[\d,]*\})?", "SHAPE", m)
    m = re.sub(r"\d+", "N", m)
    return m[:160]


def run(cmd, timeout, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def check_module(kiln, path, device, reference, timeout, tmp, execute=True):
    rec = {"module": os.path.basename(path)}
    rc, out, err = run([kiln, "print", path], timeout)
    if rc != 0:
        rec["parse"] = "crash" if rc not in (1, 2, "timeout") else (
            "timeout" if rc == "timeout" else normalize(err))
        return rec
    rec["parse"] = "ok"
    printed = os.path.join(tmp, rec["module"])
    with open(printed, "w") as f:
        f.write(out)
    rc2, out2, err2 = run([kiln, "print", printed], timeout)
    rec["fixed_point"] = "ok" if rc2 == 0 and out2 == out else (
        "reprint fails: " + normalize(err2) if rc2 != 0 else "printed text changes")
    if not execute:
        return rec
    # The device's outputs of this run, for the f64 judgement of a mismatch; removed once the
    # module is judged (some outputs are gigabytes, and the folder lives for the whole run).
    with tempfile.TemporaryDirectory(dir=tmp) as outs:
        rc, out, err = run([kiln, "run", path, "--device", device, "--compare", reference,
                            "--output-dir", outs], timeout)
        if rc == 3:
            rec["run"] = "mismatch"
            rec["detail"] = (out + err).strip().splitlines()[-2:] if (out + err).strip() else []
            reason = against_wider(kiln, path, device, reference, timeout, tmp, outs)
            if reason is None:
                rec["run"] = "agree vs f64"
            elif reason:
                rec["detail"].append(reason)
            return rec
    if rc == 0:
        rec["run"] = "agree"
    elif rc == "timeout":
        rec["run"] = "timeout"
    elif isinstance(rc, int) and rc < 0:
        rec["run"] = "crash"
        rec["detail"] = f"signal {-rc}"
    else:
        rec["run"] = "refused"
        rec["reason"] = normalize(err)
    return rec


def against_wider(kiln, path, device, reference, timeout, tmp, device_outputs):
    """For a float module whose devices differ beyond the dtype tolerance: None when the device
    is no further from the module's f64 twin than twice the reference (wider_truth.py), else
    the reason; "" when that cannot be judged (no NumPy, no narrow float type)."""
    if wider_truth is None:
        return ""
    text = open(path).read()
    narrow = [t for t in ("bf16", "f16", "f32") if t + "[" in text]
    if not narrow:
        return ""
    wide = os.path.join(tmp, "f64_" + os.path.basename(path))
    with open(wide, "w") as f:
        f.write(wider_truth.widened_text(text, narrow, "f64"))
    ulp = max(wider_truth.ULP[t] for t in narrow)
    return wider_truth.judge(kiln, path, wide, device, reference, ulp, timeout, device_outputs)


def xla_acceptance(python, paths, jobs):
    """path -> 'ok' or XLA's message, from `jobs` batches in the given Python."""
    result = {}
    chunks = [paths[i::jobs] for i in range(jobs)]
    procs = [subprocess.Popen([python, "-c", XLA_CHECK] + chunk, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for chunk in chunks if chunk]
    for p in procs:
        out, _ = p.communicate()
        for line in out.splitlines():
            path, _, status = line.partition("\t")
            result[path] = status
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("dir")
    ap.add_argument("--xla-python")
    ap.add_argument("--device", default="cpu-llvm")
    ap.add_argument("--reference", default="interpreter")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--buckets", type=int, default=12)
    ap.add_argument("--no-run", action="store_true", help="parse, verify and print only")
    a = ap.parse_args()
    kiln = os.path.abspath(a.kiln)
    paths = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith(".hlo"))
    if a.limit:
        paths = paths[:a.limit]
    if not paths:
        print(f"run_conformance: no .hlo files in {a.dir}", file=sys.stderr)
        return 1
    accepted = None
    if a.xla_python:
        accepted = xla_acceptance(a.xla_python, paths, a.jobs)
        if not accepted:
            print(f"run_conformance: {a.xla_python} could not check any module with jaxlib",
                  file=sys.stderr)
            return 1
    records = []
    with tempfile.TemporaryDirectory(prefix="kiln_conformance_") as tmp:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futures = [pool.submit(check_module, kiln, p, a.device, a.reference, a.timeout, tmp,
                                   not a.no_run)
                       for p in paths]
            for p, f in zip(paths, futures):
                rec = f.result()
                if accepted is not None:
                    rec["xla"] = accepted.get(p, "not checked")
                records.append(rec)
    counted = [r for r in records if accepted is None or r.get("xla") == "ok"]
    total = len(counted)
    parsed = [r for r in counted if r["parse"] == "ok"]
    fixed = [r for r in parsed if r.get("fixed_point") == "ok"]
    runs = collections.Counter(r["run"] for r in parsed if "run" in r)
    pct = lambda n: f"{100.0 * n / total:.1f}%" if total else "n/a"
    print(f"modules: {len(records)}" + (
        f", XLA accepts {total} ({len(records) - total} rejected by XLA or not checked)"
        if accepted is not None else ""))
    print(f"parse and verify: {len(parsed)} of {total} ({pct(len(parsed))})")
    print(f"print is a fixed point: {len(fixed)} of {total} ({pct(len(fixed))})")
    if not a.no_run:
        print(f"run on {a.device} vs {a.reference}: " + ", ".join(
            f"{k} {runs[k]}"
            for k in ("agree", "agree vs f64", "mismatch", "refused", "crash", "timeout")))
    for title, key, pick in (("parse/verify failures", "parse", lambda r: r["parse"] != "ok"),
                             ("fixed-point failures", "fixed_point",
                              lambda r: r.get("fixed_point", "ok") != "ok"),
                             ("refusals", "reason", lambda r: r.get("run") == "refused")):
        bucket = collections.Counter()
        example = {}
        for r in counted:
            if pick(r):
                bucket[r[key]] += 1
                example.setdefault(r[key], r["module"])
        if bucket:
            print(f"\n{title} ({sum(bucket.values())}), largest buckets:")
            for msg, n in bucket.most_common(a.buckets):
                print(f"  {n:6d}  {msg}  (e.g. {example[msg]})")
    for kind in ("mismatch", "crash", "timeout"):
        hit = [r["module"] for r in counted if r.get("run") == kind]
        if hit:
            print(f"\n{kind} ({len(hit)}): {' '.join(hit[:40])}{' ...' if len(hit) > 40 else ''}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1)
    bad = sum(1 for r in counted if r.get("run") in ("crash", "timeout") or
              r["parse"] in ("crash", "timeout"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
