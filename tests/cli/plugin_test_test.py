#!/usr/bin/env python3
"""`kiln plugin-test` on one plugin, with what its report must say.

usage: plugin_test_test.py KILN TARGET EXPECT [--modules N]

TARGET is a plugin name or a path to its .so. EXPECT:
  pass         every row PASS or SKIP, exit 0, and the differential rows ran something
  devices      as pass, run with several devices per client: the devices row must PASS
  unavailable  the plugin is unavailable on this machine: abi-table PASS and every other row
               SKIP with the unavailability reason; when it is available, as `pass`
  wrong        a plugin with wrong answers: some differential row FAILs and the exit is 3
"""
import json
import subprocess
import sys

KILN, TARGET, EXPECT = sys.argv[1], sys.argv[2], sys.argv[3]
MODULES = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--modules" else "4"

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


proc = subprocess.run([KILN, "plugin-test", TARGET, "--json", "--modules", MODULES, "--seed", "7"],
                      capture_output=True, text=True, timeout=240)
try:
    report = json.loads(proc.stdout)
except json.JSONDecodeError:
    print(proc.stdout[-3000:])
    print(proc.stderr[-3000:])
    sys.exit(f"FAIL: no JSON report (exit {proc.returncode})")
rows = {r["name"]: r for r in report["rows"]}
for r in report["rows"]:
    print(f'{r["name"]:<28} {r["result"]:<5} {r["checks"]:>5} {r["failed"]:>4} {r["skipped"]:>4}  '
          f'{r["reason"][:150]}')
# Every area is a row, and stderr named each before it ran.
expected_rows = ["abi-table", "args-struct-sizes", "error-objects", "handle-lifecycle",
                 "capability", "buffer-roundtrip", "threads", "collectives", "custom-calls",
                 "memory-stats", "async", "devices", "allocation-failure"]
for name in expected_rows:
    check(name in rows, f"row {name} missing")
    check(f"running {name}" in proc.stderr, f"row {name} not announced on stderr")
diff = [r for n, r in rows.items() if n.startswith("differential/")]
check(len(diff) >= 15, f"only {len(diff)} differential rows")
for r in report["rows"]:
    check(r["result"] in ("PASS", "FAIL", "SKIP") and (r["result"] == "PASS" or r["reason"]),
          f'row {r["name"]}: result {r["result"]} without a reason')

expect = EXPECT
if expect == "devices":
    check(rows.get("devices", {}).get("result") == "PASS",
          f'row devices: {rows.get("devices", {}).get("result")}, expected PASS')
    expect = "pass"
if expect == "unavailable" and report["plugin"]["available"]:
    expect = "pass"
if expect == "pass":
    check(proc.returncode == 0, f"exit {proc.returncode}, expected 0")
    check(report["result"] == "PASS", f'result {report["result"]}')
    for r in report["rows"]:
        check(r["result"] != "FAIL", f'row {r["name"]} FAILs: {r["reason"]}')
    check(rows.get("abi-table", {}).get("result") == "PASS", "abi-table does not PASS")
    check(sum(r["checks"] for r in diff) > 0, "no differential module was compared")
elif expect == "unavailable":
    reason = report["plugin"]["unavailable_reason"]
    check(proc.returncode == 0, f"exit {proc.returncode}, expected 0")
    check(rows["abi-table"]["result"] == "PASS", "abi-table does not PASS")
    for name, r in rows.items():
        if name != "abi-table":
            check(r["result"] == "SKIP" and reason in r["reason"],
                  f'row {name}: {r["result"]} ({r["reason"]}), expected SKIP with "{reason}"')
elif expect == "wrong":
    check(proc.returncode == 3, f"exit {proc.returncode}, expected 3")
    check(report["result"] == "FAIL", f'result {report["result"]}')
    failing = [r["name"] for r in diff if r["result"] == "FAIL"]
    check(len(failing) >= 5, f"only {len(failing)} differential rows FAIL: {failing}")
    check(any("differs from the interpreter" in f for r in diff for f in r["failures"]),
          "no failure says the plugin differs from the interpreter")
    # Its collectives are off in element 1 too: the 4-device row catches it.
    check(rows["collectives"]["result"] == "FAIL" and
          any("differs from the evaluator" in f for f in rows["collectives"]["failures"]),
          f'row collectives: {rows["collectives"]["result"]}')
    # The ABI rows do not depend on answers: they still pass.
    for name in ["abi-table", "args-struct-sizes", "error-objects", "handle-lifecycle",
                 "buffer-roundtrip"]:
        check(rows[name]["result"] == "PASS", f'row {name}: {rows[name]["result"]}')
else:
    sys.exit(f"unknown expectation {EXPECT}")

for f in failures:
    print("FAIL", f)
print("plugin_test_test:", TARGET, "ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
