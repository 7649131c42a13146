#!/usr/bin/env python3
"""JAX programs sharded over a mesh, lowered before partitioning (JAX's default Shardy
export), run by `kiln run` on 1 device (the shardings ignored) and on 2 and 4 devices (the
SPMD partitioner splits them; one rank per device under mpirun, or threads of one process
without it): every output on every device must equal the shard JAX's own run puts there,
and on one device JAX's whole answer. Run by meson with .venv's Python:
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
try:
    from jax import shard_map  # noqa: E402
except ImportError:  # JAX before 0.7
    from jax.experimental.shard_map import shard_map  # noqa: E402

KILN = sys.argv[1]
DEVICES = sys.argv[2:] or ["interpreter"]
# KILN_SHARDED_ONLY=a,b runs only the cases whose names contain a or b (for debugging).
ONLY = [o for o in os.environ.get("KILN_SHARDED_ONLY", "").split(",") if o]
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


def softmax_rows(x):
    return jax.nn.softmax(x, axis=-1)


def attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)


def batched_einsum(a, b):
    return jnp.einsum("bij,bjk->bik", a, b)


def mlp_loss(params, x, y):
    w1, b1, w2 = params
    h = jax.nn.relu(x @ w1 + b1)
    return jnp.mean((h @ w2 - y) ** 2)


def sgd_step(w1, b1, w2, x, y):
    value, grads = jax.value_and_grad(mlp_loss)((w1, b1, w2), x, y)
    return (value,) + tuple(p - 0.1 * g for p, g in zip((w1, b1, w2), grads))


def reshape_transpose(x):
    y = x.reshape(8, 4, 6).transpose(1, 0, 2)
    return (y * 2).reshape(4, 48).T


def concat_slice(a, b):
    c = jnp.concatenate([a, b], axis=0)
    return c[2:10, 1:5] + jnp.flip(c, axis=0)[:8, ::2][:, :4]


def embed(table, ids):
    return jnp.take(table, ids, axis=0) * 2.0


def cumsum_argmax(x):
    return jnp.cumsum(x, axis=1), jnp.argmax(x, axis=1).astype(jnp.int32), jnp.max(x, axis=0)


def fori(x, w):
    return jax.lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ w) + i.astype(jnp.float32), x)


def scan_rnn(h0, xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum(axis=-1)
    return jax.lax.scan(step, h0, xs)


def constrained(mesh):
    # Made for each mesh: JAX would reuse one trace, and its constraint, for every mesh.
    def fn(x, w):
        y = jnp.sin(x) @ w
        y = jax.lax.with_sharding_constraint(y, NamedSharding(mesh, P(None, "x")))
        return jnp.exp(y).sum(axis=0)
    return fn


constrained.per_mesh = True


def two_outputs(x):
    return x * 2.0, jnp.cos(x) + 1.0


def int_bool(a, b):
    m = (a > 3) & b
    r = jnp.where(m, a * 2, -a) ^ (a >> 1)
    return r, jnp.sum(m.astype(jnp.int32), axis=1), jnp.any(m, axis=0), m


@jax.jit
def inner(a, w):
    return jnp.tanh(a @ w) + 1.0


def nested(x, w):
    return inner(inner(x, w), w).sum(axis=1)


def nn_functions(x):
    return (jax.nn.gelu(x), jax.nn.relu(x) + jax.nn.silu(x),
            jax.nn.logsumexp(x, axis=-1), jax.nn.log_softmax(x, axis=0))


def psum_of_products(mesh):
    # shard_map: the body's psum written by hand (Shardy's GlobalToLocalShape and back).
    def fn(x, w):
        return shard_map(lambda a, b: jax.lax.psum(a @ b, "x"), mesh=mesh,
                         in_specs=(P(None, "x"), P("x", None)), out_specs=P())(x, w)
    return fn


def collectives_2d(mesh):
    def local(a):
        s = jax.lax.psum(jnp.sum(a, axis=1, keepdims=True), "y")
        g = jax.lax.all_gather(a * s, "x", axis=0, tiled=True)
        return jax.lax.ppermute(g, "y", [(i, (i + 1) % mesh.shape["y"])
                                         for i in range(mesh.shape["y"])])

    def fn(x):
        return shard_map(local, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)
    return fn


psum_of_products.per_mesh = collectives_2d.per_mesh = True


def psum_over_x_only(mesh):
    # Manual over "x" alone: "y" stays automatic inside the body.
    def fn(x):
        return shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"),
                         out_specs=P(), axis_names={"x"})(x)
    return fn


psum_over_x_only.per_mesh = True


def cond(x, p):
    return jax.lax.cond(p[0] > 0, lambda a: a * 2.0, jnp.sin, x)


def sort_topk(x):
    return jnp.sort(x, axis=0), jax.lax.top_k(x, 3)[0]


def dropout(key_data, x):
    return x * jax.random.bernoulli(jax.random.wrap_key_data(key_data), 0.5, x.shape)


def conv(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def dynamic_slices(x, i):
    return (jax.lax.dynamic_update_slice(x, jnp.ones((2, 8), x.dtype), (i, 0)),
            jax.lax.dynamic_slice(x, (i, 0), (2, 8)))


def remat_grad(x, w):
    return jax.grad(lambda v: jnp.sum(jax.checkpoint(lambda a: jnp.sin(a @ v))(x)))(w)


def cross_entropy(labels, logits):
    return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, 8) * jax.nn.log_softmax(logits), axis=-1))


def passthrough(x, y, lr):
    return x, y - lr * x, x


def statistics(x):
    return jnp.var(x, axis=0), jnp.linalg.norm(x, axis=1), jnp.mean(x)


def i32(hi, *shape):
    return rng.integers(0, hi, shape).astype(np.int32)


def bools(*shape):
    return rng.integers(0, 2, shape).astype(bool)


# name, function (or a maker of it from the mesh, marked per_mesh), arguments, in_specs,
# out_specs (one spec for every output, or a tuple of specs, one per output), the mesh's axes
# (("x", "y"): a 2-D mesh, 1x1, 2x1 and 2x2 on 1, 2 and 4 devices)
CASES = [
    ("mlp_data_parallel", mlp, (f32(16, 8), f32(8, 12), f32(12, 4)), (P("x", None), P(), P()),
     P("x", None)),
    ("mlp_tensor_parallel", mlp, (f32(8, 8), f32(8, 16), f32(16, 4)),
     (P(), P(None, "x"), P("x", None)), P()),
    ("loss_data_parallel", loss, (f32(16, 6), f32(6, 3), f32(16, 3)),
     (P("x", None), P(), P("x", None)), P()),
    ("dot_on_contracting_dim", contract, (f32(4, 16), f32(16, 8)), (P(None, "x"), P("x", None)),
     P()),
    ("layernorm_batch_sharded", norm, (f32(8, 32), f32(32)), (P("x", None), P()), P("x", None)),
    ("softmax_over_sharded_dim", softmax_rows, (f32(4, 16),), (P(None, "x"),), P(None, "x")),
    ("attention_heads_sharded", attention, (f32(2, 4, 8, 8), f32(2, 4, 8, 8), f32(2, 4, 8, 8)),
     (P(None, "x"),) * 3, P(None, "x")),
    ("attention_batch_sharded", attention, (f32(4, 2, 8, 8), f32(4, 2, 8, 8), f32(4, 2, 8, 8)),
     (P("x"),) * 3, P("x")),
    ("einsum_batch_dims", batched_einsum, (f32(4, 6, 8), f32(4, 8, 4)), (P("x"), P(None, "x")),
     P("x")),
    ("sgd_step_data_parallel", sgd_step, (f32(6, 8), f32(8), f32(8, 3), f32(16, 6), f32(16, 3)),
     (P(), P(), P(), P("x"), P("x")), P()),
    ("sgd_step_tensor_parallel", sgd_step, (f32(6, 8), f32(8), f32(8, 3), f32(16, 6), f32(16, 3)),
     (P(None, "x"), P("x"), P("x"), P(), P()), (P(), P(None, "x"), P("x"), P("x"))),
    ("reshape_transpose", reshape_transpose, (f32(8, 24),), (P("x"),), P(None, "x")),
    ("concat_slice", concat_slice, (f32(8, 8), f32(4, 8)), (P("x"), P(None, "x")), P()),
    ("embedding_batch_sharded", embed, (f32(32, 8), i32(32, 8, 5)), (P(), P("x")), P("x")),
    ("cumsum_argmax", cumsum_argmax, (f32(8, 12),), (P("x", None),), (P("x"), P("x"), P())),
    ("fori_loop_sharded_carry", fori, (f32(8, 6), f32(6, 6)), (P("x"), P()), P("x")),
    ("scan_sharded_batch", scan_rnn, (f32(8, 4), f32(5, 8, 4), f32(4, 4)),
     (P("x"), P(None, "x"), P()), (P("x"), P(None, "x"))),
    ("with_sharding_constraint", constrained, (f32(8, 8), f32(8, 8)), (P("x"), P()), P("x")),
    ("mesh_2d_data_and_model", mlp, (f32(8, 8), f32(8, 16), f32(16, 4)),
     (P("x", None), P(None, "y"), P("y", None)), P("x", None), ("x", "y")),
    ("mesh_2d_both_dims", two_outputs, (f32(8, 8),), (P("x", "y"),), (P("y", "x"), P()),
     ("x", "y")),
    ("outputs_replicated_and_sharded", two_outputs, (f32(8, 4),), (P("x"),), (P(), P("x"))),
    ("int_and_bool_ops", int_bool, (i32(8, 8, 4), bools(8, 4)), (P("x"), P("x")),
     (P("x"), P("x"), P(), P(None, "x"))),
    ("nested_jit_call", nested, (f32(8, 6), f32(6, 6)), (P("x"), P()), P("x")),
    ("shard_map_psum", psum_of_products, (f32(4, 8), f32(8, 4)), (P(None, "x"), P("x", None)),
     P()),
    ("shard_map_2d_collectives", collectives_2d, (f32(8, 8),), (P("x", "y"),), P("x", "y"),
     ("x", "y")),
    ("cond_on_sharded_value", cond, (f32(8, 4), f32(1)), (P("x"), P()), P("x")),
    ("sort_and_top_k", sort_topk, (f32(8, 8),), (P(None, "x"),), (P(None, "x"), P("x"))),
    ("random_dropout", dropout, (np.array([0, 42], np.uint32), f32(8, 8)), (P(), P("x")),
     P("x")),
    ("conv_batch_sharded", conv, (f32(4, 6, 6, 2), f32(3, 3, 2, 4)), (P("x"), P()), P("x")),
    ("dynamic_slices", dynamic_slices, (f32(8, 8), np.int32(3)), (P("x"), P()), (P("x"), P())),
    ("remat_grad", remat_grad, (f32(8, 4), f32(4, 4)), (P("x"), P()), P()),
    ("one_hot_cross_entropy", cross_entropy, (i32(8, 8), f32(8, 8)), (P("x"), P("x")), P()),
    ("passthrough_and_scalar", passthrough, (f32(8, 4), f32(8, 4), np.float32(0.1)),
     (P("x"), P(), P()), (P("x"), P(), P())),
    ("statistics", statistics, (f32(8, 8),), (P("x", None),), P()),
    ("jax_nn_functions", nn_functions, (f32(8, 8),), (P(None, "x"),),
     (P(None, "x"), P(None, "x"), P(), P(None, "x"))),
]

# Programs Kiln cannot partition yet, with the device counts where kiln run must refuse them
# with the partitioner's error naming the instruction (on the others they must run right).
UNSUPPORTED = [
    ("shard_map_over_some_axes", psum_over_x_only, (f32(8, 8),), (P("x", "y"),), P(None, "y"),
     ("x", "y"), {4: "spmd-partitioner: %shard_map"}),
]

MESH_SHAPES = {1: (1, 1), 2: (2, 1), 4: (2, 2)}


def shards_by_device(arr):
    return {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    if p.returncode != 0:
        # Kiln's own error lines, else the end of the output (mpirun's notes come after them).
        errors = [line for line in p.stderr.splitlines() if "kiln run: error" in line]
        raise AssertionError("%s exited %d: %s" % (" ".join(cmd[:6]), p.returncode,
                                                   "\n".join(errors) or p.stderr.strip()[-600:]))
    return p.stdout


def is_spec(x):
    return x is None or isinstance(x, P)


def close(got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if np.issubdtype(want.dtype, np.floating):
        return np.allclose(got, want, rtol=2e-5, atol=2e-5)
    return np.array_equal(got, want)


def check(name, fn, args, in_specs, out_specs, n, device, axes=("x",)):
    shape = (n,) if len(axes) == 1 else MESH_SHAPES[n]
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(shape), axes)
    if getattr(fn, "per_mesh", False):
        fn = fn(mesh)
    shard = lambda s: NamedSharding(mesh, s)  # noqa: E731
    outs = jax.tree.map(shard, out_specs, is_leaf=is_spec)
    f = jax.jit(fn, in_shardings=tuple(shard(s) for s in in_specs), out_shardings=outs)
    hlo = os.path.join(TMP, "%s_%d.hlo" % (name, n))
    with open(hlo, "w") as fh:
        fh.write(f.lower(*args).compiler_ir("hlo").as_hlo_text())
    placed = [jax.device_put(a, shard(s)) for a, s in zip(args, in_specs)]
    want = [shards_by_device(r) for r in jax.tree.leaves(f(*placed))]
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
        dirs = {0: out}
    else:
        cmd = [KILN, "run", hlo, "--device", device, "--output-dir", out] + inputs
        cmd = [MPIRUN, "-np", str(n)] + cmd if MPIRUN else cmd + ["--partitions", str(n)]
        run(cmd)
        dirs = {d: os.path.join(out, "rank_%d" % d) for d in range(n)}
    for k, w in enumerate(want):
        for d in range(n):
            got = np.load(os.path.join(dirs[d], "output_%d.npy" % k))
            if not close(got, w[d]):
                raise AssertionError("output %d, device %d: got %s %s %s, JAX's shard is %s %s %s"
                                     % (k, d, got.dtype, got.shape, got.ravel()[:4], w[d].dtype,
                                        w[d].shape, w[d].ravel()[:4]))


def main():
    failures = passes = 0
    if not MPIRUN:
        print("NOTE: no mpirun: the devices are threads of one kiln run")
    for device in DEVICES:
        for name, fn, args, in_specs, out_specs, *axes in CASES:
            if ONLY and not any(o in name for o in ONLY):
                continue
            for n in (1, 2, 4):
                label = "%s on %d device(s), %s" % (name, n, device)
                try:
                    check(name, fn, args, in_specs, out_specs, n, device, *axes)
                    passes += 1
                    print("PASS", label)
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    failures += 1
                    print("FAIL", label, e)
        for name, fn, args, in_specs, out_specs, axes, refused in UNSUPPORTED:
            if ONLY and not any(o in name for o in ONLY):
                continue
            for n in (1, 2, 4):
                label = "%s on %d device(s), %s" % (name, n, device)
                try:
                    check(name, fn, args, in_specs, out_specs, n, device, axes)
                    ok = n not in refused
                    why = "ran; expected the error '%s'" % refused.get(n)
                except AssertionError as e:
                    ok = n in refused and refused[n] in str(e) and "not supported" in str(e)
                    why = str(e)
                passes += ok
                failures += not ok
                print("PASS" if ok else "FAIL", label, "" if ok else why)
    print("%d passed, %d failed" % (passes, failures))
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
