#!/usr/bin/env python3
"""JAX programs sharded over a mesh, lowered before partitioning (JAX's default Shardy
export), run by `kiln run` on 1 device (the shardings ignored) and on 2 and 4 devices (the
SPMD partitioner splits them; one rank per device under mpirun, or threads of one process
without it): every device's result must equal the shard JAX's own run puts on that device,
and the one-device result JAX's whole answer. Run by meson with .venv's Python:
sharded_jax_test.py KILN DEVICE..."""
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

KILN = sys.argv[1]
DEVICES = sys.argv[2:] or ["interpreter"]
MPIRUN = shutil.which("mpirun")
TMP = tempfile.mkdtemp(prefix="kiln_sharded_jax_")
ENV = dict(os.environ, KILN_CONFIG="", HOME=TMP, OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
rng = np.random.default_rng(3)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def loss(x, w, y):
    return jnp.mean((x @ w - y) ** 2)


def contract(x, w):
    return jnp.sum(x @ w, axis=1)


def norm(x, g):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * g


# name, function, arguments, in_specs, out_spec (None: replicated)
CASES = [
    ("mlp_data_parallel", mlp, (f32(16, 8), f32(8, 12), f32(12, 4)), (P("x", None), P(), P()),
     P("x", None)),
    ("mlp_tensor_parallel", mlp, (f32(8, 8), f32(8, 16), f32(16, 4)),
     (P(), P(None, "x"), P("x", None)), P()),
    ("loss_data_parallel", loss, (f32(16, 6), f32(6, 3), f32(16, 3)), (P("x", None), P(), P("x", None)),
     P()),
    ("dot_on_contracting_dim", contract, (f32(4, 16), f32(16, 8)), (P(None, "x"), P("x", None)),
     P()),
    ("layernorm_batch_sharded", norm, (f32(8, 32), f32(32)), (P("x", None), P()), P("x", None)),
]


def shards_by_device(arr):
    return {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    if p.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (" ".join(cmd[:6]), p.returncode,
                                                   p.stderr.strip()[-600:]))
    return p.stdout


def check(name, fn, args, in_specs, out_spec, n, device):
    mesh = Mesh(np.array(jax.devices()[:n]), ("x",))
    shard = lambda s: NamedSharding(mesh, s)  # noqa: E731
    f = jax.jit(fn, in_shardings=tuple(shard(s) for s in in_specs), out_shardings=shard(out_spec))
    hlo = os.path.join(TMP, "%s_%d.hlo" % (name, n))
    with open(hlo, "w") as fh:
        fh.write(f.lower(*args).compiler_ir("hlo").as_hlo_text())
    placed = [jax.device_put(a, shard(s)) for a, s in zip(args, in_specs)]
    want = shards_by_device(f(*placed))
    inputs = []
    for i, a in enumerate(placed):
        for d, data in shards_by_device(a).items():
            np.save(os.path.join(TMP, "%s_%d_in%d_%d.npy" % (name, n, i, d)), data)
        inputs += ["--input", os.path.join(TMP, "%s_%d_in%d_{rank}.npy" % (name, n, i))]
    out = os.path.join(TMP, "%s_%d_%s" % (name, n, device))
    if n == 1:
        # One device: the module as written, its shardings ignored.
        run([KILN, "run", hlo, "--device", device, "--output-dir", out] +
            [a.replace("{rank}", "0") for a in inputs])
        got = {0: np.load(os.path.join(out, "output_0.npy"))}
    else:
        cmd = [KILN, "run", hlo, "--device", device, "--output-dir", out] + inputs
        cmd = [MPIRUN, "-np", str(n)] + cmd if MPIRUN else cmd + ["--partitions", str(n)]
        run(cmd)
        got = {d: np.load(os.path.join(out, "rank_%d" % d, "output_0.npy")) for d in range(n)}
    for d in range(n):
        if got[d].shape != want[d].shape or not np.allclose(got[d], want[d], rtol=2e-5, atol=2e-5):
            raise AssertionError("device %d: got %s %s, JAX's shard is %s %s" % (
                d, got[d].shape, got[d].ravel()[:4], want[d].shape, want[d].ravel()[:4]))


def main():
    failures = passes = 0
    if not MPIRUN:
        print("NOTE: no mpirun: the devices are threads of one kiln run")
    for device in DEVICES:
        for name, fn, args, in_specs, out_spec in CASES:
            for n in (1, 2, 4):
                label = "%s on %d device(s), %s" % (name, n, device)
                try:
                    check(name, fn, args, in_specs, out_spec, n, device)
                    passes += 1
                    print("PASS", label)
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    failures += 1
                    print("FAIL", label, e)
    print("%d passed, %d failed" % (passes, failures))
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
