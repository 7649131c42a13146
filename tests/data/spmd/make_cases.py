"""Writes the SPMD partitioner's test cases from JAX: for each case, NAME.hlo (the module JAX
lowers before partitioning, with its sharding annotations) and NAME.values.hlo (constants:
argI and outJ whole, and argI.devD / outJ.devD, the shard device D holds as JAX lays it out).

Run with JAX's host platform split into 4 devices (the script sets XLA_FLAGS itself):
    .venv/bin/python tests/data/spmd/make_cases.py
"""
import os
import pathlib

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

# The GSPMD form (sharding={...} attributes) rather than Shardy's custom calls.
jax.config.update("jax_use_shardy_partitioner", False)

HERE = pathlib.Path(__file__).parent


def literal(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(float(a)) if a.dtype.kind == "f" else str(int(a))
    return "{" + ", ".join(literal(x) for x in a) + "}"


def shape(a):
    t = {"float32": "f32", "int32": "s32"}[str(a.dtype)]
    return f"{t}[{','.join(str(d) for d in a.shape)}]"


def constant(name, a):
    a = np.asarray(a)
    return f"  {name} = {shape(a)} constant({literal(a)})"


def by_device(arr):
    """Device id -> the shard that device holds."""
    return {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}


def write(name, fn, mesh_shape, in_specs, out_specs, args):
    n = int(np.prod(mesh_shape))
    axes = ("x", "y")[: len(mesh_shape)]
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(mesh_shape), axes)
    sh = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    out_sh = jax.tree.map(sh, out_specs, is_leaf=lambda s: isinstance(s, P))
    f = jax.jit(fn, in_shardings=tuple(sh(s) for s in in_specs), out_shardings=out_sh)
    text = f.lower(*args).compiler_ir("hlo").as_hlo_text()
    placed = [jax.device_put(a, sh(s)) for a, s in zip(args, in_specs)]
    outs = f(*placed)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    lines = [f"HloModule {name}_values", "", "ENTRY values {"]
    names = []
    for i, (a, p) in enumerate(zip(args, placed)):
        lines.append(constant(f"arg{i}", a))
        names.append(f"arg{i}")
        for d, s in sorted(by_device(p).items()):
            lines.append(constant(f"arg{i}.dev{d}", s))
            names.append(f"arg{i}.dev{d}")
    for j, o in enumerate(outs):
        lines.append(constant(f"out{j}", np.asarray(o)))
        names.append(f"out{j}")
        for d, s in sorted(by_device(o).items()):
            lines.append(constant(f"out{j}.dev{d}", s))
            names.append(f"out{j}.dev{d}")
    lines.append(f"  ROOT all = () tuple()")
    lines.append("}")
    (HERE / f"{name}.hlo").write_text(text)
    (HERE / f"{name}.values.hlo").write_text("\n".join(lines) + "\n")


def main():
    rng = np.random.default_rng(17)
    r = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)  # noqa: E731

    # Megatron-style: rows of x over "x", columns of w over "y"; a sum over the rows.
    def mlp(x, w):
        return jnp.sum(jnp.tanh(x @ w) * 2.0, axis=0)

    write("mlp_2x2", mlp, (2, 2), [P("x", None), P(None, "y")], P(), [r(8, 4), r(4, 6)])

    # Data parallel: a batch split over every device, weights replicated, a scalar loss.
    def loss(x, y, w):
        return jnp.mean((x @ w - y) ** 2)

    for n in (2, 4):
        write(f"dp_loss_n{n}", loss, (n,), [P("x"), P("x"), P()], P(), [r(8, 4), r(8, 3), r(4, 3)])

    # The contracting dimension split: partial products summed, the result split by rows.
    def matmul(x, w):
        return x @ w

    for n in (2, 4):
        write(f"contract_n{n}", matmul, (n,), [P(None, "x"), P("x", None)], P("x", None),
              [r(4, 8), r(8, 8)])

    # Elementwise and broadcast on row shards, and a maximum over the split rows.
    def bias_max(x, b):
        e = jnp.exp(x) + b
        return e, jnp.max(e, axis=0)

    for n in (2, 4):
        write(f"bias_max_n{n}", bias_max, (n,), [P("x", None), P()], (P("x", None), P()),
              [r(8, 6), r(6)])

    # A sharding constraint in the middle (custom-call "Sharding"): rows to columns and back.
    def constrained(x):
        mesh = Mesh(np.array(jax.devices()[:4]), ("x",))
        y = jax.lax.with_sharding_constraint(x * 2.0, NamedSharding(mesh, P(None, "x")))
        return jnp.sin(y) + 1.0

    write("constraint_n4", constrained, (4,), [P("x", None)], P("x", None), [r(8, 8)])


if __name__ == "__main__":
    main()
