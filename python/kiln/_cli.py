"""The `kiln` command of an installed wheel: runs the package's bin/kiln with the package's
plugins on KILN_PLUGIN_PATH (after any the user set)."""
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    program = os.path.join(here, "bin", "kiln")
    if not os.path.exists(program):
        sys.exit("kiln: this installation of the kiln package has no bin/kiln "
                 "(in a build tree, run build/tools/kiln)")
    paths = [p for p in os.environ.get("KILN_PLUGIN_PATH", "").split(":") if p]
    os.environ["KILN_PLUGIN_PATH"] = ":".join(paths + [os.path.join(here, "plugins")])
    os.execv(program, [program] + sys.argv[1:])


if __name__ == "__main__":
    main()
