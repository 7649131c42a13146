"""pytest over (program, device): each JAX program of programs.py on each available Kiln device
must agree with XLA:CPU, except the pairs in known_failures.KNOWN_FAILURES, which must still fail
(strict xfail), so the list stays honest.

    pytest tests/jax_programs [-k NAME] [--durations 10]
"""

import os
import sys

import pytest

# The suite needs JAX (the oracle and the lowering), flax and Kiln's Python package.
for module in ("jax", "flax", "ml_dtypes", "kiln"):
    pytest.importorskip(module)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from known_failures import KNOWN_FAILURES  # noqa: E402


def cases():
    devices = harness.available_devices()
    for device in devices:
        for prog in harness.PROGRAMS:
            marks = []
            cause = KNOWN_FAILURES.get((prog.name, device))
            if cause is not None:
                marks.append(pytest.mark.xfail(reason=cause, strict=True, raises=AssertionError))
            yield pytest.param(prog.name, device, marks=marks, id=f"{prog.name}-{device}")


def test_known_failures_name_real_programs():
    unknown = [k for k in KNOWN_FAILURES if k[0] not in harness.PROGRAMS_BY_NAME]
    assert not unknown, f"KNOWN_FAILURES names programs that do not exist: {unknown}"


@pytest.mark.parametrize("program,device", list(cases()))
def test_program(program, device):
    r = harness.check(program, device)
    assert r.ok, f"{program} on {device}: {r.status}: {r.detail}"
