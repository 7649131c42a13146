"""JAX programs for checking Kiln against XLA:CPU (issue #13, item 3).

Each program is a `Program`: a name, a function of arrays (or pytrees of arrays), a function
making its example inputs as NumPy arrays from a fixed seed, and a tolerance class that says
how closely floating-point results must agree (see harness.TOLERANCES). Integer and boolean
results are always compared exactly, whatever the class.

The programs are written as ordinary JAX, the way a user would write them; they are not shaped
around what Kiln can or cannot do.
"""

import dataclasses
from typing import Any, Callable

import numpy as np
import ml_dtypes
import jax
import jax.numpy as jnp
from jax import lax
import flax.linen as nn

BF16 = ml_dtypes.bfloat16


@dataclasses.dataclass(frozen=True)
class Program:
    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[], tuple]
    # "f32": plain arithmetic; "f32_loose": transcendentals, long accumulations, gradients;
    # "bf16" / "f16": low-precision programs; "exact": every result must match bit for bit.
    tol: str = "f32"


PROGRAMS = []


def program(name, tol="f32"):
    """Decorates a builder returning (fn, make_inputs) and registers the program it builds."""
    def register(builder):
        fn, make_inputs = builder()
        PROGRAMS.append(Program(name, fn, make_inputs, tol))
        return builder
    return register


def rng(seed=0):
    return np.random.default_rng(seed)


def randn(r, *shape, dtype=np.float32):
    return r.standard_normal(shape).astype(dtype)


def to_numpy(tree):
    """Parameters made by flax/jax as NumPy arrays (the harness passes NumPy to both sides)."""
    return jax.tree_util.tree_map(np.asarray, tree)


def f32_inputs(*shapes, seed=0, dtype=np.float32):
    def make():
        r = rng(seed)
        return tuple(randn(r, *s, dtype=dtype) for s in shapes)
    return make


# ---------------------------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------------------------

@program("ew_arith")
def _():
    def f(a, b, c):
        return a * b + a / (jnp.abs(b) + 0.5) - c, -a, jnp.maximum(a, c), jnp.minimum(b, c)
    return f, f32_inputs((4, 8), (4, 8), (4, 8))


@program("ew_exp_log", tol="f32_loose")
def _():
    def f(x, y):
        return jnp.exp(x), jnp.log(jnp.abs(y) + 1e-3), jnp.expm1(x * 0.01), jnp.log1p(jnp.abs(y))
    return f, f32_inputs((5, 7), (5, 7), seed=1)


@program("ew_tanh_logistic", tol="f32_loose")
def _():
    def f(x):
        return jnp.tanh(x * 3.0), jax.nn.sigmoid(x * 4.0), lax.logistic(-x)
    return f, f32_inputs((6, 9), seed=2)


@program("ew_erf", tol="f32_loose")
def _():
    def f(x):
        return jax.scipy.special.erf(x * 2.0), jax.scipy.special.erfc(x), lax.erf_inv(jnp.tanh(x))
    return f, f32_inputs((64,), seed=3)


@program("ew_pow", tol="f32_loose")
def _():
    def f(x, y):
        return jnp.power(jnp.abs(x) + 0.1, y), x ** 2, jnp.power(x, 3), lax.integer_pow(y, 5)
    return f, f32_inputs((3, 11), (3, 11), seed=4)


@program("ew_trig", tol="f32_loose")
def _():
    def f(x, y):
        return jnp.sin(x), jnp.cos(y * 3.0), jnp.arctan2(x, y), jnp.tan(x * 0.5)
    return f, f32_inputs((32,), (32,), seed=5)


@program("ew_sqrt_rsqrt", tol="f32_loose")
def _():
    def f(x):
        a = jnp.abs(x) + 0.01
        return jnp.sqrt(a), lax.rsqrt(a), jnp.cbrt(x), jnp.square(x)
    return f, f32_inputs((4, 16), seed=6)


@program("ew_int_ops", tol="exact")
def _():
    def f(a, b):
        return (a + b, a * b, a - b, a // b, a % b, a << 2, a >> 1, a & b, a | b, a ^ b,
                jnp.abs(a), jnp.maximum(a, b), -a, ~a)
    def make():
        r = rng(7)
        a = r.integers(-1000, 1000, size=(5, 6), dtype=np.int32)
        b = r.integers(1, 50, size=(5, 6), dtype=np.int32) * r.choice([-1, 1], size=(5, 6)).astype(np.int32)
        return a, b
    return f, make


@program("ew_compare_where")
def _():
    def f(x, y):
        gt = x > y
        return (jnp.where(gt, x, y * 2.0), gt, x == y, x <= 0.0,
                jnp.logical_and(gt, x > 0), jnp.logical_or(gt, y < -1), jnp.logical_not(gt))
    def make():
        r = rng(8)
        x = randn(r, 6, 6)
        y = randn(r, 6, 6)
        y[0, :3] = x[0, :3]  # some equal elements
        return x, y
    return f, make


@program("ew_clip_round")
def _():
    def f(x):
        return (jnp.clip(x, -0.5, 0.5), jnp.floor(x), jnp.ceil(x), jnp.round(x),
                jnp.sign(x), jnp.trunc(x), lax.clamp(-1.0, x, 1.0))
    def make():
        r = rng(9)
        x = randn(r, 40) * 3
        x[:4] = [0.5, 1.5, -2.5, -0.5]  # round half to even
        return (x,)
    return f, make


@program("ew_nan_inf")
def _():
    def f(x):
        return (x * 2.0, jnp.isnan(x), jnp.isinf(x), jnp.isfinite(x),
                jnp.where(jnp.isnan(x), 0.0, x), jnp.maximum(x, 0.0), 1.0 / x)
    def make():
        x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -0.0, -3.5, 2.0], np.float32)
        return (x,)
    return f, make


@program("ew_convert", tol="exact")
def _():
    def f(x, i, b):
        return (x.astype(jnp.int32), i.astype(jnp.float32), b.astype(jnp.float32),
                (x > 0).astype(jnp.int32), i.astype(jnp.uint8), x.astype(jnp.float16))
    def make():
        r = rng(10)
        x = (randn(r, 20) * 100).astype(np.float32)
        i = r.integers(-300, 300, size=20, dtype=np.int32)
        b = r.random(20) > 0.5
        return x, i, b
    return f, make


@program("ew_float_remainder")
def _():
    def f(x, y):
        return jnp.fmod(x, y), jnp.remainder(x, y), jnp.floor_divide(x, y)
    def make():
        r = rng(11)
        x = randn(r, 30) * 10
        y = (r.uniform(0.5, 3.0, 30) * r.choice([-1, 1], 30)).astype(np.float32)
        return x, y
    return f, make


