"""kiln.devices / compile / call / device_put against NumPy on every host device."""
import gc
import os
import threading

import numpy as np
import pytest

import kiln
from conftest import ADD_HLO, SOURCE_ROOT, rng, run_python

TUPLE_HLO = """HloModule pair
ENTRY %main (x: f32[2,3], y: s32[3]) -> (f32[3], (s32[3], f32[2,3])) {
  %x = f32[2,3] parameter(0)
  %y = s32[3] parameter(1)
  %zero = f32[] constant(0)
  %r = f32[3] reduce(f32[2,3] %x, f32[] %zero), dimensions={0}, to_apply=%sum
  %y2 = s32[3] multiply(s32[3] %y, s32[3] %y)
  %e = f32[2,3] exponential(f32[2,3] %x)
  %inner = (s32[3], f32[2,3]) tuple(s32[3] %y2, f32[2,3] %e)
  ROOT %t = (f32[3], (s32[3], f32[2,3])) tuple(f32[3] %r, (s32[3], f32[2,3]) %inner)
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(f32[] %a, f32[] %b)
}
"""


def test_devices_lists_plugins_with_state_and_priority():
    devices = {d.name: d for d in kiln.devices()}
    assert devices["interpreter"].available and devices["interpreter"].reason == ""
    assert devices["interpreter"].priority == 10
    assert devices["cpu-llvm"].priority > devices["interpreter"].priority
    assert devices["cpu-llvm"].api_version.startswith("1.")
    if "gpu-nvptx" in devices and not devices["gpu-nvptx"].available:
        assert devices["gpu-nvptx"].reason  # says why (no driver, no GPU)


def test_call_matches_numpy(device):
    exe = kiln.compile(ADD_HLO, device)
    x, y = rng().standard_normal((2, 4), dtype=np.float32)
    out = exe(x, y)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (4,)
    np.testing.assert_array_equal(out, x + y)
    assert exe.device == device and exe.num_parameters == 2 and not exe.returns_tuple


def test_tuple_result_is_flattened(device):
    exe = kiln.compile(TUPLE_HLO, device)
    x = rng(1).standard_normal((2, 3), dtype=np.float32)
    y = np.array([1, -2, 3], np.int32)
    r, y2, e = exe(x, y)
    np.testing.assert_allclose(r, x.sum(0), rtol=1e-6)
    np.testing.assert_array_equal(y2, y * y)
    np.testing.assert_allclose(e, np.exp(x), rtol=1e-6)
    assert exe.returns_tuple


def test_compile_from_path_and_auto_device():
    path = os.path.join(SOURCE_ROOT, "examples", "hlo", "model_fn.hlo")
    exe = kiln.compile(path)
    assert exe.device in ("cpu-llvm", "gpu-nvptx")
    x, y, z = rng(2).standard_normal((3, 1024), dtype=np.float32)
    np.testing.assert_allclose(exe(x, y, z), np.sum(x + y * z), rtol=1e-4)


def test_compile_cache_returns_the_same_executable():
    assert kiln.compile(ADD_HLO, "interpreter") is kiln.compile(ADD_HLO, "interpreter")
    assert kiln.compile(ADD_HLO, "interpreter", cache=False) is not kiln.compile(
        ADD_HLO, "interpreter")


def test_core_passes_show_in_hlo_text(device):
    text = ADD_HLO.replace("ROOT %s = f32[4] add(f32[4] %x, f32[4] %y)",
                           "%s = f32[4] add(f32[4] %x, f32[4] %y)\n"
                           "  %z = f32[4] multiply(f32[4] %s, f32[4] %x)\n"  # dead
                           "  %n = f32[4] negate(f32[4] %s)\n"
                           "  ROOT %nn = f32[4] negate(f32[4] %n)")
    exe = kiln.compile(text, device)
    assert "negate" not in exe.hlo_text and "multiply" not in exe.hlo_text
    assert "algsimp" in exe.core_passes
    raw = kiln.compile(text, device, core_passes=False)
    assert "negate" in raw.hlo_text and raw.core_passes == ""
    x, y = rng(3).standard_normal((2, 4), dtype=np.float32)
    np.testing.assert_array_equal(exe(x, y), raw(x, y))


