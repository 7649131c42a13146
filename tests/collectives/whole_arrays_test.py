#!/usr/bin/env python3
"""A user's view of sharded JAX programs on Kiln: the module JAX lowers before partitioning,
the whole input arrays (no sharding by hand), `kiln run` on 1 device and on 2 and 4 (one rank
each under mpirun, else threads of one process), and the whole result read back from
DIR/output_<i>.npy: it must equal JAX's result, whether the program states its output
sharding (tiled or replicated) or leaves it to propagation (then only replicated results are
put together). Run by meson with .venv's Python: whole_arrays_test.py KILN DEVICE"""
import os
import shutil
import subprocess
import sys
import tempfile

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

KILN, DEVICE = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "interpreter")
MPIRUN = shutil.which("mpirun")
TMP = tempfile.mkdtemp(prefix="kiln_whole_arrays_")
ENV = dict(os.environ, KILN_CONFIG="", HOME=TMP, OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
rng = np.random.default_rng(5)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# name, function, arguments, mesh shape, in_specs, out_spec (None: left to propagation)
CASES = [
    ("rows_tiled_out", lambda x, w: jnp.tanh(x @ w), (f32(8, 4), f32(4, 6)), (4,),
     (P("x", None), P()), P("x", None)),
    ("columns_tiled_out", lambda x, w: jax.nn.relu(x @ w), (f32(4, 8), f32(8, 8)), (4,),
     (P(), P(None, "x")), P(None, "x")),
    ("both_dims_on_2x2", lambda x: jnp.exp(x) * 2.0, (f32(4, 6),), (2, 2),
     (P("x", "y"),), P("x", "y")),
    ("replicated_out", lambda x, w: jnp.sum(x @ w, axis=0), (f32(8, 4), f32(4, 3)), (4,),
     (P("x", None), P()), P()),
    ("propagated_reduction", lambda x: jnp.max(x, axis=0) + jnp.mean(x), (f32(8, 5),), (4,),
     (P("x", None),), None),
]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    if p.returncode != 0:
        raise AssertionError("exit %d: %s" % (p.returncode, p.stderr.strip()[-500:]))
    return p.stdout


def check(name, fn, args, mesh_shape, in_specs, out_spec, n):
    shape = (n,) if len(mesh_shape) == 1 else (mesh_shape if n > 1 else (1,) * len(mesh_shape))
    devices = int(np.prod(shape))
    axes = ("x", "y")[:len(shape)]
    mesh = Mesh(np.array(jax.devices()[:devices]).reshape(shape), axes)
    shard = lambda s: NamedSharding(mesh, s)  # noqa: E731
    kw = {} if out_spec is None else {"out_shardings": shard(out_spec)}
    f = jax.jit(fn, in_shardings=tuple(shard(s) for s in in_specs), **kw)
    hlo = os.path.join(TMP, "%s_%d.hlo" % (name, devices))
    with open(hlo, "w") as fh:
        fh.write(f.lower(*args).compiler_ir("hlo").as_hlo_text())
    want = np.asarray(fn(*args))
    inputs = []
    for i, a in enumerate(args):
        path = os.path.join(TMP, "%s_in%d.npy" % (name, i))
        np.save(path, a)
        inputs += ["--input", path]
    out = os.path.join(TMP, "%s_%d_out" % (name, devices))
    cmd = [KILN, "run", hlo, "--device", DEVICE, "--output-dir", out] + inputs
    if devices > 1:
        cmd = [MPIRUN, "-np", str(devices)] + cmd if MPIRUN else cmd + ["--partitions",
                                                                          str(devices)]
    stdout = run(cmd)
    if devices > 1 and "(whole, from %d devices)" % devices not in stdout:
        raise AssertionError("no whole result reported: %s" % stdout[-300:])
    got = np.load(os.path.join(out, "output_0.npy"))
    if got.shape != want.shape or not np.allclose(got, want, rtol=2e-5, atol=2e-5):
        raise AssertionError("got %s %s, JAX gives %s %s" % (got.shape, got.ravel()[:4],
                                                              want.shape, want.ravel()[:4]))


def main():
    failures = 0
    for name, fn, args, mesh_shape, in_specs, out_spec in CASES:
        for n in ((1, 2, 4) if len(mesh_shape) == 1 else (1, 4)):
            label = "%s on %d device(s)" % (name, n)
            try:
                check(name, fn, args, mesh_shape, in_specs, out_spec, n)
                print("PASS", label)
            except Exception as e:  # noqa: BLE001 - every failure is reported
                failures += 1
                print("FAIL", label, e)
    print("%d failed" % failures)
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