@program("ew_bitcast", tol="exact")
def _():
    def f(x, i):
        return lax.bitcast_convert_type(x, jnp.int32), lax.bitcast_convert_type(i, jnp.float32)
    def make():
        r = rng(12)
        return randn(r, 10), r.integers(0x3f000000, 0x40000000, size=10, dtype=np.int32)
    return f, make


@program("activations", tol="f32_loose")
def _():
    def f(x):
        return (jax.nn.gelu(x, approximate=True), jax.nn.gelu(x, approximate=False),
                jax.nn.softplus(x), jax.nn.relu6(x * 4.0), jax.nn.silu(x), jax.nn.relu(x),
                jax.nn.elu(x), jax.nn.leaky_relu(x), jax.nn.hard_tanh(x * 2.0))
    return f, f32_inputs((8, 16), seed=13)


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------

@program("reduce_sum_axes", tol="f32_loose")
def _():
    def f(x):
        return (jnp.sum(x), jnp.sum(x, axis=0), jnp.sum(x, axis=(1, 2), keepdims=True),
                jnp.sum(x, axis=-1))
    return f, f32_inputs((4, 5, 6), seed=20)


@program("reduce_mean_var", tol="f32_loose")
def _():
    def f(x):
        return jnp.mean(x, axis=1), jnp.var(x, axis=0), jnp.std(x), jnp.mean(x, keepdims=True)
    return f, f32_inputs((16, 12), seed=21)


@program("reduce_max_min")
def _():
    def f(x, i):
        return (jnp.max(x, axis=1), jnp.min(x, axis=0, keepdims=True), jnp.max(x),
                jnp.max(i, axis=0), jnp.min(i))
    def make():
        r = rng(22)
        return randn(r, 7, 9), r.integers(-100, 100, size=(7, 9), dtype=np.int32)
    return f, make


@program("reduce_prod", tol="f32_loose")
def _():
    def f(x, i):
        return jnp.prod(x, axis=1), jnp.prod(x), jnp.prod(i, axis=0)
    def make():
        r = rng(23)
        x = r.uniform(0.7, 1.4, size=(6, 8)).astype(np.float32)
        return x, r.integers(-3, 4, size=(4, 5), dtype=np.int32)
    return f, make


@program("reduce_argmax_argmin", tol="exact")
def _():
    def f(x):
        return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(x),
                jnp.argmax(x, axis=-1, keepdims=True))
    return f, f32_inputs((10, 13), seed=24)


@program("reduce_all_any", tol="exact")
def _():
    def f(x):
        return jnp.all(x > -2.0, axis=0), jnp.any(x > 1.5, axis=1), jnp.all(x < 5.0), \
            jnp.count_nonzero(x > 0, axis=1)
    return f, f32_inputs((8, 10), seed=25)


@program("logsumexp", tol="f32_loose")
def _():
    def f(x):
        return jax.nn.logsumexp(x, axis=-1), jax.nn.logsumexp(x * 30.0), jax.nn.log_softmax(x)
    return f, f32_inputs((6, 20), seed=26)


@program("norms", tol="f32_loose")
def _():
    def f(x):
        return jnp.linalg.norm(x), jnp.linalg.norm(x, axis=1), jnp.linalg.norm(x, ord=1, axis=0)
    return f, f32_inputs((9, 7), seed=27)


# ---------------------------------------------------------------------------------------------
# Shapes: broadcasting, reshape, transpose, concatenate, slice, pad, rev, iota
# ---------------------------------------------------------------------------------------------

@program("broadcasting")
def _():
    def f(a, b, c, s):
        return a + b, a * c, jnp.outer(b.ravel(), c.ravel()), a - s, jnp.broadcast_to(c, (2, 4, 5))
    return f, f32_inputs((3, 4, 5), (4, 1), (5,), (), seed=30)


@program("reshape_transpose")
def _():
    def f(x):
        y = x.reshape(6, 4, 5)
        return (jnp.transpose(y, (2, 0, 1)), y.reshape(-1), x.T, jnp.swapaxes(x, 0, 2),
                jnp.moveaxis(y, 1, 0).reshape(4, 30))
    return f, f32_inputs((2, 3, 4, 5), seed=31)


@program("concat_slice")
def _():
    def f(a, b):
        c = jnp.concatenate([a, b, a], axis=1)
        return (c, c[1:5:2, ::3], a[:, -2:], jnp.stack([a, b], axis=0), jnp.split(b, 2, axis=1)[1],
                a[2], a[..., None, 1])
    return f, f32_inputs((6, 4), (6, 4), seed=32)


@program("pad")
def _():
    def f(x):
        return (jnp.pad(x, ((1, 2), (0, 3))), jnp.pad(x, 1, constant_values=-1.0),
                jnp.pad(x, ((2, 1), (1, 1)), mode="edge"), jnp.pad(x, ((1, 1), (2, 0)), mode="reflect"),
                lax.pad(x, 0.0, ((1, -1, 1), (-1, 2, 2))))
    return f, f32_inputs((4, 5), seed=33)


@program("rev")
def _():
    def f(x):
        return jnp.flip(x, axis=0), jnp.flip(x), x[::-1, :, ::-2], jnp.fliplr(x[0])
    return f, f32_inputs((3, 4, 5), seed=34)


@program("iota_arange")
def _():
    def f(x):
        n = x.shape[0]
        return (x + jnp.arange(n, dtype=jnp.float32)[:, None], jnp.arange(3, 20, 4),
                lax.broadcasted_iota(jnp.int32, (3, 5), 1), jnp.linspace(0.0, 1.0, 7),
                jnp.eye(4, 5, k=1))
    return f, f32_inputs((6, 3), seed=35)


@program("triangular_mask", tol="f32_loose")
def _():
    def f(s):
        n = s.shape[-1]
        mask = jnp.tril(jnp.ones((n, n), dtype=bool))
        masked = jnp.where(mask, s, -jnp.inf)
        return jnp.tril(s), jnp.triu(s, k=1), jax.nn.softmax(masked, axis=-1)
    return f, f32_inputs((2, 6, 6), seed=36)


@program("one_hot", tol="exact")
def _():
    def f(labels):
        return jax.nn.one_hot(labels, 10), jax.nn.one_hot(labels, 10, dtype=jnp.int32).sum(0)
    def make():
        return (rng(37).integers(0, 10, size=(12,), dtype=np.int32),)
    return f, make


