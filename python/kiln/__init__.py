"""Kiln from Python: compile XLA HLO modules and run them on Kiln's device plugins.

    import kiln, numpy as np
    exe = kiln.compile(open("model.hlo").read())          # or a path
    out = exe(np.ones(4, np.float32), np.ones(4, np.float32))

`kiln.devices()` lists the plugins; `kiln.device_put` keeps arrays on a device between calls;
`kiln.jax.jit` runs JAX functions on Kiln; `kiln.graph` parses and runs the graph IR. Errors are `kiln.KilnError` with a `.code`.
"""
import atexit
import os
import threading

from . import _kiln, graph
from ._kiln import Buffer, Device, Executable, KilnError

# Queued runs (Executable.execute) end before the interpreter finalizes: one may still call a
# Python custom-call handler.
atexit.register(_kiln.wait_for_queued_runs)

__all__ = ["Buffer", "Device", "Executable", "KilnError", "compile", "device_put", "devices",
           "from_dlpack", "graph", "register_custom_call"]

_cache = {}
_cache_lock = threading.Lock()


def devices():
    """Every discovered plugin (name, priority, state, reason, attributes, api_version)."""
    return _kiln.devices()


def _read_module(hlo):
    """(text, filename) for HLO text, a path to a .hlo file, an object with as_hlo_text()
    (XLA's HloModule) or a jax.stages.Lowered (jax.jit(f).lower(...))."""
    if hasattr(hlo, "as_hlo_text"):
        return hlo.as_hlo_text(), "<as_hlo_text>"
    if hasattr(hlo, "as_text") and hasattr(hlo, "out_tree"):  # jax.stages.Lowered
        return hlo.as_text(dialect="hlo"), "<jax lowered>"
    if isinstance(hlo, os.PathLike) or (isinstance(hlo, str) and "\n" not in hlo
                                          and not hlo.lstrip().startswith("HloModule")):
        path = os.fspath(hlo)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            err = KilnError(f"{path}: cannot read HLO module: {e.strerror}")
            err.code = "NOT_FOUND" if isinstance(e, FileNotFoundError) else "INVALID_ARGUMENT"
            raise err from None
    if isinstance(hlo, bytes):
        hlo = hlo.decode("utf-8")
    if not isinstance(hlo, str):
        err = KilnError(f"compile: expected HLO text or a path, got {type(hlo).__name__}")
        err.code = "INVALID_ARGUMENT"
        raise err
    return hlo, "<string>"


def compile(hlo, device="auto", *, core_passes=True, dump_to=None, dump_pass_re=None,
            min_cluster_size=4, cache=True, timeout=None):
    """Compiles an HLO module (text, a path, an object with `as_hlo_text()`, or what
    `jax.jit(f).lower(...)` returns).

    device: a plugin name or "auto" (the highest-priority plugin that runs everything, else a
    partition across plugins, as `kiln run --device auto`). core_passes=False gives the
    plugins the module as written. dump_to writes the passes' dumps as `kiln run --dump-to`
    does. The same text and options return the same executable from a cache unless
    cache=False.

    timeout: seconds (None: no limit). Each call of the executable, and the compile, is then
    cancelled with KilnError (code DEADLINE_EXCEEDED) once it takes longer, however the plugin
    is stuck: the module runs on its plugin in a helper process (as with KILN_ISOLATE), which
    is stopped at the deadline and started again for the next call.
    """
    text, filename = _read_module(hlo)
    timeout_s = 0.0
    if timeout is not None:
        try:
            timeout_s = float(timeout)
        except (TypeError, ValueError):
            timeout_s = -1.0
        if not 0 < timeout_s < float("inf"):
            err = KilnError(f"compile: timeout must be a positive number of seconds, "
                            f"got {timeout!r}")
            err.code = "INVALID_ARGUMENT"
            raise err
    key = (text, device, bool(core_passes), dump_to, dump_pass_re, min_cluster_size, timeout_s)
    if cache and dump_to is None:
        with _cache_lock:
            exe = _cache.get(key)
        if exe is not None:
            return exe
    exe = _kiln.compile(text, filename, device, bool(core_passes),
                        os.fspath(dump_to) if dump_to is not None else "", dump_pass_re or "",
                        int(min_cluster_size), timeout_s)
    if cache and dump_to is None:
        with _cache_lock:
            exe = _cache.setdefault(key, exe)
    return exe


def device_put(array, device="auto", device_index=0):
    """Copies `array` to a device ("auto": the highest-priority available plugin);
    `device_index` picks one of the plugin's devices (kiln.Device.num_devices; a host plugin
    has KILN_HOST_DEVICE_COUNT of them)."""
    return _kiln.device_put(array, device, device_index)


def from_dlpack(array, device="auto"):
    """A kiln.Buffer sharing `array`'s bytes (anything with __dlpack__ or the buffer protocol,
    C-contiguous, in host memory). Host-memory plugins read the array in place: do not write
    to it while the buffer lives. Other devices copy it."""
    return _kiln.from_dlpack(array, device)


def register_custom_call(target, fn):
    """Registers `fn` as the host handler of custom-call `target` (ABI 1.5), for every
    plugin that can call back into the host (the interpreter and cpu-llvm; others leave the
    call to them). fn(*operands, backend_config=str) gets NumPy copies of the operands and
    returns the result: one array, or a sequence of the result's array leaves in order. An
    exception fails the run with its message (kiln.KilnError). Executables compiled before
    keep the handlers they saw; compile after registering."""
    _kiln.register_custom_call(target, fn)
