"""Deadlines (issue #18 item 4): kiln.compile(..., timeout=S) cancels a run that takes longer
with KilnError DEADLINE_EXCEEDED, however the plugin is stuck, and the same executable runs
again afterwards; the restart policy of isolated plugins (KILN_PLUGIN_RESTARTS); a partitioned
module that loses one of its plugins is partitioned again without it."""
import os
import time

import numpy as np
import pytest

import kiln
from conftest import ADD_HLO, run_python

# Loops for ever unless x == 0 (the state never changes); returns x + 1000.
SPIN_HLO = """HloModule spin_unless_zero
%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %z = s32[] constant(0)
  ROOT %t = pred[] compare(%s, %z), direction=NE
}
%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %n = s32[] multiply(%s, %one)
}
ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %w = s32[] while(%x), condition=%cond, body=%body
  %k = s32[] constant(1000)
  ROOT %r = s32[] add(%w, %k)
}
"""


def host_devices():
    names = [d.name for d in kiln.devices() if d.available]
    return [n for n in ("interpreter", "cpu-llvm") if n in names]


@pytest.mark.parametrize("device", host_devices())
def test_timeout_cancels_a_run_and_the_executable_runs_again(device):
    exe = kiln.compile(SPIN_HLO, device, timeout=1.0)
    for _ in range(2):  # the second time on a helper started again
        start = time.monotonic()
        with pytest.raises(kiln.KilnError) as info:
            exe(np.int32(3))
        took = time.monotonic() - start
        assert info.value.code == "DEADLINE_EXCEEDED", str(info.value)
        assert "deadline of 1 s passed during execute" in str(info.value), str(info.value)
        assert 0.9 < took < 20, took
    assert int(exe(np.int32(0))) == 1000
    # Device buffers from the in-process plugin of the same name are accepted.
    assert int(exe(kiln.device_put(np.int32(0), device))) == 1000
    (out,) = exe.execute(np.int32(0))
    assert int(np.asarray(out)) == 1000


def test_timeout_is_checked():
    for bad in (0, -1, float("nan"), float("inf"), "soon"):
        with pytest.raises(kiln.KilnError) as info:
            kiln.compile(ADD_HLO, "interpreter", timeout=bad)
        assert info.value.code == "INVALID_ARGUMENT"
    x = np.ones(4, np.float32)
    np.testing.assert_array_equal(kiln.compile(ADD_HLO, "interpreter", timeout=30)(x, x), 2 * x)


def test_restart_policy_of_an_isolated_plugin():
    plugin_dir = os.environ.get("KILN_TEST_PLUGIN_DIR")
    if not plugin_dir:
        pytest.skip("KILN_TEST_PLUGIN_DIR not set (run through meson test)")
    # test-misbehave segfaults executing a module named *crash*. With one restart allowed:
    # the crash fails its call; the next call starts the helper again (and crashes it again);
    # after that the plugin is gone, and only then does compiling for it fail.
    crash = ADD_HLO.replace("HloModule add", "HloModule crash_add")
    p = run_python(
        "import kiln, numpy as np\n"
        "x = np.ones(4, np.float32)\n"
        f"bad = kiln.compile({crash!r}, 'test-misbehave')\n"
        "for i in range(3):\n"
        "  try:\n    bad(x, x)\n"
        "  except kiln.KilnError as e:\n    print('call', i, e.code, e)\n"
        "try:\n"
        f"  print('fine', kiln.compile({ADD_HLO!r}, 'test-misbehave')(x, x))\n"
        "except kiln.KilnError as e:\n  print('compile', e.code, e)\n",
        {"KILN_PLUGIN_PATH": os.path.join(plugin_dir, "misbehave"),
         "KILN_ISOLATE": "test-misbehave", "KILN_PLUGIN_RESTARTS": "1"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 4, p.stdout
    assert lines[0].startswith("call 0 UNAVAILABLE") and "signal 11" in lines[0], p.stdout
    assert "starts again for the next call" in lines[0], p.stdout
    assert lines[1].startswith("call 1 UNAVAILABLE") and "signal 11" in lines[1], p.stdout
    assert "starts again" not in lines[1], p.stdout
    assert lines[2].startswith("call 2 UNAVAILABLE") and "is gone" in lines[2], p.stdout
    assert lines[3].startswith("compile UNAVAILABLE"), p.stdout
    assert p.stderr.count("started it again") == 1, p.stderr


def test_partitioned_module_loses_a_plugin_and_runs_without_it():
    example_dir = os.environ.get("KILN_EXAMPLE_PLUGIN_DIR")
    if not example_dir:
        pytest.skip("KILN_EXAMPLE_PLUGIN_DIR not set (run through meson test)")
    # elementwise-example (priority 300) takes the elementwise cluster, the interpreter the
    # reduce; the example's helper process is then killed from outside.
    module = """HloModule part
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[64], y: f32[64]) -> f32[] {
  %x = f32[64] parameter(0)
  %y = f32[64] parameter(1)
  %m = f32[64] multiply(%x, %y)
  %n = f32[64] negate(%m)
  %e = f32[64] maximum(%n, %x)
  %t = f32[64] subtract(%e, %y)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%t, %zero), dimensions={0}, to_apply=%add
}
"""
    p = run_python(
        "import os, signal, kiln, numpy as np\n"
        "x = np.linspace(-1, 1, 64, dtype=np.float32)\n"
        "y = np.cos(x)\n"
        f"exe = kiln.compile({module!r}, 'auto', min_cluster_size=1)\n"
        "print(exe.device, float(exe(x, y)))\n"
        "d = [d for d in kiln.devices() if d.name == 'elementwise-example'][0]\n"
        "os.kill(int(d.attributes['isolated'].split()[1]), signal.SIGKILL)\n"
        "print(float(exe(x, y)), exe.device)\n"
        "print(float(np.sum(np.maximum(-(x * y), x) - y)))\n",
        {"KILN_PLUGIN_PATH": example_dir, "KILN_ISOLATE": "elementwise-example",
         "KILN_PLATFORMS": "elementwise-example,interpreter"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split("\n")
    first, then, want = lines[0].split(), lines[1].split(), float(lines[2])
    assert first[0] == "elementwise-example+interpreter", p.stdout
    assert then[1] == "interpreter", p.stdout
    for got in (float(first[1]), float(then[0])):
        assert abs(got - want) <= 1e-4 * abs(want), (got, want)
    assert "signal 9" in p.stderr and "running on the next plugin" in p.stderr, p.stderr
