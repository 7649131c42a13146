"""Bad input from Python is a kiln.KilnError with a status code and a located message,
never a crash."""
import numpy as np
import pytest

import kiln
from conftest import ADD_HLO, run_python


def raises(code, match=None):
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(kiln.KilnError, match=match)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.ctx.__exit__(*exc)
            assert self.info.value.code == code, (self.info.value.code, str(self.info.value))
            return handled
    return Check()


def test_kiln_error_is_a_runtime_error():
    assert issubclass(kiln.KilnError, RuntimeError)


def test_malformed_hlo_names_line_and_column():
    with raises("INVALID_ARGUMENT", match=r"<string>:5:\d+: unknown opcode 'ad'"):
        kiln.compile(ADD_HLO.replace("add(", "ad d("), "interpreter")


def test_verifier_error():
    bad = ADD_HLO.replace("ROOT %s = f32[4] add", "ROOT %s = f32[5] add")
    with raises("INVALID_ARGUMENT", match="f32\\[5\\]"):
        kiln.compile(bad, "interpreter")


def test_missing_file_and_wrong_type():
    with raises("NOT_FOUND", match="no_such.hlo"):
        kiln.compile("no_such.hlo")
    with raises("INVALID_ARGUMENT"):
        kiln.compile(42)


def test_unknown_device():
    with raises("NOT_FOUND", match="no-such-device"):
        kiln.compile(ADD_HLO, "no-such-device")
    with pytest.raises(kiln.KilnError):
        kiln.device_put(np.zeros(2), "no-such-device")


@pytest.mark.parametrize("args, match", [
    ((np.zeros(4, np.float64), np.zeros(4, np.float32)), r"argument 0: expected f32\[4\], got an array of f64\[4\]"),
    ((np.zeros(4, np.float32), np.zeros(5, np.float32)), r"argument 1: expected f32\[4\], got an array of f32\[5\]"),
    ((np.zeros(4, np.float32),), r"takes 2 argument\(s\), got 1"),
    ((np.zeros(4, np.float32),) * 3, r"takes 2 argument\(s\), got 3"),
    ((np.zeros(4, np.float32), "text"), r"argument 1: cannot convert str"),
    ((np.zeros(4, np.float32), [1, 2]), r"argument 1: expected f32\[4\], got list"),
    ((np.zeros(4, np.float32), np.zeros(4, object)), r"argument 1"),
])
def test_wrong_arguments(args, match, device):
    exe = kiln.compile(ADD_HLO, device)
    with raises("INVALID_ARGUMENT", match=match):
        exe(*args)


def test_unsupported_op():
    text = """HloModule cc
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %f = f32[8] custom-call(f32[8] %x), custom_call_target="my_magic_op"
}
"""
    with raises("UNIMPLEMENTED", match="cpu-llvm: compile: instruction 'f' is a custom-call"):
        kiln.compile(text, "cpu-llvm")
    with raises("FAILED_PRECONDITION", match="no available plugin can run instruction 'f'"):
        kiln.compile(text, "auto")


def test_result_larger_than_memory(device):
    text = """HloModule big
ENTRY %main (x: f32[]) -> f32[100000,100000,100] {
  %x = f32[] parameter(0)
  ROOT %b = f32[100000,100000,100] broadcast(f32[] %x), dimensions={}
}
"""
    with raises("RESOURCE_EXHAUSTED", match="f32\\[100000,100000,100\\]"):
        kiln.compile(text, device)(np.float32(1))


def test_broken_plugins_are_listed_not_fatal():
    import os
    plugin_dir = os.environ.get("KILN_TEST_PLUGIN_DIR")
    if not plugin_dir:
        pytest.skip("KILN_TEST_PLUGIN_DIR not set (run through meson test)")
    p = run_python(
        "import kiln, numpy as np\n"
        "for d in kiln.devices(): print(d.name or '?', d.state, d.reason.replace(chr(10), ' '))\n"
        "from conftest import ADD_HLO\n"
        "print(kiln.compile(ADD_HLO, 'auto')(np.ones(4, np.float32), np.ones(4, np.float32)))\n",
        {"KILN_PLUGIN_PATH": plugin_dir, "PYTHONPATH": os.pathsep.join(
            [os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")])})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert any("rejected ABI major version 99" in l for l in lines), p.stdout
    assert any("rejected plugin 'init-fails': initialize failed" in l for l in lines), p.stdout
    assert any(l.startswith("unavailable-test unavailable") for l in lines), p.stdout
    assert lines[-1] == "[2. 2. 2. 2.]"


def test_isolated_plugin_crash_is_an_exception_not_the_end_of_python():
    import os
    plugin_dir = os.environ.get("KILN_TEST_PLUGIN_DIR")
    if not plugin_dir:
        pytest.skip("KILN_TEST_PLUGIN_DIR not set (run through meson test)")
    # test-misbehave segfaults executing a module named *crash*; isolated, Python survives.
    crash = ADD_HLO.replace("HloModule add", "HloModule crash_add")
    p = run_python(
        "import kiln, numpy as np\n"
        "x = np.ones(4, np.float32)\n"
        f"try:\n  kiln.compile({crash!r}, 'test-misbehave')(x, x)\n"
        "except kiln.KilnError as e:\n  print('caught', e.code, e)\n"
        f"print(kiln.compile({ADD_HLO!r}, 'interpreter')(x, x))\n",
        {"KILN_PLUGIN_PATH": os.path.join(plugin_dir, "misbehave"),
         "KILN_ISOLATE": "test-misbehave"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("caught UNAVAILABLE"), p.stdout
    assert "crashed: signal 11" in lines[0], p.stdout
    assert lines[-1] == "[2. 2. 2. 2.]", p.stdout
