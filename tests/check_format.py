#!/usr/bin/env python3
"""Every C and C++ source of the repository is formatted as `clang-format-14` with the
repository's .clang-format writes it (./setup.sh installs clang-format-14, Debian 12's).

usage: check_format.py SOURCE_ROOT
Fix with: git ls-files '*.cc' '*.h' '*.c' | xargs clang-format-14 -i"""
import os
import shutil
import subprocess
import sys

ROOT = sys.argv[1]
tool = shutil.which("clang-format-14")
if tool is None:
    print("FAIL clang-format-14 not found: run ./setup.sh")
    sys.exit(1)
files = subprocess.run(["git", "-C", ROOT, "ls-files", "*.cc", "*.h", "*.c"], capture_output=True,
                       text=True, check=True).stdout.split()
bad = []
for i in range(0, len(files), 50):
    chunk = [os.path.join(ROOT, f) for f in files[i:i + 50] if os.path.exists(os.path.join(ROOT, f))]
    r = subprocess.run([tool, "--dry-run", "-Werror"] + chunk, capture_output=True, text=True)
    if r.returncode != 0:
        bad += sorted({line.split(":")[0] for line in r.stderr.splitlines() if ": error:" in line})
for b in bad:
    print("FAIL not formatted:", os.path.relpath(b, ROOT))
print(f"check_format: {len(files)} files, {'ok' if not bad else f'{len(bad)} not formatted'}")
sys.exit(1 if bad else 0)
