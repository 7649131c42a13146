"""Kiln's framework-level graph IR from Python: parse graph text (or build it with Builder)
and run it in a Session, which partitions it into compiled clusters (auto-jit) or compiles it
whole (must_compile), places clusters on plugins, and keeps variables across runs.

    g = kiln.graph.parse("examples/graph/dense.graph")
    s = kiln.graph.Session(g, log_placement=True)
    (y,) = s.run(x, w)
"""
import os
import sys

from . import _kiln

__all__ = ["Builder", "Graph", "Session", "parse"]

Graph = _kiln.Graph


def parse(graph):
    """A kiln.graph.Graph from graph text or a path to a .graph file; errors are KilnError
    with file:line:col."""
    if isinstance(graph, os.PathLike) or (isinstance(graph, str) and "\n" not in graph
                                            and "=" not in graph):
        path = os.fspath(graph)
        with open(path, encoding="utf-8") as f:
            return _kiln.parse_graph(f.read(), path)
    return _kiln.parse_graph(graph, "<graph>")


class Session:
    """Runs a graph: compiled clusters are cached per input shapes, variables persist across
    runs (a failed run leaves them unchanged). Placement and compile logs, when asked for, go
    to `log` (sys.stderr by default) after each run."""

    def __init__(self, graph, device="auto", *, must_compile=False, soft_placement=False,
                 log_placement=False, log_compiles=False, core_passes=True, log=None):
        if not isinstance(graph, Graph):
            graph = parse(graph)
        self.graph = graph
        self._log = log
        self._session = _kiln.GraphSession(graph, device, must_compile, soft_placement,
                                           log_placement, log_compiles, core_passes)

    def run(self, *inputs):
        """Feeds the placeholders in order; returns the graph's outputs as NumPy arrays."""
        try:
            return self._session.run(*inputs)
        finally:
            text = self._session.take_log()
            if text:
                (self._log or sys.stderr).write(text)

    @property
    def compile_count(self):
        return self._session.compile_count

    @property
    def variables(self):
        """{name: NumPy array} of the variables after the last successful run."""
        return self._session.variables

    @property
    def placement(self):
        """{node name: device} of the last run ('host' for host ops)."""
        return self._session.placement


def _attr(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value in _TYPES:
        return value
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, tuple):
        return "(" + ",".join(str(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_attr(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value) if ("." in repr(value) or "e" in repr(value)) else repr(value) + ".0"
    return str(value)


_TYPES = {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
          "f64", "c64", "c128"}


class Builder:
    """Builds graph text node by node: each call returns the new node's name (use
    f"{name}:1" for a second output). Attribute values: dtype names as strings ("f32"),
    shapes as tuples, lists as lists, strings, numbers, bools.

        b = kiln.graph.Builder()
        x = b.placeholder("x", "f32", (-1, 3))
        w = b.placeholder("w", "f32", (3, 4))
        y = b.op("Relu", b.op("MatMul", x, w))
        g = b.build(y)
    """

    def __init__(self):
        self._lines = []
        self._names = set()

    def _name(self, op, name):
        if name is None:
            i = 0
            while f"{op.lower()}_{i}" in self._names:
                i += 1
            name = f"{op.lower()}_{i}"
        if name in self._names:
            raise ValueError(f"node name {name!r} is already used")
        self._names.add(name)
        return name

    def op(self, op, *inputs, name=None, device=None, **attrs):
        name = self._name(op, name)
        if device is not None:
            attrs["device"] = device
        attr_text = ", ".join(f"{k}={_attr(v)}" for k, v in attrs.items())
        self._lines.append(f"{name} = {op}{'[' + attr_text + ']' if attrs else ''}"
                           f"({', '.join(inputs)})")
        return name

    def placeholder(self, name, dtype, shape):
        return self.op("Placeholder", name=name, dtype=dtype, shape=tuple(shape))

    def const(self, value, dtype="f32", shape=None, name=None):
        import numpy as np
        a = np.asarray(value)
        shape = tuple(a.shape) if shape is None else tuple(shape)
        flat = a.reshape(-1).tolist()
        return self.op("Const", name=name, dtype=dtype, shape=shape,
                       value=flat if a.ndim else flat[0])

    def text(self, *outputs):
        return "\n".join(self._lines + [f"outputs: {', '.join(outputs)}"]) + "\n"

    def build(self, *outputs):
        return _kiln.parse_graph(self.text(*outputs), "<builder>")
