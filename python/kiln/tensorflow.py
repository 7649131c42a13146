"""TensorFlow functions on Kiln: `kiln.tensorflow.function(fn)` traces `fn` as
`tf.function(jit_compile=True)` does, takes the HLO TensorFlow's XLA bridge emits for it
(`experimental_get_compiler_ir(...)(stage="hlo")`), and runs that module on a Kiln device,
compiling once per input signature.

    import tensorflow as tf, kiln.tensorflow
    f = kiln.tensorflow.function(lambda x, w: tf.nn.relu(x @ w), device="cpu-llvm")
    f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))   # NumPy results

Functions that capture tf.Variables are not supported yet: pass the values as arguments.
"""
import functools
import threading

import numpy as np
import tensorflow as tf

import kiln

__all__ = ["function"]


class _Function:
    def __init__(self, fn, device, core_passes):
        self._tf = tf.function(fn, jit_compile=True)
        self._device = device
        self._core_passes = core_passes
        self._cache = {}  # input structure and signatures -> (executable, output structure)
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def lower(self, *args):
        """The HLO text TensorFlow's XLA bridge emits for these arguments."""
        return self._tf.experimental_get_compiler_ir(*args)(stage="hlo")

    def _compiled(self, args):
        leaves = [np.asarray(x) for x in tf.nest.flatten(args)]
        key = (tf.nest.map_structure(lambda _: 0, args).__repr__(),
               tuple((a.shape, a.dtype.str) for a in leaves))
        with self._lock:
            hit = self._cache.get(key)
        if hit is None:
            concrete = self._tf.get_concrete_function(*args)
            if concrete.captured_inputs:
                err = kiln.KilnError(
                    f"kiln.tensorflow: {getattr(self, '__name__', 'the function')} captures "
                    f"{len(concrete.captured_inputs)} tensor(s) or variable(s); pass them as "
                    "arguments")
                err.code = "UNIMPLEMENTED"
                raise err
            exe = kiln.compile(self.lower(*args), self._device, core_passes=self._core_passes)
            with self._lock:
                hit = self._cache.setdefault(key, (exe, concrete.structured_outputs))
        return hit, leaves

    def executable(self, *args):
        """The kiln.Executable these arguments run on (compiled when new)."""
        return self._compiled(args)[0][0]

    def __call__(self, *args):
        (exe, structure), leaves = self._compiled(args)
        outs = exe(*leaves)
        if not exe.returns_tuple:
            outs = (outs,)
        return tf.nest.pack_sequence_as(structure, list(outs))


def function(fn=None, *, device="auto", core_passes=True):
    """Like tf.function(jit_compile=True), but the function runs on a Kiln device. Results
    are NumPy arrays in the function's own output structure."""
    if fn is None:
        return lambda f: function(f, device=device, core_passes=core_passes)
    return _Function(fn, device, core_passes)