# ---------------------------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------------------------

@program("matmul_2d", tol="f32_loose")
def _():
    def f(a, b, v):
        return a @ b, a @ v, jnp.dot(b.T, v.reshape(33, 1)), jnp.vdot(v, v)
    return f, f32_inputs((17, 33), (33, 9), (33,), seed=40)


@program("matmul_batched", tol="f32_loose")
def _():
    def f(a, b, c):
        return jnp.matmul(a, b), jnp.matmul(a, c)  # c broadcasts over the batch
    return f, f32_inputs((3, 8, 16), (3, 16, 5), (16, 7), seed=41)


@program("einsum", tol="f32_loose")
def _():
    def f(q, k, a, b, c, m):
        return (jnp.einsum("bhqd,bhkd->bhqk", q, k), jnp.einsum("ij,jk,kl->il", a, b, c),
                jnp.einsum("ii->i", m), jnp.einsum("ii", m), jnp.einsum("bhqd->bqhd", q),
                jnp.einsum("ij,ij->i", a, a))
    return f, f32_inputs((2, 3, 5, 4), (2, 3, 7, 4), (4, 6), (6, 5), (5, 3), (5, 5), seed=42)


@program("dot_general_unusual", tol="f32_loose")
def _():
    def f(x, y):
        # Batch dims not leading and contracting dims in the middle of both operands.
        dn = (((0, 3), (2, 0)), ((2,), (1,)))
        return lax.dot_general(x, y, dn), lax.dot_general(x, x, (((1, 2), (1, 2)), ((), ())))
    return f, f32_inputs((4, 3, 5, 6), (6, 5, 4, 2), seed=43)


@program("int_matmul", tol="exact")
def _():
    def f(a, b):
        return a @ b, jnp.einsum("ij,ij->j", a, a)
    def make():
        r = rng(44)
        return (r.integers(-20, 20, size=(5, 7), dtype=np.int32),
                r.integers(-20, 20, size=(7, 3), dtype=np.int32))
    return f, make


# ---------------------------------------------------------------------------------------------
# Control flow
# ---------------------------------------------------------------------------------------------

@program("scan_cumulative", tol="f32_loose")
def _():
    def f(xs, h0):
        def step(h, x):
            h = 0.9 * h + jnp.sin(x)
            return h, h * 2.0
        return lax.scan(step, h0, xs)
    return f, f32_inputs((10, 4), (4,), seed=50)


@program("fori_loop", tol="f32_loose")
def _():
    def f(m, v):
        def body(i, v):
            w = m @ v
            return w / jnp.linalg.norm(w) + 0.0 * i
        return lax.fori_loop(0, 12, body, v)
    def make():
        r = rng(51)
        a = randn(r, 6, 6)
        return (a @ a.T).astype(np.float32), randn(r, 6)
    return f, make


@program("cond")
def _():
    def f(x, y):
        return lax.cond(jnp.sum(x) > 0, lambda a, b: (a * b, a + 1.0), lambda a, b: (a - b, b * 2.0),
                        x, y)
    return f, f32_inputs((5,), (5,), seed=52)


@program("switch")
def _():
    def f(i, x):
        branches = [lambda v: v + 1.0, lambda v: v * v, lambda v: jnp.flip(v)]
        return lax.switch(i, branches, x), lax.switch(i + 1, branches, x)
    def make():
        return np.int32(1), randn(rng(53), 7)
    return f, make


@program("while_loop", tol="f32_loose")
def _():
    def f(a):
        # Newton iteration for sqrt(a), counting iterations until converged.
        def cond_fn(s):
            x, i = s
            return jnp.logical_and(jnp.max(jnp.abs(x * x - a)) > 1e-4, i < 50)
        def body(s):
            x, i = s
            return 0.5 * (x + a / x), i + 1
        return lax.while_loop(cond_fn, body, (a, jnp.int32(0)))
    def make():
        return (rng(54).uniform(0.5, 9.0, size=8).astype(np.float32),)
    return f, make


@program("scan_lstm", tol="f32_loose")
def _():
    H, D, T, B = 16, 8, 6, 3
    def f(params, xs):
        wx, wh, b = params
        def cell(carry, x):
            h, c = carry
            z = x @ wx + h @ wh + b
            i, g, fo, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(fo) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        z = jnp.zeros((B, H), xs.dtype)
        (h, c), hs = lax.scan(cell, (z, z), xs)
        return h, hs.mean(axis=0)
    def make():
        r = rng(55)
        return ((randn(r, D, 4 * H) * 0.3, randn(r, H, 4 * H) * 0.3, randn(r, 4 * H) * 0.1),
                randn(r, T, B, D))
    return f, make


@program("cumsum_cumprod", tol="f32_loose")
def _():
    def f(x, i):
        return (jnp.cumsum(x, axis=0), jnp.cumprod(1.0 + 0.1 * x, axis=1), jnp.cumsum(i),
                lax.cummax(x, axis=1), jnp.cumsum(x[::-1], axis=0))
    def make():
        r = rng(56)
        return randn(r, 12, 5), r.integers(-10, 10, size=20, dtype=np.int32)
    return f, make


# ---------------------------------------------------------------------------------------------
# Sorting, gathers, scatters, dynamic slices
# ---------------------------------------------------------------------------------------------

@program("sort", tol="exact")
def _():
    def f(x, i):
        return jnp.sort(x, axis=-1), jnp.sort(x, axis=0), jnp.sort(i), lax.sort((x[0], i[:13]), num_keys=1)
    def make():
        r = rng(60)
        return randn(r, 5, 13), r.permutation(30).astype(np.int32)
    return f, make


@program("argsort", tol="exact")
def _():
    def f(x):
        return jnp.argsort(x, axis=-1), jnp.argsort(-x[0]), jnp.argsort(x, axis=0, descending=True)
    return f, f32_inputs((4, 9), seed=61)


@program("top_k", tol="exact")
def _():
    def f(x):
        v, i = lax.top_k(x, 3)
        return v, i
    return f, f32_inputs((5, 20), seed=62)


@program("gather_index", tol="exact")
def _():
    def f(x, idx, rows, cols):
        return x[idx], x[:, idx], x[rows, cols], x[idx[:2], 1:3], jnp.take(x, idx, axis=1, mode="clip")
    def make():
        r = rng(63)
        return (randn(r, 8, 8), np.array([3, 0, 7, 3, 5], np.int32),
                np.array([1, 2, 6], np.int32), np.array([0, 7, 4], np.int32))
    return f, make