def test_dump_to_writes_the_passes(tmp_path, device):
    kiln.compile(ADD_HLO.replace("add(", "subtract("), device, dump_to=tmp_path)
    names = os.listdir(tmp_path)
    assert any(".compile." + device in n for n in names), names


def test_python_scalars_and_lists_convert_to_the_parameter_type(device):
    exe = kiln.compile(ADD_HLO, device)
    np.testing.assert_array_equal(exe([1, 2, 3, 4], (0.5, 0.5, 0.5, 0.5)),
                                  np.array([1.5, 2.5, 3.5, 4.5], np.float32))


def test_non_contiguous_input(device):
    exe = kiln.compile(ADD_HLO, device)
    big = rng(4).standard_normal((4, 4), dtype=np.float32)
    np.testing.assert_array_equal(exe(big[:, 1], big[::-1, 2]), big[:, 1] + big[::-1, 2])


def test_half_and_bfloat16(device):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype, name in ((np.float16, "f16"), (ml_dtypes.bfloat16, "bf16")):
        exe = kiln.compile(ADD_HLO.replace("f32", name), device)
        x = np.array([1, 2.5, -3, 0.125], dtype)
        out = exe(x, x)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.astype(np.float32), (x.astype(np.float32) * 2))


def test_minifloats_and_int4_arrive_and_return_as_ml_dtypes(device):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype, name in ((ml_dtypes.float8_e4m3fn, "f8e4m3fn"), (ml_dtypes.float8_e5m2, "f8e5m2"),
                        (ml_dtypes.float4_e2m1fn, "f4e2m1fn")):
        exe = kiln.compile(ADD_HLO.replace("f32", name), device)
        x = np.array([1, 1.5, -3, 0.5], np.float32).astype(dtype)
        y = np.array([0.5, 2, 4, 0.5], np.float32).astype(dtype)
        out = exe(x, y)
        assert out.dtype == np.dtype(dtype)
        want = (x.astype(np.float32) + y.astype(np.float32)).astype(dtype)
        np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))
    exe = kiln.compile(ADD_HLO.replace("f32", "s4"), device)
    x = np.array([7, -8, -1, 3], ml_dtypes.int4)
    out = exe(x, np.array([1, -1, -1, 3], ml_dtypes.int4))
    assert out.dtype == np.dtype(ml_dtypes.int4)
    np.testing.assert_array_equal(out.astype(np.int8), np.array([-8, 7, -2, 6], np.int8))


def test_buffers_stay_on_the_device(device):
    exe = kiln.compile(ADD_HLO, device)
    x, y = rng(5).standard_normal((2, 4), dtype=np.float32)
    bx = kiln.device_put(x, device)
    assert bx.device == device and bx.shape == (4,) and bx.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(bx), x)
    (s,) = exe.execute(bx, y)
    assert isinstance(s, kiln.Buffer)
    (s2,) = exe.execute(s, s)  # an output fed back without leaving the device
    np.testing.assert_array_equal(np.asarray(s2), 2 * (x + y))
    np.testing.assert_array_equal(exe(bx, y), x + y)  # buffers in, NumPy out


def test_buffer_from_another_device_is_refused():
    exe = kiln.compile(ADD_HLO, "cpu-llvm")
    b = kiln.device_put(np.zeros(4, np.float32), "interpreter")
    with pytest.raises(kiln.KilnError, match="buffer on interpreter") as e:
        exe.execute(b, b)
    assert e.value.code == "INVALID_ARGUMENT"


