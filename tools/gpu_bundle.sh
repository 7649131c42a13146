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
  # -Dwerror=false: GCC 12 at -O3 reports false -Wrestrict positives inside std::string.
  CXX="$cxx" meson setup build-gpu --buildtype=release -Dllvm_static=true -Dwerror=false \
    --native-file meson/native-llvm16.ini
fi
targets=(tools/kiln plugins/libkiln_plugin_gpu_nvptx.so plugins/libkiln_plugin_interpreter.so plugins/kiln-plugin-host
         plugins/gpu_nvptx/gpu_nvptx_vs_evaluator_test plugins/gpu_nvptx/dump_gpu_nvptx)
ninja -C build-gpu "${targets[@]}"

stage=build-gpu/bundle
rm -rf "$stage"
mkdir -p "$stage/tools" "$stage/plugins" "$stage/tests" "$stage/lib"
# The same layout as a build folder (tools/kiln, plugins/), so benchmarks/gpu_workloads.py
# --build takes it.
install -m 755 build-gpu/tools/kiln "$stage/tools/"
install -m 755 build-gpu/plugins/libkiln_plugin_gpu_nvptx.so build-gpu/plugins/libkiln_plugin_interpreter.so \
  build-gpu/plugins/kiln-plugin-host "$stage/plugins/"
install -m 755 build-gpu/plugins/gpu_nvptx/gpu_nvptx_vs_evaluator_test \
  build-gpu/plugins/gpu_nvptx/dump_gpu_nvptx "$stage/tests/"
strip "$stage"/tools/* "$stage"/plugins/* "$stage"/tests/*
# The shared libraries from Debian packages that are not in a plain runtime image.
for f in "$stage"/tools/* "$stage"/plugins/* "$stage"/tests/*; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# libdevice (the math functions' bitcode) from this CUDA toolkit, in case the GPU machine's
# toolkit is elsewhere; the run script points CUDA_HOME here only when it finds none.
libdevice=$(find /usr/local/cuda/nvvm/libdevice /usr/lib/cuda/nvvm/libdevice -name libdevice.10.bc 2>/dev/null | head -1 || true)
if [[ -n "$libdevice" ]]; then
  mkdir -p "$stage/cuda/nvvm/libdevice" && cp -L "$libdevice" "$stage/cuda/nvvm/libdevice/"
fi
cat > "$stage/run_gpu_checks.sh" <<'EOF'
#!/usr/bin/env bash
# The GPU-side checks, run from the repository root (for the test modules and benchmarks/):
#   run_gpu_checks.sh [OUT_DIR] [--bench [gpu_workloads.py options]]
# First, side by side (a device lease is short): the kernel-by-kernel test against the
# evaluator, `kiln plugin-test gpu-nvptx`, gpu-nvptx isolated, the collectives, and the
# cross-device test of every example, NumPy, JAX-lowered, corpus and regression module on
# gpu-nvptx against the interpreter (KILN_CHECK_JOBS at once, 8 by default). Then, alone, with
# --bench, benchmarks/gpu_workloads.py (XLA:GPU through JAX measured in the same run). Each
# check's log is OUT_DIR/<check>.txt; the last lines of each are printed. Needs python3 with
# NumPy. Bounded by KILN_CHECK_TEST_S (150) for each check and KILN_CHECK_BENCH_S (150).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/tmp/kiln-gpu-checks}"
bench="${2:-}"
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$out"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_PLUGIN_PATH="$here/plugins"
export KILN_SOURCE_ROOT="$PWD"
export KILN_CHECK_JOBS="${KILN_CHECK_JOBS:-8}"
[[ -f /usr/local/cuda/nvvm/libdevice/libdevice.10.bc || -n "${CUDA_HOME:-}" ]] || export CUDA_HOME="$here/cuda"
# cuBLAS from a pip wheel (nvidia-cublas) is not on the loader's path.
if ! ldconfig -p | grep -q 'libcublas\.so'; then
  cublas=$(find / -name 'libcublas.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
  [[ -n "$cublas" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$cublas")"
fi
# NCCL likewise (nvidia-nccl wheels): gpu-nvptx's collectives across GPUs use it when found.
if ! ldconfig -p | grep -q 'libnccl\.so'; then
  nccl=$(find / -name 'libnccl.so.2*' -not -path '/proc/*' 2>/dev/null | head -1)
  [[ -n "$nccl" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$nccl")"
fi
echo "CUDA_HOME=${CUDA_HOME:-} LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi -L
kiln="$here/tools/kiln"
t=${KILN_CHECK_TEST_S:-150}
timeout 60 "$kiln" devices 2>&1 | tee "$out/devices.txt"
timeout "$t" "$here/tests/gpu_nvptx_vs_evaluator_test" >"$out/vs_evaluator.txt" 2>&1 &
timeout "$t" "$kiln" plugin-test gpu-nvptx >"$out/plugin_test.txt" 2>&1 &
# gpu-nvptx isolated (issue #18): same outputs, and a timeout stops a GPU loop that never ends.
timeout "$t" tools/gpu_isolation_checks.sh "$kiln" "$out" >"$out/isolation.txt" 2>&1 &
# Collectives (issue #17): every kind on 2 and 4 in-process devices on gpu-nvptx.
timeout "$t" python3 tests/collectives/collectives_cli_test.py "$kiln" "$PWD" gpu-nvptx >"$out/collectives.txt" 2>&1 &
# Every module the CPU plugin is judged on (tests/cli/cross_device_test.py).
timeout "$t" python3 tests/cli/cross_device_test.py "$kiln" "$PWD" gpu-nvptx interpreter >"$out/cross_device.txt" 2>&1 &
wait
for check in vs_evaluator plugin_test isolation collectives cross_device; do
  echo "==== $check"
  grep -vE "^\[ (RUN|  +OK) |^ok " "$out/$check.txt" | tail -25
done
if [[ "$bench" == --bench ]]; then
  PYTHONUNBUFFERED=1 timeout ${KILN_CHECK_BENCH_S:-150} python3 benchmarks/gpu_workloads.py --build "$here" "$@" 2>&1 |
    tee "$out/bench.txt"
fi
EOF
chmod 755 "$stage/run_gpu_checks.sh"
tar -C "$stage" -cJf build-gpu/kiln-gpu-bundle.tar.xz .
du -sh "$stage" build-gpu/kiln-gpu-bundle.tar.xz
echo "carry: build-gpu/kiln-gpu-bundle.tar.xz (in $root)"