@program("take_along_axis", tol="exact")
def _():
    def f(x, idx):
        return jnp.take_along_axis(x, idx, axis=1), jnp.take_along_axis(x, jnp.argsort(x, axis=0), axis=0)
    def make():
        r = rng(64)
        return randn(r, 6, 9), r.integers(0, 9, size=(6, 4)).astype(np.int32)
    return f, make


@program("scatter_add")
def _():
    def f(x, idx, v):
        return x.at[idx].add(v), x.at[idx, 2].add(v[:, 0]), jnp.zeros(10).at[idx].add(1.0)
    def make():
        r = rng(65)
        return (randn(r, 10, 4), np.array([1, 4, 1, 9, 0, 4], np.int32), randn(r, 6, 4))
    return f, make


@program("scatter_set")
def _():
    def f(x, idx, v):
        return x.at[idx].set(v), x.at[2, idx[:3]].set(-1.0), x.at[:, 1].set(0.0), x.at[idx].max(v)
    def make():
        r = rng(66)
        return (randn(r, 8, 8), np.array([7, 2, 5, 0], np.int32), randn(r, 4, 8))
    return f, make


@program("segment_sum", tol="f32_loose")
def _():
    def f(data, seg):
        return (jax.ops.segment_sum(data, seg, num_segments=5),
                jax.ops.segment_max(data, seg, num_segments=5))
    def make():
        r = rng(67)
        return randn(r, 20, 3), np.sort(r.integers(0, 5, size=20)).astype(np.int32)
    return f, make


@program("dynamic_slice")
def _():
    def f(x, i, j):
        return lax.dynamic_slice(x, (i, j), (3, 4)), lax.dynamic_index_in_dim(x, j, axis=1), \
            lax.dynamic_slice(x, (i + 10, j), (3, 4))  # start index clamped
    def make():
        return randn(rng(68), 8, 9), np.int32(2), np.int32(5)
    return f, make


@program("dynamic_update_slice")
def _():
    def f(x, u, i):
        return lax.dynamic_update_slice(x, u, (i, i + 1)), lax.dynamic_update_slice(x, u, (i * 10, 0))
    def make():
        r = rng(69)
        return randn(r, 7, 7), randn(r, 2, 3), np.int32(3)
    return f, make


# ---------------------------------------------------------------------------------------------
# Convolutions and pooling
# ---------------------------------------------------------------------------------------------

@program("conv_variants", tol="f32_loose")
def _():
    def f(x, w, wd):
        nhwc = ("NHWC", "HWIO", "NHWC")
        a = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=nhwc)
        b = lax.conv_general_dilated(x, w, (2, 2), "VALID", dimension_numbers=nhwc)
        c = lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=nhwc)
        d = lax.conv_general_dilated(x, wd, (1, 1), ((1, 1), (1, 1)), dimension_numbers=nhwc,
                                     feature_group_count=4)
        return a, b, c, d
    return f, f32_inputs((2, 9, 9, 4), (3, 3, 4, 6), (3, 3, 1, 8), seed=70)


@program("avg_max_pool")
def _():
    def f(x):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        mx_same = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        avg = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "VALID") / 9.0
        return mx, mx_same, avg, nn.avg_pool(x, (2, 2), strides=(2, 2), padding="SAME")
    return f, f32_inputs((2, 7, 7, 3), seed=71)


# ---------------------------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------------------------

def mlp_params(r, sizes):
    return [(randn(r, m, n) * np.float32(1 / np.sqrt(m)), randn(r, n) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:])]


def mlp_apply(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def softmax_xent(logits, labels):
    return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, logits.shape[-1]) * jax.nn.log_softmax(logits), -1))


@program("grad_mlp", tol="f32_loose")
def _():
    def f(params, x, y):
        loss = lambda p: jnp.mean((mlp_apply(p, x) - y) ** 2)
        return jax.value_and_grad(loss)(params)
    def make():
        r = rng(80)
        return mlp_params(r, [8, 32, 16, 4]), randn(r, 10, 8), randn(r, 10, 4)
    return f, make


@program("softmax_xent_grad", tol="f32_loose")
def _():
    def f(logits, labels):
        return jax.value_and_grad(softmax_xent)(logits, labels)
    def make():
        r = rng(81)
        return randn(r, 16, 10) * 3, r.integers(0, 10, size=16).astype(np.int32)
    return f, make


@program("grad_cnn", tol="f32_loose")
def _():
    def net(p, x):
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME", dimension_numbers=dn))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(lax.conv_general_dilated(h, p["c2"], (2, 2), "SAME", dimension_numbers=dn))
        return h.reshape(h.shape[0], -1) @ p["w"]
    def f(p, x, labels):
        return jax.value_and_grad(lambda p: softmax_xent(net(p, x), labels))(p)
    def make():
        r = rng(82)
        p = {"c1": randn(r, 3, 3, 1, 4) * 0.3, "c2": randn(r, 3, 3, 4, 8) * 0.2,
             "w": randn(r, 2 * 2 * 8, 5) * 0.2}
        return p, randn(r, 3, 8, 8, 1), r.integers(0, 5, size=3).astype(np.int32)
    return f, make


@program("vmap_per_example_grad", tol="f32_loose")
def _():
    def f(w, xs, ys):
        loss = lambda w, x, y: (jnp.tanh(x @ w).sum() - y) ** 2
        return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    def make():
        r = rng(83)
        return randn(r, 5, 3), randn(r, 6, 5), randn(r, 6)
    return f, make


@program("vmap_dynamic_slice")
def _():
    def f(x, starts):
        return jax.vmap(lambda row, s: lax.dynamic_slice(row, (s,), (4,)))(x, starts), \
            jax.vmap(jnp.outer)(x[:, :3], x[:, 3:6])
    def make():
        r = rng(84)
        return randn(r, 5, 10), np.array([0, 3, 6, 9, 2], np.int32)
    return f, make


# ---------------------------------------------------------------------------------------------
# Flax
# ---------------------------------------------------------------------------------------------

def flax_program(name, module, *input_shapes, tol="f32_loose", seed=0, dtype=np.float32, init_kwargs=None):
    def make():
        r = rng(seed)
        xs = tuple(randn(r, *s).astype(dtype) for s in input_shapes)
        params = module.init(jax.random.PRNGKey(seed), *xs, **(init_kwargs or {}))
        return (to_numpy(params),) + xs
    def f(params, *xs):
        return module.apply(params, *xs)
    program(name, tol)(lambda: (f, make))