def test_many_threads_call_one_executable(device):
    exe = kiln.compile(TUPLE_HLO, device)
    errors = []

    def worker(seed):
        try:
            x = rng(seed).standard_normal((2, 3), dtype=np.float32)
            y = np.arange(3, dtype=np.int32) + seed
            for _ in range(20):
                r, y2, e = exe(x, y)
                np.testing.assert_allclose(r, x.sum(0), rtol=1e-6)
                np.testing.assert_array_equal(y2, y * y)
        except Exception as exc:  # reported below, with the thread's seed
            errors.append((seed, exc))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_gil_is_released_while_running():
    # A long cpu-llvm run in one thread must let another Python thread make progress.
    text = """HloModule spin
%body (s: (s32[], f32[256])) -> (s32[], f32[256]) {
  %s = (s32[], f32[256]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[256]) %s), index=0
  %v = f32[256] get-tuple-element((s32[], f32[256]) %s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(s32[] %i, s32[] %one)
  %v1 = f32[256] sine(f32[256] %v)
  ROOT %t = (s32[], f32[256]) tuple(s32[] %i1, f32[256] %v1)
}
%cond (s: (s32[], f32[256])) -> pred[] {
  %s = (s32[], f32[256]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[256]) %s), index=0
  %n = s32[] constant(200000)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}
ENTRY %main (v: f32[256]) -> f32[256] {
  %v = f32[256] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[256]) tuple(s32[] %zero, f32[256] %v)
  %w = (s32[], f32[256]) while((s32[], f32[256]) %init), condition=%cond, body=%body
  ROOT %r = f32[256] get-tuple-element((s32[], f32[256]) %w), index=1
}
"""
    exe = kiln.compile(text, "cpu-llvm")
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        exe(np.ones(256, np.float32))
    finally:
        done.set()
        t.join()
    assert len(ticks) > 5, f"the ticker ran {len(ticks)} times while Kiln ran"


def test_execute_copies_host_arrays_so_outputs_do_not_alias_them(device):
    # The identity: a plugin may hand the argument's memory back as the output (none does
    # today: the host plugins copy a passed-through parameter), so execute must not lend it.
    exe = kiln.compile("""HloModule identity
ENTRY %main (x: f32[4]) -> f32[4] {
  ROOT %x = f32[4] parameter(0)
}
""", device)
    x = np.arange(4, dtype=np.float32)
    (b,) = exe.execute(x)
    y = exe(x)
    x[:] = -1  # the caller's array changes after the calls
    np.testing.assert_array_equal(np.asarray(b), [0, 1, 2, 3])
    np.testing.assert_array_equal(y, [0, 1, 2, 3])


def test_memory_stats_count_buffers():
    """Device.memory_stats() (ABI 1.5) counts a buffer while it lives, as JAX's does."""
    for d in kiln.devices():
        if not d.available or d.name not in ("interpreter", "cpu-llvm"):
            continue
        gc.collect()  # buffers of earlier tests go first, not between the two readings
        before = d.memory_stats()
        assert set(before) == {"bytes_in_use", "peak_bytes_in_use", "num_buffers", "bytes_limit"}
        buf = kiln.device_put(np.ones((512, 512), np.float32), d.name)  # 1 MiB
        during = d.memory_stats()
        assert during["bytes_in_use"] - before["bytes_in_use"] >= 1 << 20, (before, during)
        assert during["num_buffers"] > before["num_buffers"]
        assert during["peak_bytes_in_use"] >= during["bytes_in_use"]
        assert during["bytes_limit"] > 1 << 20
        del buf
        after = d.memory_stats()
        assert after["bytes_in_use"] <= during["bytes_in_use"] - (1 << 20), (during, after)


def test_memory_stats_of_an_isolated_plugin_come_from_its_helper():
    """An isolated plugin's buffers live in its helper process: memory_stats() asks there."""
    p = run_python(
        "import kiln, numpy as np\n"
        "d = [x for x in kiln.devices() if x.name == 'interpreter'][0]\n"
        "before = d.memory_stats()\n"
        "b = kiln.device_put(np.ones((512, 512), np.float32), 'interpreter')\n"
        "during = d.memory_stats()\n"
        "del b\n"
        "after = d.memory_stats()\n"
        "print(before['bytes_in_use'], during['bytes_in_use'], after['bytes_in_use'])\n",
        {"KILN_ISOLATE": "interpreter"})
    assert p.returncode == 0, p.stderr
    before, during, after = map(int, p.stdout.split())
    assert during - before >= 1 << 20 and after <= during - (1 << 20), p.stdout
