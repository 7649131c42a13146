#!/usr/bin/env python3
"""Writes the seed corpus of the npy fuzz target (tools/fuzz/seeds/npy/).

The files are committed; rerun this only to change them (it needs NumPy):
    /usr/bin/python3 tools/fuzz/make_seeds.py
npy/: each seed is small (the fuzz driver mutates bytes; big arrays only slow it down) and
covers one path of the reader: every dtype it knows, both byte orders, Fortran order, 0-d and
empty arrays, format versions 1.0, 2.0 and 3.0, and dtypes it must reject (structured, object,
strings).
"""
import io
import os
import sys

import numpy as np


def seeds():
    rng = np.random.default_rng(18)
    for code in ["b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8",
                 "c16"]:
        dt = np.dtype(code)
        if code == "b1":
            a = rng.integers(0, 2, size=(2, 3)).astype(dt)
        elif dt.kind in "iu":
            a = rng.integers(0, 100, size=(2, 3)).astype(dt)
        elif dt.kind == "c":
            a = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(dt)
        else:
            a = rng.standard_normal((2, 3)).astype(dt)
        yield f"{code}_2x3", a
        if dt.itemsize > 1:
            yield f"{code}_big_endian", a.astype(dt.newbyteorder(">"))
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    yield "f4_fortran", np.asfortranarray(a)
    yield "i4_fortran_2d", np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    yield "f8_scalar", np.array(3.5)
    yield "i8_empty_0x3", np.zeros((0, 3), dtype=np.int64)
    yield "f4_vector", np.linspace(-1, 1, 7, dtype=np.float32)
    yield "u1_rank5", np.arange(32, dtype=np.uint8).reshape(2, 2, 2, 2, 2)
    yield "f4_special", np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], dtype=np.float32)
    # Rejected by the reader: it must say so, not crash.
    yield "structured", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")])
    yield "unicode", np.array(["ab", "c"])
    yield "bytes", np.array([b"ab", b"c"])
    yield "object", np.array([1, "x", None], dtype=object)
    yield "datetime", np.array(["2024-01-01"], dtype="datetime64[D]")


def write(path, array, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, array, allow_pickle=True)
    else:
        np.lib.format.write_array(buf, array, version=version, allow_pickle=True)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "seeds")
    out = os.path.join(root, "npy")
    os.makedirs(out, exist_ok=True)
    for name, array in seeds():
        write(os.path.join(out, name + ".npy"), array)
    a = np.arange(6, dtype=np.int16).reshape(3, 2)
    write(os.path.join(out, "i2_version2.npy"), a, version=(2, 0))
    write(os.path.join(out, "i2_version3.npy"), a, version=(3, 0))


if __name__ == "__main__":
    main()