flax_program("flax_dense", nn.Dense(12), (4, 7), seed=90)
flax_program("flax_conv", nn.Conv(6, (3, 3), strides=(1, 2), padding="SAME"), (2, 8, 8, 3), seed=91)
flax_program("flax_layernorm", nn.LayerNorm(), (5, 16), seed=92)
flax_program("flax_mha", nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=16),
             (2, 5, 8), (2, 7, 8), seed=93)


class TransformerBlock(nn.Module):
    heads: int = 2
    dim: int = 16

    @nn.compact
    def __call__(self, x):
        n = x.shape[-2]
        mask = nn.make_causal_mask(jnp.ones((x.shape[0], n)))
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h, mask=mask)
        h = nn.LayerNorm()(x)
        h = nn.Dense(4 * self.dim)(h)
        h = nn.gelu(h)
        return x + nn.Dense(self.dim)(h)


flax_program("transformer_block", TransformerBlock(), (2, 6, 16), seed=94)


@program("transformer_block_grad", tol="f32_loose")
def _():
    block = TransformerBlock()
    def f(params, x, target):
        loss = lambda p: jnp.mean((block.apply(p, x) - target) ** 2)
        return jax.value_and_grad(loss)(params)
    def make():
        r = rng(95)
        x = randn(r, 2, 6, 16)
        return to_numpy(block.init(jax.random.PRNGKey(95), x)), x, randn(r, 2, 6, 16)
    return f, make


# ---------------------------------------------------------------------------------------------
# jax.random (threefry), the key passed as an input
# ---------------------------------------------------------------------------------------------

def key_input(seed):
    return lambda: (np.asarray(jax.random.key_data(jax.random.key(seed))),)


@program("random_normal", tol="f32_loose")
def _():
    def f(k):
        key = jax.random.wrap_key_data(k)
        k1, k2 = jax.random.split(key)
        return jax.random.normal(k1, (4, 6)), jax.random.normal(k2, (3,))
    return f, key_input(100)


@program("random_uniform")
def _():
    def f(k):
        key = jax.random.wrap_key_data(k)
        return jax.random.uniform(key, (5, 5), minval=-2.0, maxval=3.0), jax.random.randint(key, (7,), 0, 100), \
            jax.random.bits(key, (3,))
    return f, key_input(101)


@program("random_bernoulli", tol="exact")
def _():
    def f(k):
        return jax.random.bernoulli(jax.random.wrap_key_data(k), 0.3, (50,))
    return f, key_input(102)


@program("random_permutation", tol="exact")
def _():
    def f(k, x):
        key = jax.random.wrap_key_data(k)
        return jax.random.permutation(key, 12), jax.random.permutation(key, x), \
            jax.random.choice(key, 20, (5,), replace=False)
    return f, lambda: key_input(103)() + (np.arange(8, dtype=np.int32) * 3,)


@program("random_old_style_key")
def _():
    def f(key):
        a, b = jax.random.split(key)
        return jax.random.uniform(a, (6,)), jax.random.truncated_normal(b, -1.0, 1.0, (4,))
    return f, lambda: (np.asarray(jax.random.PRNGKey(104)),)


# ---------------------------------------------------------------------------------------------
# int32 programs
# ---------------------------------------------------------------------------------------------

@program("int_reductions", tol="exact")
def _():
    def f(a):
        return jnp.sum(a, axis=0), jnp.max(a, axis=1), jnp.cumsum(a, axis=1), jnp.argmax(a, axis=0), \
            jnp.sum(a > 0)
    return f, lambda: (rng(110).integers(-1000, 1000, size=(6, 7)).astype(np.int32),)


