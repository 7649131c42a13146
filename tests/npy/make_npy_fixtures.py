#!/usr/bin/env python3
"""Writes .npy fixtures with NumPy for tools/npy_test.cc: usage make_npy_fixtures.py OUTDIR.

Every array holds base[i] at row-major linear index i, where base is
  float/complex: i * 0.5 - 1 (complex: imaginary part 1 - i * 0.5)
  signed int:    i - 5        unsigned: i      bool: i % 3 == 0
so the C++ side can check values without reading anything Kiln produced.
"""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def base(dtype, shape):
    n = int(np.prod(shape))
    i = np.arange(n)
    kind = np.dtype(dtype).kind
    if kind == 'b':
        v = (i % 3 == 0)
    elif kind == 'i':
        v = i - 5
    elif kind == 'u':
        v = i
    elif kind == 'c':
        v = (i * 0.5 - 1) + 1j * (1 - i * 0.5)
    else:
        v = i * 0.5 - 1
    return np.asarray(v).astype(dtype).reshape(shape)


def save(name, arr, version=None):
    path = os.path.join(out, name + '.npy')
    with open(path, 'wb') as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


for code in ['?', 'i1', 'i2', 'i4', 'i8', 'u1', 'u2', 'u4', 'u8', 'f2', 'f4', 'f8', 'c8', 'c16']:
    name = {'?': 'b1'}.get(code, code)
    save('le_' + name, base(np.dtype(code).newbyteorder('<'), (2, 3)))
    save('be_' + name, base(np.dtype(code).newbyteorder('>'), (2, 3)))
    # Fortran order: the same logical array, stored column-major.
    save('fortran_' + name, np.asfortranarray(base(code, (2, 3, 4))))

save('scalar_f8', base('f8', ()))
save('empty_f4', base('f4', (0, 3)))
save('vector_i4', base('i4', (7,)))
save('v2_f4', base('f4', (2, 3)), version=(2, 0))
save('v3_f4', base('f4', (2, 3)), version=(3, 0))
save('fortran_be_f4', np.asfortranarray(base('>f4', (3, 2))))
