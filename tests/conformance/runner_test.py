#!/usr/bin/env python3
"""tools/conformance/run_conformance.py on a folder whose outcomes are known: a module both
devices run alike, a malformed one, one with an unknown opcode and one cpu-llvm refuses (a
custom call), each in its bucket; then the project's own corpus parsed to a fixed point.

usage: runner_test.py KILN SOURCE_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

KILN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
RUNNER = os.path.join(ROOT, "tools", "conformance", "run_conformance.py")
MODULES = {
    "good": "HloModule good\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n",
    "malformed": "HloModule bad\nENTRY e {\n  p = f32[4] parameter(0\n}\n",
    "unknown_opcode": "HloModule u\nENTRY e {\n  p = f32[4] parameter(0)\n"
                      "  ROOT n = f32[4] frobnicate(p)\n}\n",
    "custom_call": "HloModule c\nENTRY e {\n  p = f32[4] parameter(0)\n"
                   "  ROOT n = f32[4] custom-call(p), custom_call_target=\"no_such_target\"\n}\n",
}
failures = []


def expect(text, pattern):
    if not re.search(pattern, text, re.M):
        failures.append(pattern)
        print(f"FAIL: no line matching {pattern!r}")


def main():
    with tempfile.TemporaryDirectory() as d:
        for name, text in MODULES.items():
            with open(os.path.join(d, name + ".hlo"), "w") as f:
                f.write(text)
        r = subprocess.run([sys.executable, RUNNER, KILN, d, "--jobs", "2", "--timeout", "60"],
                           capture_output=True, text=True, timeout=600)
        print(r.stdout)
        print(r.stderr, file=sys.stderr)
        expect(r.stdout, r"^modules: 4$")
        expect(r.stdout, r"^parse and verify: 2 of 4 \(50\.0%\)$")
        expect(r.stdout, r"^print is a fixed point: 2 of 4")
        expect(r.stdout, r"agree 1, agree vs f64 0, mismatch 0, refused 1, crash 0, timeout 0")
        expect(r.stdout, r"^ +1  unknown opcode '_'  \(e\.g\. unknown_opcode\.hlo\)$")
        expect(r.stdout, r"^ +1  expected .*\(e\.g\. malformed\.hlo\)$")
        expect(r.stdout, r"custom-call.*\(e\.g\. custom_call\.hlo\)$")
        if r.returncode != 0:
            failures.append("exit status")
            print(f"FAIL: exit {r.returncode} without a crash or a hang")
    # The project's own corpus: every module parses, verifies and prints to a fixed point.
    corpus = os.path.join(ROOT, "tests", "hlo_corpus")
    r = subprocess.run([sys.executable, RUNNER, KILN, corpus, "--no-run", "--jobs", "2"],
                       capture_output=True, text=True, timeout=600)
    print(r.stdout)
    n = len([f for f in os.listdir(corpus) if f.endswith(".hlo")])
    expect(r.stdout, rf"^parse and verify: {n} of {n} \(100\.0%\)$")
    expect(r.stdout, rf"^print is a fixed point: {n} of {n}")
    print(f"runner_test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
