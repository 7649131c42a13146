#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 machine: installs the Debian packages Kiln needs,
# configures the Meson build in ./build (with ccache when present) and builds it.
set -euo pipefail
cd "$(dirname "$0")"

packages=(meson ninja-build pkg-config g++ ccache libabsl-dev libfmt-dev libboost1.81-dev
          libgtest-dev googletest python3 python3-numpy llvm-16-dev libzstd-dev libopenblas-dev
          libdnnl-dev clang-format-14)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

if [[ ! -f build/build.ninja ]]; then
  cxx="g++"
  command -v ccache >/dev/null && cxx="ccache g++"
  CXX="$cxx" meson setup build --buildtype=debugoptimized --native-file meson/native-llvm16.ini
fi
ninja -C build