@program("int_collatz_while", tol="exact")
def _():
    def f(n):
        def steps(n):
            return lax.while_loop(lambda s: s[0] != 1,
                                  lambda s: (jnp.where(s[0] % 2 == 0, s[0] // 2, 3 * s[0] + 1), s[1] + 1),
                                  (n, jnp.int32(0)))[1]
        return jax.vmap(steps)(n)
    return f, lambda: (np.array([1, 6, 7, 27, 97, 12], np.int32),)


@program("int_histogram", tol="exact")
def _():
    def f(x):
        return jnp.bincount(x, length=8), jnp.zeros(8, jnp.int32).at[x].add(x)
    return f, lambda: (rng(111).integers(0, 8, size=40).astype(np.int32),)


# ---------------------------------------------------------------------------------------------
# bf16 and f16 versions
# ---------------------------------------------------------------------------------------------

@program("bf16_elementwise", tol="bf16")
def _():
    def f(x, y):
        return x * y + x, jnp.exp(x), jnp.tanh(y), jax.nn.gelu(x), jnp.maximum(x, y)
    return f, f32_inputs((8, 8), (8, 8), seed=120, dtype=BF16)


@program("bf16_matmul", tol="bf16")
def _():
    def f(a, b):
        return a @ b, jnp.einsum("bij,jk->bik", a[None], b)
    return f, f32_inputs((12, 24), (24, 10), seed=121, dtype=BF16)


@program("bf16_mlp", tol="bf16")
def _():
    def f(params, x):
        return jax.nn.softmax(mlp_apply(params, x))
    def make():
        r = rng(122)
        params = jax.tree_util.tree_map(lambda a: a.astype(BF16), mlp_params(r, [8, 16, 4]))
        return params, randn(r, 5, 8).astype(BF16)
    return f, make


@program("bf16_reductions", tol="bf16")
def _():
    def f(x):
        return jnp.sum(x, axis=1), jnp.max(x, axis=0), jnp.mean(x), jnp.argmax(x, axis=1)
    return f, f32_inputs((6, 16), seed=123, dtype=BF16)


@program("bf16_layernorm", tol="bf16")
def _():
    ln = nn.LayerNorm(dtype=jnp.bfloat16, param_dtype=jnp.bfloat16)
    def f(params, x):
        return ln.apply(params, x)
    def make():
        x = randn(rng(124), 4, 32).astype(BF16)
        return to_numpy(ln.init(jax.random.PRNGKey(0), x)), x
    return f, make


@program("f16_elementwise", tol="f16")
def _():
    def f(x, y):
        return x + y * 2, jnp.exp(x * 0.5), jax.nn.sigmoid(y), jnp.sqrt(jnp.abs(x)), jnp.where(x > y, x, y)
    return f, f32_inputs((8, 8), (8, 8), seed=130, dtype=np.float16)


@program("f16_matmul", tol="f16")
def _():
    def f(a, b):
        return jnp.matmul(a, b)
    return f, f32_inputs((2, 6, 16), (2, 16, 5), seed=131, dtype=np.float16)


@program("f16_softmax", tol="f16")
def _():
    def f(x):
        return jax.nn.softmax(x, axis=-1), jax.nn.logsumexp(x, axis=-1)
    return f, f32_inputs((5, 12), seed=132, dtype=np.float16)


@program("f16_conv", tol="f16")
def _():
    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, lambda: tuple(a * np.float16(0.5) for a in f32_inputs((1, 6, 6, 3), (3, 3, 3, 4), seed=133,
                                                                   dtype=np.float16)())


@program("f16_scan", tol="f16")
def _():
    def f(xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros_like(xs[0]), xs)
    return f, f32_inputs((8, 4), seed=134, dtype=np.float16)


# ---------------------------------------------------------------------------------------------
# Further everyday JAX: special functions, small integer types, linear algebra, FFT, complex,
# remat, other PRNGs, quantized matmul, batch norm, embeddings, transposed and grouped convs
# ---------------------------------------------------------------------------------------------

@program("special_functions", tol="f32_loose")
def _():
    def f(x):
        a = jnp.abs(x) + 0.5
        return (jax.scipy.special.gammaln(a), jax.scipy.special.digamma(a), jnp.sinh(x), jnp.cosh(x),
                jnp.arcsinh(x), jnp.arcsin(jnp.tanh(x)), jnp.arccos(jnp.tanh(x)), jnp.logaddexp(x, -x),
                jax.scipy.special.xlogy(a, a), jnp.exp2(x), jnp.log2(a), jnp.log10(a))
    return f, f32_inputs((24,), seed=140)


@program("small_int_types", tol="exact")
def _():
    def f(u8, i8, i16, u32):
        return (u8 + u8, u8 // 3, i8 * 2, i8 >> 1, i16 * i16, u32 >> 3, u32 * jnp.uint32(2654435761),
                lax.population_count(u32), lax.clz(u32), u8.astype(jnp.int32).sum(), jnp.max(i8))
    def make():
        r = rng(141)
        return (r.integers(0, 256, 16).astype(np.uint8), r.integers(-128, 128, 16).astype(np.int8),
                r.integers(-200, 200, 16).astype(np.int16), r.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32))
    return f, make


@program("quantized_matmul", tol="exact")
def _():
    def f(a, b, scale):
        acc = jnp.matmul(a, b, preferred_element_type=jnp.int32)
        q = jnp.clip(jnp.round(acc.astype(jnp.float32) * scale), -128, 127).astype(jnp.int8)
        return acc, q
    def make():
        r = rng(142)
        return (r.integers(-128, 128, (6, 32)).astype(np.int8), r.integers(-128, 128, (32, 5)).astype(np.int8),
                np.float32(0.01))
    return f, make


@program("linalg_solve", tol="f32_loose")
def _():
    def f(a, b):
        return jnp.linalg.solve(a, b), jnp.linalg.cholesky(a @ a.T + 4.0 * jnp.eye(a.shape[0]))
    def make():
        r = rng(143)
        return randn(r, 5, 5) + 3 * np.eye(5, dtype=np.float32), randn(r, 5, 2)
    return f, make


@program("linalg_triangular_solve", tol="f32_loose")
def _():
    def f(l, b):
        return jax.scipy.linalg.solve_triangular(l, b, lower=True)
    def make():
        r = rng(144)
        return np.tril(randn(r, 6, 6)) + 4 * np.eye(6, dtype=np.float32), randn(r, 6, 3)
    return f, make


@program("linalg_inv_det_slogdet", tol="f32_loose")
def _():
    def f(a):
        sign, logdet = jnp.linalg.slogdet(a)
        return jnp.linalg.inv(a), jnp.linalg.det(a), sign, logdet
    def make():
        return randn(rng(145), 4, 4) + 2 * np.eye(4, dtype=np.float32),
    return f, make


@program("linalg_singular_det_and_lu", tol="f32_loose")
def _():
    # A zero pivot (getrf's info > 0): det is 0; the pivots and factors still come back.
    def f(a):
        p, l, u = jax.scipy.linalg.lu(a)
        return jnp.linalg.det(a), p, l, u
    def make():
        a = randn(rng(146), 4, 4)
        a[2] = a[0] + a[1]
        a[:, 3] = 0.0
        return a,
    return f, make


@program("linalg_batched_complex_solve", tol="f32_loose")
def _():
    def f(a, b):
        return jnp.linalg.solve(a, b)
    def make():
        r = rng(147)
        a = (randn(r, 3, 4, 4) + 1j * randn(r, 3, 4, 4)).astype(np.complex64)
        a += 4 * np.eye(4, dtype=np.complex64)
        return a, (randn(r, 3, 4, 2) + 1j * randn(r, 3, 4, 2)).astype(np.complex64)
    return f, make


@program("linalg_cho_solve_and_not_pd", tol="f32_loose")
def _():
    # cho_factor/cho_solve (potrf then trsm both ways), and a matrix that is not positive
    # definite (potrf's info > 0: JAX returns NaNs).
    def f(a, b):
        spd = a @ a.T + 3.0 * jnp.eye(a.shape[0])
        x = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(spd, lower=False), b)
        return x, jnp.linalg.cholesky(-spd)
    def make():
        r = rng(148)
        return randn(r, 5, 5), randn(r, 5, 2)
    return f, make


@program("linalg_triangular_solve_variants", tol="f32_loose")
def _():
    def f(u, b, c):
        sl = jax.scipy.linalg
        return (sl.solve_triangular(u, b, lower=False, trans=1, unit_diagonal=True),
                sl.solve_triangular(u, b, lower=False, trans=2),
                jax.lax.linalg.triangular_solve(u, c, left_side=False, lower=False))
    def make():
        r = rng(149)
        return (np.triu(randn(r, 5, 5)) + 4 * np.eye(5, dtype=np.float32), randn(r, 5, 3),
                randn(r, 2, 5))
    return f, make


@program("linalg_qr_modes_and_least_squares", tol="f32_loose")
def _():
    # geqrf + orgqr (Householder reflectors: LAPACK's sign convention fixes Q and R).
    def f(tall, wide, b):
        q, r = jnp.linalg.qr(tall)
        qc, rc = jnp.linalg.qr(tall, mode="complete")
        qw, rw = jnp.linalg.qr(wide)
        x = jax.scipy.linalg.solve_triangular(r, q.T @ b, lower=False)
        return q, r, qc, rc, qw, rw, x
    def make():
        r = rng(150)
        return randn(r, 6, 4), randn(r, 3, 5), randn(r, 6, 2)
    return f, make


