"""ragged-dot (grouped GEMM) and scaled-dot (MX block scaling) through `kiln run`.

Run with the set-up's .venv Python (NumPy, ml_dtypes and JAX): ragged_dot_test.py KILN DEVICE...
Each ragged case is written as XLA's ragged-dot HLO; the reference is JAX's own lowering of the
same dimension numbers (which XLA:CPU runs), so the two sides share no code. scaled-dot is
checked against NumPy: operands times their block's scale (np.repeat), then a matmul.
"""
import os
import sys

import ml_dtypes
import numpy as np
from kiln_module_runner import print_error, run_module

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)

KILN = sys.argv[1]
DEVICES = sys.argv[2:]

# (name, lhs dims, rhs dims, group sizes, lhs batch, rhs batch, lhs contracting,
#  rhs contracting, lhs ragged, rhs group)
CASES = [
    ("ragged rows", [6, 4], [3, 4, 5], [[2, 1, 2]], [], [], [1], [1], [0], [0]),
    ("ragged rows, batched", [2, 7, 3], [2, 4, 3, 5], [[1, 2, 0, 3], [4, 0, 2, 1]], [0], [0], [2],
     [2], [1], [1]),
    ("ragged rows, group dim last", [5, 3], [3, 2, 4], [[3, 0, 1, 1]], [], [], [1], [0], [0], [2]),
    ("ragged contracting", [5, 6], [6, 4], [[2, 3, 1]], [], [], [1], [0], [1], []),
    ("ragged contracting, batched", [2, 3, 6], [2, 6, 2], [[1, 5], [3, 2]], [0], [0], [2], [1],
     [2], []),
    ("ragged batch", [4, 3, 5], [4, 5, 2], [[1, 2]], [0], [0], [2], [1], [0], []),
]


def hlo_text(lhs, rhs, sizes, lb, rb, lc, rc, lr, rg, out_dims):
    def dims(v):
        return "{" + ",".join(map(str, v)) + "}"

    def shape(t, d):
        return f"{t}[{','.join(map(str, d))}]"

    attrs = f"lhs_contracting_dims={dims(lc)}, rhs_contracting_dims={dims(rc)}"
    if lb:
        attrs += f", lhs_batch_dims={dims(lb)}, rhs_batch_dims={dims(rb)}"
    attrs += f", lhs_ragged_dims={dims(lr)}"
    if rg:
        attrs += f", rhs_group_dims={dims(rg)}"
    return (f"HloModule ragged\n\nENTRY main {{\n"
            f"  p0 = {shape('f32', lhs)} parameter(0)\n"
            f"  p1 = {shape('f32', rhs)} parameter(1)\n"
            f"  p2 = {shape('s64', sizes)} parameter(2)\n"
            f"  ROOT r = {shape('f32', out_dims)} ragged-dot(p0, p1, p2), {attrs}\n}}\n")


def run_kiln(hlo, inputs, device):
    return run_module(KILN, hlo, inputs, device)[0]


def main():
    failures = []
    rng = np.random.default_rng(5)
    for name, ld, rd, gs, lb, rb, lc, rc, lr, rg in CASES:
        lhs = rng.standard_normal(ld).astype(np.float32)
        rhs = rng.standard_normal(rd).astype(np.float32)
        sizes = np.array(gs if len(gs) > 1 else gs[0], np.int64)
        dn = lax.RaggedDotDimensionNumbers(
            dot_dimension_numbers=((lc, rc), (lb, rb)), lhs_ragged_dimensions=lr,
            rhs_group_dimensions=rg)
        want = np.asarray(lax.ragged_dot_general(lhs, rhs, sizes, dn,
                                                 precision=lax.Precision.HIGHEST))
        hlo = hlo_text(ld, rd, list(sizes.shape), lb, rb, lc, rc, lr, rg, list(want.shape))
        for device in DEVICES:
            try:
                got = run_kiln(hlo, [lhs, rhs, sizes], device)
            except RuntimeError as e:
                failures.append(f"{name} on {device}: {e}")
                continue
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                failures.append(f"{name} on {device}: got {got.shape} {got.ravel()[:6]}, "
                                f"want {want.shape} {want.ravel()[:6]}")
    # scaled-dot with f8e4m3fn operands and f8e8m0fnu scales per 32-element block (MX), and
    # with bf16 operands and scalar scales.
    lhs = rng.standard_normal((4, 64)).astype(ml_dtypes.float8_e4m3fn)
    rhs = rng.standard_normal((64, 3)).astype(ml_dtypes.float8_e4m3fn)
    ls = (2.0 ** rng.integers(-3, 4, (4, 2))).astype(ml_dtypes.float8_e8m0fnu)
    rs = (2.0 ** rng.integers(-3, 4, (2, 3))).astype(ml_dtypes.float8_e8m0fnu)
    f32 = np.float32
    want = (lhs.astype(f32) * np.repeat(ls.astype(f32), 32, axis=1)).astype(np.float64) @ (
        rhs.astype(f32) * np.repeat(rs.astype(f32), 32, axis=0)).astype(np.float64)
    mx = ("HloModule mx\nENTRY main {\n  l = f8e4m3fn[4,64] parameter(0)\n"
          "  r = f8e4m3fn[64,3] parameter(1)\n  ls = f8e8m0fnu[4,2] parameter(2)\n"
          "  rs = f8e8m0fnu[2,3] parameter(3)\n  ROOT d = f32[4,3] scaled-dot(l, r, ls, rs), "
          "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    a = rng.standard_normal((2, 10)).astype(np.float32)
    b = rng.standard_normal((10, 2)).astype(np.float32)
    want_scalar = (a.astype(ml_dtypes.bfloat16).astype(np.float64) * 0.5) @ (
        b.astype(ml_dtypes.bfloat16).astype(np.float64) * 4)
    scalar = ("HloModule s\nENTRY main {\n  a = bf16[2,10] parameter(0)\n"
              "  b = bf16[10,2] parameter(1)\n  sa = bf16[] constant(0.5)\n"
              "  sb = bf16[] constant(4)\n  ROOT d = f32[2,2] scaled-dot(a, b, sa, sb), "
              "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    for device in DEVICES:
        for name, hlo, inputs, ref in [("scaled-dot MX", mx, [lhs, rhs, ls, rs], want),
                                       ("scaled-dot scalar scales", scalar, [a, b], want_scalar)]:
            try:
                got = run_kiln(hlo, inputs, device)
            except RuntimeError as e:
                failures.append(f"{name} on {device}: {e}")
                continue
            if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-5, atol=1e-5):
                failures.append(f"{name} on {device}: got {got.ravel()[:4]}, want {ref.ravel()[:4]}")
    # A wrong operand is a located error, not a crash.
    bad = hlo_text([6, 4], [3, 4, 5], [4], [], [], [1], [1], [0], [0], [6, 5])
    status, err = print_error(KILN, bad)
    if status == 0 or "group" not in err:
        failures.append(f"4 group sizes for 3 rhs groups was not refused: {err}")
    for f in failures:
        print("FAIL", f)
    print(f"ragged_dot_test: {len(CASES)} ragged and 2 scaled cases on {', '.join(DEVICES)}, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
