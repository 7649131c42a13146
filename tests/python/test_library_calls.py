"""cuDNN's backward-convolution custom-calls, as XLA's GPU compiler writes them (the forward
convolution's window and dim_labels; operands output gradient and filter, or input and
output gradient), lowered by the core's library-call lowering: their values must equal JAX's
autodiff of the forward convolution, for strides, padding, dilation and both layouts."""
import numpy as np
import pytest

import kiln

jax = pytest.importorskip("jax")
lax = jax.lax

# (input NCHW, kernel HW, in/out features, strides, padding, rhs dilation)
CASES = [
    ((2, 3, 9, 9), (3, 3), 4, (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((1, 2, 11, 8), (3, 2), 3, (2, 2), ((1, 0), (0, 2)), (1, 1)),
    ((2, 2, 10, 10), (3, 3), 2, (2, 1), ((0, 0), (2, 1)), (2, 1)),
    ((1, 4, 7, 7), (1, 1), 5, (2, 2), ((0, 0), (0, 0)), (1, 1)),
]


def window(kernel, strides, padding, dilation):
    x = lambda v: "x".join(str(i) for i in v)
    pad = "x".join(f"{lo}_{hi}" for lo, hi in padding)
    return f"window={{size={x(kernel)} stride={x(strides)} pad={pad} rhs_dilate={x(dilation)}}}"


def shape(a):
    return "f32[" + ",".join(str(d) for d in a.shape) + "]"


def module(target, ops, result, win, labels):
    params = ", ".join(f"p{i}: {shape(o)}" for i, o in enumerate(ops))
    decls = "\n".join(f"  %p{i} = {shape(o)} parameter({i})" for i, o in enumerate(ops))
    return f"""HloModule {target.strip('_$').replace('$', '_')}
ENTRY %main ({params}) -> {shape(result)} {{
{decls}
  %cc = ({shape(result)}, u8[0]) custom-call(%p0, %p1), {win}, dim_labels={labels}, custom_call_target="{target}", backend_config="{{\\"convResultScale\\":1}}"
  ROOT %g = {shape(result)} get-tuple-element(%cc), index=0
}}
"""


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_backward_convolutions_equal_jax_autodiff(case, nhwc):
    in_shape, kernel, out_features, strides, padding, dilation = CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(in_shape).astype(np.float32)
    w = rng.standard_normal(kernel + (in_shape[1], out_features)).astype(np.float32)
    lhs_spec = "NHWC" if nhwc else "NCHW"
    labels = "b01f_01io->b01f" if nhwc else "bf01_01io->bf01"
    if nhwc:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))

    def forward(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=dilation,
                                        dimension_numbers=(lhs_spec, "HWIO", lhs_spec),
                                        precision=lax.Precision.HIGHEST)

    y, vjp = jax.vjp(forward, x, w)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw = (np.asarray(g) for g in vjp(dy))
    win = window(kernel, strides, padding, dilation)
    for target, ops, want in [("__cudnn$convBackwardInput", (dy, w), dx),
                              ("__cudnn$convBackwardFilter", (x, dy), dw)]:
        text = module(target, ops, want, win, labels)
        for device in ("interpreter", "cpu-llvm"):
            if device not in [d.name for d in kiln.devices() if d.available]:
                continue
            got = kiln.compile(text, device)(*ops)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{target} on {device}\n{text}")
