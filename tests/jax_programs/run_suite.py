#!/usr/bin/env python3
"""Runs the JAX programs suite on Kiln devices against XLA:CPU and prints what agrees.

    python tests/jax_programs/run_suite.py [--device NAME ...] [--only REGEX] [--quiet]

For each device: a table (program, status, seconds, detail), then a summary line
`DEVICE: N agree, N differ, N cannot compile` and the failures grouped by reason.
Exits non-zero when anything failed.
"""

import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def reason_key(result):
    """Groups failures whose messages differ only in instruction names, numbers and shapes."""
    text = result.detail
    if result.status == harness.DIFFER:
        # "output[1] (float32[4, 5]): 3/20 elements ..." -> group by what kind of mismatch.
        m = re.match(r"output\S* \(([a-z0-9]+)\[.*?\]\): (.*)", text)
        text = f"{m.group(1)} {m.group(2)}" if m else text
        text = re.sub(r"worst at .*|first at .*|at \(.*", "", text)
    text = re.sub(r"(?<![\w])(/[\w.\-]+){2,}", "<path>", text)
    text = re.sub(r"'[^']*'", "'..'", text)  # quoted instruction names, custom-call targets
    text = re.sub(r"%?[A-Za-z_][\w\-]*\.\d+", "<name>", text)  # instruction names like add.3
    text = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", text)
    text = re.sub(r"\[[N, ]*\]", "[..]", text)
    return f"{result.status}: {text.strip().rstrip(';')}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", action="append", help="Kiln device (default: every available one)")
    ap.add_argument("--only", help="run only programs whose name matches this regex (re.search)")
    ap.add_argument("--quiet", action="store_true", help="print only failures in the tables")
    args = ap.parse_args(argv)

    devices = args.device or harness.available_devices()
    programs = [p for p in harness.PROGRAMS if not args.only or re.search(args.only, p.name)]
    if not programs:
        print(f"no program matches {args.only!r}", file=sys.stderr)
        return 2

    failed = False
    summaries = []
    for device in devices:
        print(f"== {device} ({len(programs)} programs)")
        width = max(len(p.name) for p in programs)
        results = []
        for prog in programs:
            r = harness.check(prog, device)
            results.append(r)
            if not (args.quiet and r.ok):
                print(f"  {r.program:<{width}}  {r.status:<14}  {r.seconds:6.2f}s  {r.detail}", flush=True)
        counts = collections.Counter(r.status for r in results)
        summary = (f"{device}: {counts[harness.AGREE]} agree, {counts[harness.DIFFER]} differ, "
                   f"{counts[harness.CANNOT_COMPILE]} cannot compile")
        summaries.append(summary)
        print(summary)
        groups = collections.defaultdict(list)
        for r in results:
            if not r.ok:
                groups[reason_key(r)].append(r)
        for key, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            failed = True
            print(f"  [{len(rs)}] {key}")
            for r in rs:
                print(f"      {r.program}: {r.detail}")
        print()
    if len(summaries) > 1:
        print("\n".join(summaries))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
