#!/usr/bin/env python3
"""Extracts the HLO modules written in XLA's C++ tests into a folder of .hlo files, one per
module, with a MANIFEST.tsv naming where each came from: the team's own extraction of XLA's
public test sources, for run_conformance.py. Nothing of XLA is kept in this repository; run
this on a checkout of XLA.

usage: extract_xla_tests.py XLA_CHECKOUT OUT_DIR [--commit SHA]

A module is a C++ raw string literal (R"(...)", R"hlo(...)hlo", ...) in a *_test.cc file that
holds `HloModule` and `ENTRY`. Literals with absl::Substitute or printf placeholders ($0,
$name, %s, %d) are templates, not modules: they are counted and left out.
MANIFEST.tsv: file, source path, line of the literal, commit (when given).
"""
import argparse
import os
import re
import sys

RAW = re.compile(r'R"([^()\\ ]{0,16})\((.*?)\)\1"', re.S)
TEMPLATE = re.compile(r"\$[A-Za-z0-9_{]|%[sd]\b|%[0-9]*[dsu]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xla")
    ap.add_argument("out")
    ap.add_argument("--commit", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows, templates, files = [], 0, 0
    for root, _, names in sorted(os.walk(a.xla)):
        for name in sorted(names):
            if not name.endswith("_test.cc"):
                continue
            path = os.path.join(root, name)
            text = open(path, encoding="utf-8", errors="replace").read()
            found = False
            for m in RAW.finditer(text):
                body = m.group(2)
                if "HloModule" not in body or "ENTRY" not in body:
                    continue
                if TEMPLATE.search(body):
                    templates += 1
                    continue
                found = True
                out = f"{len(rows):05d}.hlo"
                with open(os.path.join(a.out, out), "w") as f:
                    f.write(body.strip() + "\n")
                line = text.count("\n", 0, m.start()) + 1
                rows.append((out, os.path.relpath(path, a.xla), line))
            files += found
    with open(os.path.join(a.out, "MANIFEST.tsv"), "w") as f:
        f.write("file\tsource\tline\tcommit\n")
        for out, source, line in rows:
            f.write(f"{out}\t{source}\t{line}\t{a.commit}\n")
    print(f"extract_xla_tests: {len(rows)} modules from {files} test files into {a.out} "
          f"({templates} templates left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
