#!/usr/bin/env python3
"""`kiln --help` names every command and every flag each command accepts.

usage: help_test.py KILN SOURCE_ROOT

The flags are read from each command's FlagSpec in tools/*_command.cc, so a flag added there
and not to the top-level usage fails this test.
"""
import glob
import os
import re
import subprocess
import sys

KILN, ROOT = os.path.abspath(sys.argv[1]), sys.argv[2]
usage = subprocess.run([KILN, "--help"], capture_output=True, text=True, timeout=30).stdout
failures = []
for path in sorted(glob.glob(os.path.join(ROOT, "tools", "*_command.cc"))):
    command = os.path.basename(path)[:-len("_command.cc")].replace("_", "-")
    if not re.search(rf"^  {command}\b", usage, re.M):
        failures.append(f"command '{command}' missing from kiln --help")
    text = open(path).read()
    for lst in re.findall(r"spec\.(?:with_value|switches)\s*=\s*\{([^}]*)\}", text):
        for flag in re.findall(r'"([a-z0-9-]+)"', lst):
            if flag != "help" and f"--{flag}" not in usage:
                failures.append(f"{command}: --{flag} missing from kiln --help")
for f in failures:
    print("FAIL", f)
print("help_test:", "ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
