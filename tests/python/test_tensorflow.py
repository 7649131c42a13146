"""kiln.tensorflow.function against tf.function(jit_compile=True) (TensorFlow's XLA:CPU). Runs
where TensorFlow is installed (benchmarks/install_peers.sh puts it in .venv-peers):

    PYTHONPATH=build/python .venv-peers/bin/python -m pytest tests/python/test_tensorflow.py
"""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
import kiln  # noqa: E402
import kiln.tensorflow  # noqa: E402
from conftest import rng  # noqa: E402


def dense_block(x, w, b, gamma):
    h = tf.nn.gelu(tf.matmul(x, w) + b)
    mean, var = tf.nn.moments(h, axes=[-1], keepdims=True)
    return {"y": gamma * (h - mean) * tf.math.rsqrt(var + 1e-5), "sum": tf.reduce_sum(h)}


def test_dense_block_matches_xla(device):
    r = rng(21)
    args = (r.standard_normal((8, 16), dtype=np.float32), r.standard_normal((16, 32), dtype=np.float32),
            r.standard_normal(32, dtype=np.float32), r.standard_normal(32, dtype=np.float32))
    got = kiln.tensorflow.function(dense_block, device=device)(*args)
    want = tf.function(dense_block, jit_compile=True)(*args)
    np.testing.assert_allclose(got["y"], want["y"].numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["sum"], want["sum"].numpy(), rtol=1e-4)


def test_conv_softmax_and_one_compile_per_signature(device):
    def f(images, filters):
        y = tf.nn.conv2d(images, filters, strides=1, padding="SAME")
        return tf.nn.softmax(tf.reduce_mean(y, axis=[1, 2]))

    g = kiln.tensorflow.function(f, device=device)
    r = rng(22)
    a = r.standard_normal((2, 8, 8, 3), dtype=np.float32)
    k = r.standard_normal((3, 3, 3, 4), dtype=np.float32)
    np.testing.assert_allclose(g(a, k), tf.function(f, jit_compile=True)(a, k).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert g.executable(a, k) is g.executable(a * 2, k)


def test_captured_variables_are_refused():
    v = tf.Variable(np.ones(3, np.float32))
    with pytest.raises(kiln.KilnError, match="captures") as e:
        kiln.tensorflow.function(lambda x: x * v)(np.ones(3, np.float32))
    assert e.value.code == "UNIMPLEMENTED"
