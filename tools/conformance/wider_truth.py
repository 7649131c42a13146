"""Judging a device whose result differs from the reference device's beyond the dtype
tolerance: both are measured against the same module run in a wider type (its "truth").

A module that amplifies last-bit differences (a softmax of logits in the thousands after chained
f32 dots, a long bf16 recurrence) makes two correct devices disagree; the f32 reference itself
is then far from the f64 result. The device passes when it is no more than twice as far from
the wider result as the reference is, plus one ulp of the narrow type at the output's scale: a
device that is simply wrong is far beyond that. Used by tests/cli/cross_device_test.py and
run_conformance.py.
"""
import glob
import os
import subprocess
import tempfile

import numpy as np

# An ulp of each narrow type at 1.0: the slack allowed beyond twice the reference's error.
ULP = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def widened_text(text, narrow, wide):
    """`text` with every `narrow` type written as `wide` (bf16 before f16: one contains the
    other)."""
    for n in sorted(narrow, key=len, reverse=True):
        text = text.replace(n, wide)
    return text


def load_outputs(d):
    """DIR/output_N.npy, in order, as float64 arrays."""
    files = sorted(glob.glob(os.path.join(d, "output_*.npy")),
                   key=lambda f: int(f[:-4].split("_")[-1]))
    return [np.load(f).astype(np.float64) for f in files]


def outputs(kiln, path, device, timeout):
    """The outputs of `kiln run path --device device` as float64 arrays, or None when it fails."""
    with tempfile.TemporaryDirectory() as d:
        try:
            r = subprocess.run([kiln, "run", path, "--device", device, "--output-dir", d],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return load_outputs(d) if r.returncode == 0 else None


def max_error(got, truth):
    """Largest |got - truth|, with NaN against NaN and equal infinities counted exact."""
    with np.errstate(invalid="ignore"):
        same = (got == truth) | (np.isnan(got) & np.isnan(truth))
        diff = np.where(same, 0.0, np.abs(got - truth))
    return float(np.max(diff, initial=0))


def judge(kiln, path, truth_path, device, reference, ulp, timeout, device_outputs):
    """None when `device` is within 2x the reference's error of `truth_path`'s result (run on
    the reference) on every output, else a one-line reason. `device_outputs` is the folder
    where the compared run (`kiln run --compare --output-dir`) wrote the device's outputs:
    those are judged, not a second run's (a wrong answer that comes and goes must not pass)."""
    truth = outputs(kiln, truth_path, reference, timeout)
    ref = outputs(kiln, path, reference, timeout)
    dev = load_outputs(device_outputs) or None
    if truth is None or ref is None or dev is None or len(truth) != len(dev):
        return "a run failed (the wider module, the reference or the device)"
    for i, (t, r, g) in enumerate(zip(truth, ref, dev)):
        if t.shape != g.shape:
            return f"output_{i}: shape {g.shape} against the wider result's {t.shape}"
        finite = np.abs(t[np.isfinite(t)])
        scale = max(1.0, float(np.max(finite)) if finite.size else 1.0)
        e_ref, e_dev = max_error(r, t), max_error(g, t)
        if not e_dev <= 2 * e_ref + ulp * scale:
            return (f"output_{i}: {device} is {e_dev:.3g} from the wider result, "
                    f"{reference} {e_ref:.3g}")
    return None
