"""Shared set-up for the Python package's tests (run by `meson test` with .venv's Python)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln

SOURCE_ROOT = os.environ.get("KILN_SOURCE_ROOT",
                             os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def available_devices():
    return [d.name for d in kiln.devices() if d.available]


def host_devices():
    """The plugins every test runs on: those available here (interpreter, cpu-llvm)."""
    return [d for d in available_devices() if d in ("interpreter", "cpu-llvm")]


@pytest.fixture(params=host_devices())
def device(request):
    return request.param


def run_python(code, env_extra):
    """Runs `code` in a fresh interpreter (the plugin registry is discovered once per
    process); returns the completed process."""
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


ADD_HLO = """HloModule add
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %s = f32[4] add(f32[4] %x, f32[4] %y)
}
"""


def rng(seed=0):
    return np.random.default_rng(seed)
