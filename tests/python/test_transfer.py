"""Large buffers to a device and back, in process and isolated (KILN_ISOLATE): bytes of at
least 1 MiB travel through the core's shared-memory regions there, which are reused
(core/isolation/wire.h); what comes back must be what went in, whatever was reused."""
import pytest

from conftest import host_devices, run_python

CHILD = r"""
import os
import numpy as np
import kiln

device = os.environ["KILN_TEST_DEVICE"]
isolated = "isolated" in next(d for d in kiln.devices() if d.name == device).attributes
assert isolated == (os.environ.get("KILN_ISOLATE") == device), isolated


def data(dtype, shape, seed):
    r = np.random.default_rng(seed)
    if dtype == np.bool_:
        return r.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return r.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if np.issubdtype(dtype, np.complexfloating):
        return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)
    return r.standard_normal(shape).astype(dtype)


# Around the 1 MiB threshold and past it, none a multiple of the page size but the first.
CASES = [(np.uint8, (1 << 20,)), (np.float32, ((1 << 18) + 3,)), (np.float64, (3, 50_001)),
         (np.int8, (1, (1 << 20) + 4095)), (np.int16, (777, 1001)), (np.complex64, (131_073,)),
         (np.bool_, (2_000_001,)), (np.int64, (5, 7, 4099)), (np.float16, ((1 << 19) - 1,)),
         (np.uint32, (1000,))]
for i, (dtype, shape) in enumerate(CASES):
    x = data(dtype, shape, i)
    b = kiln.device_put(x, device)
    y = np.asarray(b)
    assert y.dtype == x.dtype and y.shape == x.shape, (dtype, shape, y.dtype, y.shape)
    assert y.tobytes() == x.tobytes(), (dtype, shape)
    x[...] = 0  # the buffer is a copy: changing the array afterwards changes nothing
    assert np.asarray(b).tobytes() == y.tobytes(), (dtype, shape)

# Same-sized buffers made and dropped in turn, as a pool would reuse them: the live ones
# keep their bytes, on both sides (the device reads them in `negate`).
N = (1 << 19) + 5
NEG = f'''HloModule neg
ENTRY %main (a: f32[{N}]) -> f32[{N}] {{
  %a = f32[{N}] parameter(0)
  ROOT %n = f32[{N}] negate(f32[{N}] %a)
}}
'''
ID = f'''HloModule ident
ENTRY %main (a: f32[{N}]) -> f32[{N}] {{
  ROOT %a = f32[{N}] parameter(0)
}}
'''
neg, ident = kiln.compile(NEG, device), kiln.compile(ID, device)
live = {}
for step in range(8):
    x = data(np.float32, (N,), 100 + step)
    live[step] = (x, kiln.device_put(x, device))
    if step % 2 == 1:
        del live[step - 1]
    for s, (x, b) in live.items():
        assert np.asarray(b).tobytes() == x.tobytes(), (step, s)
        (n,) = neg.execute(b)  # made on the device: comes back through the other path
        assert np.asarray(n).tobytes() == (-x).tobytes(), (step, s)
    # An output that may share its input's memory outlives the input's buffer.
    (same,) = ident.execute(live[step][1])
    kept = live[step][0].copy()
    del live[step]
    again = kiln.device_put(data(np.float32, (N,), 999), device)
    assert np.asarray(same).tobytes() == kept.tobytes(), step
    live[step] = (data(np.float32, (N,), 999), again)
# NumPy in, NumPy out (the arguments lent rather than copied where the plugin allows).
x = data(np.float32, (N,), 5)
assert neg(x).tobytes() == (-x).tobytes()
print('ok')
"""


@pytest.mark.parametrize("isolate", [False, True], ids=["in_process", "isolated"])
@pytest.mark.parametrize("device", host_devices())
def test_large_buffers_round_trip(device, isolate):
    p = run_python(CHILD, {"KILN_TEST_DEVICE": device, "KILN_ISOLATE": device if isolate else ""})
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split()[-1:] == ["ok"], p.stdout
