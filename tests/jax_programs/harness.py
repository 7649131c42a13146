"""Runs the programs of programs.py on JAX's XLA:CPU (the oracle) and on Kiln, and compares.

For a (program, device) pair, `check` returns a `Result` whose status is one of
  "agree"          every output leaf matches the oracle within the program's tolerance;
  "differ"         a leaf differs (the detail names the worst element: leaf, index, values);
  "cannot compile" Kiln raised KilnError compiling or running it (the detail is Kiln's message).

Both sides get the same NumPy inputs. The Kiln side is `kiln.jax.jit(fn, device=d)(*args)`,
which lowers with JAX itself, so the HLO is exactly what JAX would hand XLA.
"""

import dataclasses
import os
import sys
import time

import numpy as np
import jax

# The oracle is XLA:CPU whatever accelerator JAX might find.
jax.config.update("jax_platforms", "cpu")

import kiln  # noqa: E402
import kiln.jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import PROGRAMS, PROGRAMS_BY_NAME  # noqa: E402

AGREE, DIFFER, CANNOT_COMPILE = "agree", "differ", "cannot compile"

# (rtol, atol) per tolerance class, applied to floating-point leaves as
#   |kiln - oracle| <= atol * max(1, max|oracle|) + rtol * |oracle|
# (atol scales with the leaf's magnitude so long accumulations over large values are judged
# relative to their size). Half-precision leaves use their dtype's row whatever the class.
TOLERANCES = {
    "exact": (0.0, 0.0),
    "f32": (1e-4, 1e-5),
    "f32_loose": (1e-3, 1e-4),
    "bf16": (2e-2, 2e-2),
    "f16": (2e-3, 2e-3),
}


@dataclasses.dataclass
class Result:
    program: str
    device: str
    status: str
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self):
        return self.status == AGREE


def available_devices():
    return [d.name for d in kiln.devices() if d.available]


_oracle_cache = {}


def inputs_and_oracle(prog):
    """The program's inputs and XLA:CPU's outputs on them (computed once per program)."""
    if prog.name not in _oracle_cache:
        args = prog.make_inputs()
        out = jax.jit(prog.fn)(*args)
        _oracle_cache[prog.name] = (args, jax.tree_util.tree_map(np.asarray, out))
    return _oracle_cache[prog.name]


def leaf_tolerance(tol_class, dtype):
    if dtype == np.dtype("float16"):
        return TOLERANCES["f16"] if tol_class != "exact" else TOLERANCES["exact"]
    if dtype.name == "bfloat16":
        return TOLERANCES["bf16"] if tol_class != "exact" else TOLERANCES["exact"]
    return TOLERANCES[tol_class]


def is_float(dtype):
    return np.issubdtype(dtype, np.floating) or dtype.name == "bfloat16"


def index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def compare_leaf(got, want, tol_class):
    """None if `got` matches `want`, else a one-line description of the worst mismatch."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if got.size == 0:
        return None
    if np.iscomplexobj(want):  # real and imaginary parts compared as a trailing axis of floats
        parts = lambda a: np.stack([a.real, a.imag], axis=-1)
        msg = compare_leaf(parts(got), parts(want), tol_class)
        return msg and msg.replace("worst at (", "worst at (re/im: ")
    if not is_float(want.dtype):
        bad = got != want
        if not bad.any():
            return None
        idx = index(np.argmax(bad), bad.shape)
        return f"{int(bad.sum())}/{bad.size} elements differ; first at {idx}: got {got[idx]}, expected {want[idx]}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    gnan, wnan = np.isnan(g), np.isnan(w)
    if (gnan != wnan).any():
        idx = index(np.argmax(gnan != wnan), g.shape)
        return f"NaN mismatch at {idx}: got {g[idx]}, expected {w[idx]}"
    ginf, winf = np.isinf(g), np.isinf(w)
    if (ginf != winf).any() or (g[winf] != w[winf]).any():
        idx = index(np.argmax((ginf != winf) | (winf & (g != w))), g.shape)
        return f"inf mismatch at {idx}: got {g[idx]}, expected {w[idx]}"
    finite = ~(wnan | winf)
    if not finite.any():
        return None
    rtol, atol = leaf_tolerance(tol_class, want.dtype)
    scale = max(1.0, float(np.max(np.abs(w[finite]))))
    g0, w0 = np.where(finite, g, 0.0), np.where(finite, w, 0.0)
    err = np.abs(g0 - w0)
    allowed = atol * scale + rtol * np.abs(w0)
    excess = err - allowed
    if (excess <= 0).all():
        return None
    idx = index(np.argmax(excess / np.maximum(allowed, 1e-30)), g.shape)
    nbad = int((excess > 0).sum())
    return (f"{nbad}/{g.size} elements out of tolerance (rtol {rtol:g}, atol {atol:g}x{scale:.3g}); "
            f"worst at {idx}: got {g[idx]:.9g}, expected {w[idx]:.9g}, |diff| {err[idx]:.3g}")


def compare(got, want, tol_class):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    if got_tree != want_tree:
        return f"output structure {got_tree} != expected {want_tree}"
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(want)[0]]
    bad = []
    for path, g, w in zip(paths, got_leaves, want_leaves):
        msg = compare_leaf(g, w, tol_class)
        if msg is not None:
            bad.append(f"output{path or ''} ({w.dtype}{list(np.shape(w))}): {msg}")
    if not bad:
        return None
    more = f" (and {len(bad) - 1} more of {len(want_leaves)} leaves: " + \
        ", ".join(b.split(" (")[0] for b in bad[1:]) + ")" if len(bad) > 1 else ""
    return bad[0] + more


def one_line(text):
    lines = [l.strip() for l in str(text).splitlines() if l.strip()]
    return lines[0] if lines else type(text).__name__


def check(prog, device):
    """Runs `prog` on Kiln device `device` and compares it with XLA:CPU."""
    if isinstance(prog, str):
        prog = PROGRAMS_BY_NAME[prog]
    args, want = inputs_and_oracle(prog)
    start = time.perf_counter()
    try:
        got = kiln.jax.jit(prog.fn, device=device)(*args)
    except kiln.KilnError as e:
        return Result(prog.name, device, CANNOT_COMPILE, one_line(e), time.perf_counter() - start)
    seconds = time.perf_counter() - start
    msg = compare(got, want, prog.tol)
    if msg is None:
        return Result(prog.name, device, AGREE, "", seconds)
    return Result(prog.name, device, DIFFER, msg, seconds)
