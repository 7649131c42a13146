"""Shared by the graph tests: run `kiln graph ...` and compare outputs against NumPy."""
import os
import subprocess
import tempfile

import numpy as np


class GraphChecker:
    def __init__(self, kiln, graph_dir):
        self.kiln, self.graph_dir = kiln, graph_dir
        self.failures = []

    def run(self, args):
        return subprocess.run([self.kiln, "graph"] + args, capture_output=True, text=True, timeout=120)

    def check(self, name, graph, inputs, expected, extra=(), rtol=1e-5, atol=1e-5):
        """Runs `graph` on `inputs`; every output must match `expected` in dtype, shape, values."""
        with tempfile.TemporaryDirectory() as d:
            args = ["run", os.path.join(self.graph_dir, graph), "--output-dir", d] + list(extra)
            for i, a in enumerate(inputs):
                p = os.path.join(d, f"in_{i}.npy")
                np.save(p, a)
                args += ["--input", p]
            r = self.run(args)
            if r.returncode != 0:
                self.failures.append(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
                return r
            ok = True
            for i, want in enumerate(expected):
                got = np.load(os.path.join(d, f"output_{i}.npy"))
                want = np.asarray(want)
                if got.shape != want.shape or got.dtype != want.dtype:
                    self.failures.append(f"{name}: output_{i} {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
                    ok = False
                elif not np.allclose(got, want, rtol=rtol, atol=atol):
                    self.failures.append(f"{name}: output_{i} differs: max abs {np.max(np.abs(got.astype(np.float64) - want))}")
                    ok = False
            if ok:
                print(f"ok {name}")
            return r
