"""scan through `kiln run` against NumPy's cumulative sums and products.

Run with Debian's python3 (NumPy): scan_test.py KILN DEVICE...
to_apply takes one element of each input, then the carries, and returns the outputs, then
the new carries; the result stacks the outputs along the scan dimension.
"""
import sys

import numpy as np
from kiln_module_runner import print_error, run_module

KILN = sys.argv[1]
DEVICES = sys.argv[2:]

ADD_3D = """HloModule scan3d
scan_add {
  x = f32[2,4] parameter(0)
  y = f32[2,4] parameter(1)
  add = f32[2,4] add(x, y)
  ROOT t = (f32[2,4], f32[2,4]) tuple(add, add)
}
ENTRY entry {
  input = f32[2,5,4] parameter(0)
  init = f32[2,4] parameter(1)
  ROOT scan = (f32[2,5,4], f32[2,4]) scan(input, init), dimensions={1}, num_carries=1, to_apply=scan_add
}
"""

VARIADIC_REVERSE = """HloModule scanvar
body {
  x1 = f32[] parameter(0)
  x2 = f32[] parameter(1)
  c1 = f32[] parameter(2)
  c2 = f32[] parameter(3)
  add = f32[] add(x1, c1)
  mul = f32[] multiply(x2, c2)
  sub = f32[] subtract(x1, c1)
  ROOT t = (f32[], f32[], f32[], f32[]) tuple(add, sub, add, mul)
}
ENTRY entry {
  a = f32[6] parameter(0)
  b = f32[6] parameter(1)
  i1 = f32[] constant(0.5)
  i2 = f32[] constant(1)
  ROOT scan = (f32[6], f32[6], f32[], f32[]) scan(a, b, i1, i2), dimensions={0}, num_carries=2, is_reverse=true, to_apply=body
}
"""


def run(hlo, inputs, device):
    return run_module(KILN, hlo, inputs, device)


def main():
    failures = []
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    init = rng.standard_normal((2, 4)).astype(np.float32)
    sums = np.cumsum(x, axis=1) + init[:, None, :]
    a = rng.standard_normal(6).astype(np.float32)
    b = rng.uniform(0.5, 1.5, 6).astype(np.float32)
    # Reverse: position 5 first, carries start at (0.5, 1).
    carry_before = 0.5 + np.concatenate([np.cumsum(a[::-1])[::-1][1:], [0]])
    rev_add = carry_before + a
    rev_sub = a - carry_before
    for device in DEVICES:
        try:
            out, carry = run(ADD_3D, [x, init], device)
            if not (np.allclose(out, sums, 1e-5, 1e-5) and np.allclose(carry, sums[:, -1], 1e-5, 1e-5)):
                failures.append(f"3-D scan along dimension 1 on {device}")
            o1, o2, c1, c2 = run(VARIADIC_REVERSE, [a, b], device)
            ok = (np.allclose(o1, rev_add, 1e-5, 1e-5) and np.allclose(o2, rev_sub, 1e-5, 1e-5)
                  and np.isclose(c1, 0.5 + a.sum(), 1e-5) and np.isclose(c2, np.prod(b), 1e-5))
            if not ok:
                failures.append(f"reverse variadic scan on {device}: {o1} vs {rev_add}, {c1}, {c2}")
        except RuntimeError as e:
            failures.append(f"{device}: {e}")
    # A carry that changes shape is a located verifier error.
    bad = ADD_3D.replace("init = f32[2,4] parameter(1)", "init = f32[4,2] parameter(1)")
    status, err = print_error(KILN, bad)
    if status == 0 or "bad.hlo:" not in err:
        failures.append(f"a mismatched carry was not refused with a location: {err}")
    for f in failures:
        print("FAIL", f)
    print(f"scan_test: {len(failures)} failures on {', '.join(DEVICES)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
