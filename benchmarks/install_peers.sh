#!/usr/bin/env bash
# Installs the benchmark peers that setup.sh leaves out to keep CI fast: Debian's PyTorch
# (python3-torch; NumPy is already a build dependency) and Eigen (libeigen3-dev, a peer in
# benchmarks/gemm_libraries.cc; reconfigure the build after installing it). benchmarks/cpu_workloads.py skips
# the PyTorch column with a note when torch is missing.
set -euo pipefail

packages=(python3-numpy python3-torch libeigen3-dev)  # Eigen: build/benchmarks/gemm_libraries
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
/usr/bin/python3 -c 'import numpy, torch; print("numpy", numpy.__version__, "torch", torch.__version__)'
