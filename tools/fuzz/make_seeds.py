#!/usr/bin/env python3
"""Writes the seed corpora of the npy and plugin-table fuzz targets (tools/fuzz/seeds/).

The files are committed; rerun this only to change them (it needs NumPy):
    /usr/bin/python3 tools/fuzz/make_seeds.py
npy/: each seed is small (the fuzz driver mutates bytes; big arrays only slow it down) and
covers one path of the reader: every dtype it knows, both byte orders, Fortran order, 0-d and
empty arrays, format versions 1.0, 2.0 and 3.0, and dtypes it must reject (structured, object,
strings).
plugin_table/: inputs in the byte layout plugin_table_fuzzer.cc reads: a table the loader
accepts (available or not, with attributes, devices and capability reports) and near misses.
"""
import io
import os
import struct
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


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def text(s):
    """A length byte and the bytes (plugin_table_fuzzer's Input::Bytes)."""
    b = s.encode() if isinstance(s, str) else s
    return bytes([len(b)]) + b


def table(size_pick=7, major_pick=0, minor=2, priority=100, name=b"interpreter", nulls=None,
          error_code=3, error_text="boom", init_fails=False, available=True, reason="no GPU",
          attributes=(("version", "1.0"), ("core_passes", "none")), create_fails=False,
          devices=("cpu", "cpu"), devices_fail=False, fail_description=None,
          capability=(("add.1", None), ("custom-call.2", "not supported")),
          capability_fails=False, alive_fn=True):
    """One input for plugin_table_fuzzer, field by field in the order it reads them."""
    b = bytes([size_pick, major_pick, 0, minor]) + u32(priority)
    b += bytes([1]) + text(name)  # name mode 1: [A-Za-z0-9._-] bytes as given
    b += bytes([0]) if nulls is None else bytes([255]) + u32(nulls)
    if size_pick == 11:
        b += bytes([0xab] * 64)  # a later minor's 64 bytes past the 1.2 table
    b += bytes([error_code]) + (bytes([1]) if error_text is None else bytes([0]) + text(error_text))
    b += bytes([0 if init_fails else 1, 1 if available else 0])
    if not available:
        b += bytes([1]) + text(reason)
    b += bytes([1, 1, len(attributes)])
    for k, v in attributes:
        b += bytes([0]) if k == "core_passes" else bytes([1, 1]) + text(k)
        b += bytes([0]) if v == "none" else bytes([1, 1]) + text(v)
    b += bytes([0 if create_fails else 1, 1, 0 if devices_fail else 1, 1, len(devices)])
    for kind in devices:
        b += bytes([1]) + text(kind)
    if devices:
        b += bytes([0, fail_description]) if fail_description is not None else bytes([1])
    b += bytes([0 if capability_fails else 1, len(capability)])
    for name_, reason_ in capability:
        b += bytes([1]) + text(name_)
        b += bytes([1]) if reason_ is None else bytes([0, 1]) + text(reason_)
    b += bytes([0 if alive_fn else 1])
    return b


def plugin_table_seeds():
    yield "accepted", table()
    yield "unavailable", table(available=False)
    yield "no_attributes_no_devices", table(attributes=(), devices=(), capability=())
    yield "init_fails", table(init_fails=True)
    yield "create_fails", table(create_fails=True, error_text=None)
    yield "devices_fail", table(devices_fail=True, error_code=40)
    yield "description_fails", table(fail_description=1)
    yield "capability_fails", table(capability_fails=True)
    yield "table_1_0", table(size_pick=5)
    yield "table_too_small", table(size_pick=4)
    yield "header_only", table(size_pick=3)
    yield "later_minor", table(size_pick=11)
    yield "major_0", table(major_pick=3)
    yield "null_entries", table(nulls=0x1010)
    yield "long_name", table(name=b"n" * 64)
    yield "bad_name", table(name=b"cpu llvm")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "seeds")
    out = os.path.join(root, "plugin_table")
    os.makedirs(out, exist_ok=True)
    for name, data in plugin_table_seeds():
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(data)
    out = os.path.join(root, "npy")
    os.makedirs(out, exist_ok=True)
    for name, array in seeds():
        write(os.path.join(out, name + ".npy"), array)
    a = np.arange(6, dtype=np.int16).reshape(3, 2)
    write(os.path.join(out, "i2_version2.npy"), a, version=(2, 0))
    write(os.path.join(out, "i2_version3.npy"), a, version=(3, 0))


if __name__ == "__main__":
    main()
