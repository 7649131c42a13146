#!/usr/bin/env python3
"""XLA:CPU as a benchmark peer, on the same HLO text Kiln runs: jaxlib parses the text
(jaxlib._hlo.hlo_module_from_text), converts it to StableHLO and compiles it with XLA:CPU's
default options; the arrays are the same .npy files Kiln reads.

As a child process (so XLA's thread pool and allocator live apart from the caller's):
    xla_peer.py DIR RUNS
reads DIR/module.hlo and DIR/in0.npy, in1.npy, ..., prints `compile_ms=.. median_ms=..
min_ms=..` and writes DIR/xla_out0.npy, ... Needs JAX (benchmarks/install_peers.sh)."""
import os
import sys
import time

import numpy as np


def available():
    """None when jaxlib can compile HLO text here, else why not."""
    try:
        import jaxlib._hlo  # noqa: F401
        from jax._src.lib import xla_client  # noqa: F401
    except ImportError as e:
        return f'no jax ({e.name}): run benchmarks/install_peers.sh'
    return None


def run_child(folder, runs, threads):
    """Runs this file as a child process on `folder` (module.hlo, in*.npy), pinned to
    `threads` cores when the machine has more (XLA sizes its pool to the cores it may use):
    {'compile_ms', 'median_ms', 'min_ms'} as floats, or a reason string."""
    import subprocess

    def pin():
        cores = sorted(os.sched_getaffinity(0))
        if threads < len(cores):
            os.sched_setaffinity(0, cores[:threads])
    out = subprocess.run([sys.executable, os.path.abspath(__file__), folder, str(runs)],
                         capture_output=True, text=True, preexec_fn=pin)
    if out.returncode != 0:
        return 'failed: ' + (out.stderr.strip().splitlines() or ['?'])[-1][:70]
    fields = dict(kv.split('=') for kv in out.stdout.strip().splitlines()[-1].split())
    return {k: float(v) for k, v in fields.items() if k != 'runs'}


def compile_hlo(text):
    """(executable, device, compile_ms) for HLO text on XLA:CPU."""
    import jax
    import jaxlib._hlo as hlo
    from jax._src.lib import xla_client as xc
    devices = jax.devices('cpu')
    start = time.perf_counter()
    module = hlo.hlo_module_from_text(text)
    mlir = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    exe = devices[0].client.compile_and_load(mlir, xc.DeviceList(tuple(devices[:1])),
                                             xc.CompileOptions())
    return exe, devices[0], (time.perf_counter() - start) * 1e3


def run(exe, args):
    """Runs once on device arrays; returns the outputs as device arrays (waited for)."""
    outs = [o[0] for o in exe.execute_sharded(args).disassemble_into_single_device_arrays()]
    for o in outs:
        o.block_until_ready()
    return outs


def main():
    folder, runs = sys.argv[1], int(sys.argv[2])
    import jax
    # The module's types are in its text; 64-bit inputs must reach it as they are (with x64
    # off, device_put would narrow f64 and s64 arrays to 32 bits).
    jax.config.update('jax_enable_x64', True)
    with open(os.path.join(folder, 'module.hlo')) as f:
        text = f.read()
    if 'lapack_' in text:
        # jaxlib fills LAPACK's function table on first use from jax.numpy.linalg; a module
        # compiled from text would call into an empty one (a crash).
        from jax._src.lib import lapack
        lapack._lapack.initialize()
    exe, device, compile_ms = compile_hlo(text)
    inputs, i = [], 0
    while os.path.exists(os.path.join(folder, f'in{i}.npy')):
        a = np.load(os.path.join(folder, f'in{i}.npy'))
        if a.dtype == np.dtype('V2'):  # NumPy saves bfloat16 as raw bytes
            import ml_dtypes
            a = a.view(ml_dtypes.bfloat16)
        inputs.append(a)
        i += 1
    args = [jax.device_put(a, device) for a in inputs]
    outs = run(exe, args)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run(exe, args)
        times.append((time.perf_counter() - start) * 1e3)
    for k, o in enumerate(outs):
        np.save(os.path.join(folder, f'xla_out{k}.npy'), np.asarray(o))
    times.sort()
    print(f'compile_ms={compile_ms:.3f} median_ms={times[len(times) // 2]:.4f} '
          f'min_ms={times[0]:.4f} runs={runs}')


if __name__ == '__main__':
    main()
