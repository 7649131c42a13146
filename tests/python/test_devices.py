"""Several devices per plugin (ABI 1.8) from Python: a host plugin has KILN_HOST_DEVICE_COUNT
devices; device_put(..., device_index=i) puts a buffer on device i, a run goes where its
arguments are, and Buffer.copy_to moves a buffer. Each case runs in a fresh interpreter (the
device count is read when the plugins load)."""
import pytest

from conftest import host_devices, run_python

CODE = """
import kiln, numpy as np
dev = [d for d in kiln.devices() if d.name == {device!r}][0]
assert dev.num_devices == 3, dev.num_devices
exe = kiln.compile('''HloModule add
ENTRY main {{
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  ROOT s = f32[8] add(x, y)
}}
''', {device!r})
x = np.arange(8, dtype=np.float32)
a = kiln.device_put(x, {device!r}, device_index=2)
b = kiln.device_put(2 * x, {device!r}, device_index=2)
assert a.device_index == 2
(out,) = exe.execute(a, b)
assert out.device_index == 2, out.device_index
np.testing.assert_array_equal(np.asarray(out), 3 * x)
c = b.copy_to(0)
assert c.device_index == 0
np.testing.assert_array_equal(np.asarray(c), 2 * x)
try:
    exe.execute(a, c)
    raise SystemExit("arguments on two devices ran")
except kiln.KilnError as e:
    assert "device" in str(e), e
try:
    kiln.device_put(x, {device!r}, device_index=3)
    raise SystemExit("device 3 of 3 accepted")
except kiln.KilnError as e:
    assert "no device 3" in str(e), e
print("ok")
"""


@pytest.mark.parametrize("device", host_devices())
def test_buffers_and_runs_stay_on_their_device(device):
    p = run_python(CODE.format(device=device), {"KILN_HOST_DEVICE_COUNT": "3"})
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


@pytest.mark.parametrize("device", host_devices())
def test_an_isolated_plugin_keeps_its_devices(device):
    # The proxy forwards ABI 1.8: devices, buffer_info's device and copies cross processes.
    p = run_python(CODE.format(device=device),
                   {"KILN_HOST_DEVICE_COUNT": "3", "KILN_ISOLATE": device})
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
