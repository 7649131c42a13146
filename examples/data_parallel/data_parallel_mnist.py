#!/usr/bin/env python3
"""A data-parallel MNIST-shaped training step on Kiln over N ranks, checked against JAX.

JAX writes the step: an MLP (784-128-10, softmax cross-entropy, SGD) whose gradients are
averaged over the ranks with an all-reduce (pmap with pmean), compiled by XLA for N devices;
its per-device HLO is what `mpirun -np N kiln run` runs, one rank per device, each on its
shard of the batch. Every rank's new parameters must equal those of JAX's one-process step on
the whole batch. The data are random arrays of MNIST's shapes (784 pixels in [0, 1), 10
classes): this machine has no network to fetch the real set, and the check is about the
arithmetic, not the accuracy.

usage (the .venv's Python, which has JAX):
  .venv/bin/python examples/data_parallel/data_parallel_mnist.py --kiln build/tools/kiln \
      [--ranks 1 2 4] [--batch 256] [--device cpu-llvm] [--in-process] [--benchmark N]
Without mpirun on PATH, or with --in-process, the ranks are threads of one `kiln run
--replicas N`. Exits 1 when a rank's parameters differ from JAX's."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--kiln", required=True)
parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
parser.add_argument("--batch", type=int, default=256)
parser.add_argument("--device", default="cpu-llvm")
parser.add_argument("--in-process", action="store_true")
parser.add_argument("--benchmark", type=int, default=0, help="timed steps per run (0: none)")
parser.add_argument("--keep", help="write the modules and inputs to this directory")
args = parser.parse_args()

# JAX makes its host devices when it starts: as many as the most ranks asked for.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=%d" % max(args.ranks)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

MPIRUN = shutil.which("mpirun")


def init_params(rng):
    return {
        "w1": (rng.standard_normal((784, 128)) * 0.05).astype(np.float32),
        "b1": np.zeros(128, np.float32),
        "w2": (rng.standard_normal((128, 10)) * 0.05).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    }


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 10), axis=-1))


def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


def parallel_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = jax.lax.pmean(grads, "batch")  # the all-reduce of the gradients
    loss = jax.lax.pmean(loss, "batch")
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


def main():
    rng = np.random.default_rng(0)
    params = init_params(rng)
    x = rng.random((args.batch, 784), dtype=np.float32)
    y = rng.integers(0, 10, args.batch).astype(np.int32)
    want_params, want_loss = jax.jit(step)(params, x, y)
    names = sorted(params)  # the order of a dict's leaves in JAX's pytrees
    want = [np.asarray(want_params[k]) for k in names] + [np.asarray(want_loss)]

    work = args.keep or tempfile.mkdtemp(prefix="kiln_data_parallel_")
    os.makedirs(work, exist_ok=True)
    ok = True
    timings = {}
    for n in args.ranks:
        if args.batch % n:
            sys.exit("--batch %d does not split over %d ranks" % (args.batch, n))
        per = args.batch // n
        # The per-device program XLA made for n devices: its parameters and results carry a
        # leading device axis of 1.
        rep = {k: np.broadcast_to(v, (n,) + v.shape) for k, v in params.items()}
        xs, ys = x.reshape(n, per, 784), y.reshape(n, per)
        lowered = jax.pmap(parallel_step, axis_name="batch",
                           devices=jax.devices()[:n]).lower(rep, xs, ys)
        hlo = os.path.join(work, "step_%d.hlo" % n)
        with open(hlo, "w") as f:
            f.write(lowered.compile().as_text())
        inputs = []
        for k in names:
            path = os.path.join(work, "%s_%d.npy" % (k, n))
            np.save(path, params[k][None])
            inputs += ["--input", path]
        for r in range(n):
            np.save(os.path.join(work, "x_%d_%d.npy" % (n, r)), xs[r:r + 1])
            np.save(os.path.join(work, "y_%d_%d.npy" % (n, r)), ys[r:r + 1])
        inputs += ["--input", os.path.join(work, "x_%d_{rank}.npy" % n),
                   "--input", os.path.join(work, "y_%d_{rank}.npy" % n)]
        out = os.path.join(work, "out_%d" % n)
        cmd = [args.kiln, "run", hlo, "--device", args.device, "--output-dir", out] + inputs
        if args.benchmark:
            cmd += ["--benchmark", str(args.benchmark)]
        how = "in one process"
        if MPIRUN and not args.in_process and n > 1:
            cmd = [MPIRUN, "-np", str(n)] + cmd
            how = "mpirun -np %d" % n
        else:
            cmd += ["--replicas", "1", "--partitions", str(n)]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            print("%d rank(s): kiln run failed (exit %d):\n%s" % (n, p.returncode, p.stderr))
            ok = False
            continue
        worst = 0.0
        for r in range(n):
            for i, w in enumerate(want):
                got = np.load(os.path.join(out, "rank_%d" % r, "output_%d.npy" % i))
                got = got.reshape(np.shape(w))
                worst = max(worst, float(np.max(np.abs(got - w))))
                if not np.allclose(got, w, rtol=1e-4, atol=1e-5):
                    print("%d rank(s): rank %d output %d (%s) differs from JAX's one-process step: "
                          "max |diff| %.3g" % (n, r, i, (names + ["loss"])[i],
                                               np.max(np.abs(got - w))))
                    ok = False
        medians = [float(l.split("median_ms=")[1].split()[0])
                   for l in p.stdout.splitlines() if "median_ms=" in l]
        if medians:
            timings[n] = max(medians)  # the step ends when the slowest rank's does
        print("%d rank(s), %s: every rank's parameters and loss equal JAX's one-process step on "
              "the whole batch (max |diff| %.2g)%s" %
              (n, how, worst, "; step %.2f ms" % timings[n] if n in timings else ""))
    if timings and 1 in timings:
        for n, ms in sorted(timings.items()):
            print("per-step time at %d rank(s): %.2f ms, %.2fx the single-process step" %
                  (n, ms, ms / timings[1]))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
