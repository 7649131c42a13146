"""kiln.graph: the graph IR from Python against NumPy, with the executor's modes."""
import io
import os

import numpy as np
import pytest

import kiln
from conftest import SOURCE_ROOT, rng

GRAPHS = os.path.join(SOURCE_ROOT, "examples", "graph")


def dense_reference(x, w):
    return np.maximum(x @ w + np.array([0.5, -0.25, 0.0, 1.0], np.float32), 0)


def test_parse_and_run_against_numpy(device):
    g = kiln.graph.parse(os.path.join(GRAPHS, "dense.graph"))
    assert g.placeholders == [("x", "f32", (-1, 3)), ("w", "f32", (3, 4))]
    s = kiln.graph.Session(g, device)
    r = rng(11)
    for rows in (5, 7, 5):  # one compile per new shape, a cache hit for the repeat
        x = r.standard_normal((rows, 3), dtype=np.float32)
        w = r.standard_normal((3, 4), dtype=np.float32)
        (y,) = s.run(x, w)
        np.testing.assert_allclose(y, dense_reference(x, w), rtol=1e-5, atol=1e-6)
    assert s.compile_count == 2
    assert set(s.placement.values()) == {device}


def test_builder_makes_the_same_graph(device):
    b = kiln.graph.Builder()
    x = b.placeholder("x", "f32", (-1, 3))
    w = b.placeholder("w", "f32", (3, 4))
    bias = b.const([0.5, -0.25, 0.0, 1.0], name="b")
    y = b.op("Relu", b.op("BiasAdd", b.op("MatMul", x, w), bias), name="y")
    s = kiln.graph.Session(b.build(y), device, must_compile=True)
    x_, w_ = rng(12).standard_normal((2, 3), dtype=np.float32), np.eye(3, 4, dtype=np.float32)
    np.testing.assert_allclose(s.run(x_, w_)[0], dense_reference(x_, w_), rtol=1e-6)


def test_variables_persist_across_training_steps():
    data = os.path.join(GRAPHS, "mnist_data.py")
    ns = {"__name__": "mnist_data"}
    exec(compile(open(data).read(), data, "exec"), ns)
    r = np.random.default_rng(0)
    x = r.uniform(-1, 1, (256, 784)).astype(np.float32)
    labels = np.argmax(x @ r.standard_normal((784, 10)).astype(np.float32), axis=1).astype(np.int32)
    s = kiln.graph.Session(os.path.join(GRAPHS, "mnist_train.graph"), "cpu-llvm")
    losses = [float(s.run(x, labels)[0])]
    compiles = s.compile_count  # the step (and the variables' initializers)
    losses += [float(s.run(x, labels)[0]) for _ in range(7)]
    assert losses[-1] < 0.8 * losses[0], losses
    assert set(s.variables) == {"w1", "b1", "w2", "b2"}
    assert s.variables["w1"].shape == (784, 512)
    assert s.compile_count == compiles  # later steps reuse the compiled step


def test_host_op_splits_the_graph_and_must_compile_refuses_it(device):
    g = kiln.graph.parse(os.path.join(GRAPHS, "unique.graph"))
    x = np.array([3, 1, 3, 2], np.float32)
    sq, idx, total = kiln.graph.Session(g, device).run(x)
    np.testing.assert_array_equal(sq, [4, 16, 36])  # Unique's values come out sorted
    np.testing.assert_array_equal(idx, [2, 0, 2, 1])
    assert total == 56
    with pytest.raises(kiln.KilnError, match="Unique"):
        kiln.graph.Session(g, device, must_compile=True).run(x)


def test_soft_placement_and_placement_log():
    text = open(os.path.join(GRAPHS, "dense.graph")).read().replace(
        "Relu(pre)", 'Relu[device="no-such-device"](pre)')
    x, w = np.ones((1, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(kiln.KilnError, match="no-such-device"):
        kiln.graph.Session(text).run(x, w)
    log = io.StringIO()
    s = kiln.graph.Session(text, soft_placement=True, log_placement=True, log=log)
    np.testing.assert_allclose(s.run(x, w)[0], dense_reference(x, w))
    assert "no-such-device" in log.getvalue() and "node y (Relu)" in log.getvalue()


def test_bad_graphs_and_inputs():
    with pytest.raises(kiln.KilnError, match=r"<graph>:2:1: node y \(NoSuchOp\): unknown op") as e:
        kiln.graph.Session("x = Placeholder[dtype=f32, shape=(2)]()\ny = NoSuchOp(x)\noutputs: y\n")
    assert e.value.code == "INVALID_ARGUMENT"
    s = kiln.graph.Session(os.path.join(GRAPHS, "dense.graph"))
    with pytest.raises(kiln.KilnError, match="2 placeholder"):
        s.run(np.ones((1, 3), np.float32))
    with pytest.raises(kiln.KilnError, match="placeholder w"):
        s.run(np.ones((1, 3), np.float32), np.ones((4, 4), np.float32))
