"""JAX functions on Kiln: `kiln.jax.jit(fn)` lowers with JAX's own lowering to HLO text
and runs the module on a Kiln device, compiling once per input structure, shape and dtype.

    import jax.numpy as jnp, kiln.jax
    f = kiln.jax.jit(lambda x, y: jnp.tanh(x @ y), device="cpu-llvm")
    f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))   # NumPy result
"""
import functools
import threading

import jax
import numpy as np

import kiln

__all__ = ["jit", "lower"]


def lower(fn, *args, static_argnums=(), **kwargs):
    """The HLO text JAX lowers `fn(*args)` to, with every argument kept as a parameter."""
    jitted = jax.jit(fn, static_argnums=static_argnums, keep_unused=True)
    return jitted.lower(*args, **kwargs).as_text(dialect="hlo")


def _signature(leaf):
    a = leaf if hasattr(leaf, "dtype") and hasattr(leaf, "shape") else np.asarray(leaf)
    return tuple(a.shape), str(a.dtype), type(leaf) in (int, float, bool, complex)


class _Jitted:
    def __init__(self, fn, device, static_argnums, core_passes):
        self._fn = fn
        self._device = device
        self._static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self._core_passes = core_passes
        self._cache = {}  # (input structure, static values, leaf signatures) -> (exe, out_tree)
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def _lowered(self, args, kwargs):
        jitted = jax.jit(self._fn, static_argnums=self._static, keep_unused=True)
        return jitted.lower(*args, **kwargs)

    def _compiled(self, args, kwargs):
        # JAX numbers the HLO parameters in the flattened order of (dynamic args, kwargs).
        dynamic = tuple(a for i, a in enumerate(args) if i not in self._static)
        leaves, treedef = jax.tree_util.tree_flatten((dynamic, kwargs))
        static = tuple(args[i] for i in self._static if i < len(args))
        key = (treedef, static, tuple(_signature(x) for x in leaves))
        with self._lock:
            hit = self._cache.get(key)
        if hit is None:
            lowered = self._lowered(args, kwargs)
            exe = kiln.compile(lowered.as_text(dialect="hlo"), self._device,
                               core_passes=self._core_passes)
            with self._lock:
                hit = self._cache.setdefault(key, (exe, lowered.out_tree))
        return hit, leaves

    def lower(self, *args, **kwargs):
        """The HLO text this function runs for these arguments."""
        return self._lowered(args, kwargs).as_text(dialect="hlo")

    def executable(self, *args, **kwargs):
        """The kiln.Executable these arguments run on (compiled when new)."""
        (exe, _), _ = self._compiled(args, kwargs)
        return exe

    def __call__(self, *args, **kwargs):
        (exe, out_tree), leaves = self._compiled(args, kwargs)
        outs = exe(*[np.asarray(x) if isinstance(x, jax.Array) else x for x in leaves])
        if not exe.returns_tuple:
            outs = (outs,)
        return jax.tree_util.tree_unflatten(out_tree, list(outs))


def jit(fn=None, *, device="auto", static_argnums=(), core_passes=True):
    """Like jax.jit, but the function runs on a Kiln device. Results are NumPy arrays in the
    function's own output structure."""
    if fn is None:
        return lambda f: jit(f, device=device, static_argnums=static_argnums,
                             core_passes=core_passes)
    return _Jitted(fn, device, static_argnums, core_passes)