@program("fft", tol="f32_loose")
def _():
    def f(x):
        spec = jnp.fft.rfft(x)
        return jnp.abs(spec), jnp.fft.irfft(spec, n=x.shape[-1])
    return f, f32_inputs((3, 16), seed=145)


@program("complex_arith", tol="f32_loose")
def _():
    def f(re, im):
        z = lax.complex(re, im)
        w = z * z + jnp.conj(z) / (z + 2.0)
        return jnp.real(w), jnp.imag(w), jnp.abs(jnp.exp(z * 0.1)), jnp.angle(z)
    return f, f32_inputs((10,), (10,), seed=146)


@program("remat_mlp_grad", tol="f32_loose")
def _():
    def f(params, x):
        loss = lambda p: jnp.sum(jax.checkpoint(mlp_apply)(p, x) ** 2)
        return jax.grad(loss)(params)
    def make():
        r = rng(147)
        return mlp_params(r, [6, 12, 3]), randn(r, 4, 6)
    return f, make


@program("random_rbg_key", tol="f32_loose")
def _():
    def f(k):
        key = jax.random.wrap_key_data(k, impl="rbg")
        return jax.random.normal(key, (3, 4)), jax.random.uniform(key, (5,))
    return f, lambda: (np.asarray(jax.random.key_data(jax.random.key(148, impl="rbg"))),)


@program("random_gamma_categorical", tol="f32_loose")
def _():
    def f(k, logits):
        key = jax.random.wrap_key_data(k)
        k1, k2 = jax.random.split(key)
        return jax.random.gamma(k1, 2.5, (6,)), jax.random.categorical(k2, logits, axis=-1)
    return f, lambda: key_input(149)() + (randn(rng(149), 4, 7),)


@program("associative_scan", tol="f32_loose")
def _():
    def f(x):
        return lax.associative_scan(jnp.add, x), lax.cumlogsumexp(x, axis=0), lax.cumsum(x, reverse=True)
    return f, f32_inputs((17,), seed=150)


@program("searchsorted_interp", tol="f32_loose")
def _():
    def f(xp, fp, x):
        return jnp.searchsorted(xp, x), jnp.interp(x, xp, fp), jnp.digitize(x, xp)
    def make():
        r = rng(151)
        xp = np.sort(randn(r, 12))
        return xp, randn(r, 12), randn(r, 9)
    return f, make


@program("median_percentile", tol="f32_loose")
def _():
    def f(x):
        return jnp.median(x, axis=1), jnp.percentile(x, 90.0), jnp.quantile(x, 0.25, axis=0)
    return f, f32_inputs((5, 11), seed=152)


@program("unique_sized", tol="exact")
def _():
    def f(x):
        return jnp.unique(x, size=10, fill_value=-1), jnp.unique(x, size=10, fill_value=-1, return_counts=True)[1]
    return f, lambda: (rng(153).integers(0, 7, 25).astype(np.int32),)


@program("scan_reverse_unrolled", tol="f32_loose")
def _():
    def f(xs):
        step = lambda c, x: (c * 0.7 + x, jnp.tanh(c))
        a = lax.scan(step, jnp.zeros(3), xs, reverse=True)
        b = lax.scan(step, jnp.ones(3), xs, unroll=3)
        return a, b, lax.map(jnp.linalg.norm, xs)
    return f, f32_inputs((7, 3), seed=154)


@program("while_with_cond", tol="f32_loose")
def _():
    def f(x):
        def body(s):
            i, v = s
            v = lax.cond(i % 2 == 0, lambda v: v * 1.5, lambda v: jnp.sin(v), v)
            return i + 1, v
        return lax.while_loop(lambda s: s[0] < 9, body, (jnp.int32(0), x))
    return f, f32_inputs((4,), seed=155)


@program("conv_transpose_grad_depthwise", tol="f32_loose")
def _():
    def f(x, w, wd):
        dn = ("NHWC", "HWIO", "NHWC")
        up = lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=dn)
        def depthwise(wd):
            y = lax.conv_general_dilated(x, wd, (2, 2), "SAME", dimension_numbers=dn, feature_group_count=4)
            return jnp.sum(jnp.tanh(y))
        return up, jax.grad(depthwise)(wd)
    return f, f32_inputs((2, 5, 5, 4), (3, 3, 4, 3), (3, 3, 1, 8), seed=156)


@program("pool_grads", tol="f32_loose")
def _():
    def f(x):
        mx = lambda x: jnp.sum(nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME") ** 2)
        av = lambda x: jnp.sum(jnp.sin(nn.avg_pool(x, (2, 2), strides=(1, 1))))
        return jax.grad(mx)(x), jax.grad(av)(x)
    return f, f32_inputs((1, 6, 6, 2), seed=157)


class EmbedAttendBN(nn.Module):
    @nn.compact
    def __call__(self, tokens, train):
        h = nn.Embed(50, 16)(tokens)
        h = h + nn.MultiHeadDotProductAttention(num_heads=4)(h)
        h = nn.BatchNorm(use_running_average=not train)(h)
        return nn.Dense(3)(h.mean(axis=1))


@program("flax_embed_attention_batchnorm", tol="f32_loose")
def _():
    model = EmbedAttendBN()
    def f(variables, tokens):
        out, updates = model.apply(variables, tokens, True, mutable=["batch_stats"])
        return out, updates
    def make():
        tokens = rng(158).integers(0, 50, (4, 9)).astype(np.int32)
        return to_numpy(model.init(jax.random.PRNGKey(158), tokens, False)), tokens
    return f, make


@program("dot_product_attention", tol="f32_loose")
def _():
    def f(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True), \
            jax.nn.dot_product_attention(q, k, v, scale=0.5)
    return f, f32_inputs((2, 6, 3, 8), (2, 6, 3, 8), (2, 6, 3, 8), seed=159)


@program("bf16_mixed_precision_step", tol="bf16")
def _():
    def f(params, x, y):
        def loss(p):
            pb = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), p)
            out = mlp_apply(pb, x.astype(jnp.bfloat16)).astype(jnp.float32)
            return jnp.mean((out - y) ** 2)
        l, g = jax.value_and_grad(loss)(params)
        return l, jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, g)
    def make():
        r = rng(160)
        return mlp_params(r, [8, 16, 2]), randn(r, 6, 8), randn(r, 6, 2)
    return f, make


