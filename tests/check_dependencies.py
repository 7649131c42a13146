#!/usr/bin/env python3
"""The include graph against the design's dependency rules (docs/DESIGN.md, "Where things
live"): every `#include "..."` of ours in every C/C++ file must be allowed for its folder.

usage: check_dependencies.py SOURCE_ROOT

- hlo/ includes only hlo/; plugin_api/ nothing of ours; core/ hlo/, plugin_api/ and core/.
- A plugin (plugins/<name>/) includes plugin_api/, hlo/, the shared plugin libraries
  (plugins/common, plugins/llvm_emitter, plugins/kernel_plan) and itself: never another
  plugin, never core/. The shared libraries include no plugin.
- tools/ may use core/, hlo/ and plugin_api/, never a plugin.
- aot/ (ahead-of-time compilation) may use what tools/ may, plus cpu-llvm's code generator
  (plugins/cpu_llvm/) and the shared plugin libraries; no plugin includes aot/.
Exits 1 listing every include that breaks a rule."""
import os
import re
import sys

ROOT = sys.argv[1]
SHARED = ("plugins/common", "plugins/llvm_emitter", "plugins/kernel_plan")
PLUGINS = sorted(d for d in os.listdir(os.path.join(ROOT, "plugins"))
                 if os.path.isdir(os.path.join(ROOT, "plugins", d)) and f"plugins/{d}" not in SHARED)


def allowed(folder):
    """The include prefixes a file under `folder` may use (None: no rule for it)."""
    if folder.startswith("hlo"):
        return ("hlo/",)
    if folder.startswith("plugin_api"):
        return ()
    if folder.startswith("core"):
        return ("hlo/", "plugin_api/", "core/")
    if folder.startswith("tools"):
        return ("hlo/", "plugin_api/", "core/", "tools/")
    if folder.startswith("aot"):
        return ("hlo/", "plugin_api/", "core/", "tools/", "aot/", "plugins/cpu_llvm/") + tuple(
            s + "/" for s in SHARED)
    for shared in SHARED:
        if folder.startswith(shared):
            return ("hlo/", "plugin_api/") + tuple(s + "/" for s in SHARED)
    m = re.match(r"plugins/([^/]+)", folder)
    if m:
        return ("hlo/", "plugin_api/", f"plugins/{m.group(1)}/") + tuple(s + "/" for s in SHARED)
    return None


OURS = ("hlo/", "plugin_api/", "core/", "tools/", "plugins/", "aot/")
bad, files = [], 0
for top in ("hlo", "plugin_api", "core", "plugins", "tools", "aot"):
    for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
        folder = os.path.relpath(dirpath, ROOT)
        rules = allowed(folder)
        for name in names:
            if not name.endswith((".h", ".cc", ".c")) or rules is None:
                continue
            files += 1
            path = os.path.join(dirpath, name)
            for n, line in enumerate(open(path, errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                # Includes relative to the file's own folder (same-folder headers) are fine.
                if not inc.startswith(OURS):
                    continue
                if not inc.startswith(rules):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{n}: includes {inc}")
for b in bad:
    print("FAIL", b)
print(f"check_dependencies: {files} files, plugins {', '.join(PLUGINS)}: "
      f"{'ok' if not bad else f'{len(bad)} violations'}")
sys.exit(1 if bad else 0)
