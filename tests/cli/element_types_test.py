"""The minifloat and sub-byte element types against ml_dtypes, through `kiln run`.

Run with a Python that has NumPy and ml_dtypes (the set-up's .venv):
    element_types_test.py KILN DEVICE...

For every type and device: every one of the 256 (or 16) encodings decodes as ml_dtypes
decodes it (convert to f32, raw bytes in as ml_dtypes saves them); float32 values (edges,
ties, overflow, NaN and infinities, random) encode as ml_dtypes rounds them (convert from
f32, output widened to float32 as documented); f8 arithmetic is computed in f32 and rounded
after every op; s4/u4 (and s1/u1) wrap and saturate as XLA does.
"""
import sys

import ml_dtypes
import numpy as np
from kiln_module_runner import run_module

KILN = sys.argv[1]
DEVICES = sys.argv[2:]

MINIFLOATS = {
    "f8e4m3fn": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2,
    "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "f8e3m4": ml_dtypes.float8_e3m4,
    "f8e4m3": ml_dtypes.float8_e4m3,
    "f8e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "f4e2m1fn": ml_dtypes.float4_e2m1fn,
}
failures = []


def run(hlo, inputs, device):
    return run_module(KILN, hlo, inputs, device)


def check(name, got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        failures.append(f"{name}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
        return
    if got.dtype.kind == "f":
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        # -0 and +0 are different encodings: compare signs of zeros too.
        same &= (np.signbit(got) == np.signbit(want)) | np.isnan(want)
    else:
        same = got == want
    if not same.all():
        bad = np.flatnonzero(~same.ravel())
        i = bad[0]
        failures.append(f"{name}: {len(bad)} of {same.size} differ, first at {i}: "
                        f"got {got.ravel()[i]!r}, want {want.ravel()[i]!r}")


def encode_inputs():
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 1e-30, 1e30, 3.4e38, -3.4e38]
    # Every value near each minifloat's representable points and midpoints.
    pts = []
    for t in MINIFLOATS.values():
        v = np.arange(256 if np.dtype(t).itemsize == 1 else 16, dtype=np.uint8)
        if t is ml_dtypes.float4_e2m1fn:
            v = v[:16]
        f = v.view(t).astype(np.float32)
        f = np.sort(f[np.isfinite(f)])
        mids = (f[:-1].astype(np.float64) + f[1:]) / 2
        pts += list(f) + list(mids.astype(np.float32))
        pts += list(np.nextafter(f, np.float32(np.inf))) + list(np.nextafter(f, np.float32(-np.inf)))
        pts += list(np.nextafter(mids.astype(np.float32), np.float32(np.inf)))
        pts += list(np.nextafter(mids.astype(np.float32), np.float32(-np.inf)))
    rand = rng.standard_normal(2000).astype(np.float32) * np.float32(4) ** rng.integers(
        -20, 20, 2000).astype(np.float32)
    x = np.concatenate([np.array(edges, np.float32), np.array(pts, np.float32), rand])
    return x.astype(np.float32)


def minifloat_checks(device):
    x = encode_inputs()
    n = x.size
    for name, t in MINIFLOATS.items():
        count = 16 if name.startswith("f4") else 256
        raw = np.arange(count, dtype=np.uint8).view(t)
        # Decode every encoding (input is raw bytes saved by ml_dtypes as 'V1').
        hlo = (f"HloModule dec\nENTRY e {{\n  p = {name}[{count}] parameter(0)\n"
               f"  ROOT c = f32[{count}] convert(p)\n}}\n")
        (got,) = run(hlo, [raw], device)
        check(f"{device} decode {name}", got, raw.astype(np.float32))
        # Encode float32 values; the result is written widened to float32.
        hlo = (f"HloModule enc\nENTRY e {{\n  p = f32[{n}] parameter(0)\n"
               f"  ROOT c = {name}[{n}] convert(p)\n}}\n")
        (got,) = run(hlo, [x], device)
        want = x.astype(t).astype(np.float32)
        if name == "f8e8m0fnu":
            # ml_dtypes' array cast rounds f32 subnormals in (2^-127, 1.5*2^-127) up to
            # 2^-126; Kiln rounds them to nearest (2^-127). Compare the rest.
            tiny = np.abs(x) < np.float32(2.0**-126)
            got, want = got[~tiny], want[~tiny]
        check(f"{device} encode {name}", got, want)
        # The same from f64: one rounding from the double value, as ml_dtypes' scalar
        # constructor does (its NumPy array cast from float64 goes through float32 first).
        xd = x.astype(np.float64) * (1 + 2.0**-30)
        hlo = (f"HloModule enc64\nENTRY e {{\n  p = f64[{n}] parameter(0)\n"
               f"  ROOT c = {name}[{n}] convert(p)\n}}\n")
        (got,) = run(hlo, [xd], device)
        want = np.array([float(t(v)) for v in xd], np.float32)
        if name == "f8e8m0fnu":
            tiny = np.abs(xd) < 2.0**-126
            got, want = got[~tiny], want[~tiny]
        check(f"{device} encode {name} from f64", got, want)
    # Arithmetic: each op computed in f32 and rounded (inputs arrive as float32, rounded).
    rng = np.random.default_rng(3)
    np.seterr(invalid="ignore", over="ignore")
    a = (rng.standard_normal(512) * 8).astype(np.float32)
    b = (rng.standard_normal(512) * 8).astype(np.float32)
    for name in ["f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e3m4"]:
        t = MINIFLOATS[name]
        hlo = (f"HloModule arith\nENTRY e {{\n  a = {name}[512] parameter(0)\n"
               f"  b = {name}[512] parameter(1)\n  m = {name}[512] multiply(a, b)\n"
               f"  s = {name}[512] add(m, a)\n  ROOT r = {name}[512] subtract(s, b)\n}}\n")
        (got,) = run(hlo, [a, b], device)
        ta, tb = a.astype(t).astype(np.float32), b.astype(t).astype(np.float32)
        m = (ta * tb).astype(t).astype(np.float32)
        s = (m + ta).astype(t).astype(np.float32)
        want = (s - tb).astype(t).astype(np.float32)
        check(f"{device} arithmetic {name}", got, want)
    # A dot of f8 operands accumulating in f32, as FP8 training writes it.
    a = (rng.standard_normal((8, 16))).astype(np.float32)
    b = (rng.standard_normal((16, 4))).astype(np.float32)
    hlo = ("HloModule dot8\nENTRY e {\n  a = f8e4m3fn[8,16] parameter(0)\n"
           "  b = f8e5m2[16,4] parameter(1)\n  ca = f32[8,16] convert(a)\n"
           "  cb = f32[16,4] convert(b)\n"
           "  ROOT d = f32[8,4] dot(ca, cb), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    (got,) = run(hlo, [a, b], device)
    want = a.astype(ml_dtypes.float8_e4m3fn).astype(np.float64) @ b.astype(
        ml_dtypes.float8_e5m2).astype(np.float64)
    if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        failures.append(f"{device} f8 dot: max error {np.abs(got - want).max()}")


def sub_byte_checks(device):
    # s4: two's-complement wrapping, saturating conversion from float, values from int8.
    q = np.array([-8, -7, -1, 0, 1, 3, 7, 5], np.int8)
    r = np.array([-8, 7, -1, 2, 7, -4, 7, 3], np.int8)
    f = np.array([-100, -8.5, -7.6, -0.5, 0.5, 6.7, 7.5, 1e9], np.float32)
    hlo = ("HloModule s4\nENTRY e {\n  q = s4[8] parameter(0)\n  r = s4[8] parameter(1)\n"
           "  f = f32[8] parameter(2)\n  a = s4[8] add(q, r)\n  m = s4[8] multiply(q, r)\n"
           "  c = s4[8] convert(f)\n  w = s32[8] convert(q)\n  u = u4[8] convert(q)\n"
           "  g = pred[8] compare(q, r), direction=LT\n  x = s4[8] maximum(q, r)\n"
           "  n = s4[8] negate(q)\n  d = s4[8] divide(q, r)\n"
           "  ROOT t = (s4[8], s4[8], s4[8], s32[8], u4[8], pred[8], s4[8], s4[8], s4[8]) "
           "tuple(a, m, c, w, u, g, x, n, d)\n}\n")
    got = run(hlo, [q, r, f], device)

    def wrap4(v):
        return ((np.asarray(v, np.int64) + 8) % 16 - 8).astype(np.int8)

    qi, ri = q.astype(np.int64), r.astype(np.int64)
    with np.errstate(all="ignore"):
        quot = np.where(ri != 0, np.trunc(qi / np.where(ri == 0, 1, ri)), -1).astype(np.int64)
    quot = np.where((qi == -8) & (ri == -1), -8, quot)
    want = [wrap4(qi + ri), wrap4(qi * ri),
            np.clip(np.trunc(f), -8, 7).astype(np.int8), qi.astype(np.int32),
            (qi % 16).astype(np.uint8), q < r, np.maximum(q, r), wrap4(-qi), wrap4(quot)]
    names = ["add", "multiply", "convert f32", "convert s32", "convert u4", "compare",
             "maximum", "negate", "divide"]
    for n, g, w in zip(names, got, want):
        check(f"{device} s4 {n}", g, w)
    # Raw bytes of ml_dtypes int4 and uint4 arrays come in as 'V1'.
    raw = np.array([-8, -1, 0, 7], np.int8).astype(ml_dtypes.int4)
    hlo = ("HloModule s4raw\nENTRY e {\n  p = s4[4] parameter(0)\n"
           "  ROOT c = s32[4] convert(p)\n}\n")
    (got,) = run(hlo, [raw], device)
    check(f"{device} s4 raw input", got, np.array([-8, -1, 0, 7], np.int32))
    u = np.array([0, 1, 9, 15], np.uint8)
    hlo = ("HloModule u4\nENTRY e {\n  p = u4[4] parameter(0)\n  o = u4[] constant(9)\n"
           "  s = u4[4] add(p, o)\n  c = u4[4] popcnt(p)\n  z = u4[4] count-leading-zeros(p)\n"
           "  ROOT t = (u4[4], u4[4], u4[4]) tuple(s, c, z)\n}\n")
    # broadcast-free form: scalar operands need a broadcast in HLO.
    hlo = hlo.replace("s = u4[4] add(p, o)", "ob = u4[4] broadcast(o), dimensions={}\n"
                      "  s = u4[4] add(p, ob)")
    got = run(hlo, [u], device)
    check(f"{device} u4 add", got[0], ((u.astype(np.int64) + 9) % 16).astype(np.uint8))
    check(f"{device} u4 popcnt", got[1], np.array([0, 1, 2, 4], np.uint8))
    check(f"{device} u4 clz", got[2], np.array([4, 3, 0, 0], np.uint8))
    # s1 holds -1 or 0 and u1 0 or 1 (XLA's one-bit integers): arithmetic wraps, a float
    # converts with truncation then saturation, an integer narrows to its low bit.
    p = np.array([-1, 0, 0, -1], np.int8)
    f = np.array([-3.5, -0.5, 0.7, 2], np.float32)
    hlo = ("HloModule s1\nENTRY e {\n  p = s1[4] parameter(0)\n  f = f32[4] parameter(1)\n"
           "  c = f32[4] convert(p)\n  a = s1[4] add(p, p)\n  s = s1[4] convert(f)\n"
           "  u = u1[4] convert(p)\n  n = s1[4] negate(p)\n"
           "  ROOT t = (f32[4], s1[4], s1[4], u1[4], s1[4]) tuple(c, a, s, u, n)\n}\n")
    got = run(hlo, [p, f], device)
    want = [p.astype(np.float32), np.zeros(4, np.int8), np.array([-1, 0, 0, 0], np.int8),
            np.array([1, 0, 0, 1], np.uint8), p]
    for n, g, w in zip(["convert f32", "add", "convert from f32", "convert u1", "negate"], got,
                       want):
        check(f"{device} s1 {n}", g, w)


def main():
    for device in DEVICES:
        for f in (minifloat_checks, sub_byte_checks):
            try:
                f(device)
            except RuntimeError as e:
                failures.append(str(e))
    for f in failures:
        print("FAIL", f)
    print(f"element_types_test: {len(failures)} failures on {', '.join(DEVICES)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
