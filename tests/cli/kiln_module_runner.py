"""Runs HLO text through the `kiln` program for the CLI test scripts (NumPy in and out)."""
import os
import subprocess
import tempfile

import numpy as np


def run_module(kiln, hlo, inputs, device, timeout=300):
    """`kiln run` of `hlo` on `device` with `inputs` saved as .npy; the outputs as arrays.

    Raises RuntimeError with kiln's message when it exits non-zero.
    """
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.hlo")
        with open(path, "w") as f:
            f.write(hlo)
        args = [kiln, "run", path, "--device", device, "--output-dir", d]
        for i, x in enumerate(inputs):
            p = os.path.join(d, f"in{i}.npy")
            np.save(p, x)
            args += ["--input", p]
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"kiln run failed on {device}: {r.stderr.strip()}")
        outs, i = [], 0
        while os.path.exists(os.path.join(d, f"output_{i}.npy")):
            outs.append(np.load(os.path.join(d, f"output_{i}.npy")))
            i += 1
        return outs


def print_error(kiln, hlo):
    """`kiln print` of `hlo`: (exit status, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bad.hlo")
        with open(path, "w") as f:
            f.write(hlo)
        r = subprocess.run([kiln, "print", path], capture_output=True, text=True, timeout=60)
        return r.returncode, r.stderr
