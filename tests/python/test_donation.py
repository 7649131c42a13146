"""Buffer donation (ABI 1.3): Executable.execute(..., donate=(i,)) gives a kiln.Buffer up to
the plugin, which may reuse its memory for the outputs; a donated buffer cannot be used
again. cpu-llvm updates a donated while-loop state in place and writes an elementwise update
(W - lr * g) over the donated argument (the output lives where the argument did); the interpreter ignores the flag but the buffer is consumed all the same."""
import numpy as np
import pytest

import kiln

# Writes row i of the state with i + 1 for i in 0..7 (a loop of dynamic-update-slices).
ROWS_HLO = """HloModule rows
%cond (s: (s32[], f32[512,256])) -> pred[] {
  %s = (s32[], f32[512,256]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(8)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[512,256])) -> (s32[], f32[512,256]) {
  %s = (s32[], f32[512,256]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[512,256] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %z = s32[] constant(0)
  %f = f32[] convert(%i1)
  %row = f32[1,256] broadcast(%f), dimensions={}
  %u = f32[512,256] dynamic-update-slice(%x, %row, %i, %z)
  ROOT %t = (s32[], f32[512,256]) tuple(%i1, %u)
}
ENTRY %main (x: f32[512,256]) -> f32[512,256] {
  %x = f32[512,256] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[512,256]) tuple(%zero, %x)
  %w = (s32[], f32[512,256]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[512,256] get-tuple-element(%w), index=1
}
"""


def host_devices():
    names = [d.name for d in kiln.devices() if d.available]
    return [n for n in ("interpreter", "cpu-llvm") if n in names]


def start_and_want():
    x = np.random.default_rng(1).standard_normal((512, 256)).astype(np.float32)
    want = x.copy()
    want[:8] = np.arange(1, 9, dtype=np.float32)[:, None]
    return x, want


@pytest.mark.parametrize("device", host_devices())
def test_donated_buffer_gives_the_right_answer_and_is_consumed(device):
    exe = kiln.compile(ROWS_HLO, device)
    x, want = start_and_want()
    kept = kiln.device_put(x, device)
    (out,) = exe.execute(kept)  # not donated: still usable
    np.testing.assert_array_equal(np.asarray(out), want)
    np.testing.assert_array_equal(np.asarray(kept), x)
    given = kiln.device_put(x, device)
    (out2,) = exe.execute(given, donate=(0,))
    np.testing.assert_array_equal(np.asarray(out2), want)
    for use in (lambda: np.asarray(given), lambda: exe.execute(given), lambda: exe(given)):
        with pytest.raises(kiln.KilnError) as info:
            use()
        assert info.value.code == "FAILED_PRECONDITION", str(info.value)
        assert "donated" in str(info.value)
    # Host arrays are copied in; x itself is never written.
    np.testing.assert_array_equal(exe(x), want)
    np.testing.assert_array_equal(x[:8], start_and_want()[0][:8])


def test_cpu_llvm_updates_a_donated_loop_state_in_place():
    if "cpu-llvm" not in host_devices():
        pytest.skip("cpu-llvm is not available")
    exe = kiln.compile(ROWS_HLO, "cpu-llvm")
    x, want = start_and_want()
    given = kiln.device_put(x, "cpu-llvm")
    where = given.unsafe_host_pointer()
    if where is None:
        pytest.skip("cpu-llvm's buffers are not in this process (KILN_ISOLATE)")
    (out,) = exe.execute(given, donate=(0,))
    assert out.unsafe_host_pointer() == where  # the loop wrote into the donated memory
    np.testing.assert_array_equal(np.asarray(out), want)
    kept = kiln.device_put(x, "cpu-llvm")
    (copy,) = exe.execute(kept)
    assert copy.unsafe_host_pointer() != kept.unsafe_host_pointer()
    np.testing.assert_array_equal(np.asarray(kept), x)


# One SGD update, W - 0.1 * g: the new weights only read the old ones at their own index.
SGD_HLO = """HloModule sgd
ENTRY %main (w: f32[256,128], g: f32[256,128]) -> f32[256,128] {
  %w = f32[256,128] parameter(0)
  %g = f32[256,128] parameter(1)
  %lr = f32[] constant(0.1)
  %lrb = f32[256,128] broadcast(%lr), dimensions={}
  %s = f32[256,128] multiply(%lrb, %g)
  ROOT %u = f32[256,128] subtract(%w, %s)
}
"""


def test_cpu_llvm_writes_an_elementwise_update_over_the_donated_argument():
    if "cpu-llvm" not in host_devices():
        pytest.skip("cpu-llvm is not available")
    exe = kiln.compile(SGD_HLO, "cpu-llvm")
    rng = np.random.default_rng(2)
    w, g = (rng.standard_normal((256, 128)).astype(np.float32) for _ in range(2))
    want = w - np.float32(0.1) * g
    given = kiln.device_put(w, "cpu-llvm")
    where = given.unsafe_host_pointer()
    if where is None:
        pytest.skip("cpu-llvm's buffers are not in this process (KILN_ISOLATE)")
    grad = kiln.device_put(g, "cpu-llvm")
    (out,) = exe.execute(given, grad, donate=(0,))
    assert out.unsafe_host_pointer() == where  # the update wrote over the donated weights
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(grad), g)
    kept = kiln.device_put(w, "cpu-llvm")
    (copy,) = exe.execute(kept, grad)
    assert copy.unsafe_host_pointer() != kept.unsafe_host_pointer()
    np.testing.assert_array_equal(np.asarray(kept), w)
    np.testing.assert_allclose(np.asarray(copy), want, rtol=1e-6, atol=1e-6)


def test_donate_is_checked():
    exe = kiln.compile(ROWS_HLO, "interpreter")
    x, _ = start_and_want()
    b = kiln.device_put(x, "interpreter")
    for bad, phrase in [((1,), "not an argument position"), (("a",), "not an argument position"),
                        ((0,), "not a kiln.Buffer")]:
        arg = x if phrase == "not a kiln.Buffer" else b
        with pytest.raises(kiln.KilnError) as info:
            exe.execute(arg, donate=bad)
        assert info.value.code == "INVALID_ARGUMENT" and phrase in str(info.value), str(info.value)
    with pytest.raises(kiln.KilnError) as info:
        exe.execute(b, give=(0,))
    assert "unknown keyword 'give'" in str(info.value)
    add = kiln.compile("""HloModule add
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %s = f32[4] add(%x, %y)
}
""", "interpreter")
    v = kiln.device_put(np.ones(4, np.float32), "interpreter")
    with pytest.raises(kiln.KilnError) as info:
        add.execute(v, v, donate=(0,))
    assert info.value.code == "INVALID_ARGUMENT" and "also passed as argument 1" in str(info.value)
    np.testing.assert_array_equal(np.asarray(add.execute(v, v)[0]), 2 * np.ones(4))
