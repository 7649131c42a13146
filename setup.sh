#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 machine: installs the Debian packages Kiln needs,
# creates the Python environment .venv (Debian's python3 plus python/requirements.txt from
# the Python package index: NumPy, nanobind, JAX, flax, ml_dtypes, pytest), configures the
# Meson build in ./build (with ccache when present) and builds it, the `kiln` Python package
# included (build/python, on .venv's path).
set -euo pipefail
cd "$(dirname "$0")"

packages=(meson ninja-build pkg-config g++ ccache libabsl-dev libfmt-dev libboost1.81-dev
          libgtest-dev googletest python3 python3-numpy python3-venv python3-dev llvm-16-dev libzstd-dev libopenblas-dev
          libdnnl-dev clang-format-14 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
          libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A network or package step is tried five times, 30 s apart: a dropped connection, or a
# freshly booted machine whose own package updates hold apt's locks for a while, should not
# fail a fresh set-up.
retry() {
  local try
  for try in 1 2 3 4 5; do
    "$@" && return 0
    echo "setup.sh: '$*' failed (try $try of 5)" >&2
    ((try < 5)) && sleep 30
  done
  return 1
}
if (( ${#missing[@]} )); then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  retry $sudo_cmd apt-get -o DPkg::Lock::Timeout=300 update -qq
  retry env DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get -o DPkg::Lock::Timeout=300 \
    install -y -qq "${missing[@]}"
fi

# The Python environment: made once, its packages reinstalled when the requirements change.
if [[ ! -x .venv/bin/python ]]; then
  /usr/bin/python3 -m venv .venv
fi
if ! cmp -s python/requirements.txt .venv/kiln-requirements.txt; then
  retry .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -r python/requirements.txt
  cp python/requirements.txt .venv/kiln-requirements.txt
fi
# `import kiln` in .venv finds the package in the build tree.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/build/python" > "$site/kiln-build-tree.pth"

if [[ ! -f build/build.ninja ]]; then
  cxx="g++"
  command -v ccache >/dev/null && cxx="ccache g++"
  CXX="$cxx" meson setup build --buildtype=debugoptimized --native-file meson/native-llvm16.ini
fi
# Objects are shared between checkouts at different paths (a fresh clone reuses what another
# checkout compiled): the compile directory is left out of ccache's hash, so only the debug
# information's compile directory may name the other checkout.
export CCACHE_NOHASHDIR=1
ninja -C build