@program("f16_grad", tol="f16")
def _():
    def f(w, x):
        return jax.grad(lambda w: jnp.sum(jax.nn.softplus(x @ w)).astype(jnp.float32))(w)
    return f, lambda: tuple(a * np.float16(0.5) for a in f32_inputs((5, 3), (4, 5), seed=161, dtype=np.float16)())


@program("nan_reductions")
def _():
    def f(x):
        return jnp.max(x, axis=1), jnp.argmax(x, axis=1), jnp.nansum(x, axis=1), jnp.nanmax(x, axis=1), \
            jnp.sort(x, axis=1)
    def make():
        x = randn(rng(162), 4, 5)
        x[1, 2] = np.nan
        x[3, 0] = np.nan
        x[2, 4] = np.inf
        return (x,)
    return f, make


# ---------------------------------------------------------------------------------------------
# Sizes and signatures: GEMM-sized matmuls, long reductions, NCHW convs, no inputs, outputs that
# are inputs, empty arrays, bool and complex arrays in and out
# ---------------------------------------------------------------------------------------------

@program("matmul_large", tol="f32_loose")
def _():
    def f(a, b):
        return a @ b, a.T @ a, jnp.einsum("ik,jk->ij", a, b.T), jax.nn.relu(a @ b + 1.0)
    return f, f32_inputs((192, 160), (160, 136), seed=170)


@program("reductions_long", tol="f32_loose")
def _():
    def f(x):
        return jnp.sum(x), jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.mean(x * x, axis=1), jnp.argmin(x, axis=0)
    return f, f32_inputs((1000, 37), seed=171)


@program("conv_nchw", tol="f32_loose")
def _():
    def f(x, w):
        dn = ("NCHW", "OIHW", "NCHW")
        y = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn)
        return jax.nn.relu(y), lax.conv_general_dilated(x, w, (2, 1), ((0, 0), (1, 1)), lhs_dilation=(1, 2),
                                                           dimension_numbers=dn)
    return f, f32_inputs((2, 3, 12, 10), (8, 3, 3, 3), seed=172)


@program("no_inputs", tol="exact")
def _():
    def f():
        return jnp.arange(10, dtype=jnp.int32) * 3, jnp.full((2, 3), 7.5), jnp.eye(3, dtype=jnp.bool_)
    return f, lambda: ()


@program("passthrough_outputs", tol="exact")
def _():
    def f(x, unused, y):
        return x, (x, y * 2), {"again": y}
    def make():
        r = rng(173)
        return randn(r, 3, 2), randn(r, 4), r.integers(0, 9, 5).astype(np.int32)
    return f, make


@program("zero_size", tol="exact")
def _():
    def f(x, y):
        return x.sum(axis=0), x * 2.0, jnp.concatenate([x, x]), y.max(initial=-1), x.T @ x
    return f, lambda: (np.zeros((0, 3), np.float32), np.zeros((0,), np.int32))


@program("bool_inputs", tol="exact")
def _():
    def f(m, x):
        return m & ~m[::-1], jnp.where(m, x, -x), m.sum(), jnp.argmax(m), m.astype(jnp.int32) * 2, jnp.any(m, axis=0)
    def make():
        r = rng(174)
        return r.random((4, 6)) > 0.5, randn(r, 4, 6)
    return f, make


@program("complex_outputs", tol="f32_loose")
def _():
    def f(x, z):
        return jnp.fft.fft(x), jnp.fft.ifft(z), z * jnp.conj(z), jnp.fft.fft2(x.reshape(2, 8))
    def make():
        r = rng(175)
        return randn(r, 16), (randn(r, 8) + 1j * randn(r, 8)).astype(np.complex64)
    return f, make


@program("reduce_precision")
def _():
    def f(x):
        return (lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
                lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
                x.astype(jnp.bfloat16).astype(jnp.float32))
    return f, lambda: (randn(rng(176), 32) * np.float32(100),)


# ---------------------------------------------------------------------------------------------
# Edge semantics XLA defines: integer division by zero and INT_MIN / -1, over-wide shifts,
# saturating float->int conversion, IEEE special values, out-of-bounds gathers and scatters
# ---------------------------------------------------------------------------------------------

@program("int_edge_semantics", tol="exact")
def _():
    def f(a, b, s):
        return (lax.div(a, b), lax.rem(a, b), lax.shift_left(a, s), lax.shift_right_logical(a, s),
                lax.shift_right_arithmetic(a, s), jnp.power(a % 7, jnp.abs(b) % 4), jnp.abs(a), -a)
    def make():
        imin = np.iinfo(np.int32).min
        a = np.array([7, -7, imin, imin, 5, -9, 123456, imin + 1], np.int32)
        b = np.array([0, 0, -1, 1, 3, -2, 0, -1], np.int32)
        s = np.array([0, 1, 31, 32, 33, 40, -1, 5], np.int32)
        return a, b, s
    return f, make


@program("float_edge_semantics")
def _():
    def f(x):
        return (jnp.signbit(x), jnp.copysign(1.0, x), lax.nextafter(x, jnp.zeros_like(x)), jnp.sqrt(x),
                jnp.log(x), jnp.exp(x * 100.0), x / 0.0, jnp.maximum(x, -x), jnp.arctan2(x, -1.0),
                x.astype(jnp.int32), x.astype(jnp.uint8))
    def make():
        return (np.array([0.0, -0.0, 1e-30, -1e-30, np.inf, -np.inf, np.nan, 3e9, -3e9, 300.7, -1.5, 2.0],
                         np.float32),)
    return f, make


@program("denormals")
def _():
    # XLA:CPU runs with denormals flushed to zero (inputs and results), as XLA on GPUs does.
    def f(x, y):
        return x * 1.0, jnp.sqrt(x), jnp.log(x), 1.0 / x, x * y, y * 1e-20
    def make():
        x = np.array([1e-40, -1e-40, 1e-39, -5e-45, 1e-30, 0.0], np.float32)
        return x, np.full(6, 1e-19, np.float32)
    return f, make


@program("gather_scatter_out_of_bounds", tol="exact")
def _():
    def f(x, idx):
        return (x[idx], jnp.take(x, idx, mode="fill", fill_value=-7.0), x.at[idx].add(100.0),
                x.at[idx].set(-1.0, mode="drop"), x.at[idx].get(mode="clip"),
                lax.dynamic_slice(x, (idx[0],), (3,)))
    def make():
        return np.arange(8, dtype=np.float32), np.array([9, -1, -9, 3, 100, 7], np.int32)
    return f, make


PROGRAMS_BY_NAME = {p.name: p for p in PROGRAMS}
assert len(PROGRAMS_BY_NAME) == len(PROGRAMS), "duplicate program names"
