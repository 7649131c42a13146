"""kiln.jax.jit against jax.jit on the same functions (JAX's XLA:CPU is the oracle)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import kiln  # noqa: E402
import kiln.jax  # noqa: E402
from conftest import rng  # noqa: E402


def mlp(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return {"logits": h @ params["w2"], "norm": jnp.sum(h * h)}


def test_pytree_in_and_out(device):
    r = rng(7)
    params = {"w1": r.standard_normal((8, 16), dtype=np.float32),
              "b1": r.standard_normal(16, dtype=np.float32),
              "w2": r.standard_normal((16, 4), dtype=np.float32)}
    x = r.standard_normal((5, 8), dtype=np.float32)
    got = kiln.jax.jit(mlp, device=device)(params, x)
    want = jax.jit(mlp)(params, x)
    assert set(got) == {"logits", "norm"}
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(got["norm"], want["norm"], rtol=2e-5)


def test_one_compile_per_shape(device):
    f = kiln.jax.jit(lambda x: jnp.cumsum(x * 2.0), device=device)
    a = f(np.arange(4, dtype=np.float32))
    assert f.executable(np.zeros(4, np.float32)) is f.executable(np.ones(4, np.float32))
    assert f.executable(np.zeros(4, np.float32)) is not f.executable(np.zeros(6, np.float32))
    np.testing.assert_array_equal(a, np.cumsum(np.arange(4, dtype=np.float32) * 2))
    np.testing.assert_array_equal(f(np.ones(6, np.float32)), np.arange(1, 7) * 2.0)


def test_static_argnums_and_unused_arguments(device):
    def f(x, n, unused):
        for _ in range(n):
            x = jnp.sin(x)
        return x

    g = kiln.jax.jit(f, device=device, static_argnums=1)
    x = rng(8).standard_normal(3, dtype=np.float32)
    np.testing.assert_allclose(g(x, 3, x), np.sin(np.sin(np.sin(x))), rtol=1e-6)
    np.testing.assert_allclose(g(x, 1, x), np.sin(x), rtol=1e-6)


def test_jax_arrays_and_python_scalars_as_inputs(device):
    f = kiln.jax.jit(lambda x, s: x * s, device=device)
    np.testing.assert_allclose(f(jnp.arange(3.0), 2.0), [0.0, 2.0, 4.0])


def test_lower_gives_the_hlo_that_runs():
    f = kiln.jax.jit(lambda x: x + 1.0)
    text = f.lower(np.zeros(2, np.float32))
    assert text.startswith("HloModule") and "f32[2]" in text
    exe = kiln.compile(text, "interpreter")
    np.testing.assert_array_equal(exe(np.ones(2, np.float32)), [2.0, 2.0])


def test_compile_takes_a_jax_lowered_object(device):
    lowered = jax.jit(lambda x, y: jnp.sin(x) * y).lower(np.ones(3, np.float32),
                                                         np.ones(3, np.float32))
    exe = kiln.compile(lowered, device)
    x = np.linspace(0, 1, 3, dtype=np.float32)
    np.testing.assert_allclose(exe(x, np.full(3, 2, np.float32)), np.sin(x) * 2, rtol=1e-6)
