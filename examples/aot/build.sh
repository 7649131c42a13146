#!/usr/bin/env bash
# Compiles the three AOT examples ahead of time and links each into run_npy.c:
#   examples/aot/build.sh OUT_DIR [KILN] [extra kiln aot flags, e.g. --target aarch64-linux-gnu]
# OUT_DIR/<name>/<name>.o and .h, and the programs OUT_DIR/run_<name>. With --target
# aarch64-linux-gnu the programs are linked by aarch64-linux-gnu-gcc (run them under
# qemu-aarch64 -L /usr/aarch64-linux-gnu).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$(dirname "$here")")"
out="${1:?usage: build.sh OUT_DIR [KILN] [kiln aot flags]}"
kiln="${2:-$root/build/tools/kiln}"
shift $(( $# >= 2 ? 2 : 1 ))
cc=cc
for a in "$@"; do [[ "$a" == aarch64* ]] && cc=aarch64-linux-gnu-gcc; done
mkdir -p "$out"
for module in "$root/examples/hlo/lstm_stacked.hlo" "$root/examples/hlo/model_fn.hlo" \
              "$here/mnist_classifier.hlo"; do
  name="$(basename "$module" .hlo)"
  "$kiln" aot "$module" --name "$name" --out-dir "$out/$name" "$@"
  "$cc" -O2 -I"$out/$name" -I"$here" -DKILN_AOT_NAME="$name" -DKILN_AOT_HEADER="\"$name.h\"" \
      "$here/run_npy.c" "$out/$name/$name.o" -lm -o "$out/run_$name"
  echo "built $out/run_$name"
done
