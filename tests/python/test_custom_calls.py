"""Host custom-call handlers written in Python (kiln.register_custom_call, ABI 1.5): a module
with such custom-calls runs on the interpreter and cpu-llvm with NumPy's values, tuple results
included; an exception in the handler and a result of the wrong shape fail the run with a
kiln.KilnError that says so."""
import numpy as np
import pytest

import kiln

SCALE_ADD = """HloModule py_scale_add
ENTRY %main (a: f32[4,3], b: f32[4,3]) -> f32[4,3] {
  %a = f32[4,3] parameter(0)
  %b = f32[4,3] parameter(1)
  %e = f32[4,3] exponential(%a)
  %c = f32[4,3] custom-call(%e, %b), custom_call_target="py.scale_add", backend_config="3"
  ROOT %r = f32[4,3] tanh(%c)
}
"""

TUPLE = """HloModule py_tuple
ENTRY %main (a: f32[5]) -> (f32[], s32[5]) {
  %a = f32[5] parameter(0)
  %t = (f32[], s32[5]) custom-call(%a), custom_call_target="py.sum_and_rank"
  %s = f32[] get-tuple-element(%t), index=0
  %r = s32[5] get-tuple-element(%t), index=1
  ROOT %o = (f32[], s32[5]) tuple(%s, %r)
}
"""


def host_devices():
    names = [d.name for d in kiln.devices() if d.available]
    return [n for n in ("interpreter", "cpu-llvm") if n in names]


kiln.register_custom_call(
    "py.scale_add", lambda e, b, backend_config: e * np.float32(backend_config) + b)
kiln.register_custom_call(
    "py.sum_and_rank",
    lambda a, backend_config: (a.sum(), np.argsort(np.argsort(a)).astype(np.int32)))


@pytest.mark.parametrize("device", host_devices())
def test_python_handler_gives_numpy_values(device):
    rng = np.random.default_rng(4)
    a, b = (rng.uniform(-1, 1, (4, 3)).astype(np.float32) for _ in range(2))
    got = kiln.compile(SCALE_ADD, device)(a, b)
    np.testing.assert_allclose(got, np.tanh(np.exp(a) * 3 + b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", host_devices())
def test_python_handler_with_a_tuple_result(device):
    x = np.array([0.5, -2.0, 3.0, 1.0, -0.25], np.float32)
    s, r = kiln.compile(TUPLE, device)(x)
    assert abs(float(s) - float(x.sum())) < 1e-6
    np.testing.assert_array_equal(r, [2, 0, 4, 3, 1])  # the rank of each element


def test_handler_errors_fail_the_run():
    def boom(e, b, backend_config):
        raise ValueError("the handler does not like these numbers")

    kiln.register_custom_call("py.boom", boom)
    kiln.register_custom_call("py.wrong_shape", lambda e, b, backend_config: e[:2])
    a = np.ones((4, 3), np.float32)
    for target, phrase in [("py.boom", "does not like these numbers"),
                           ("py.wrong_shape", "result 0 of the custom-call")]:
        exe = kiln.compile(SCALE_ADD.replace("py.scale_add", target), "auto")
        with pytest.raises(kiln.KilnError) as info:
            exe(a, a)
        assert phrase in str(info.value), str(info.value)
        assert target in str(info.value), str(info.value)
