#!/usr/bin/env python3
"""Writes small JAX programs whose ops a kernel emitter does not do as written, as JAX lowers
them (`jax.jit(f).lower(...).as_text(dialect='hlo')`): arg-max and arg-min (a two-operand
reduce with an index-keeping reducer) and running reductions (reduce-window scans). Kiln
rewrites them before planning (hlo/passes/arg_reduce_split, reduce_window_scan);
cross_device_test.py checks the result against the interpreter, which runs them as written.

    .venv/bin/python tests/jax_lowered/jax_ops.py tests/jax_lowered"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
x = np.zeros((24, 300), np.float32)
i = np.zeros((24, 300), np.int32)
PROGRAMS = {
    # argmax along rows and argmin along columns, keepdims-free, plus the values
    'ops_argmax_argmin': (lambda a: (jnp.argmax(a, axis=1), jnp.argmin(a, axis=0),
                                     jnp.max(a, axis=1)), x),
    # cumsum forward and reversed, cummax, cumprod of small values, integer cumsum
    'ops_cumulative': (lambda a, b: (jnp.cumsum(a, axis=1), jax.lax.cumsum(a, axis=1, reverse=True),
                                     jax.lax.cummax(a, axis=0), jax.lax.cumprod(1 + a / 64, axis=1),
                                     jnp.cumsum(b, axis=1)), x, i),
}
for name, (f, *args) in PROGRAMS.items():
    text = jax.jit(f).lower(*args).as_text(dialect='hlo')
    with open(os.path.join(OUT, name + '.hlo'), 'w') as out:
        out.write(text)
    print('wrote', name, len(text), 'bytes')
