#!/usr/bin/env python3
"""The installed SDK, as a backend author sees it.

usage: sdk_install_test.py MESON BUILD_DIR SOURCE_ROOT

`meson install --no-rebuild --destdir STAGE` from the build dir, then, in a fresh folder and
with pkg-config pointed only into STAGE (PKG_CONFIG_LIBDIR, PKG_CONFIG_SYSROOT_DIR):
  - the sample plugin (subprojects/elementwise_plugin) is built out of tree twice, with its
    Makefile and as its own Meson project;
  - the tutorial plugin (examples/backend_tutorial, docs/writing-a-backend.md), as installed
    under share/doc/kiln, is built with its Makefile (and what the tutorial quotes of it must be in it), three deliberately wrong variants of it must FAIL `kiln plugin-test` with
    the row the tutorial names, and the right one is `make install`ed into STAGE's plugin
    folder;
  - the staged `kiln` (no KILN_PLUGIN_PATH: it finds the plugins installed beside it) lists
    the tutorial plugin and the interpreter, passes `kiln plugin-test` on both sample builds
    and the tutorial, runs the tutorial's modules with --compare interpreter (alone, split
    with another plugin by --device auto, and isolated in a helper process), and honours
    KILN_PLATFORMS and a config file's priority.
Exit 77 (skipped) when make, a C compiler, pkg-config or ninja is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MESON, BUILD, SOURCE = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return ok


def run(cmd, env, cwd=None, timeout=240):
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return proc


def must(cmd, env, cwd=None, what=None):
    proc = run(cmd, env, cwd)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        sys.exit(f"FAIL: {what or ' '.join(cmd)}: exit {proc.returncode}")
    return proc


for tool in ("make", "cc", "pkg-config", "ninja"):
    if shutil.which(tool) is None:
        print(f"SKIP: no {tool}")
        sys.exit(77)

work = tempfile.mkdtemp(prefix="kiln-sdk-")
try:
    stage = os.path.join(work, "stage")
    # Only the install: the test's dependencies are built already.
    # No LD_LIBRARY_PATH (meson test sets one into the build tree): the staged programs must
    # find what they link on their own.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KILN_", "PKG_CONFIG", "MESON")) and k != "LD_LIBRARY_PATH"}
    env["HOME"] = work  # no ~/.config/kiln/devices.conf of the user
    must([MESON, "install", "-C", BUILD, "--no-rebuild", "--quiet", "--destdir", stage], env,
         what="meson install --destdir")
    print("staged: meson install --destdir", stage, flush=True)
    installed = json.loads(must([MESON, "introspect", "--installed", BUILD], env).stdout)
    dests = list(installed.values())

    def staged(suffix):
        hits = [d for d in dests if d.endswith(suffix)]
        check(len(hits) == 1, f"the install plan has {len(hits)} files ending in {suffix}")
        return stage + hits[0] if hits else None

    kiln = staged("/bin/kiln")
    pc = staged("/pkgconfig/kiln-plugin-api.pc")
    header = staged("/include/kiln/kiln_plugin_api.h")
    host = staged("/kiln/plugins/kiln-plugin-host")
    staged_doc = staged("/share/doc/kiln/writing-a-backend.md")
    # (introspection lists no install_subdir files: the tutorial's folder is beside the doc)
    staged_tutorial = staged_doc and os.path.join(os.path.dirname(staged_doc), "backend_tutorial",
                                                  "tutorial_plugin.c")
    for path in (kiln, pc, header, host, staged_doc, staged_tutorial):
        check(path is not None and os.path.exists(path), f"{path} is not staged")
    if failures:
        sys.exit(1)

    # The author's environment: pkg-config sees the staged SDK and nothing else.
    sdk = dict(env)
    sdk["PKG_CONFIG_LIBDIR"] = os.path.dirname(pc)
    sdk["PKG_CONFIG_PATH"] = os.path.dirname(pc)
    sdk["PKG_CONFIG_SYSROOT_DIR"] = stage
    plugindir = must(["pkg-config", "--variable=plugindir", "kiln-plugin-api"], sdk).stdout.strip()
    check(plugindir.startswith(stage + "/") and os.path.isdir(plugindir),
          f"pkg-config plugindir {plugindir!r} is not the staged plugin folder")
    cflags = must(["pkg-config", "--cflags", "kiln-plugin-api"], sdk).stdout
    check(os.path.dirname(os.path.dirname(header)) in cflags,
          f"pkg-config --cflags {cflags.strip()!r} does not reach <kiln/kiln_plugin_api.h>")

    def plugin_test(target, expect, extra_env=None, modules="24"):
        e = dict(env, **(extra_env or {}))
        proc = run([kiln, "plugin-test", target, "--json", "--modules", modules], e)
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
            check(False, f"plugin-test {target}: no JSON report (exit {proc.returncode})")
            return {}
        rows = {r["name"]: r for r in report["rows"]}
        if expect == "pass":
            bad = [f'{n}: {r["reason"][:200]}' for n, r in rows.items() if r["result"] == "FAIL"]
            check(proc.returncode == 0 and not bad,
                  f"plugin-test {target}: exit {proc.returncode}, failing rows {bad}")
            compared = sum(r["checks"] for n, r in rows.items() if n.startswith("differential/"))
            check(compared > 0, f"plugin-test {target}: no module was compared")
            check(rows.get("differential/binary", {}).get("result") != "SKIP"
                  or "no reference" not in rows.get("differential/binary", {}).get("reason", ""),
                  f"plugin-test {target}: the staged kiln has no interpreter to compare with")
        else:
            check(proc.returncode == 3, f"plugin-test {target}: exit {proc.returncode}, not 3")
        return rows

    # ---- the sample plugin, out of tree: Makefile and Meson --------------------------------
    sample = os.path.join(work, "elementwise_plugin")
    shutil.copytree(os.path.join(SOURCE, "subprojects", "elementwise_plugin"), sample)
    must(["make", "CC=cc"], sdk, cwd=sample, what="make (sample plugin)")
    sample_so = os.path.join(sample, "libkiln_plugin_elementwise_example.so")
    check(os.path.exists(sample_so), "make built no sample plugin")
    must([MESON, "setup", "b"], sdk, cwd=sample, what="meson setup (sample plugin)")
    must(["ninja", "-C", "b"], sdk, cwd=sample, what="ninja (sample plugin)")
    sample_meson_so = os.path.join(sample, "b", "libkiln_plugin_elementwise_example.so")
    check(os.path.exists(sample_meson_so), "meson built no sample plugin")
    plugin_test(sample_meson_so, "pass")
    print("sample plugin: built with make and with meson; plugin-test PASS", flush=True)
    devices = run([kiln, "devices"], dict(env, KILN_PLUGIN_PATH=sample))
    check(devices.returncode == 0 and "elementwise-example" in devices.stdout
          and sample_so in devices.stdout,
          f"kiln devices with KILN_PLUGIN_PATH does not list the sample: {devices.stdout}")

    # ---- the tutorial plugin: three wrong variants, then the right one ----------------------
    tutorial = os.path.join(work, "backend_tutorial")
    # As the tutorial says: its files from the installed share/doc/kiln/backend_tutorial.
    shutil.copytree(os.path.dirname(staged_tutorial), tutorial)
    source = open(os.path.join(tutorial, "tutorial_plugin.c")).read()
    wrong = [
        # A wrong answer: subtract adds. The differential rows compare with the interpreter.
        ("wrong-subtract", "values[i][k] = a[k] - b[k];", "values[i][k] = a[k] + b[k];",
         "differential/binary", "differs from the interpreter"),
        # A capability that lies: it accepts every instruction, compile then refuses.
        ("lying-capability", "if (p.instrs[i].why_not == NULL) {", "if (1) {",
         "capability", "capability accepts every instruction"),
        # A dtype mix-up: any float type is taken for f32 (and execute does not check).
        ("dtype-mixup", "shape->element_type == KILN_DTYPE_F32 &&",
         "shape->element_type >= KILN_DTYPE_F16 && shape->element_type <= KILN_DTYPE_F64 &&",
         "differential/unary", "differs from the reference's"),
    ]
    for name, old, new, row, reason in wrong:
        check(old in source, f"the tutorial source no longer has {old!r}")
        text = source.replace(old, new)
        if name == "dtype-mixup":  # and takes the argument's bytes as they come
            text = text.replace("arg->dtype != KILN_DTYPE_F32 || arg->byte_size != n * sizeof(float)",
                                "arg->byte_size == 0")
            text = text.replace("memcpy(values[i], arg->data, n * sizeof(float));",
                                "memcpy(values[i], arg->data, arg->byte_size < n * sizeof(float)"
                                " ? arg->byte_size : n * sizeof(float));")
        d = os.path.join(work, name)
        os.makedirs(d)
        shutil.copy(os.path.join(tutorial, "Makefile"), d)
        with open(os.path.join(d, "tutorial_plugin.c"), "w") as f:
            f.write(text)
        must(["make", "CC=cc"], sdk, cwd=d, what=f"make ({name})")
        rows = plugin_test(os.path.join(d, "libkiln_plugin_tutorial.so"), "fail")
        r = rows.get(row, {})
        check(r.get("result") == "FAIL" and reason in r.get("reason", ""),
              f"{name}: row {row} is {r.get('result')} ({r.get('reason', '')[:200]}), "
              f"expected FAIL with {reason!r}")
        print(f"{name}: {row} {r.get('result')}: {r.get('reason', '')[:120]}", flush=True)

    # The tutorial quotes the plugin, its Makefile and the header: the quotes must be there.
    doc = open(staged_doc).read()
    makefile = open(os.path.join(tutorial, "Makefile")).read()
    api_header = open(header).read()
    for lang, block in re.findall(r"```(c|make)\n(.*?)```", doc, re.S):
        where = [makefile] if lang == "make" else [source, api_header]
        check(any(block in w for w in where),
              f"docs/writing-a-backend.md quotes {lang} that is not in the sources:\n{block}")

    must(["make", "CC=cc"], sdk, cwd=tutorial, what="make (tutorial plugin)")
    must(["make", "install"], sdk, cwd=tutorial, what="make install (tutorial plugin)")
    installed_so = os.path.join(plugindir, "libkiln_plugin_tutorial.so")
    check(os.path.exists(installed_so), f"make install put nothing at {installed_so}")

    # ---- the staged kiln finds its own plugins and the installed tutorial -----------------
    devices = run([kiln, "devices"], env)
    check(devices.returncode == 0, f"kiln devices: exit {devices.returncode}: {devices.stderr}")
    for name in ("tutorial", "interpreter"):
        check(re.search(rf"^{name} +\d+ +available", devices.stdout, re.M) is not None,
              f"the staged kiln devices does not list {name} as available:\n{devices.stdout}")
    check(plugindir in devices.stdout,
          f"the staged kiln does not search its own plugin folder:\n{devices.stdout}")
    plugin_test("tutorial", "pass", modules="40")
    plugin_test(sample_so, "pass")
    print("staged kiln: devices lists tutorial and interpreter; plugin-test PASS", flush=True)

    hlo = os.path.join(tutorial, "tutorial.hlo")
    partial = os.path.join(tutorial, "partial.hlo")
    for what, cmd, extra in [
        ("alone", [kiln, "run", hlo, "--device", "tutorial", "--compare", "interpreter"], {}),
        ("isolated", [kiln, "run", hlo, "--device", "tutorial", "--compare", "interpreter"],
         {"KILN_ISOLATE": "tutorial"}),
        ("partitioned", [kiln, "run", partial, "--device", "auto", "--log-partition",
                         "--compare", "interpreter"], {}),
    ]:
        proc = run(cmd, dict(env, **extra))
        check(proc.returncode == 0 and ": ok " in proc.stdout,
              f"kiln run ({what}): exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        if what == "alone":
            check("tutorial vs interpreter" in proc.stdout, f"not run on tutorial: {proc.stdout}")
        print(f"kiln run ({what}):", proc.stdout.strip().splitlines()[-1][:100], flush=True)
        if what == "partitioned":
            check(re.search(r"cluster 0: tutorial ", proc.stderr) is not None
                  and re.search(r"cluster 1: (?!tutorial)", proc.stderr) is not None,
                  f"partial.hlo is not split between tutorial and another plugin:\n{proc.stderr}")
    # Priority and selection: KILN_PLATFORMS leaves it out, a config file puts it last.
    proc = run([kiln, "devices"], dict(env, KILN_PLATFORMS="interpreter"))
    check("auto order: interpreter\n" in proc.stdout, f"KILN_PLATFORMS ignored:\n{proc.stdout}")
    conf = os.path.join(work, "devices.conf")
    with open(conf, "w") as f:
        f.write("priority.tutorial = 5\n")
    proc = run([kiln, "devices"], dict(env, KILN_CONFIG=conf))
    check(re.search(r"^tutorial +5 ", proc.stdout, re.M) is not None
          and re.search(r"auto order: .*interpreter, tutorial\n", proc.stdout) is not None,
          f"priority.tutorial = 5 ignored:\n{proc.stdout}")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    sys.exit(f"{len(failures)} failures")
print("OK: staged SDK builds the sample and tutorial plugins; the staged kiln tests them")
