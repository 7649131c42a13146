#!/usr/bin/env bash
# Packs what a GPU machine needs to run Kiln's GPU checks into one small archive to carry
# there (the device tool carries at most 64 MiB): a release build with LLVM linked
# statically into the codegen binaries (build-gpu/), stripped, with the shared libraries a
# machine without Debian's dev packages lacks (Abseil, fmt, zstd, tinfo) and a script that
# runs the checks.
#
#   tools/gpu_bundle.sh                  # -> build-gpu/kiln-gpu-bundle.tar.xz
#   # on the GPU machine, from the repository root:
#   mkdir -p /tmp/kb && tar xf build-gpu/kiln-gpu-bundle.tar.xz -C /tmp/kb && /tmp/kb/run_gpu_checks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [[ ! -f build-gpu/build.ninja ]]; then
  cxx="g++"
  command -v ccache >/dev/null && cxx="ccache g++"
  CXX="$cxx" meson setup build-gpu --buildtype=release -Dllvm_static=true \
    --native-file meson/native-llvm16.ini
fi
targets=(tools/kiln plugins/libkiln_plugin_gpu_nvptx.so plugins/libkiln_plugin_interpreter.so
         plugins/gpu_nvptx/gpu_nvptx_vs_evaluator_test plugins/gpu_nvptx/dump_gpu_nvptx)
ninja -C build-gpu "${targets[@]}"

stage=build-gpu/bundle
rm -rf "$stage"
mkdir -p "$stage/tools" "$stage/plugins" "$stage/tests" "$stage/lib"
# The same layout as a build folder (tools/kiln, plugins/), so benchmarks/gpu_workloads.py
# --build takes it.
install -m 755 build-gpu/tools/kiln "$stage/tools/"
install -m 755 build-gpu/plugins/libkiln_plugin_gpu_nvptx.so build-gpu/plugins/libkiln_plugin_interpreter.so \
  "$stage/plugins/"
install -m 755 build-gpu/plugins/gpu_nvptx/gpu_nvptx_vs_evaluator_test \
  build-gpu/plugins/gpu_nvptx/dump_gpu_nvptx "$stage/tests/"
strip "$stage"/tools/* "$stage"/plugins/* "$stage"/tests/*
# The shared libraries from Debian packages that are not in a plain runtime image.
for f in "$stage"/tools/* "$stage"/plugins/* "$stage"/tests/*; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -E 'libabsl_|libfmt|libzstd|libtinfo' | while read -r lib; do
  cp -L "$lib" "$stage/lib/"
done
cat > "$stage/run_gpu_checks.sh" <<'EOF'
#!/usr/bin/env bash
# The GPU-side checks of issue #6, run from the repository root (for the test modules and
# benchmarks/); `$1` (optional): a folder for the outputs.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/tmp/kiln-gpu-checks}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_PLUGIN_PATH="$here/plugins"
export KILN_SOURCE_ROOT="$PWD"
"$here/tools/kiln" devices | tee "$out/devices.txt"
"$here/tests/gpu_nvptx_vs_evaluator_test" 2>&1 | tee "$out/vs_evaluator.txt"
for m in examples/hlo/*.hlo tests/numpy_e2e/modules/*.hlo; do
  echo "== $m"
  "$here/tools/kiln" run "$m" --device gpu-nvptx --compare interpreter 2>&1 | grep -E "compare|error"
done 2>&1 | tee "$out/compare.txt"
echo "benchmarks (one workload per call: sum, softmax, layernorm, mlp):"
echo "  LD_LIBRARY_PATH=$LD_LIBRARY_PATH KILN_PLUGIN_PATH=$KILN_PLUGIN_PATH python3 benchmarks/gpu_workloads.py --build $here --only sum"
EOF
chmod 755 "$stage/run_gpu_checks.sh"
tar -C "$stage" -cJf build-gpu/kiln-gpu-bundle.tar.xz .
du -sh "$stage" build-gpu/kiln-gpu-bundle.tar.xz
echo "carry: build-gpu/kiln-gpu-bundle.tar.xz (in $root)"
