#!/usr/bin/env python3
"""Checks .npy files written by Kiln (tools/npy_test.cc) with NumPy: check_kiln_npy.py DIR.

Each file kiln_<code>.npy must load with np.load, have dtype <code> (little-endian or
native), shape (2, 3), and hold the values make_npy_fixtures.py documents."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
d = sys.argv[1]
failures = []
count = 0
for name in sorted(os.listdir(d)):
    if not name.startswith('kiln_') or not name.endswith('.npy'):
        continue
    count += 1
    code = name[len('kiln_'):-len('.npy')]
    dtype = np.dtype('?' if code == 'b1' else code)
    a = np.load(os.path.join(d, name), allow_pickle=False)
    n = 6
    i = np.arange(n)
    if dtype.kind == 'b':
        want = (i % 3 == 0)
    elif dtype.kind == 'i':
        want = i - 5
    elif dtype.kind == 'u':
        want = i
    elif dtype.kind == 'c':
        want = (i * 0.5 - 1) + 1j * (1 - i * 0.5)
    else:
        want = i * 0.5 - 1
    want = np.asarray(want).astype(dtype).reshape(2, 3)
    if a.dtype != dtype or a.shape != (2, 3) or not np.array_equal(a, want):
        failures.append('%s: got %s %s %r' % (name, a.dtype, a.shape, a))
if failures or count == 0:
    print('\n'.join(failures) or 'no kiln_*.npy files found')
    sys.exit(1)
print('%d files ok' % count)
